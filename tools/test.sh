#!/usr/bin/env bash
# The test command: configure, build everything and run every test suite through CTest.
# Warnings are errors when CI=true. Tests that need a GPU skip themselves with a message.
# Usage: tools/test.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
werror=OFF
if [ "${CI:-}" = "true" ]; then werror=ON; fi
jobs="$(nproc 2>/dev/null || echo 2)"

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAOTC_WERROR="$werror" >/dev/null
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 1500

# CI=true: the same unit tests again from a second build with AddressSanitizer and
# UndefinedBehaviorSanitizer (in $AOTC_ASAN_BUILD_DIR, default BUILD_DIR-asan; AOTC_CI_SANITIZERS=0
# skips it). The node-test sweeps
# (labels conformance, node_tests) run the same reference code on more data and stay in the first
# run only, as does fuzz_regression (label fuzz: its harnesses are a clang ASan + UBSan build already). Any ASan or UBSan report fails its test (UBSan does not recover; leaks are reported).
if [ "${CI:-}" = "true" ] && [ "${AOTC_CI_SANITIZERS:-1}" != 0 ]; then
  asan_build="${AOTC_ASAN_BUILD_DIR:-$build-asan}"
  cmake -S . -B "$asan_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAOTC_SANITIZE=ON -DAOTC_WERROR=OFF >/dev/null
  cmake --build "$asan_build" -j "$jobs"
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}" \
  UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
    ctest --test-dir "$asan_build" --output-on-failure -j "$jobs" --timeout 1500 -LE "conformance|node_tests|fuzz"
fi
