#!/usr/bin/env bash
# Per-kernel profile of libraries that tools/device_run.sh compiled (same machine, same call or a
# later call while the machine is warm): Nsight Compute's gpu__time_duration for every launch of
# one run (CUDA graphs off, so each kernel is its own launch), summarised by ncu_summary.py.
# Usage: CASES="resnet50_bs32_fp16 mobilenet_v2_bs32_fp16" OUT=dir bash tools/device/profile_cases.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
WORK="${WORK:-${TMPDIR:-/tmp}/aotc-gpu-run}"
BUILD_DIR="${AOTC_BUILD_DIR:-$(pwd)/build-device}"
OUT="${OUT:-$(pwd)/out/profile}"
TOP="${TOP:-25}"
mkdir -p "$OUT"
for c in ${CASES:-resnet50_bs32_fp16}; do
  lib="$(ls "$WORK/cases/$c"/*.so 2>/dev/null | head -n 1)"
  if [ -z "$lib" ]; then echo "== $c: no library under $WORK/cases/$c"; continue; fi
  AOTC_NO_CUDA_GRAPH=1 timeout 120 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    "$BUILD_DIR/bin/aotc-run" "$lib" --bench 1 --warmup 0 -q >"$OUT/ncu_$c.csv" 2>/dev/null
  echo "== $c (ncu, graphs off; 2 runs: warm-up + bench)"
  python3 tools/device/ncu_summary.py "$OUT/ncu_$c.csv" --runs 2 --top "$TOP" --json "$OUT/ncu_$c.json"
done
