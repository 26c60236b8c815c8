#!/usr/bin/env python3
"""Small transformer graphs with the structures the PyTorch exporters emit, built with the onnx
package alone (no torch), for testing aotc's whole-model path off the GPU machine:

  gpt2_block  (opset 17): token + position embeddings (Range from Shape), LayerNormalization,
              Gemm on a [-1, H] Reshape, Split into q/k/v, Reshape/Transpose into heads (shapes
              from Shape -> Gather -> Concat), causal mask Trilu -> Cast -> Where, Softmax, tanh-GELU
              written out (Pow, Tanh), residual Adds, tied-embedding logits.
  bert_block  (opset 17): word + position + token-type embeddings (ConstantOfShape), int64
              attention mask through Unsqueeze -> Cast -> Sub -> Mul added to the scores, Erf-GELU,
              post-LayerNorm residuals.
  vit_block   (opset 20): Conv patch embedding, Reshape + Transpose to tokens, class token Expand +
              Concat, position Add, pre-LN attention, the Gelu op, class-token Gather, Gemm head.
  llama_block (opset 23): a LLaMA-style decoder in the newest ops: RMSNormalization,
              RotaryEmbedding with position ids, Attention with grouped-query heads and is_causal,
              SwiGLU MLP, untied LM head (what the dynamo exporter writes at opset 23).
  bert_sdpa_block (opset 23): BERT as the dynamo exporter writes SDPA: head split by Reshape +
              Transpose, the Attention op with a boolean key mask, the context transposed back.
  llama_hf_block (opset 23): transformers' LlamaForCausalLM as the dynamo exporter writes it with
              static shapes: head split by Reshape + Transpose, the rotate_half rotary written out
              (Mul cos, Slice, Neg, Concat, Mul sin, Add; constant [1, 1, S, D] tables),
              repeat_kv (Unsqueeze, Expand, Reshape), the Attention op with is_causal.
  vit_mha_block (opset 17): torchvision ViT's encoder layers as TorchScript exports
              nn.MultiheadAttention(batch_first=True): Transpose to sequence-first, packed in-projection
              MatMul + Add, Reshape -> Unsqueeze -> Transpose -> Squeeze -> Gather 0/1/2 for q/k/v,
              per-head Reshape/Transpose/Reshape, k^T, both scaled by sqrt(1/sqrt(d)), Softmax,
              Transpose + Reshape + Gemm out-projection, Reshape + Transpose back, residual Add.

Each goes to OUT/<name>/model.onnx with seeded weights, the batch dim symbolic ("batch"), and
test_data_set_bs1 / test_data_set_bs2 holding seeded inputs (input_K.pb, named) and ONNX Runtime's
outputs (output_K.pb), the layout of the exported tiny models (see tools/model_check).

    python3 models/tiny_transformers.py OUT [--seed N]
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN = 64
HEADS = 4
HEAD_DIM = HIDDEN // HEADS
SEQ = 16
VOCAB = 97
FFN = 128


class Builder:
    """Collects nodes and initializers; fresh names; weights from one seeded generator."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def const(self, array, base="c", dtype=np.float32):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=dtype), n))
        return n

    def i64(self, values, base="shape"):
        return self.const(np.asarray(values, dtype=np.int64), base, np.int64)

    def weight(self, shape, scale, base="w"):
        return self.const(self.rng.normal(0.0, scale, size=shape), base)

    def op(self, op_type, inputs, outputs=1, **attrs):
        outs = [self.name(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name("/" + op_type), **attrs))
        return outs[0] if outputs == 1 else outs

    # --- the exporters' shape idioms ------------------------------------------------------------
    def dim(self, x, axis):
        """Shape(x)[axis] as a 1-element int64 tensor (Shape -> Gather -> Unsqueeze)."""
        s = self.op("Shape", [x])
        g = self.op("Gather", [s, self.i64(axis)], axis=0)
        return self.op("Unsqueeze", [g, self.i64([0])])

    def reshape_dims(self, x, like, keep, tail):
        """Reshape x to like.shape[:keep] + tail, the shape built by Concat at run time."""
        parts = [self.dim(like, a) for a in range(keep)] + [self.i64(tail)]
        return self.op("Reshape", [x, self.op("Concat", parts, axis=0)])

    # --- layers -------------------------------------------------------------------------------------
    def layer_norm(self, x):
        g = self.const(1.0 + self.rng.normal(0.0, 0.1, size=HIDDEN), "ln.g")
        b = self.const(self.rng.normal(0.0, 0.1, size=HIDDEN), "ln.b")
        return self.op("LayerNormalization", [x, g, b], axis=-1, epsilon=1e-5)

    def linear(self, x, n_in, n_out):
        y = self.op("MatMul", [x, self.weight((n_in, n_out), 1.0 / np.sqrt(n_in))])
        return self.op("Add", [y, self.weight((n_out,), 0.1, "b")])

    def heads(self, x, like, transpose_k=False):
        """[B, S, H] -> [B, heads, S, d] (or [B, heads, d, S] for keys)."""
        r = self.reshape_dims(x, like, 2, [HEADS, HEAD_DIM])
        return self.op("Transpose", [r], perm=[0, 2, 3, 1] if transpose_k else [0, 2, 1, 3])

    def attention_core(self, q, k, v, like, mask_add=None, causal=False):
        scores = self.op("MatMul", [q, k])
        scores = self.op("Div", [scores, self.const(np.sqrt(HEAD_DIM))])
        if causal:
            # ones[S, S] from the run-time sequence length, lower triangle kept (GPT-2's bias buffer).
            s = self.dim(like, 1)
            ones = self.op("ConstantOfShape", [self.op("Concat", [s, s], axis=0)],
                           value=numpy_helper.from_array(np.ones(1, np.int64)))
            tri = self.op("Cast", [self.op("Trilu", [ones], upper=0)], to=TensorProto.BOOL)
            scores = self.op("Where", [tri, scores, self.const(np.finfo(np.float32).min)])
        if mask_add is not None:
            scores = self.op("Add", [scores, mask_add])
        p = self.op("Softmax", [scores], axis=-1)
        ctx = self.op("Transpose", [self.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
        return self.reshape_dims(ctx, like, 2, [HIDDEN])

    def gelu_tanh(self, x):
        cube = self.op("Mul", [self.op("Pow", [x, self.const(3.0)]), self.const(0.044715)])
        inner = self.op("Mul", [self.op("Add", [x, cube]), self.const(np.sqrt(2.0 / np.pi))])
        one_plus = self.op("Add", [self.op("Tanh", [inner]), self.const(1.0)])
        return self.op("Mul", [self.op("Mul", [x, self.const(0.5)]), one_plus])

    def gelu_erf(self, x):
        e = self.op("Erf", [self.op("Div", [x, self.const(np.sqrt(2.0))])])
        return self.op("Mul", [self.op("Mul", [x, self.op("Add", [e, self.const(1.0)])]), self.const(0.5)])


def gpt2_block(b):
    ids = "input_ids"
    wte = b.weight((VOCAB, HIDDEN), 0.5, "wte")
    tok = b.op("Gather", [wte, ids], axis=0)
    seq = b.op("Squeeze", [b.dim(ids, 1), b.i64([0])])
    pos = b.op("Range", [b.const(0, "start", np.int64), seq, b.const(1, "delta", np.int64)])
    x = b.op("Add", [tok, b.op("Gather", [b.weight((SEQ, HIDDEN), 0.5, "wpe"), pos], axis=0)])
    for _ in range(2):
        h = b.layer_norm(x)
        flat = b.op("Reshape", [h, b.i64([-1, HIDDEN])])
        qkv = b.op("Gemm", [flat, b.weight((HIDDEN, 3 * HIDDEN), 0.125), b.weight((3 * HIDDEN,), 0.1, "b")])
        qkv = b.reshape_dims(qkv, x, 2, [3 * HIDDEN])
        q, k, v = b.op("Split", [qkv, b.i64([HIDDEN] * 3)], outputs=3, axis=2)
        a = b.attention_core(b.heads(q, x), b.heads(k, x, True), b.heads(v, x), x, causal=True)
        x = b.op("Add", [x, b.linear(a, HIDDEN, HIDDEN)])
        m = b.linear(b.gelu_tanh(b.linear(b.layer_norm(x), HIDDEN, FFN)), FFN, HIDDEN)
        x = b.op("Add", [x, m])
    logits = b.op("MatMul", [b.layer_norm(x), b.op("Transpose", [wte], perm=[1, 0])])
    return ([("input_ids", TensorProto.INT64, ["batch", SEQ])],
            [(logits, "logits", TensorProto.FLOAT, ["batch", SEQ, VOCAB])])


def bert_block(b):
    ids, mask = "input_ids", "attention_mask"
    words = b.op("Gather", [b.weight((VOCAB, HIDDEN), 0.5, "word"), ids], axis=0)
    types = b.op("ConstantOfShape", [b.op("Shape", [ids])], value=numpy_helper.from_array(np.zeros(1, np.int64)))
    x = b.op("Add", [words, b.op("Gather", [b.weight((2, HIDDEN), 0.5, "type"), types], axis=0)])
    x = b.op("Add", [x, b.op("Slice", [b.weight((SEQ + 8, HIDDEN), 0.5, "pos"), b.i64([0]), b.dim(ids, 1)])])
    x = b.layer_norm(x)
    # HF's extended mask: (1 - mask[:, None, None, :]) * finfo.min, added to the scores.
    m = b.op("Cast", [b.op("Unsqueeze", [mask, b.i64([1, 2])])], to=TensorProto.FLOAT)
    mask_add = b.op("Mul", [b.op("Sub", [b.const(1.0), m]), b.const(np.finfo(np.float32).min)])
    for _ in range(2):
        q = b.heads(b.linear(x, HIDDEN, HIDDEN), x)
        k = b.heads(b.linear(x, HIDDEN, HIDDEN), x, True)
        v = b.heads(b.linear(x, HIDDEN, HIDDEN), x)
        a = b.attention_core(q, k, v, x, mask_add=mask_add)
        x = b.layer_norm(b.op("Add", [b.linear(a, HIDDEN, HIDDEN), x]))
        f = b.linear(b.gelu_erf(b.linear(x, HIDDEN, FFN)), FFN, HIDDEN)
        x = b.layer_norm(b.op("Add", [f, x]))
    return ([("input_ids", TensorProto.INT64, ["batch", SEQ]), ("attention_mask", TensorProto.INT64, ["batch", SEQ])],
            [(x, "last_hidden_state", TensorProto.FLOAT, ["batch", SEQ, HIDDEN])])


def bert_sdpa_block(b):
    """BERT as the dynamo exporter writes it at opset 23 with SDPA attention: each projection's
    [B, S, H] output split into heads by Reshape + Transpose(0,2,1,3), the Attention op with a
    boolean mask [B, 1, S, S] (True: the key takes part), the context transposed back and merged."""
    ids, mask = "input_ids", "attention_mask"
    words = b.op("Gather", [b.weight((VOCAB, HIDDEN), 0.5, "word"), ids], axis=0)
    x = b.op("Add", [words, b.op("Slice", [b.weight((SEQ + 8, HIDDEN), 0.5, "pos"), b.i64([0]), b.dim(ids, 1)])])
    x = b.layer_norm(x)
    # [B, 1, S, S] as the exporter's vmap'd mask function writes it (And of a padding mask and
    # an all-true query mask); ONNX Runtime wants the mask's query dim spelled out.
    keep = b.op("Cast", [b.op("Unsqueeze", [mask, b.i64([1, 2])])], to=TensorProto.BOOL)
    keep = b.op("And", [keep, b.const(np.ones((1, 1, SEQ, 1), bool), "rows", bool)])
    for _ in range(2):
        q, k, v = (b.heads(b.linear(x, HIDDEN, HIDDEN), x) for _ in range(3))
        ctx = b.op("Attention", [q, k, v, keep], scale=float(1.0 / np.sqrt(HEAD_DIM)))
        a = b.reshape_dims(b.op("Transpose", [ctx], perm=[0, 2, 1, 3]), x, 2, [HIDDEN])
        x = b.layer_norm(b.op("Add", [b.linear(a, HIDDEN, HIDDEN), x]))
        f = b.linear(b.gelu_erf(b.linear(x, HIDDEN, FFN)), FFN, HIDDEN)
        x = b.layer_norm(b.op("Add", [f, x]))
    return ([("input_ids", TensorProto.INT64, ["batch", SEQ]), ("attention_mask", TensorProto.INT64, ["batch", SEQ])],
            [(x, "last_hidden_state", TensorProto.FLOAT, ["batch", SEQ, HIDDEN])])


def vit_block(b):
    img = "input"
    patches = b.op("Conv", [img, b.weight((HIDDEN, 3, 8, 8), 1.0 / np.sqrt(3 * 64)), b.weight((HIDDEN,), 0.1, "b")],
                   kernel_shape=[8, 8], strides=[8, 8])
    tokens = b.op("Transpose", [b.reshape_dims(patches, patches, 2, [-1])], perm=[0, 2, 1])
    batch = b.dim(img, 0)
    cls = b.op("Expand", [b.weight((1, 1, HIDDEN), 0.5, "cls"), b.op("Concat", [batch, b.i64([1, HIDDEN])], axis=0)])
    x = b.op("Add", [b.op("Concat", [cls, tokens], axis=1), b.weight((1, 17, HIDDEN), 0.5, "pos")])
    for _ in range(2):
        h = b.layer_norm(x)
        q = b.heads(b.linear(h, HIDDEN, HIDDEN), x)
        k = b.heads(b.linear(h, HIDDEN, HIDDEN), x, True)
        v = b.heads(b.linear(h, HIDDEN, HIDDEN), x)
        x = b.op("Add", [x, b.linear(b.attention_core(q, k, v, x), HIDDEN, HIDDEN)])
        m = b.linear(b.op("Gelu", [b.linear(b.layer_norm(x), HIDDEN, FFN)]), FFN, HIDDEN)
        x = b.op("Add", [x, m])
    first = b.op("Gather", [b.layer_norm(x), b.const(0, "index", np.int64)], axis=1)
    out = b.op("Gemm", [first, b.weight((10, HIDDEN), 0.125), b.weight((10,), 0.1, "b")], transB=1)
    return ([("input", TensorProto.FLOAT, ["batch", 3, 32, 32])], [(out, "output", TensorProto.FLOAT, ["batch", 10])])


def torch_mha(b, x):
    """nn.MultiheadAttention(batch_first=True) on x [B, S, E] as TorchScript exports it (need_weights
    False, scaled_dot_product_attention written out)."""
    xs = b.op("Transpose", [x], perm=[1, 0, 2])  # [S, B, E]
    proj = b.op("Add", [b.op("MatMul", [xs, b.weight((HIDDEN, 3 * HIDDEN), 1.0 / np.sqrt(HIDDEN))]),
                        b.weight((3 * HIDDEN,), 0.1, "b")])
    proj = b.op("Reshape", [proj, b.i64([SEQ, -1, 3, HIDDEN])])  # unflatten(-1, (3, E))
    proj = b.op("Unsqueeze", [proj, b.i64([0])])
    proj = b.op("Transpose", [proj], perm=[3, 1, 2, 0, 4])  # transpose(0, -2)
    proj = b.op("Squeeze", [proj, b.i64([3])])  # [3, S, B, E]
    heads = []
    for i in range(3):
        t = b.op("Gather", [proj, b.const(i, "index", np.int64)], axis=0)  # [S, B, E]
        t = b.op("Reshape", [t, b.i64([SEQ, -1, HEAD_DIM])])  # view(S, B * H, D)
        t = b.op("Transpose", [t], perm=[1, 0, 2])  # [B * H, S, D]
        heads.append(b.op("Reshape", [t, b.i64([-1, HEADS, SEQ, HEAD_DIM])]))  # [B, H, S, D]
    q, k, v = heads
    kt = b.op("Transpose", [k], perm=[0, 1, 3, 2])
    scale = b.const(np.sqrt(1.0 / np.sqrt(HEAD_DIM)), "scale")
    scores = b.op("MatMul", [b.op("Mul", [q, scale]), b.op("Mul", [kt, scale])])
    ctx = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])  # [B, H, S, D]
    ctx = b.op("Reshape", [b.op("Transpose", [ctx], perm=[2, 0, 1, 3]), b.i64([-1, HIDDEN])])  # [S * B, E]
    out = b.op("Gemm", [ctx, b.weight((HIDDEN, HIDDEN), 1.0 / np.sqrt(HIDDEN)), b.weight((HIDDEN,), 0.1, "b")], transB=1)
    return b.op("Transpose", [b.op("Reshape", [out, b.i64([SEQ, -1, HIDDEN])])], perm=[1, 0, 2])


