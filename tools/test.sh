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
