#!/usr/bin/env bash
# CTest driver: builds the transformer-shaped graphs of models/tiny_transformers.py (onnx +
# onnxruntime, no torch) into OUT, runs aotc-model-check --lower on them (must pass), checks that
# the CPU outputs are bit-identical with the copy-chain passes disabled, then that the checker
# fails on a copy whose reference output is perturbed by 1e-3 relative (so the pass above could
# have failed); and that fuse_rotary fired on llama_hf_block. Exit 77 (CTest: skipped) when
# python3 lacks onnx or onnxruntime.
# usage: run_tiny_transformers.sh AOTC_MODEL_CHECK TINY_TRANSFORMERS_PY OUT
set -euo pipefail
checker=$1 script=$2 out=$3
if ! python3 -c "import onnx, onnxruntime, numpy" 2>/dev/null; then
  echo "SKIP: python3 with onnx, onnxruntime and numpy is needed to build the reference outputs"
  exit 77
fi
rm -rf "$out"
python3 "$script" "$out"
models=("$out"/gpt2_block "$out"/bert_block "$out"/vit_block "$out"/vit_mha_block "$out"/llama_block "$out"/bert_sdpa_block
        "$out"/llama_hf_block)
"$checker" --lower --ops "${models[@]}" | tee "$out/with_passes.txt"

# fuse_copy_chains / fuse_matmul_transpose move data only (a folded Mul rounds as before): the CPU
# outputs must be bit-identical without them, and they must have fired where the exports have
# copy chains (GPT-2's Split heads, torch MultiheadAttention's q/k/v). cancel_row_permutations,
# which they can enable (vit_mha_block at batch 2: the head transposes gone, the residual Add
# folds into the out-projection's epilogue, one rounding instead of two), is off in both runs, and
# so is fuse_attention_operands, which composes its head-order transposes with fuse_copy_chains
# itself (vit_mha_block at batch 1 and 2: the head merge after the attention).
"$checker" --ops "${models[@]}" --disable-pass cancel_row_permutations --disable-pass fuse_attention_operands \
  > "$out/copy_passes_only.txt"
"$checker" --ops "${models[@]}" --disable-pass fuse_copy_chains --disable-pass fuse_matmul_transpose \
  --disable-pass cancel_row_permutations --disable-pass fuse_attention_operands > "$out/without_passes.txt"
if ! diff <(grep fnv1a "$out/copy_passes_only.txt") <(grep fnv1a "$out/without_passes.txt"); then
  echo "FAIL: outputs differ with and without fuse_copy_chains / fuse_matmul_transpose"
  exit 1
fi
fired=$(grep -c "aotc.StridedCopyx6" "$out/with_passes.txt" || true)
if [ "$fired" -ne 2 ]; then  # gpt2_block, batch 1 and 2
  echo "FAIL: fuse_copy_chains fired on $fired of the 2 expected gpt2_block cases (6 copies each)"
  exit 1
fi
# vit_mha_block: the q/k/v chains (Gather / Squeeze / Unsqueeze) become strided copies, which the
# fused attention then reads in place (fp32 too): none of the chain's ops is left, batch 1 and 2.
mha=$(awk '/vit_mha_block/ {m = 1} m && /ops after pipeline/ {print; m = 0}' "$out/with_passes.txt")
mha_without=$(awk '/vit_mha_block/ {m = 1} m && /ops after pipeline/ {print; m = 0}' "$out/without_passes.txt")
if [ "$(grep -c "StridedAttentionx2" <<<"$mha")" -ne 2 ] || grep -qE " (Gather|Squeeze|Unsqueeze)x" <<<"$mha" ||
   [ "$(grep -cE " Gatherx6" <<<"$mha_without")" -ne 2 ]; then
  echo "FAIL: fuse_copy_chains did not consume vit_mha_block's q/k/v chains: $mha"
  exit 1
fi
echo "ok: bit-identical outputs without the copy-chain passes; they fired on gpt2_block and vit_mha_block"
# ... and at batch 1 as at batch 2 the head merge after the attention is a view and the skip Add
# joins the out-projection (fuse_attention_operands' rows form, cancel_row_permutations' third
# form): no Transpose and no Add left in either.
if grep -qE " (Transpose|Add)x" <<<"$mha"; then
  echo "FAIL: vit_mha_block keeps a head-merge Transpose or a skip Add: $mha"
  exit 1
fi

# fuse_rotary must have fired on llama_hf_block's written-out rotate_half (2 layers x q, k; batch 1
# and 2), leaving no Neg / Concat of it behind, so the ONNX Runtime comparison above covered it.
rotary=$(awk '/llama_hf_block/ {m = 1} m && /ops after pipeline/ {print; m = 0}' "$out/with_passes.txt")
if [ "$(grep -c "RotaryEmbeddingx4" <<<"$rotary")" -ne 2 ] || grep -qE " (Neg|Concat)x" <<<"$rotary"; then
  echo "FAIL: fuse_rotary did not turn llama_hf_block's rotary into 4 RotaryEmbedding nodes: $rotary"
  exit 1
fi
echo "ok: fuse_rotary fired on llama_hf_block"

bad="$out/perturbed_bert_block"
cp -r "$out/bert_block" "$bad"
python3 - "$bad/test_data_set_bs1/output_0.pb" <<'PY'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
t = onnx.load_tensor(sys.argv[1])
a = numpy_helper.to_array(t)
a = (a * np.float32(1.001)).astype(np.float32)  # rel L2 1e-3: ten times the model tolerance
onnx.save_tensor(numpy_helper.from_array(a, t.name), sys.argv[1])
PY
if "$checker" "$bad" --batch-dir test_data_set_bs1; then
  echo "FAIL: aotc-model-check accepted a reference output perturbed by 1e-3 relative"
  exit 1
fi
echo "ok: the perturbed reference is rejected"