def vit_mha_block(b):
    x = "tokens"
    for _ in range(2):
        x = b.op("Add", [x, torch_mha(b, b.layer_norm(x))])
        m = b.linear(b.op("Gelu", [b.linear(b.layer_norm(x), HIDDEN, FFN)], approximate="none"), FFN, HIDDEN)
        x = b.op("Add", [x, m])
    return ([("tokens", TensorProto.FLOAT, ["batch", SEQ, HIDDEN])],
            [(b.layer_norm(x), "last_hidden_state", TensorProto.FLOAT, ["batch", SEQ, HIDDEN])])


KV_HEADS = 2  # llama_block: grouped-query attention, 2 query heads per key/value head


def llama_block(b):
    """A LLaMA-style decoder as the dynamo exporter writes it at opset 23: RMSNormalization,
    RotaryEmbedding on the 3-D projections (num_heads, position ids from Range), the Attention op
    with grouped-query heads (q_num_heads 4, kv_num_heads 2) and is_causal, SwiGLU MLP (SiLU as
    x * Sigmoid(x)), no biases, final RMSNormalization and an untied LM head."""
    ids = "input_ids"
    x = b.op("Gather", [b.weight((VOCAB, HIDDEN), 0.5, "embed"), ids], axis=0)
    # position ids [batch, seq] = Expand(Range(0, seq)), the run-time shape from Shape.
    seq = b.op("Squeeze", [b.dim(ids, 1), b.i64([0])])
    pos = b.op("Range", [b.const(0, "start", np.int64), seq, b.const(1, "delta", np.int64)])
    pos = b.op("Expand", [b.op("Unsqueeze", [pos, b.i64([0])]), b.op("Shape", [ids])])
    # cos/sin caches [max positions, head_dim / 2] (rotary base 10000).
    inv = 1.0 / (10000.0 ** (np.arange(0, HEAD_DIM, 2, dtype=np.float64) / HEAD_DIM))
    angles = np.outer(np.arange(SEQ + 8, dtype=np.float64), inv)
    cos, sin = b.const(np.cos(angles), "cos"), b.const(np.sin(angles), "sin")

    def rms(v):
        return b.op("RMSNormalization", [v, b.const(1.0 + b.rng.normal(0.0, 0.1, size=HIDDEN), "rms.g")],
                    axis=-1, epsilon=1e-6)

    def proj(v, n_in, n_out):
        return b.op("MatMul", [v, b.weight((n_in, n_out), 1.0 / np.sqrt(n_in))])

    kv = KV_HEADS * HEAD_DIM
    for _ in range(2):
        h = rms(x)
        q = b.op("RotaryEmbedding", [proj(h, HIDDEN, HIDDEN), cos, sin, pos], num_heads=HEADS)
        k = b.op("RotaryEmbedding", [proj(h, HIDDEN, kv), cos, sin, pos], num_heads=KV_HEADS)
        v = proj(h, HIDDEN, kv)
        a = b.op("Attention", [q, k, v], is_causal=1, q_num_heads=HEADS, kv_num_heads=KV_HEADS)
        x = b.op("Add", [x, proj(a, HIDDEN, HIDDEN)])
        h = rms(x)
        gate = proj(h, HIDDEN, FFN)
        silu = b.op("Mul", [gate, b.op("Sigmoid", [gate])])
        x = b.op("Add", [x, proj(b.op("Mul", [silu, proj(h, HIDDEN, FFN)]), FFN, HIDDEN)])
    logits = proj(rms(x), HIDDEN, VOCAB)
    return ([("input_ids", TensorProto.INT64, ["batch", SEQ])],
            [(logits, "logits", TensorProto.FLOAT, ["batch", SEQ, VOCAB])])


