#!/usr/bin/env python3
"""Issue 8's design question on the CPU: a residual Add fused into the int8 convolution's
requantising epilogue rounds once where a QDQ graph rounds twice (the Conv's output quantised to
int8, dequantised, added to the dequantised residual, quantised again). How far apart are they?

    python3 tools/qdq_fused_add_check.py FLOAT_MODEL.onnx OUT_DIR

Quantises FLOAT_MODEL (input named "input", [1, 3, 224, 224]; e.g. models/resnet50_onnx.py's
export) with ONNX Runtime's quantize_static (QDQ, per channel, int8 activations and weights,
MinMax on 16 seeded N(0,1) inputs) into OUT_DIR/qdq.onnx; writes OUT_DIR/fused.onnx, the same
graph with the Quantize/Dequantize pair between each Conv and the Add it feeds removed (one
rounding); runs both and the float model in ONNX Runtime (graph optimisations off: the QDQ
arithmetic as specified, float on dequantised values) on 4 seeded inputs and prints the relative
L2 errors: each against the float model, and one rounding against the QDQ graph as written.
"""
import sys, numpy as np, onnx, onnxruntime as ort
from onnxruntime.quantization import quantize_static, CalibrationDataReader, QuantFormat, QuantType
src = sys.argv[1]; out = sys.argv[2]
rng = np.random.default_rng(0)
class R(CalibrationDataReader):
    def __init__(s): s.d = iter([{"input": rng.standard_normal((1,3,224,224)).astype(np.float32)} for _ in range(16)])
    def get_next(s): return next(s.d, None)
quantize_static(src, out + "/qdq.onnx", R(), quant_format=QuantFormat.QDQ, per_channel=True,
                activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
m = onnx.load(out + "/qdq.onnx")
prod = {o: n for n in m.graph.node for o in n.output}
removed = 0
for n in m.graph.node:
    if n.op_type != "Add": continue
    for i, x in enumerate(n.input):
        dq = prod.get(x)
        if dq is None or dq.op_type != "DequantizeLinear": continue
        q = prod.get(dq.input[0])
        if q is None or q.op_type != "QuantizeLinear": continue
        c = prod.get(q.input[0])
        if c is not None and c.op_type == "Conv":
            n.input[i] = q.input[0]; removed += 1
            break
onnx.save(m, out + "/fused.onnx")
so = ort.SessionOptions(); so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
so.intra_op_num_threads = 1
a = ort.InferenceSession(out + "/qdq.onnx", so); b = ort.InferenceSession(out + "/fused.onnx", so)
f = ort.InferenceSession(src, so)
ea, eb, ab = [], [], []
for k in range(4):
    x = np.random.default_rng(100 + k).standard_normal((1,3,224,224)).astype(np.float32)
    ya, yb, yf = (s.run(None, {"input": x})[0] for s in (a, b, f))
    rel = lambda u, v: float(np.linalg.norm(u - v) / np.linalg.norm(v))
    ea.append(rel(ya, yf)); eb.append(rel(yb, yf)); ab.append(rel(yb, ya))
print(f"conv->add Q/DQ pairs removed: {removed}")
print("QDQ as written vs float: rel L2", ["%.3e" % v for v in ea])
print("one rounding (fused add) vs float:", ["%.3e" % v for v in eb])
print("one rounding vs QDQ as written (the QDQ-import bar is 1e-2):", ["%.3e" % v for v in ab])
