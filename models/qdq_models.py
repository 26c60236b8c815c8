#!/usr/bin/env python3
"""Models in QDQ form (QuantizeLinear / DequantizeLinear pairs) as ONNX Runtime's own quantizer
writes them, with ONNX Runtime's outputs as the reference (issue 8, QDQ import).

    python3 models/qdq_models.py OUT_DIR [--seed N]

For each float model below: calibrate on 16 seeded random inputs with
onnxruntime.quantization.quantize_static (QDQ format, MinMax calibrator), then write
OUT_DIR/<name>/model.onnx and OUT_DIR/<name>/test_data_set_bs1/{input_0.pb,output_0.pb} with
a fresh seeded input and ONNX Runtime's output with its graph optimisations off (the QDQ graph
read as the specification defines it: float arithmetic on dequantized values).
OUT_DIR/<name>/ort_int8_output_0.pb holds ONNX Runtime's output with its optimisations on (its own
int8 kernels), and OUT_DIR/<name>/float_output_0.pb the float model's, for the report.
OUT_DIR/<name>_float/ holds the float model with its own output as the reference, the 16
calibration inputs (calib/*.npy) and ort_quantized_rel_l2.txt: the relative L2 error of ONNX
Runtime's quantized model against the float one on the test input (the bar for aotc's int8).

Models: tiny_cnn (models/tiny_cnn.py: Conv+BN+Relu, residual Add, MaxPool, 1x1 Conv+Clip,
GlobalAveragePool, Gemm, Softmax), quantized per output channel with int8 activations and weights
(S8S8) and with uint8 activations (U8S8); an MLP block (MatMul by constant weights + bias Add,
Relu, a second MatMul, transformer-shaped [1, 16, 64] activations), S8S8 per channel; a
transformer encoder block (transformer_block below: LayerNorm, attention with two activation
MatMuls and Softmax, Erf Gelu), S8S8 per channel. --model NAME=FLOAT.onnx adds any float model
(a torchvision export: `--model resnet50=OUT/resnet50/model.onnx`).
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_cnn  # noqa: E402


def mlp(seed):
    rng = np.random.default_rng(seed)
    d, h = 64, 128
    inits = [
        numpy_helper.from_array(rng.normal(0, 1 / np.sqrt(d), (d, h)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.normal(0, 0.1, h).astype(np.float32), "b1"),
        numpy_helper.from_array(rng.normal(0, 1 / np.sqrt(h), (h, d)).astype(np.float32), "w2"),
        numpy_helper.from_array(rng.normal(0, 0.1, d).astype(np.float32), "b2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m1"], name="fc1"),
        helper.make_node("Add", ["m1", "b1"], ["a1"], name="fc1_bias"),
        helper.make_node("Relu", ["a1"], ["r1"], name="relu"),
        helper.make_node("MatMul", ["r1", "w2"], ["m2"], name="fc2"),
        helper.make_node("Add", ["m2", "b2"], ["y"], name="fc2_bias"),
    ]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, d])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, d])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def transformer_block(seed):
    """A pre-norm transformer encoder block as the TorchScript exporter writes one at opset 17:
    LayerNormalization, Q/K/V projections (MatMul + bias Add), heads by Reshape + Transpose,
    Q K^T (MatMul of two activations) scaled by Mul, Softmax, P V, the output projection and a
    residual Add, then LayerNormalization, MatMul + bias, the exact Gelu written with Erf, MatMul +
    bias and the second residual Add. [1, 16, 64] activations, 4 heads of 16."""
    rng = np.random.default_rng(seed)
    seq, d, heads, hidden = 16, 64, 4, 128
    hd = d // heads
    inits, nodes = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array, np.float32), name))
        return name

    def i64(name, values):
        inits.append(numpy_helper.from_array(np.asarray(values, np.int64), name))
        return name

    def node(op, ins, name, **attrs):
        nodes.append(helper.make_node(op, ins, [name], name=name, **attrs))
        return name

    def linear(x, din, dout, name):
        w = const(name + "_w", rng.normal(0, 1 / np.sqrt(din), (din, dout)))
        b = const(name + "_b", rng.normal(0, 0.02, dout))
        return node("Add", [node("MatMul", [x, w], name), b], name + "_bias")

    def layer_norm(x, name):
        g = const(name + "_g", 1 + rng.normal(0, 0.1, d))
        b = const(name + "_b", rng.normal(0, 0.1, d))
        return node("LayerNormalization", [x, g, b], name, axis=-1, epsilon=1e-5)

    heads_shape = i64("heads_shape", [1, seq, heads, hd])
    model_shape = i64("model_shape", [1, seq, d])
    h = layer_norm("x", "ln1")
    q = node("Transpose", [node("Reshape", [linear(h, d, d, "q"), heads_shape], "q_heads")], "q_t", perm=[0, 2, 1, 3])
    k = node("Transpose", [node("Reshape", [linear(h, d, d, "k"), heads_shape], "k_heads")], "k_t", perm=[0, 2, 3, 1])
    v = node("Transpose", [node("Reshape", [linear(h, d, d, "v"), heads_shape], "v_heads")], "v_t", perm=[0, 2, 1, 3])
    scores = node("Mul", [node("MatMul", [q, k], "qk"), const("scale", 1 / np.sqrt(hd))], "qk_scaled")
    ctx = node("MatMul", [node("Softmax", [scores], "probs", axis=-1), v], "pv")
    ctx = node("Reshape", [node("Transpose", [ctx], "ctx_t", perm=[0, 2, 1, 3]), model_shape], "ctx")
    r1 = node("Add", ["x", linear(ctx, d, d, "o")], "residual1")
    f = linear(layer_norm(r1, "ln2"), d, hidden, "fc1")
    erf = node("Erf", [node("Div", [f, const("sqrt2", np.sqrt(2.0))], "gelu_div")], "gelu_erf")
    g = node("Mul", [node("Mul", [f, node("Add", [erf, const("one", 1.0)], "gelu_add")], "gelu_mul"),
                     const("half", 0.5)], "gelu")
    node("Add", [r1, linear(g, hidden, d, "fc2")], "y")
    graph = helper.make_graph(nodes, "transformer_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, d])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, d])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def input_of(model):
    i = model.graph.input[0]
    shape = [d.dim_value if d.dim_value > 0 else 1 for d in i.type.tensor_type.shape.dim]  # symbolic (batch) -> 1
    return i.name, shape


def quantize(float_path, qdq_path, seed, activation_type):
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)

    model = onnx.load(float_path)
    name, shape = input_of(model)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{name: x} for x in calibration_inputs(shape, seed)])

        def get_next(self):
            return next(self.batches, None)

    quantize_static(float_path, qdq_path, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=activation_type, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax)


def calibration_inputs(shape, seed):
    """The 16 seeded inputs ONNX Runtime calibrates on (written out for aotc's own calibration)."""
    rng = np.random.default_rng(seed + 100)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(16)]


