#!/usr/bin/env python3
"""int8 accuracy on a small real data set (issue 8; design.md section 4): scikit-learn's digits
(1,797 8x8 images, bundled with scikit-learn, no download), an MLP 64-128-64-10 trained here with
a fixed seed, exported with the onnx helpers as Gemm + Relu layers, then run through aotc's int8
path on the CPU reference (aotc-model-check --int8-calib: calibration on training images, every
Gemm int8, the code --precision int8 runs before codegen) and scored against the true labels.

    python3 models/digits_int8.py AOTC_MODEL_CHECK OUT_DIR [--calibrator minmax] [--max-drop 1.0]

Prints fp32 (ONNX Runtime) and int8 (aotc) test accuracy; exit 1 when int8 loses more than
--max-drop percentage points (TensorRT's usual bar for int8 image classifiers is 1 point).
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def train(seed):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, random_state=seed, stratify=y)
    mlp = MLPClassifier(hidden_layer_sizes=(128, 64), max_iter=400, random_state=seed).fit(x_tr, y_tr)
    return mlp, x_tr, x_te, y_te


def export(mlp, batch):
    nodes, inits, prev = [], [], "pixels"
    for i, (w, b) in enumerate(zip(mlp.coefs_, mlp.intercepts_)):
        inits += [numpy_helper.from_array(w.astype(np.float32), f"fc{i}.weight"),
                  numpy_helper.from_array(b.astype(np.float32), f"fc{i}.bias")]
        out = f"fc{i}.out" if i + 1 < len(mlp.coefs_) else "logits"
        nodes.append(helper.make_node("Gemm", [prev, f"fc{i}.weight", f"fc{i}.bias"], [out], name=f"fc{i}"))
        prev = out
        if i + 1 < len(mlp.coefs_):
            nodes.append(helper.make_node("Relu", [prev], [f"relu{i}.out"], name=f"relu{i}"))
            prev = f"relu{i}.out"
    graph = helper.make_graph(nodes, "digits_mlp", [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, [batch, 64])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 10])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="aotc models/digits_int8.py")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def save(array, name, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checker")
    ap.add_argument("out")
    ap.add_argument("--calibrator", default="minmax")
    ap.add_argument("--max-drop", type=float, default=1.0, help="percentage points of accuracy int8 may lose")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import onnxruntime as ort

    mlp, x_tr, x_te, y_te = train(args.seed)
    batch = len(x_te)
    d = args.out
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    os.makedirs(os.path.join(d, "calib"), exist_ok=True)
    model_path = os.path.join(d, "model.onnx")
    onnx.save_model(export(mlp, batch), model_path)
    (logits,) = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"]).run(None, {"pixels": x_te})
    save(x_te, "pixels", os.path.join(d, "test_data_set_0", "input_0.pb"))
    save(logits, "logits", os.path.join(d, "test_data_set_0", "output_0.pb"))
    # Calibration: training images only (one batch of the model's size).
    np.save(os.path.join(d, "calib", "train.npy"), x_tr[:batch])
    out_dir = os.path.join(d, "int8_outputs")
    cmd = [args.checker, d, "--int8-calib", os.path.join(d, "calib"), "--int8-calibrator", args.calibrator,
           "--int8-max-rel-l2", "1", "--write-outputs", out_dir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(r.stdout.strip())
    if r.returncode != 0 and not os.path.exists(os.path.join(out_dir, "output_0.pb")):
        print(r.stderr.strip())
        return 1
    int8_logits = numpy_helper.to_array(onnx.load_tensor(os.path.join(out_dir, "output_0.pb")))
    fp32_acc = 100.0 * float(np.mean(logits.argmax(1) == y_te))
    int8_acc = 100.0 * float(np.mean(int8_logits.argmax(1) == y_te))
    sk_acc = 100.0 * mlp.score(x_te, y_te)
    print(f"digits test set ({batch} images): scikit-learn {sk_acc:.2f}%, fp32 (ONNX Runtime) {fp32_acc:.2f}%, "
          f"int8 (aotc, {args.calibrator}) {int8_acc:.2f}%, drop {fp32_acc - int8_acc:.2f} points (bar {args.max_drop})")
    return 0 if fp32_acc - int8_acc <= args.max_drop else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
