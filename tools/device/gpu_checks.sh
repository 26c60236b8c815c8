#!/usr/bin/env bash
# GPU correctness checks in one device call, after tools/device_run.sh has set up the carried
# dependencies: builds the GPU test binaries with tests ON, runs them (single-op graphs compiled
# to .so files against the CPU reference), and runs the transformer ops' ONNX node tests as .so
# files on the GPU. Prints one summary line per part.
# Usage (repo root): OUT=dir bash tools/device/gpu_checks.sh     Env: GTEST_FILTER (gpu_tests)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
WORK="${WORK:-${TMPDIR:-/tmp}/aotc-gpu-run}"
BUILD_DIR="${AOTC_BUILD_DIR:-$(pwd)/build-device}"
OUT="${OUT:-$(pwd)/out/gpu_checks}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
[ -f "$WORK/deps.env" ] && source "$WORK/deps.env"
cmake -S . -B "$BUILD_DIR" -DAOTC_BUILD_TESTS=ON >/dev/null 2>"$OUT/cmake.log" || { echo "cmake failed"; tail -5 "$OUT/cmake.log"; exit 1; }
cmake --build "$BUILD_DIR" -j "$(nproc)" --target gpu_tests ops_transformer_tests aotc-conformance >"$OUT/build.log" 2>&1 \
  || { echo "build failed"; grep -m5 -i error "$OUT/build.log"; exit 1; }
timeout 300 "$BUILD_DIR/tests/gpu/gpu_tests" --gtest_filter="${GTEST_FILTER:-*}" >"$OUT/gpu_tests.log" 2>&1
echo "gpu_tests rc $?: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/gpu_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \]|Failure' "$OUT/gpu_tests.log" | head -20
timeout 200 "$BUILD_DIR/tests/ops_transformer/ops_transformer_tests" >"$OUT/ops_transformer.log" 2>&1
echo "ops_transformer_tests rc $?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$OUT/ops_transformer.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \]' "$OUT/ops_transformer.log" | head -10
data="$BUILD_DIR/onnx_node_tests_generated"
python3 tools/gen_node_test_data.py --output "$data" --ops Attention,RMSNormalization,RotaryEmbedding,Gelu >"$OUT/gen.log" 2>&1 \
  || { echo "node test generation failed"; tail -3 "$OUT/gen.log"; }
timeout 300 "$BUILD_DIR/bin/aotc-conformance" --gpu --data "$data/node" --ops Attention,RMSNormalization,RotaryEmbedding,Gelu \
  --filter '^test_(attention|rms_normalization|rotary_embedding|gelu)' \
  --known-failures tests/conformance/known_failures_transformer.txt --jobs 8 --timeout 120 \
  --log "$OUT/conformance_gpu_transformer.log" --json "$OUT/conformance_gpu_transformer.json" >"$OUT/conformance.out" 2>&1
echo "conformance --gpu (transformer ops) rc $?:"; tail -12 "$OUT/conformance.out"