def run_ort(path, feed, optimize):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return s.run(None, feed)[0], s.get_outputs()[0].name


def save(array, name, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def main(argv):
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization.shape_inference import quant_pre_process

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", action="append", default=[], metavar="NAME=FLOAT.onnx",
                    help="also quantize this float model (S8S8, per channel), e.g. a torchvision export; "
                         "repeatable; with --only-extra, only these")
    ap.add_argument("--only-extra", action="store_true")
    args = ap.parse_args(argv)
    cases = [] if args.only_extra else [
        ("tiny_cnn_s8s8", tiny_cnn.build(args.seed), QuantType.QInt8),
        ("tiny_cnn_u8s8", tiny_cnn.build(args.seed), QuantType.QUInt8),
        ("mlp_s8s8", mlp(args.seed), QuantType.QInt8),
        ("transformer_s8s8", transformer_block(args.seed), QuantType.QInt8)]
    for spec in args.model:
        name, _, path = spec.partition("=")
        if not name.isidentifier() or not path:
            ap.error(f"--model {spec}: expected NAME=FLOAT.onnx")
        cases.append((name, onnx.load(path), QuantType.QInt8))
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, act in cases:
            d = os.path.join(args.out, name)
            os.makedirs(os.path.join(d, "test_data_set_bs1"), exist_ok=True)
            raw, pre = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + "_pre.onnx")
            onnx.save_model(model, raw)
            # ONNX Runtime's recommended preprocessing (shape inference, BatchNormalization folded).
            quant_pre_process(raw, pre, skip_symbolic_shape=True)
            qdq = os.path.join(d, "model.onnx")
            quantize(pre, qdq, args.seed, act)
            in_name, shape = input_of(model)
            x = np.random.default_rng(args.seed + 7).standard_normal(shape).astype(np.float32)
            ref, out_name = run_ort(qdq, {in_name: x}, optimize=False)
            ort_int8, _ = run_ort(qdq, {in_name: x}, optimize=True)
            flt, _ = run_ort(raw, {in_name: x}, optimize=False)
            save(x, in_name, os.path.join(d, "test_data_set_bs1", "input_0.pb"))
            save(ref, out_name, os.path.join(d, "test_data_set_bs1", "output_0.pb"))
            save(ort_int8, out_name, os.path.join(d, "ort_int8_output_0.pb"))
            save(flt, out_name, os.path.join(d, "float_output_0.pb"))
            # The float model with its reference and the calibration inputs, for aotc's own int8 path
            # (aotc-model-check --int8-calib); ORT's quantization error on the same input is the bar.
            fd = os.path.join(args.out, name + "_float")
            os.makedirs(os.path.join(fd, "test_data_set_bs1"), exist_ok=True)
            os.makedirs(os.path.join(fd, "calib"), exist_ok=True)
            onnx.save_model(model, os.path.join(fd, "model.onnx"))
            save(x, in_name, os.path.join(fd, "test_data_set_bs1", "input_0.pb"))
            save(flt, out_name, os.path.join(fd, "test_data_set_bs1", "output_0.pb"))
            for k, c in enumerate(calibration_inputs(shape, args.seed)):
                np.save(os.path.join(fd, "calib", f"sample_{k:02d}.npy"), c)
            with open(os.path.join(fd, "ort_quantized_rel_l2.txt"), "w") as f:
                f.write(f"{float(np.linalg.norm(ref - flt) / np.linalg.norm(flt)):.6g}\n")
            ops = sorted({n.op_type for n in onnx.load(qdq).graph.node})
            rel = lambda a, b: float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))  # noqa: E731
            # How far the spec reading itself moves when the input moves by a few float32 ulps
            # (relative 1e-6): the spread any two exact implementations can show on this model.
            u = np.random.default_rng(1).uniform(-1, 1, x.shape)
            moved, _ = run_ort(qdq, {in_name: (x * (1 + 1e-6 * u)).astype(np.float32)}, optimize=False)
            print(f"{name}: {len(onnx.load(qdq).graph.node)} nodes ({', '.join(ops)}); rel L2 vs float "
                  f"{rel(ref, flt):.2e}, ORT int8 kernels vs ORT spec reading {rel(ort_int8, ref):.2e}, "
                  f"spec reading with the input x (1 + 1e-6 u) {rel(moved, ref):.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
