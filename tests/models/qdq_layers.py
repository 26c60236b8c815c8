#!/usr/bin/env python3
"""Layer by layer: does aotc compute each quantized layer of a QDQ model as ONNX Runtime reads it?

A whole deep QDQ model cannot answer that: on seeded random-weight CNNs an input change of a few
float32 ulps moves ONNX Runtime's own output by ~6e-2 (docs/results.md, fifteenth session), so
implementations that differ only in where a product lands between two int8 steps disagree there
at the output. Here every quantized layer is cut out (onnx.utils.Extractor) between the int8
tensors it reads and the int8 tensor its QuantizeLinear writes, fed with the int8 values ONNX
Runtime computed for that model and input (graph optimisations off: the specification's float
reading), run through aotc's pipeline on the CPU reference (aotc-model-check --write-outputs), and
compared element by element: how many int8 outputs differ, and by how many steps at most.

    qdq_layers.py AOTC_MODEL_CHECK MODEL_DIR [--max-diff 1] [--max-share 1e-3] [--limit N]

MODEL_DIR as models/qdq_models.py writes it (model.onnx, test_data_set_bs1/input_0.pb). Exit 1
when any layer differs by more than --max-diff steps or in more than --max-share of its outputs
(a one-step difference is a product within float32 rounding of a rounding boundary).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

kQuantizedOps = {"Conv", "Gemm", "MatMul", "Add"}


def ort_values(model, feed, names):
    import onnxruntime as ort
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for n in names:
        if n not in have:
            m.graph.output.append(onnx.ValueInfoProto(name=n))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feed)))


def layers(model):
    """(layer node, its Q output, the int8 activations its DequantizeLinears read) per quantized
    Conv / Gemm / MatMul / Add whose output goes through a QuantizeLinear (maybe after a Relu)."""
    producer = {o: n for n in model.graph.node for o in n.output}
    inits = {i.name for i in model.graph.initializer}
    out = []
    for q in model.graph.node:
        if q.op_type != "QuantizeLinear":
            continue
        node = producer.get(q.input[0])
        if node is not None and node.op_type in ("Relu", "Clip"):
            node = producer.get(node.input[0])
        if node is None or node.op_type not in kQuantizedOps:
            continue
        acts = []
        for x in node.input:
            dq = producer.get(x)
            if dq is None or dq.op_type != "DequantizeLinear":
                acts = None
                break
            if dq.input[0] not in inits:
                acts.append(dq.input[0])
        if acts:
            out.append((node, q.output[0], acts))
    return out


def whole(checker, model_dir):
    """The whole model's output against the references qdq_models.py wrote beside it."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([checker, model_dir, "--write-outputs", tmp], capture_output=True, text=True)
        got_file = os.path.join(tmp, "output_0.pb")
        if not os.path.exists(got_file):
            print("whole model: aotc-model-check wrote no output")
            return
        got = numpy_helper.to_array(onnx.load_tensor(got_file)).astype(np.float64)
    refs = [("ONNX Runtime's spec reading", os.path.join(model_dir, "test_data_set_bs1", "output_0.pb")),
            ("its own int8 kernels", os.path.join(model_dir, "ort_int8_output_0.pb")),
            ("the float model", os.path.join(model_dir, "float_output_0.pb"))]
    parts = []
    for what, path in refs:
        if os.path.exists(path):
            ref = numpy_helper.to_array(onnx.load_tensor(path)).astype(np.float64)
            parts.append(f"{what} {np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30):.2e}")
    print("whole model, aotc's rel L2 against " + ", ".join(parts))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checker")
    ap.add_argument("model_dir")
    ap.add_argument("--max-diff", type=int, default=1)
    ap.add_argument("--max-share", type=float, default=1e-3)
    ap.add_argument("--limit", type=int, default=0, help="only the first N layers")
    ap.add_argument("--whole", action="store_true",
                    help="also run the whole model and print its output's rel L2 against ONNX Runtime's spec "
                         "reading, its own int8 kernels and the float model (qdq_models.py's files)")
    ap.add_argument("--offset-reference", type=int, default=0,
                    help="test of this checker: compare against ONNX Runtime's values plus K (saturated), "
                         "which every layer must then fail")
    a = ap.parse_args(argv)
    path = os.path.join(a.model_dir, "model.onnx")
    model = onnx.shape_inference.infer_shapes(onnx.load(path))  # the Extractor needs value_info
    extractor = onnx.utils.Extractor(model)
    x = onnx.load_tensor(os.path.join(a.model_dir, "test_data_set_bs1", "input_0.pb"))
    found = layers(model)
    if a.limit:
        found = found[:a.limit]
    names = sorted({q for _, q, _ in found} | {t for _, _, acts in found for t in acts})
    values = ort_values(model, {x.name: numpy_helper.to_array(x)}, names)
    worst, total, differing, failed = 0, 0, 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (node, q, acts) in enumerate(found):
            d = os.path.join(tmp, f"layer_{i}")
            os.makedirs(os.path.join(d, "test_data_set_bs1"))
            sub = extractor.extract_model(acts, [q])
            onnx.save(sub, os.path.join(d, "model.onnx"))
            for k, t in enumerate(acts):
                with open(os.path.join(d, "test_data_set_bs1", f"input_{k}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(values[t], t).SerializeToString())
            ref = values[q]
            with open(os.path.join(d, "test_data_set_bs1", "output_0.pb"), "wb") as f:
                f.write(numpy_helper.from_array(ref, q).SerializeToString())
            got_dir = os.path.join(d, "got")
            proc = subprocess.run([a.checker, d, "--ops", "--write-outputs", got_dir], capture_output=True, text=True)
            got_file = os.path.join(got_dir, "output_0.pb")
            if not os.path.exists(got_file):
                failed.append(f"{node.name}: aotc-model-check wrote no output: {(proc.stdout + proc.stderr).strip()[-200:]}")
                continue
            # Layers with a constant weight and Adds of two int8 tensors must become aotc's int8 ops;
            # a MatMul of two activations (attention's Q K^T and P V) or an Add of a constant may
            # stay float between its DequantizeLinear and QuantizeLinear (still checked by value).
            needs_int8 = (node.op_type == "Add" and len(acts) == 2) or (
                node.op_type != "Add" and len(acts) < len(node.input))
            fused = "aotc.QLinear" in proc.stdout or not needs_int8
            got = numpy_helper.to_array(onnx.load_tensor(got_file)).astype(np.int32)
            info = np.iinfo(ref.dtype)
            diff = np.abs(got - np.clip(ref.astype(np.int32) + a.offset_reference, info.min, info.max))
            n_diff, max_diff = int((diff > 0).sum()), int(diff.max()) if diff.size else 0
            worst, total, differing = max(worst, max_diff), total + diff.size, differing + n_diff
            share = n_diff / max(diff.size, 1)
            bad = max_diff > a.max_diff or share > a.max_share or not fused
            if bad:
                failed.append(f"{node.name} ({node.op_type}): {n_diff} of {diff.size} differ, max {max_diff} steps"
                              + ("" if fused else ", not fused into an aotc.QLinear op"))
            kind = "int8" if "aotc.QLinear" in proc.stdout else "float"
            print(f"{'FAIL' if bad else 'ok  '} {node.op_type:<6} {kind:<5} {node.name[:48]:<48} {diff.size:>8} outputs, "
                  f"{n_diff:>5} differ (max {max_diff})", flush=True)
    print(f"{os.path.basename(os.path.normpath(a.model_dir))}: {len(found)} quantized layers, {total} int8 outputs, "
          f"{differing} differ from ONNX Runtime's reading ({differing / max(total, 1):.2e}), at most {worst} step(s); "
          f"{len(failed)} layer(s) over the bar (max {a.max_diff} step, share {a.max_share:g})")
    for f in failed:
        print("  " + f)
    if a.whole:
        whole(a.checker, a.model_dir)
    return 1 if failed or not found else 0


if __name__ == "__main__":
    sys.exit(main())