def llama_hf_block(b):
    """LLaMA as transformers' LlamaForCausalLM (sdpa attention) comes out of the dynamo exporter at
    opset 23 with static shapes: RMSNormalization; q/k/v projections split into heads by Reshape +
    Transpose(0,2,1,3); the rotate_half rotary written out on q and k (Mul by a constant cos
    [1, 1, S, D], Slice halves, Neg, Concat(-x2, x1), Mul by sin, Add) with cat(freqs, freqs)
    tables; repeat_kv for the grouped heads (Unsqueeze, Expand, Reshape); the Attention op with
    is_causal; the context transposed back; SwiGLU MLP; untied LM head."""
    ids = "input_ids"
    x = b.op("Gather", [b.weight((VOCAB, HIDDEN), 0.5, "embed"), ids], axis=0)
    inv = 1.0 / (10000.0 ** (np.arange(0, HEAD_DIM, 2, dtype=np.float64) / HEAD_DIM))
    freqs = np.outer(np.arange(SEQ, dtype=np.float64), inv)
    emb = np.concatenate([freqs, freqs], axis=-1)[None, None]  # [1, 1, S, D]
    cos, sin = b.const(np.cos(emb), "cos"), b.const(np.sin(emb), "sin")
    half = HEAD_DIM // 2
    group = HEADS // KV_HEADS

    def rms(v):
        return b.op("RMSNormalization", [v, b.const(1.0 + b.rng.normal(0.0, 0.1, size=HIDDEN), "rms.g")],
                    axis=-1, epsilon=1e-6)

    def proj(v, n_in, n_out):
        return b.op("MatMul", [v, b.weight((n_in, n_out), 1.0 / np.sqrt(n_in))])

    def split_heads(v, n):
        return b.op("Transpose", [b.reshape_dims(v, x, 2, [n, HEAD_DIM])], perm=[0, 2, 1, 3])

    def rope(t):  # q * cos + rotate_half(q) * sin
        x1 = b.op("Slice", [t, b.i64([0]), b.i64([half]), b.i64([-1]), b.i64([1])])
        x2 = b.op("Slice", [t, b.i64([half]), b.i64([np.iinfo(np.int64).max]), b.i64([-1]), b.i64([1])])
        rotated = b.op("Concat", [b.op("Neg", [x2]), x1], axis=-1)
        return b.op("Add", [b.op("Mul", [t, cos]), b.op("Mul", [rotated, sin])])

    def repeat_kv(t):  # [B, KV, S, D] -> [B, KV, G, S, D] -> [B, KV * G, S, D]
        wide = b.op("Concat", [b.dim(x, 0), b.i64([KV_HEADS, group]), b.dim(x, 1), b.i64([HEAD_DIM])], axis=0)
        e = b.op("Expand", [b.op("Unsqueeze", [t, b.i64([2])]), wide])
        merged = b.op("Concat", [b.dim(x, 0), b.i64([HEADS]), b.dim(x, 1), b.i64([HEAD_DIM])], axis=0)
        return b.op("Reshape", [e, merged])

    kv = KV_HEADS * HEAD_DIM
    for _ in range(2):
        h = rms(x)
        q = split_heads(proj(h, HIDDEN, HIDDEN), HEADS)
        k = split_heads(proj(h, HIDDEN, kv), KV_HEADS)
        v = split_heads(proj(h, HIDDEN, kv), KV_HEADS)
        q, k = rope(q), rope(k)
        ctx = b.op("Attention", [q, repeat_kv(k), repeat_kv(v)], is_causal=1, scale=float(1.0 / np.sqrt(HEAD_DIM)))
        a = b.reshape_dims(b.op("Transpose", [ctx], perm=[0, 2, 1, 3]), x, 2, [HIDDEN])
        x = b.op("Add", [x, proj(a, HIDDEN, HIDDEN)])
        h = rms(x)
        gate = proj(h, HIDDEN, FFN)
        silu = b.op("Mul", [gate, b.op("Sigmoid", [gate])])
        x = b.op("Add", [x, proj(b.op("Mul", [silu, proj(h, HIDDEN, FFN)]), FFN, HIDDEN)])
    logits = proj(rms(x), HIDDEN, VOCAB)
    return ([("input_ids", TensorProto.INT64, ["batch", SEQ])],
            [(logits, "logits", TensorProto.FLOAT, ["batch", SEQ, VOCAB])])


