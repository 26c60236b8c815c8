#!/usr/bin/env python3
"""One-convolution models that make aotc compile every CUTLASS 3.x convolution kernel a network can
ask for: a kernel of ir/ops/conv_configs.h's sm_90 wgmma rows is set by its row (tile, stages) and
the activation fused into its epilogue (bias and residual are run-time arguments), so one model per
activation, compiled once per row with `--conv-config ROW`, covers them all. Used by
tools/build_kernel_library.sh to build the kernel library from the configuration table rather than
from whole networks. Built with the onnx package alone (no torch).

Each model: x [32, 256, 28, 28] float32 -> Conv 3x3 pad 1 (256 -> 256, bias) -> activation -> y.
Its implicit GEMM (25088 x 256) fills every row's wave rule (conv_wgmma_fill), so the forced row
applies. The activations are those exporters write after a convolution (torchvision's CNNs and
timm's): none (a convolution before a residual Add or a projection), Relu, Clip(0, 6) (ReLU6),
HardSwish, SiLU (Mul(x, Sigmoid(x)), which aotc's fuse_silu makes Swish), Sigmoid, Gelu (erf),
LeakyRelu(0.1).

usage: python3 models/kernel_library_models.py OUT_DIR   (prints the files it wrote)
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ACTIVATIONS = ["none", "relu", "relu6", "hardswish", "silu", "sigmoid", "gelu", "leakyrelu"]
# The activations that are one ONNX op on the convolution's output: op type and attributes.
UNARY = {"relu": ("Relu", {}), "hardswish": ("HardSwish", {}), "sigmoid": ("Sigmoid", {}), "gelu": ("Gelu", {}),
         "leakyrelu": ("LeakyRelu", {"alpha": 0.1})}


def build(act):
    rng = np.random.default_rng(0)
    cin = cout = 256
    w = numpy_helper.from_array((rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2.0 / (cin * 9))).astype(np.float32), "w")
    b = numpy_helper.from_array((rng.standard_normal(cout) * 0.01).astype(np.float32), "b")
    inits = [w, b]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    out = "c" if act == "none" else "y"
    if act in UNARY:
        op, attrs = UNARY[act]
        nodes.append(helper.make_node(op, ["c"], ["y"], name="act", **attrs))
    elif act == "relu6":
        inits += [numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
                  numpy_helper.from_array(np.array(6.0, np.float32), "hi")]
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"], name="act"))
    elif act == "silu":
        nodes.append(helper.make_node("Sigmoid", ["c"], ["s"], name="sig"))
        nodes.append(helper.make_node("Mul", ["c", "s"], ["y"], name="act"))
    elif act != "none":
        raise ValueError(act)
    graph = helper.make_graph(nodes, "conv_" + act,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, cin, 28, 28])],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, [32, cout, 28, 28])], inits)
    # Opset 20: the first with Gelu.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    for act in ACTIVATIONS:
        path = os.path.join(a.out_dir, f"conv_{act}.onnx")
        onnx.save(build(act), path)
        print(path)


if __name__ == "__main__":
    main()
