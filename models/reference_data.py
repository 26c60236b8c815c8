# Reference data without torch: seeded model inputs (numpy), ONNX Runtime CPU outputs, the ONNX
# backend test_data_set layout (input_K.pb / output_K.pb TensorProtos), and the whole-model metric
# (relative L2 error and max abs error over max|ref|). Shared by the exporter, the PyTorch peer
# benchmark and the device script's summary, and tested on machines without torch or a GPU.
import os
from typing import Dict, List, Sequence

import numpy as np

kRelL2Limit = 1e-4         # whole-model fp32 limits (design.md section 4)
kMaxAbsOverRefLimit = 1e-3


def make_inputs(spec, batch: int, seed: int) -> List[np.ndarray]:
    """One array per input of a ModelSpec, from numpy's PCG64 seeded with `seed`. Never zeros."""
    rng = np.random.default_rng(seed)
    arrays = []
    for inp in spec.inputs:
        shape = (batch,) + tuple(inp.shape)
        if inp.kind == "normal":
            arr = rng.standard_normal(shape, dtype=np.float32)
        elif inp.kind == "tokens":
            arr = rng.integers(0, inp.high, size=shape, dtype=np.int64)
        elif inp.kind == "mask":
            # Each row attends to a prefix of random length in [len/2, len]; row 0 to everything,
            # so both the padded and the unpadded path are exercised.
            length = shape[-1]
            arr = np.zeros(shape, dtype=np.int64)
            for row in range(batch):
                keep = length if row == 0 else int(rng.integers(length // 2, length + 1))
                arr[row, :keep] = 1
        else:
            raise ValueError(f"unknown input kind '{inp.kind}' for input '{inp.name}'")
        arrays.append(arr.astype(np.dtype(inp.dtype), copy=False))
    return arrays


def run_ort(model_path: str, feeds: Dict[str, np.ndarray], optimization: str = "basic"):
    """ONNX Runtime CPU outputs (list, in the model's output order). 'basic' optimisation keeps
    the graph op-by-op (constant folding only), the most literal reading of the model."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[optimization]
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def ort_io_names(model_path: str):
    import onnxruntime as ort
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    return [i.name for i in session.get_inputs()], [o.name for o in session.get_outputs()]


def save_tensor(path: str, array: np.ndarray, name: str) -> None:
    from onnx import numpy_helper
    tensor = numpy_helper.from_array(np.ascontiguousarray(array), name=name)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(tensor.SerializeToString())
    os.replace(tmp, path)


def load_tensor(path: str) -> np.ndarray:
    import onnx
    from onnx import numpy_helper
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def write_test_data_set(directory: str, input_names: Sequence[str], inputs: Sequence[np.ndarray],
                        output_names: Sequence[str], outputs: Sequence[np.ndarray]) -> None:
    """The ONNX backend test layout: DIR/input_K.pb and DIR/output_K.pb, K in declaration order."""
    if len(input_names) != len(inputs) or len(output_names) != len(outputs):
        raise ValueError("names and arrays differ in count")
    os.makedirs(directory, exist_ok=True)
    for k, (name, arr) in enumerate(zip(input_names, inputs)):
        save_tensor(os.path.join(directory, f"input_{k}.pb"), arr, name)
    for k, (name, arr) in enumerate(zip(output_names, outputs)):
        save_tensor(os.path.join(directory, f"output_{k}.pb"), arr, name)


def read_test_data_set(directory: str, prefix: str) -> List[np.ndarray]:
    arrays = []
    k = 0
    while os.path.exists(os.path.join(directory, f"{prefix}_{k}.pb")):
        arrays.append(load_tensor(os.path.join(directory, f"{prefix}_{k}.pb")))
        k += 1
    return arrays


def model_metric(actual: np.ndarray, expected: np.ndarray) -> Dict[str, object]:
    """Relative L2 error ||a-e||/||e|| and max|a-e|/max|e| in float64; NaN/Inf positions must
    match exactly and are excluded from the norms. 'ok' applies the whole-model fp32 limits."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        return {"ok": False, "reason": f"shape {list(a.shape)} != expected {list(e.shape)}",
                "rel_l2": float("inf"), "max_abs_over_max_ref": float("inf")}
    nonfinite_a, nonfinite_e = ~np.isfinite(a), ~np.isfinite(e)
    same_nonfinite = bool(np.array_equal(np.isnan(a), np.isnan(e)) and
                          np.array_equal(np.isposinf(a), np.isposinf(e)) and
                          np.array_equal(np.isneginf(a), np.isneginf(e)))
    mask = ~(nonfinite_a | nonfinite_e)
    diff = (a - e)[mask]
    ref = e[mask]
    ref_norm = float(np.linalg.norm(ref))
    diff_norm = float(np.linalg.norm(diff))
    max_ref = float(np.max(np.abs(ref))) if ref.size else 0.0
    max_abs = float(np.max(np.abs(diff))) if diff.size else 0.0
    rel_l2 = diff_norm / ref_norm if ref_norm > 0 else (0.0 if diff_norm == 0 else float("inf"))
    ratio = max_abs / max_ref if max_ref > 0 else (0.0 if max_abs == 0 else float("inf"))
    ok = same_nonfinite and rel_l2 < kRelL2Limit and ratio < kMaxAbsOverRefLimit
    result = {"ok": bool(ok), "rel_l2": rel_l2, "max_abs": max_abs, "max_ref": max_ref,
              "max_abs_over_max_ref": ratio, "nonfinite_match": same_nonfinite,
              "elements": int(a.size)}
    if not same_nonfinite:
        result["reason"] = "NaN/Inf positions differ"
    elif not ok:
        result["reason"] = "over the whole-model limits (rel L2 < 1e-4, max abs < 1e-3 max|ref|)"
    return result


def combine_metrics(metrics: Sequence[Dict[str, object]]) -> Dict[str, object]:
    """Several outputs: the worst of each figure; ok only if every output is ok."""
    if not metrics:
        return {"ok": False, "reason": "no outputs compared", "rel_l2": float("inf"),
                "max_abs_over_max_ref": float("inf")}
    worst = dict(max(metrics, key=lambda m: float(m["rel_l2"])))
    worst["max_abs_over_max_ref"] = max(float(m["max_abs_over_max_ref"]) for m in metrics)
    worst["ok"] = all(bool(m["ok"]) for m in metrics)
    worst["outputs"] = len(metrics)
    return worst