MODELS = {"gpt2_block": (gpt2_block, 17), "bert_block": (bert_block, 17), "vit_block": (vit_block, 20),
          "vit_mha_block": (vit_mha_block, 20), "llama_block": (llama_block, 23),
          "bert_sdpa_block": (bert_sdpa_block, 23), "llama_hf_block": (llama_hf_block, 23)}


def build(name, seed):
    fn, opset = MODELS[name]
    b = Builder(seed)
    inputs, outputs = fn(b)
    for produced, final, _, _ in outputs:  # give each output its public name
        b.nodes.append(helper.make_node("Identity", [produced], [final], name="/output_" + final))
    graph = helper.make_graph(
        b.nodes, name,
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for _, n, t, s in outputs], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="tiny_transformers")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model, inputs


def make_inputs(inputs, batch, rng):
    feeds = {}
    for name, dtype, shape in inputs:
        shape = [batch] + list(shape[1:])
        if name == "input_ids":
            feeds[name] = rng.integers(0, VOCAB, size=shape, dtype=np.int64)
        elif name == "attention_mask":
            # Right padding of a different length per row; every row keeps at least 3 tokens.
            m = np.ones(shape, np.int64)
            for r in range(batch):
                m[r, int(rng.integers(3, SEQ + 1)):] = 0
            feeds[name] = m
        else:
            feeds[name] = rng.normal(0.0, 1.0, size=shape).astype(np.float32)
    return feeds


