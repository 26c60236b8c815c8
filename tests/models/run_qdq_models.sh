#!/usr/bin/env bash
# CTest driver for issue 8 on the CPU reference:
#  1. QDQ import: models quantized by ONNX Runtime's quantize_static (models/qdq_models.py) through
#     aotc-model-check: the fused int8 layers must reproduce ONNX Runtime's reading of the same
#     QDQ model within the fp32 whole-model tolerance, and fuse_qdq must have fired on every
#     quantized Conv / Gemm.
#  2. aotc's own int8 path (--int8-calib: calibration, BatchNormalization folded, QDQ insertion,
#     fuse_qdq) on the float models, calibrated on the inputs ONNX Runtime calibrated on: with the
#     same calibrator (minmax) the int8 model's relative L2 error against the float model must be
#     within 1.25x of ONNX Runtime's own quantized model's error on the same input, and the arg max
#     unchanged. The entropy calibrator's figures are printed (not a bar: on random data it clips).
#  3. The checker is not blind: a bar of a tenth of ONNX Runtime's error must fail.
#  4. Layer by layer (tests/models/qdq_layers.py): every quantized layer of the QDQ tiny CNN, the
#     transformer block and a ResNet-50 (models/resnet50_onnx.py, quantized by quantize_static),
#     fed with ONNX Runtime's int8 values, gives ONNX Runtime's int8 outputs to within one step on
#     at most 1e-3 of them; the checker fails when the reference is moved by one step.
# Exit 77 (CTest: skipped) when python3 lacks onnx, onnxruntime or numpy.
# usage: run_qdq_models.sh AOTC_MODEL_CHECK QDQ_MODELS_PY OUT
set -euo pipefail
checker=$1 script=$2 out=$3
if ! python3 -c "import onnx, onnxruntime, numpy" 2>/dev/null; then
  echo "SKIP: python3 with onnx, onnxruntime and numpy is needed to build the QDQ models"
  exit 77
fi
rm -rf "$out"
python3 "$script" "$out"

qdq=("$out"/tiny_cnn_s8s8 "$out"/tiny_cnn_u8s8 "$out"/mlp_s8s8 "$out"/transformer_s8s8)
"$checker" --ops "${qdq[@]}" | tee "$out/qdq.txt"
# Quantized layers in the exports: tiny CNN 4 Conv + 1 Gemm, MLP 2 Gemm.
for want in "tiny_cnn_s8s8 aotc.QLinearConvx4 aotc.QLinearMatMulx1" "tiny_cnn_u8s8 aotc.QLinearConvx4 aotc.QLinearMatMulx1" \
            "mlp_s8s8 aotc.QLinearMatMulx2" "transformer_s8s8 aotc.QLinearMatMulx6 aotc.QLinearAddx2"; do
  set -- $want
  line=$(grep -A1 "^PASS $1 " "$out/qdq.txt" | tail -1)
  for op in "${@:2}"; do
    if ! grep -q "$op" <<<"$line"; then
      echo "FAIL: fuse_qdq did not give $op on $1: $line"
      exit 1
    fi
  done
done
echo "ok: QDQ models match ONNX Runtime with every quantized Conv/Gemm fused"

for m in tiny_cnn_s8s8 mlp_s8s8; do
  f="$out/${m}_float"
  ort=$(cat "$f/ort_quantized_rel_l2.txt")
  bar=$(python3 -c "print(1.25 * $ort)")
  "$checker" "$f" --int8-calib "$f/calib" --int8-calibrator minmax --int8-max-rel-l2 "$bar"
  "$checker" "$f" --int8-calib "$f/calib" --int8-calibrator entropy --int8-max-rel-l2 1 || true
  tight=$(python3 -c "print(0.1 * $ort)")
  if "$checker" "$f" --int8-calib "$f/calib" --int8-calibrator minmax --int8-max-rel-l2 "$tight" >/dev/null; then
    echo "FAIL: the int8 check accepted a bar of a tenth of ONNX Runtime's error on $m"
    exit 1
  fi
  echo "ok: $m int8 within 1.25x of ONNX Runtime's quantized error ($ort); a tenth of it fails"
done

# 4. Layer by layer, against ONNX Runtime's reading of each layer.
layers="$(dirname "$0")/qdq_layers.py"
python3 "$(dirname "$script")/resnet50_onnx.py" "$out/resnet50_float.onnx" --batch 1
python3 "$script" "$out" --only-extra --model "resnet50_s8s8=$out/resnet50_float.onnx"
for m in tiny_cnn_s8s8 tiny_cnn_u8s8 transformer_s8s8 resnet50_s8s8; do
  python3 "$layers" "$checker" "$out/$m" | tail -n 3
done
if python3 "$layers" "$checker" "$out/tiny_cnn_s8s8" --offset-reference 1 >/dev/null; then
  echo "FAIL: the layer check accepted ONNX Runtime's values moved by one step"
  exit 1
fi
echo "ok: every quantized layer matches ONNX Runtime's reading; a reference moved by one step fails"
