#!/usr/bin/env bash
# Issue 8's GPU checks that tools/device_run.sh does not make, run after it in the same call (they
# use its build, its ResNet-50 export, its calibration cache and its deps.env):
#   ptx     aotc's own int8 ResNet-50 (batch 32) built for compute_87 (PTX only: the Jetson path,
#           JIT-compiled by the driver here) and for sm_90: both checked against ONNX Runtime fp32
#           with the int8 limit, both timed
#   qdq     ONNX Runtime's quantize_static QDQ ResNet-50 (models/qdq_models.py): compiled as is,
#           checked against ONNX Runtime's reading of the QDQ graph at batch 1, and timed at batch 32
#           as built and with --disable-pass reencode_uint8 (docs/perf_notes.md v20), in turns
#   digits  models/digits_cnn.py: a CNN trained on scikit-learn's digits, top-1 of the fp32, fp16,
#           int8 and budgeted int8 libraries on the test split
# One line per result. Usage (repo root): OUT=dir bash tools/device/int8_checks.sh
# Env: WORK (tools/device_run.sh's), AOTC_BUILD_DIR, PARTS="ptx qdq digits", ITERS=100
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
WORK="${WORK:-${TMPDIR:-/tmp}/aotc-gpu-run}"
BUILD_DIR="${AOTC_BUILD_DIR:-$(pwd)/build-device}"
OUT="${OUT:-$(pwd)/out/int8_checks}"
PARTS="${PARTS:-ptx qdq digits}"
ITERS="${ITERS:-100}"
mkdir -p "$OUT" "$WORK/int8"
# shellcheck disable=SC1091
[ -f "$WORK/deps.env" ] && . "$WORK/deps.env"
export LD_LIBRARY_PATH="${AOTC_LD_PATH:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
aotc="$BUILD_DIR/bin/aotc" run="$BUILD_DIR/bin/aotc-run" r50="$WORK/models/resnet50"

median() { timeout 120 "$run" "$1" --bench "$ITERS" -q 2>&1 | grep -o 'median [0-9.]*' | awk '{ print $2 }'; }
check() {  # check LIB DATA_DIR PRECISION -> "rel L2 ..." of the library's outputs against the folder's
  local out="$(dirname "$1")/out"
  timeout 120 "$run" "$1" --expect-dir "$2" --output-dir "$out" -q >/dev/null 2>&1
  python3 tools/device/device_steps.py compare --expected "$2" --actual "$out" --precision "$3" \
    --json "$(dirname "$1")/metric.json" 2>&1 | tail -n 1 | cut -c1-110
}
build() {  # build NAME MODEL ARGS...: the library's path, or nothing (the error on stderr)
  local name="$1" model="$2" d="$WORK/int8/$1"
  shift 2
  mkdir -p "$d"
  if timeout 300 "$aotc" "$model" -o "$d/lib$name.so" --name "$name" --report "$d/report.json" "$@" \
       >"$d/compile.log" 2>&1; then
    echo "$d/lib$name.so"
  else
    echo "$name: aotc failed: $(grep -m1 error "$d/compile.log" | cut -c1-150)" >&2
  fi
}

for part in $PARTS; do
  case "$part" in
  ptx)
    cache="$WORK/calib/resnet50.json"
    for arch in sm_90 compute_87; do
      lib="$(build "r50_int8_${arch}" "$r50/model.onnx" --batch 32 --precision int8 --calib-cache "$cache" --arch "$arch")"
      [ -n "$lib" ] || continue
      echo "ptx: resnet50 int8 bs32 --arch $arch: $(check "$lib" "$r50/test_data_set_bs32" int8); median $(median "$lib") ms"
    done
    ;;
  qdq)
    q="$WORK/qdq"
    timeout 300 python3 models/qdq_models.py "$q" --only-extra --model "resnet50=$r50/model.onnx" >"$OUT/qdq_models.log" 2>&1 ||
      { echo "qdq: models/qdq_models.py failed: $(tail -n 1 "$OUT/qdq_models.log")"; continue; }
    grep '^resnet50' "$OUT/qdq_models.log" | sed 's/^/qdq: ORT: /'
    lib="$(build r50_qdq_bs1 "$q/resnet50/model.onnx" --batch 1)"
    [ -n "$lib" ] && echo "qdq: resnet50 QDQ bs1 vs ONNX Runtime's reading of the QDQ graph: $(check "$lib" "$q/resnet50/test_data_set_bs1" int8)"
    a="$(build r50_qdq_bs32 "$q/resnet50/model.onnx" --batch 32)"
    b="$(build r50_qdq_bs32_no_reencode "$q/resnet50/model.onnx" --batch 32 --disable-pass reencode_uint8)"
    if [ -n "$a" ] && [ -n "$b" ]; then
      line=""
      for turn in 1 2; do line="$line $(median "$a")/$(median "$b")"; done
      echo "qdq: resnet50 QDQ bs32 median ms, as built / --disable-pass reencode_uint8, twice:$line"
    fi
    ;;
  digits)
    timeout 300 python3 models/digits_cnn.py "$WORK/digits" --aotc "$aotc" >"$OUT/digits.log" 2>&1
    echo "digits: rc $?"
    grep -E '^\||drop|budget|every layer' "$OUT/digits.log" | sed 's/^/digits: /'
    ;;
  *) echo "unknown part '$part' (ptx qdq digits)" ;;
  esac
done
