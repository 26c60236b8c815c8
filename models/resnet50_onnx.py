#!/usr/bin/env python3
"""ResNet-50 built with the onnx package alone (no torch), for compile-time measurements on machines
without PyTorch. The topology is torchvision's resnet50 (v1.5: stride on the 3x3 conv) as the
TorchScript exporter emits it in eval mode at opset 17: BatchNormalization already folded into each
Conv's bias, Relu, residual Add, MaxPool, GlobalAveragePool, Flatten, Gemm. Weights are seeded
random (He init), so the compiled library computes something finite but meaningless: use the
torchvision export (models/export_torchvision.py) for accuracy checks.

--depth 101 / 152 gives ResNet-101 / -152 (blocks 3-4-23-3 / 3-8-36-3) and --act silu writes every
Relu as SiLU (Mul(x, Sigmoid(x)), as EfficientNet's exporters do): networks the default kernel
library was not built from, for measuring how a library built from the configuration table serves
them (docs/results.md).

usage: python3 models/resnet50_onnx.py OUT.onnx [--batch N] [--seed S] [--depth 50|101|152] [--act relu|silu]
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


BLOCKS = {50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}


class Builder:
    def __init__(self, seed, act="relu"):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0
        self.act = act

    def activation(self, y):
        r = self.name("relu" if self.act == "relu" else "silu")
        if self.act == "relu":
            self.nodes.append(helper.make_node("Relu", [y], [r], name=r))
        else:
            s = self.name("sigmoid")
            self.nodes.append(helper.make_node("Sigmoid", [y], [s], name=s))
            self.nodes.append(helper.make_node("Mul", [y, s], [r], name=r))
        return r

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def conv(self, x, cin, cout, k, stride=1, relu=True):
        w = self.name("w")
        b = self.name("b")
        fan_in = cin * k * k
        self.inits.append(numpy_helper.from_array(
            (self.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / fan_in)).astype(np.float32), w))
        self.inits.append(numpy_helper.from_array(
            (self.rng.standard_normal(cout) * 0.01).astype(np.float32), b))
        y = self.name("conv")
        pad = k // 2
        self.nodes.append(helper.make_node("Conv", [x, w, b], [y], name=y, kernel_shape=[k, k],
                                           strides=[stride, stride], pads=[pad] * 4,
                                           dilations=[1, 1], group=1))
        if not relu:
            return y
        return self.activation(y)

    def bottleneck(self, x, cin, width, stride):
        cout = width * 4
        y = self.conv(x, cin, width, 1)
        y = self.conv(y, width, width, 3, stride)
        y = self.conv(y, width, cout, 1, relu=False)
        shortcut = x
        if stride != 1 or cin != cout:
            shortcut = self.conv(x, cin, cout, 1, stride, relu=False)
        s = self.name("add")
        self.nodes.append(helper.make_node("Add", [y, shortcut], [s], name=s))
        return self.activation(s)


def build(batch, seed, depth=50, act="relu"):
    b = Builder(seed, act)
    x = b.conv("input", 3, 64, 7, 2)
    p = b.name("maxpool")
    b.nodes.append(helper.make_node("MaxPool", [x], [p], name=p, kernel_shape=[3, 3], strides=[2, 2],
                                    pads=[1, 1, 1, 1]))
    x, cin = p, 64
    for width, blocks, stride in zip([64, 128, 256, 512], BLOCKS[depth], [1, 2, 2, 2]):
        for i in range(blocks):
            x = b.bottleneck(x, cin, width, stride if i == 0 else 1)
            cin = width * 4
    g = b.name("gap")
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], [g], name=g))
    f = b.name("flatten")
    b.nodes.append(helper.make_node("Flatten", [g], [f], name=f, axis=1))
    b.inits.append(numpy_helper.from_array(
        (b.rng.standard_normal((1000, 2048)) * np.sqrt(1.0 / 2048)).astype(np.float32), "fc_w"))
    b.inits.append(numpy_helper.from_array(np.zeros(1000, np.float32) + 0.01, "fc_b"))
    b.nodes.append(helper.make_node("Gemm", [f, "fc_w", "fc_b"], ["output"], name="fc", alpha=1.0,
                                    beta=1.0, transB=1))
    graph = helper.make_graph(
        b.nodes, f"resnet{depth}" + ("" if act == "relu" else "_" + act),
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, 224, 224])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [batch, 1000])], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--depth", type=int, default=50, choices=sorted(BLOCKS))
    ap.add_argument("--act", default="relu", choices=["relu", "silu"])
    args = ap.parse_args()
    model = build(args.batch, args.seed, args.depth, args.act)
    onnx.save(model, args.out)
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    print(f"wrote {args.out}: {len(model.graph.node)} nodes, {params / 1e6:.1f} M parameters")


if __name__ == "__main__":
    main()
