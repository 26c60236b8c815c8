#!/usr/bin/env python3
"""A tiny CNN for the README, CI and the frontend: every op family of the foundation issue in one
small model (Conv+BatchNormalization+Relu, a residual Add, MaxPool, 1x1 Conv+Clip, GlobalAveragePool,
Flatten, Gemm, Softmax), built with the onnx helpers, seeded weights, opset 17, input "image" 1x3x32x32.

    python3 models/tiny_cnn.py tiny_cnn.onnx [--with-ort-reference DIR] [--seed N]

--with-ort-reference writes a seeded random input (DIR/input_0.pb) and ONNX Runtime's output for it
(DIR/output_0.pb), as ONNX TensorProto files like the backend test data.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
NUM_CLASSES = 10


class Builder:
    """Collects nodes and initializers; weights are drawn from one seeded generator."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=np.float32), name))
        return name

    def conv(self, name, x, c_in, c_out, k, bias):
        # He initialisation keeps activations at a stable scale through the Relus.
        w = self.rng.normal(0.0, np.sqrt(2.0 / (c_in * k * k)), size=(c_out, c_in, k, k))
        inputs = [x, self.const(name + ".weight", w)]
        if bias:
            inputs.append(self.const(name + ".bias", self.rng.normal(0.0, 0.1, size=c_out)))
        pad = k // 2
        self.nodes.append(helper.make_node("Conv", inputs, [name + ".out"], name=name,
                                           kernel_shape=[k, k], pads=[pad] * 4, strides=[1, 1]))
        return name + ".out"

    def batchnorm(self, name, x, channels):
        # Non-trivial statistics so that the BN folding pass has something to get right.
        scale = self.const(name + ".weight", self.rng.uniform(0.8, 1.2, size=channels))
        shift = self.const(name + ".bias", self.rng.normal(0.0, 0.1, size=channels))
        mean = self.const(name + ".running_mean", self.rng.normal(0.0, 0.1, size=channels))
        var = self.const(name + ".running_var", self.rng.uniform(0.5, 1.5, size=channels))
        self.nodes.append(helper.make_node("BatchNormalization", [x, scale, shift, mean, var],
                                           [name + ".out"], name=name, epsilon=1e-5))
        return name + ".out"

    def op(self, op_type, name, inputs, **attrs):
        self.nodes.append(helper.make_node(op_type, inputs, [name + ".out"], name=name, **attrs))
        return name + ".out"


def build(seed=0):
    b = Builder(seed)
    x = b.op("Relu", "relu1", [b.batchnorm("bn1", b.conv("conv1", "image", 3, 16, 3, False), 16)])
    # Residual block: relu(bn(conv(relu(bn(conv(x))))) + x)
    r = b.op("Relu", "block.relu1", [b.batchnorm("block.bn1", b.conv("block.conv1", x, 16, 16, 3, False), 16)])
    r = b.batchnorm("block.bn2", b.conv("block.conv2", r, 16, 16, 3, False), 16)
    x = b.op("Relu", "block.relu2", [b.op("Add", "block.add", [r, x])])
    x = b.op("MaxPool", "pool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = b.conv("expand", x, 16, 32, 1, True)
    x = b.op("Clip", "relu6", [x, b.const("relu6.min", np.float32(0.0)), b.const("relu6.max", np.float32(6.0))])
    x = b.op("GlobalAveragePool", "gap", [x])
    x = b.op("Flatten", "flatten", [x], axis=1)
    w = b.rng.normal(0.0, np.sqrt(1.0 / 32), size=(NUM_CLASSES, 32))
    x = b.op("Gemm", "fc", [x, b.const("fc.weight", w), b.const("fc.bias", b.rng.normal(0.0, 0.1, NUM_CLASSES))],
             transB=1)
    b.nodes.append(helper.make_node("Softmax", [x], ["probabilities"], name="softmax", axis=-1))

    graph = helper.make_graph(
        b.nodes, "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, NUM_CLASSES])],
        initializer=b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="aotc models/tiny_cnn.py")
    model.ir_version = 8  # readable by onnx 1.12 (the C++ library) and onnxruntime
    onnx.checker.check_model(model, full_check=True)
    return model


def write_ort_reference(model_path, out_dir, seed):
    import onnxruntime as ort  # only needed for the reference

    os.makedirs(out_dir, exist_ok=True)
    image = np.random.default_rng(seed + 1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    (probs,) = session.run(["probabilities"], {"image": image})
    for name, array, file in (("image", image, "input_0.pb"), ("probabilities", probs, "output_0.pb")):
        with open(os.path.join(out_dir, file), "wb") as f:
            f.write(numpy_helper.from_array(array, name).SerializeToString())
    return probs


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="path of the .onnx file to write")
    parser.add_argument("--with-ort-reference", metavar="DIR",
                        help="also write input_0.pb and ONNX Runtime's output_0.pb into DIR")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    model = build(args.seed)
    onnx.save_model(model, args.output)
    print(f"wrote {args.output} ({os.path.getsize(args.output)} bytes, opset {OPSET})")
    if args.with_ort_reference:
        probs = write_ort_reference(args.output, args.with_ort_reference, args.seed)
        print(f"wrote {args.with_ort_reference}/input_0.pb, output_0.pb "
              f"(top class {int(probs.argmax())}, max prob {float(probs.max()):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
