#!/usr/bin/env python3
"""int8 accuracy of compiled libraries on real data (issue 8): a small convolution network trained
on scikit-learn's bundled digits (1,797 8x8 images, no download), exported by PyTorch, compiled by
aotc in fp32, fp16 and int8 (calibrated on the training split; and int8 with an --accuracy-budget
set tighter than plain int8 reaches), each library run on the GPU through its C ABI on the test
split and scored against the true labels. ONNX Runtime's fp32 score is the reference.

    python3 models/digits_cnn.py OUT_DIR [--aotc build/bin/aotc] [--no-run]   (the GPU machine)
    --no-run: train, export, calibrate and compile only (any machine with PyTorch and nvcc)

Prints one table: precision, test top-1, agreement with fp32, layers per precision (from the
compile report). Exit 1 when int8 loses more than --max-drop points against fp32, or when the
budgeted build keeps every layer in int8 (the budget did not act).
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys

import numpy as np

kBatch = 64
kCalibSamples = 512


def data(seed):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    return train_test_split(x, y, test_size=0.3, random_state=seed, stratify=y)


def train(x_tr, y_tr, seed, epochs):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    net = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr).long()
    g = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        net.train()
        for idx in torch.randperm(len(xt), generator=g).split(64):
            opt.zero_grad()
            nn.functional.cross_entropy(net(xt[idx]), yt[idx]).backward()
            opt.step()
    return net.eval()


def export(net, path):
    import torch

    torch.onnx.export(net, (torch.zeros(kBatch, 1, 8, 8),), path, input_names=["pixels"], output_names=["logits"],
                      opset_version=17, dynamo=False)


def batches(x):
    """x padded to a multiple of kBatch, split into [kBatch, 1, 8, 8] arrays."""
    pad = (-len(x)) % kBatch
    xp = np.concatenate([x, np.zeros((pad,) + x.shape[1:], np.float32)]) if pad else x
    return [np.ascontiguousarray(xp[i:i + kBatch]) for i in range(0, len(xp), kBatch)]


def run_library(lib_path, name, x):
    """Logits of every row of x from the library (its C ABI, PyTorch's CUDA memory and stream)."""
    import torch

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "device"))
    from prebuilt import Library

    lib = Library(lib_path, name)
    st, model, message = lib.create()
    if st != 0:
        raise RuntimeError(f"{name}: create failed: status {st}: {message}")
    run = lib.run_fn()
    stream = torch.cuda.current_stream()
    out = torch.empty(kBatch, 10, dtype=torch.float32, device="cuda")
    logits = []
    for xb in batches(x):
        inp = torch.from_numpy(xb).cuda()
        ins = (ctypes.c_void_p * 1)(inp.data_ptr())
        outs = (ctypes.c_void_p * 1)(out.data_ptr())
        if run(model, ins, outs, ctypes.c_void_p(stream.cuda_stream)) != 0:
            raise RuntimeError(f"{name}: run failed")
        torch.cuda.synchronize()
        logits.append(out.cpu().numpy().copy())
    lib.destroy(model)
    return np.concatenate(logits)[:len(x)]