def write_cases(out, name, model, inputs, seed, make_feeds):
    """OUT/NAME/model.onnx and test_data_set_bs1 / bs2 with seeded inputs (make_feeds(inputs, batch,
    rng)) and ONNX Runtime's outputs (graph optimisations off); exits on a degenerate reference.
    Returns the per-batch outputs."""
    import onnxruntime as ort
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    all_results = {}
    for batch in (1, 2):
        rng = np.random.default_rng(1000 * seed + batch)
        feeds = make_feeds(inputs, batch, rng)
        results = session.run(None, feeds)
        data = os.path.join(folder, f"test_data_set_bs{batch}")
        os.makedirs(data, exist_ok=True)
        for k, (n, _, _) in enumerate(inputs):
            onnx.save_tensor(numpy_helper.from_array(feeds[n], n), os.path.join(data, f"input_{k}.pb"))
        for k, (res, meta) in enumerate(zip(results, session.get_outputs())):
            if not np.all(np.isfinite(res)) or np.abs(res).max() == 0:
                sys.exit(f"{name}: the reference output is degenerate (non-finite or all zero)")
            onnx.save_tensor(numpy_helper.from_array(res, meta.name), os.path.join(data, f"output_{k}.pb"))
        all_results[batch] = results
    print(f"{name}: {path} ({len(model.graph.node)} nodes, opset {model.opset_import[0].version})")
    return all_results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    for index, name in enumerate(MODELS):
        model, inputs = build(name, args.seed + index)
        write_cases(args.out, name, model, inputs, args.seed + index, make_inputs)


if __name__ == "__main__":
    main()
