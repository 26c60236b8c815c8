#!/usr/bin/env bash
# The test command: configure, build everything and run every test suite through CTest.
# Tests that need a GPU (or nvcc, or the CUTLASS headers) skip themselves with a message; CTest
# reports them as skipped, not passed.
# Usage: tools/test.sh [BUILD_DIR]
#
# - Default (a developer's run): the optimised build (RelWithDebInfo: -O2 -g) in BUILD_DIR
#   (default build).
# - CI=true (what .ci/run runs): warnings are errors, and the one build is instrumented with
#   AddressSanitizer + UndefinedBehaviorSanitizer (-O1 and line tables, UBSan without recovery, leak
#   detection on) in BUILD_DIR (default $AOTC_ASAN_BUILD_DIR, else build-asan). Every CTest entry runs
#   there, so an ASan, UBSan or leak report anywhere fails its test. One build, not an optimised one
#   and then a sanitized one: on CI's 2-core machines the two did not fit its 90 minutes (measured:
#   the -O2 -g sanitized build alone took 2609 s; docs/reliability.md "Sanitizers in CI").
# - CI=true AOTC_CI_SANITIZERS=0: the optimised build with warnings as errors instead.
# Each stage prints its time ("[test.sh] build: 1234 s").
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc 2>/dev/null || echo 2)"
config=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
sanitize=0
if [ "${CI:-}" = "true" ]; then
  config+=(-DAOTC_WERROR=ON)
  if [ "${AOTC_CI_SANITIZERS:-1}" != 0 ]; then sanitize=1; fi
else
  config+=(-DAOTC_WERROR=OFF)
fi
if [ "$sanitize" = 1 ]; then
  build="${1:-${AOTC_ASAN_BUILD_DIR:-build-asan}}"
  # -O1 (ASan's own advice) and -g1 (line tables for the reports' stack traces): together about half
  # the compile time of -O2 -g here (two files timed, docs/results.md "Thirty-fifth session").
  config+=(-DAOTC_SANITIZE=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
           "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
else
  build="${1:-build}"
  # -U: a folder once configured by the branch above gets CMake's own -O2 -g back.
  config+=(-DAOTC_SANITIZE=OFF -UCMAKE_CXX_FLAGS_RELWITHDEBINFO -UCMAKE_C_FLAGS_RELWITHDEBINFO)
fi

stage_start=$SECONDS
stage() { echo "[test.sh] $1: $((SECONDS - stage_start)) s"; stage_start=$SECONDS; }
echo "[test.sh] build folder $build ($([ "$sanitize" = 1 ] && echo "ASan + UBSan" || echo optimised), $jobs jobs)"
cmake -S . -B "$build" "${config[@]}" >/dev/null
stage configure
cmake --build "$build" -j "$jobs"
stage build
status=0
# The tests count compiled and cached device files: a kernel library installed beside this build's
# aotc (tools/build_kernel_library.sh) would change those counts, so the suite reads none.
export AOTC_KERNEL_LIBRARY=
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 1500 || status=$?
stage ctest
echo "[test.sh] total: $SECONDS s"
exit "$status"