def layer_precisions(report_path):
    """{precision: count} of the Conv / Gemm layers, from an aotc --report JSON: the int8 section's
    per-layer choices when there is one, else the dtype each convolution / GEMM node computes in."""
    try:
        with open(report_path) as f:
            rep = json.load(f)
    except (OSError, ValueError):
        return {}
    counts = {}
    layers = (rep.get("int8") or {}).get("layers")
    if layers:
        for layer in layers:
            counts[layer["precision"]] = counts.get(layer["precision"], 0) + 1
        return counts
    for n in rep.get("node_precision", []):
        if n.get("op") in ("Conv", "aotc.FusedConv", "Gemm", "MatMul"):
            p = {"float": "fp32", "float16": "fp16"}.get(n.get("dtype"), n.get("dtype"))
            counts[p] = counts.get(p, 0) + 1
    return counts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--aotc", default="build/bin/aotc")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--max-drop", type=float, default=1.0)
    ap.add_argument("--budget", default="", help="--accuracy-budget of the budgeted int8 build "
                    "(default: half the rel L2 plain int8 reaches on the calibration data, from its sensitivity table)")
    ap.add_argument("--no-run", action="store_true")
    a = ap.parse_args(argv)
    import onnxruntime as ort

    os.makedirs(a.out, exist_ok=True)
    x_tr, x_te, y_tr, y_te = data(a.seed)
    net = train(x_tr, y_tr, a.seed, a.epochs)
    model = os.path.join(a.out, "model.onnx")
    export(net, model)
    calib = os.path.join(a.out, "calib")
    os.makedirs(calib, exist_ok=True)
    for i in range(min(kCalibSamples, len(x_tr))):
        np.save(os.path.join(calib, f"train_{i:04d}.npy"), x_tr[i:i + 1])
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    ref = np.concatenate([sess.run(None, {"pixels": xb})[0] for xb in batches(x_te)])[:len(x_te)]

    # Plain int8's error on the calibration data, from the sensitivity table's whole-model line.
    cmd = [a.aotc, "calibrate", model, "--calib", calib, "-o", os.path.join(a.out, "calib_cache.json"), "--sensitivity"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(r.stdout.strip()[-1500:])
    if r.returncode != 0:
        print(r.stderr.strip()[-800:])
        return 1
    budget = a.budget
    if not budget:
        all_int8 = 0.01
        for line in r.stdout.splitlines():
            if line.startswith("every layer int8: rel L2"):
                all_int8 = float(line.split()[-1])
        budget = f"{all_int8 / 2:.4g}"
    builds = [("fp32", ["--precision", "fp32"]), ("fp16", ["--precision", "fp16"]),
              ("int8", ["--precision", "int8", "--calib", calib]),
              (f"int8 budget {budget}", ["--precision", "int8", "--calib", calib, "--accuracy-budget", budget])]
    rows = [("fp32 (ONNX Runtime)", ref, {})]
    for i, (label, args) in enumerate(builds):
        name = f"digits{i}"
        d = os.path.join(a.out, name)
        os.makedirs(d, exist_ok=True)
        lib = os.path.join(d, f"lib{name}.so")
        report = os.path.join(d, "report.json")
        cmd = [a.aotc, model, "-o", lib, "--name", name, "--arch", a.arch, "--report", report] + args
        r = subprocess.run(cmd, capture_output=True, text=True)
        with open(os.path.join(d, "compile.log"), "w") as f:
            f.write(" ".join(cmd) + "\n" + r.stdout + r.stderr)
        if r.returncode != 0:
            print(f"{label}: aotc failed: {r.stderr.strip()[-300:]}")
            return 1
        if "budget" in label:
            print("\n".join(l for l in (r.stdout + r.stderr).splitlines() if "fp16" in l or "budget" in l)[-1500:])
        if not a.no_run:
            rows.append((f"{label} (aotc)", run_library(lib, name, x_te), layer_precisions(report)))
    if a.no_run:
        print(f"compiled {len(builds)} libraries into {a.out} (--no-run)")
        return 0
    ref_pred = ref.argmax(1)
    print(f"\ndigits test split: {len(x_te)} images; calibration: {min(kCalibSamples, len(x_tr))} training images; "
          f"network: 3 convolutions (BatchNorm folded), max pool, global pool, linear; batch {kBatch}")
    print("| build | top-1 % | agreement with fp32 % | rel L2 vs ORT fp32 | Conv/Gemm layers |\n|---|---|---|---|---|")
    acc = {}
    for label, logits, prec in rows:
        top1 = 100.0 * float(np.mean(logits.argmax(1) == y_te))
        agree = 100.0 * float(np.mean(logits.argmax(1) == ref_pred))
        rel = float(np.linalg.norm(logits - ref) / np.linalg.norm(ref))
        acc[label] = top1
        print(f"| {label} | {top1:.2f} | {agree:.2f} | {rel:.2e} | {', '.join(f'{k} {v}' for k, v in sorted(prec.items())) or '-'} |")
    drop = acc["fp32 (ONNX Runtime)"] - acc["int8 (aotc)"]
    print(f"int8 drop against ONNX Runtime fp32: {drop:.2f} points (bar {a.max_drop})")
    budget_prec = rows[-1][2]
    moved = sum(v for k, v in budget_prec.items() if "int8" not in k)
    plain = sum(v for k, v in rows[-2][2].items() if "int8" not in k)
    print(f"budgeted build: {moved} layer(s) not in int8 (plain int8 build: {plain})")
    return 0 if drop <= a.max_drop and moved > plain else 1


if __name__ == "__main__":
    sys.exit(main())
