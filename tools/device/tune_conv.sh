#!/usr/bin/env bash
# Measures every CUTLASS convolution configuration of one math (ir/ops/conv_configs.h: tc* rows
# for TUNE_PRECISION=fp16 (default), simt* rows for fp32, i8* rows for int8 with the calibration
# cache tools/device_run.sh wrote for the model) on the exported models,
# for choosing the pick rule from data: each (model, batch) is compiled once per
# configuration with --conv-config (and once with the rule), checked against ONNX Runtime, timed,
# and profiled per kernel with ncu; tools/device/tune_summary.py prints the totals and, per
# convolution, the fastest configuration. Run after tools/device_run.sh built aotc and exported.
# Usage: OUT=dir TUNE_MODELS="resnet50 mobilenet_v2" TUNE_BATCHES="1 32" [TUNE_PRECISION=fp32] \
#          bash tools/device/tune_conv.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
WORK="${WORK:-${TMPDIR:-/tmp}/aotc-gpu-run}"
BUILD_DIR="${AOTC_BUILD_DIR:-$(pwd)/build-device}"
OUT="${OUT:-$(pwd)/out/tune}"
PREC="${TUNE_PRECISION:-fp16}"
ARCH="${ARCH:-sm_90}"
NCU="${TUNE_NCU:-1}"
mkdir -p "$OUT" "$WORK/tune"
# The carried dependencies (libonnx, CUTLASS_DIR) as tools/device_run.sh set them up.
# shellcheck disable=SC1091
[ -f "$WORK/deps.env" ] && . "$WORK/deps.env"
export LD_LIBRARY_PATH="${AOTC_LD_PATH:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
configs="rule $("$BUILD_DIR/bin/aotc" --conv-config '?' m.onnx -o libm.so 2>&1 | sed -n 's/.*known: //p' |
                tr -d ',' | tr ' ' '\n' | grep "^$(case "$PREC" in fp32) echo simt ;; int8) echo i8 ;; *) echo tc ;; esac)" | tr '\n' ' ')"
jobs=()
while read -r label batch model data; do
  [ -n "$label" ] || continue
  case " ${TUNE_MODELS:-resnet50 mobilenet_v2} " in *" $label "*) ;; *) continue ;; esac
  case " ${TUNE_BATCHES:-1 32} " in *" $batch "*) ;; *) continue ;; esac
  for c in $configs; do
    d="$WORK/tune/${label}_bs${batch}_$c"
    mkdir -p "$d"
    args=()
    [ "$c" = rule ] || args=(--conv-config "$c")
    [ "$PREC" != int8 ] || args+=(--calib-cache "$WORK/calib/$label.json")
    ( "$BUILD_DIR/bin/aotc" "$model" -o "$d/libt.so" --name t --arch "$ARCH" --batch "$batch" \
        --precision "$PREC" "${args[@]}" >"$d/compile.log" 2>&1 ) &
    jobs+=("$label $batch $c $d $data")
  done
done < <(python3 tools/device/device_steps.py cases "$WORK/models" ${TUNE_MODELS:-resnet50 mobilenet_v2})
wait
for j in "${jobs[@]}"; do
  read -r label batch c d data <<<"$j"
  if [ ! -f "$d/libt.so" ]; then
    echo "$label $batch $c compile-failed $(grep -m1 error "$d/compile.log" | cut -c1-120)" >>"$OUT/tune.txt"
    continue
  fi
  timeout 60 "$BUILD_DIR/bin/aotc-run" "$d/libt.so" --expect-dir "$data" --output-dir "$d/out" -q >/dev/null 2>&1
  rel="$(python3 tools/device/device_steps.py compare --expected "$data" --actual "$d/out" --precision "$PREC" \
          --json "$d/metric.json" 2>/dev/null | grep -o 'rel L2 [0-9.e+-]*' | head -n 1)"
  ms="$(timeout 60 "$BUILD_DIR/bin/aotc-run" "$d/libt.so" --bench 100 -q 2>&1 | grep -o 'median [0-9.]*' | awk '{print $2}')"
  echo "$label $batch $c ${ms:-nan} ${rel:-?}" >>"$OUT/tune.txt"
  if [ "$NCU" = 1 ] && [ "$label" = resnet50 ]; then
    AOTC_NO_CUDA_GRAPH=1 timeout 90 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
      "$BUILD_DIR/bin/aotc-run" "$d/libt.so" --bench 1 --warmup 0 -q >"$d/ncu.csv" 2>/dev/null
    cp "$d/ncu.csv" "$WORK/tune/ncu_${label}_bs${batch}_$c.csv" 2>/dev/null
  fi
done
python3 tools/device/tune_summary.py --tune "$OUT/tune.txt" --ncu-dir "$WORK/tune" --runs 2 | tee "$OUT/tune_summary.txt"
