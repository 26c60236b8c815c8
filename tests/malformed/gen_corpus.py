#!/usr/bin/env python3
"""Writes the malformed-model corpus (issue 10) into a folder: MODELS/*.onnx, the files some cases
need beside them (external data, links, FIFOs), and manifest.json with each case's expected outcome.

Expectations come from the ONNX specification (onnx.proto, Operators.md, IR.md) and the promises of
docs/reliability.md, never from running aotc: "error" = exit 2 with one line (naming the node when
`node` is set), "ok" = exit 0. A few cases the spec leaves open (a name that is not UTF-8) accept
either outcome ("ok_or_error"), which still requires no crash, one line and no file left.
Run: gen_corpus.py OUT_DIR   (the build does this; tests/malformed/CMakeLists.txt)
"""
import json
import os
import random
import shutil
import struct
import sys
import time

import onnx
from onnx import TensorProto, helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
OPSET = 17  # the opset of the generated models (any in aotc's range)
# aotc's documented caps (docs/reliability.md "Limits"); the cases probe at and beyond each.
MAX_NAME_BYTES = 4096
MAX_GRAPH_INPUTS = 4096
MAX_GRAPH_OUTPUTS = 4096
MAX_NODES = 1_000_000
MAX_NODE_INPUTS = 4096
NEWEST_OPSET = onnx.defs.onnx_opset_version()


class Corpus:
    def __init__(self, out):
        self.out = out
        self.cases = []
        self.ids = set()

    def add(self, cls, name, payload, expect, why, node=None, mode="check", args=None, folder=False):
        """payload: a ModelProto, bytes, or a callable(dir) -> model path written there."""
        cid = f"{cls}.{name}"
        assert cid not in self.ids, cid
        self.ids.add(cid)
        rel_dir = os.path.join("cases", cls, name) if folder else os.path.join("cases", cls)
        d = os.path.join(self.out, rel_dir)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, name + ".onnx") if folder else os.path.join(d, name + ".onnx")
        if callable(payload):
            payload = payload(d)
        if isinstance(payload, onnx.ModelProto):
            payload = payload.SerializeToString()
        if payload is not None:
            with open(path, "wb") as f:
                f.write(payload)
        self.cases.append({"id": cid, "class": cls, "model": os.path.relpath(path, self.out),
                           "expect": expect, "node": node, "mode": mode, "args": args or [],
                           "why": why})


def model(nodes, inputs, outputs, inits=(), opset=OPSET, opsets=None, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=opsets or [helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def relu_model():
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [1, 4])], [vi("y", [1, 4])])


def one_node(op, attrs=None, in_shapes=([2, 3, 4, 5],), out_shape=None, inits=(), name="bad_node",
             extra_inputs=(), in_dtypes=None, out_dtype=F):
    """A model of one node `name` whose inputs are graph inputs (x0, x1, ...) plus `extra_inputs`
    (initializer names)."""
    ins = [vi(f"x{i}", s, (in_dtypes or [F] * len(in_shapes))[i]) for i, s in enumerate(in_shapes)]
    node = helper.make_node(op, [i.name for i in ins] + list(extra_inputs), ["y"], name=name, **(attrs or {}))
    return model([node], ins, [helper.make_tensor_value_info("y", out_dtype, out_shape)], inits)


def raw_f(name, dims, values):
    return helper.make_tensor(name, F, dims, struct.pack(f"<{len(values)}f", *values), raw=True)


def i64(name, values, dims=None):
    return helper.make_tensor(name, I64, [len(values)] if dims is None else dims, values)


# ---------------------------------------------------------------------------------------------
def protobuf_cases(c):
    base = relu_model()
    base.graph.initializer.append(raw_f("w", [64], [1.0] * 64))
    base.graph.node.append(helper.make_node("Add", ["y", "y"], ["z"], name="add"))
    data = base.SerializeToString()
    # Strict prefixes: ONNX requires a graph with outputs and an opset; every prefix ends inside a
    # length-delimited field or before the opset_import (field 8, written last).
    cuts = sorted(set([1, 2, 3, 5, 8, 13] + [len(data) * k // 40 for k in range(1, 40)] + [len(data) - 1, len(data) - 2]))
    for k in cuts:
        c.add("protobuf", f"truncated_{k}", data[:k], "error", "a strict prefix of a model is not a complete ModelProto")
    rng = random.Random(10)
    for k in range(20):
        n = rng.choice([1, 7, 64, 512, 4096])
        c.add("protobuf", f"random_{k}", bytes(rng.getrandbits(8) for _ in range(n)), "error",
              "random bytes are not a ModelProto with a graph")
    c.add("protobuf", "empty_file", b"", "error", "an empty file has no graph")
    c.add("protobuf", "text_not_binary", str(base).encode(), "error", "text format is not the binary protobuf")
    # Wrong wire types: the graph field (7) as a varint, ir_version (1) as length-delimited, etc.
    c.add("protobuf", "graph_as_varint", bytes([0x08, 0x08, 0x38, 0x05]), "error", "field 7 must be length-delimited")
    c.add("protobuf", "graph_as_fixed64", bytes([0x08, 0x08, 0x39]) + b"\0" * 8, "error", "field 7 must be length-delimited")
    c.add("protobuf", "graph_as_fixed32", bytes([0x3d]) + b"\0" * 4, "error", "field 7 must be length-delimited")
    c.add("protobuf", "node_as_varint", bytes([0x3a, 0x02, 0x08, 0x01]), "error", "GraphProto.node must be a message")
    c.add("protobuf", "length_beyond_end", bytes([0x3a, 0xff, 0xff, 0xff, 0x0f]) + b"\0" * 8, "error",
          "a length prefix past the end of the file")
    c.add("protobuf", "varint_11_bytes", bytes([0x08] + [0xff] * 10 + [0x01]), "error", "a varint longer than 10 bytes")
    c.add("protobuf", "end_group_tag", bytes([0x0c]), "error", "an END_GROUP without a START_GROUP")
    c.add("protobuf", "field_zero", bytes([0x00, 0x01]), "error", "field number 0 is invalid")
    c.add("protobuf", "no_graph", helper.make_model(helper.make_graph([], "g", [], [])).SerializeToString()[:2] +
          b"", "error", "a ModelProto without a graph")
    # Single-byte corruptions of a valid model that make a length prefix overrun.
    for k in range(8):
        b = bytearray(data)
        b[1] = 0xff if k % 2 else 0x7f  # ir_version's varint grows into the next tag
        b[k + 3] ^= 0x80
        c.add("protobuf", f"flipped_{k}", bytes(b), "ok_or_error",
              "a corrupted byte may still parse; must not crash")


def structure_cases(c):
    x, y = vi("x", [1, 4]), vi("y", [1, 4])
    n = helper.make_node
    c.add("structure", "cycle_two_nodes", model([n("Relu", ["b"], ["a"], name="bad_node"), n("Relu", ["a"], ["b"], name="n2")], [x], [vi("b", [1, 4])]),
          "error", "nodes must be topologically sorted; a cycle cannot be", node="bad_node")
    c.add("structure", "self_loop", model([n("Add", ["x", "y"], ["y"], name="bad_node")], [x], [y]),
          "error", "a node reading its own output is a cycle", node="bad_node")
    c.add("structure", "dangling_input", model([n("Relu", ["nowhere"], ["y"], name="bad_node")], [x], [y]),
          "error", "every input must be a graph input, initializer or earlier output", node="bad_node")
    c.add("structure", "out_of_order", model([n("Relu", ["a"], ["y"], name="bad_node"), n("Relu", ["x"], ["a"], name="first")], [x], [y]),
          "error", "IR.md: nodes are topologically sorted", node="bad_node")
    c.add("structure", "duplicate_node_output", model([n("Relu", ["x"], ["y"], name="n1"), n("Relu", ["x"], ["y"], name="bad_node")], [x], [y]),
          "error", "SSA: a name is assigned once", node="bad_node")
    c.add("structure", "output_listed_twice", model([n("Split", ["x"], ["y", "y"], name="bad_node", axis=1, num_outputs=2)], [x], [vi("y", [1, 2])], opset=18),
          "error", "SSA: a name is assigned once", node="bad_node")
    c.add("structure", "output_shadows_input", model([n("Relu", ["x"], ["x"], name="bad_node")], [x], [x]),
          "error", "SSA: a node output may not reuse a graph input name", node="bad_node")
    c.add("structure", "output_shadows_initializer", model([n("Relu", ["x"], ["w"], name="bad_node")], [x], [vi("w", [1, 4])],
                                                           [helper.make_tensor("w", F, [1, 4], [0.0] * 4)]),
          "error", "SSA: a node output may not reuse an initializer name", node="bad_node")
    c.add("structure", "empty_op_type", model([n("", ["x"], ["y"], name="bad_node")], [x], [y]),
          "error", "op_type is required", node="bad_node")
    c.add("structure", "unknown_op_type", model([n("NoSuchOp", ["x"], ["y"], name="bad_node")], [x], [y]),
          "error", "not an operator of the default domain", node="bad_node")
    c.add("structure", "lowercase_op_type", model([n("relu", ["x"], ["y"], name="bad_node")], [x], [y]),
          "error", "op types are case-sensitive", node="bad_node")
    c.add("structure", "node_without_outputs", model([n("Relu", ["x"], [], name="bad_node"), n("Relu", ["x"], ["y"], name="ok")], [x], [y]),
          "error", "Relu has exactly one output", node="bad_node")
    c.add("structure", "graph_without_outputs", model([n("Relu", ["x"], ["y"], name="r")], [x], []),
          "error", "a graph has at least one output")
    c.add("structure", "graph_output_not_produced", model([n("Relu", ["x"], ["y"], name="r")], [x], [vi("zz", [1, 4])]),
          "error", "a graph output must be produced")
    c.add("structure", "duplicate_graph_input", model([n("Relu", ["x"], ["y"], name="r")], [x, x], [y]),
          "error", "SSA: input names are unique")
    c.add("structure", "duplicate_initializer", model([n("Add", ["x", "w"], ["y"], name="r")], [x], [y],
                                                      [helper.make_tensor("w", F, [4], [0.0] * 4)] * 2),
          "error", "SSA: initializer names are unique")
    c.add("structure", "empty_graph_input_name", model([n("Relu", ["x"], ["y"], name="r")], [x, vi("", [1])], [y]),
          "error", "a graph input needs a name")
    c.add("structure", "empty_required_input", model([n("Add", ["x", ""], ["y"], name="bad_node")], [x], [y]),
          "error", "Add's second input is required", node="bad_node")
    c.add("structure", "too_many_inputs", model([n("Relu", ["x", "x"], ["y"], name="bad_node")], [x], [y]),
          "error", "Relu has one input", node="bad_node")
    c.add("structure", "too_few_inputs", model([n("Add", ["x"], ["y"], name="bad_node")], [x], [y]),
          "error", "Add has two inputs", node="bad_node")
    c.add("structure", "too_many_outputs", model([n("Relu", ["x"], ["y", "y2"], name="bad_node")], [x], [y]),
          "error", "Relu has one output", node="bad_node")
    c.add("structure", "no_nodes_input_is_output", model([], [x], [x]),
          "ok", "a graph may pass an input straight to an output")
    c.add("structure", "unused_input", model([n("Relu", ["x"], ["y"], name="r")], [x, vi("unused", [3])], [y]),
          "ok", "an unused input is valid")
    c.add("structure", "same_output_twice", model([n("Relu", ["x"], ["y"], name="r")], [x], [y, y]),
          "ok_or_error", "the spec does not forbid listing an output twice")
    c.add("structure", "dead_nodes", model([n("Relu", ["x"], ["d1"], name="dead"), n("Relu", ["x"], ["y"], name="r")], [x], [y]),
          "ok", "unused nodes are valid")
    c.add("structure", "node_named_twice", model([n("Relu", ["x"], ["a"], name="same"), n("Relu", ["a"], ["y"], name="same")], [x], [y]),
          "ok", "node names need not be unique (IR.md)")
    c.add("structure", "empty_node_names", model([n("Relu", ["x"], ["a"]), n("Relu", ["a"], ["y"])], [x], [y]),
          "ok", "node names are optional")
    c.add("structure", "initializer_is_output", model([], [], [vi("w", [2])], [helper.make_tensor("w", F, [2], [1.0, 2.0])]),
          "ok_or_error", "a graph of constants only (nothing to run)")


def type_cases(c):
    n = helper.make_node
    for t in [0, 17, 26, 99, 1000, -1, 2147483647]:
        c.add("types", f"input_dtype_{t if t >= 0 else 'neg'}", model([n("Relu", ["x"], ["y"], name="r")], [vi("x", [1, 4], t)], [vi("y", [1, 4])]),
              "error", "elem_type 0 is UNDEFINED; others outside TensorProto.DataType or unsupported")
    c.add("types", "input_dtype_string", model([n("Identity", ["x"], ["y"], name="r")], [vi("x", [2], TensorProto.STRING)], [vi("y", [2], TensorProto.STRING)]),
          "error", "string tensors are not computed on the GPU (docs/ops.md)")
    c.add("types", "input_not_tensor", model([n("Relu", ["x"], ["y"], name="r")],
                                             [helper.make_value_info("x", helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, [2])))],
                                             [vi("y", [2])]),
          "error", "sequence inputs are not tensors")
    c.add("types", "input_no_type", model([n("Relu", ["x"], ["y"], name="r")], [onnx.ValueInfoProto(name="x")], [vi("y", [2])]),
          "error", "a graph input must have a type")
    for a, b in [(F, I64), (F, TensorProto.DOUBLE), (TensorProto.INT32, I64), (TensorProto.FLOAT16, F), (TensorProto.BOOL, F)]:
        c.add("types", f"add_mismatch_{a}_{b}", one_node("Add", None, ([2, 3], [2, 3]), [2, 3], in_dtypes=[a, b]),
              "error", "Add: T is one type for both inputs", node="bad_node")
    c.add("types", "matmul_mismatch", one_node("MatMul", None, ([2, 3], [3, 4]), [2, 4], in_dtypes=[F, TensorProto.DOUBLE]),
          "error", "MatMul: T is one type", node="bad_node")
    c.add("types", "relu_on_bool", one_node("Relu", None, ([4],), [4], in_dtypes=[TensorProto.BOOL]),
          "error", "Relu's T is a float or signed type", node="bad_node")
    c.add("types", "sqrt_on_int", one_node("Sqrt", None, ([4],), [4], in_dtypes=[I64], out_dtype=I64),
          "error", "Sqrt's T is a float type", node="bad_node")
    c.add("types", "and_on_float", one_node("And", None, ([4], [4]), [4], out_dtype=TensorProto.BOOL),
          "error", "And's T is bool", node="bad_node")
    c.add("types", "where_cond_float", one_node("Where", None, ([4], [4], [4]), [4]),
          "error", "Where's condition is bool", node="bad_node")
    for t in [0, 99, 17, -3]:
        c.add("types", f"cast_to_{t if t >= 0 else 'neg'}", one_node("Cast", {"to": t}, ([4],), [4]),
              "error", "Cast's `to` must be a supported TensorProto.DataType", node="bad_node")
    c.add("types", "output_declared_wrong_dtype", one_node("Relu", None, ([4],), [4], out_dtype=I64),
          "error", "Relu of float is float; the declared int64 output contradicts it")
    for t in [0, 99, -1]:
        w = helper.make_tensor("w", F, [4], [1.0] * 4)
        w.data_type = t
        c.add("types", f"initializer_dtype_{t if t >= 0 else 'neg'}", one_node("Add", None, ([4],), [4], inits=[w], extra_inputs=["w"]),
              "error", "an initializer's data_type must be a known type")
    c.add("types", "gather_float_indices", one_node("Gather", {"axis": 0}, ([4, 2], [3]), [3, 2]),
          "error", "Gather's indices are int32/int64", node="bad_node")
    c.add("types", "reshape_float_shape", one_node("Reshape", None, ([4],), [4], inits=[helper.make_tensor("s", F, [1], [4.0])], extra_inputs=["s"]),
          "error", "Reshape's shape is int64", node="bad_node")
    c.add("types", "add_int8_ok", one_node("Add", None, ([4], [4]), [4], in_dtypes=[TensorProto.INT8] * 2, out_dtype=TensorProto.INT8),
          "ok", "Add of int8 is defined since opset 14")


def shape_cases(c):
    n = helper.make_node
    for d in [-1, -5, -(2 ** 63)]:
        c.add("shapes", f"input_dim_{abs(d) if d > -(2**63) else 'int64min'}_neg", model([n("Relu", ["x"], ["y"], name="r")], [vi("x", [2, d])], [vi("y", [2, 1])]),
              "error", "a dimension is >= 0 (IR.md)")
    c.add("shapes", "input_dims_overflow", model([n("Relu", ["x"], ["y"], name="r")], [vi("x", [2 ** 32, 2 ** 32])], [vi("y", [1])]),
          "error", "the element count overflows int64")
    c.add("shapes", "input_dims_overflow_many", model([n("Relu", ["x"], ["y"], name="r")], [vi("x", [2 ** 16] * 5)], [vi("y", [1])]),
          "error", "the element count overflows int64")
    c.add("shapes", "input_over_1tib", model([n("Relu", ["x"], ["y"], name="r")], [vi("x", [2 ** 20, 2 ** 19])], [vi("y", [1])]),
          "error", "over aotc's 1 TiB tensor limit (docs/reliability.md)")
    c.add("shapes", "input_dim_int64max", model([n("Relu", ["x"], ["y"], name="r")], [vi("x", [2 ** 63 - 1])], [vi("y", [1])]),
          "error", "over the 1 TiB tensor limit")
    c.add("shapes", "zero_dim_relu", model([n("Relu", ["x"], ["y"], name="r")], [vi("x", [0, 4])], [vi("y", [0, 4])]),
          "ok", "empty tensors are valid")
    c.add("shapes", "zero_dim_add_broadcast", one_node("Add", None, ([0, 4], [1, 4]), [0, 4]),
          "ok", "broadcasting with an empty dim gives an empty result")
    c.add("shapes", "zero_dim_overflow_product", model([n("Relu", ["x"], ["y"], name="r")], [vi("x", [0, 2 ** 62, 2 ** 62])], [vi("y", [0, 2 ** 62, 2 ** 62])]),
          "ok_or_error", "zero elements, but the other dims' product overflows")
    c.add("shapes", "rank_0_input", model([n("Relu", ["x"], ["y"], name="r")], [vi("x", [])], [vi("y", [])]),
          "ok", "scalars are tensors of rank 0")
    c.add("shapes", "symbolic_dim_not_first", model([n("Relu", ["x"], ["y"], name="r")], [vi("x", [1, "n"])], [vi("y", [1, "n"])]),
          "error", "aotc needs static shapes; symbolic non-batch dims need --input-shape")
    c.add("shapes", "no_shape", model([n("Relu", ["x"], ["y"], name="r")], [helper.make_tensor_value_info("x", F, None)], [vi("y", None)]),
          "error", "aotc needs static shapes")
    c.add("shapes", "add_incompatible", one_node("Add", None, ([3], [4]), [4]),
          "error", "3 and 4 do not broadcast", node="bad_node")
    c.add("shapes", "matmul_inner_mismatch", one_node("MatMul", None, ([2, 3], [4, 5]), [2, 5]),
          "error", "MatMul's inner dims must match", node="bad_node")
    c.add("shapes", "concat_mismatch", one_node("Concat", {"axis": 0}, ([2, 3], [2, 4]), [4, 3]),
          "error", "Concat: all dims but the axis must match", node="bad_node")
    for tag, s in [("two_minus_one", [-1, -1]), ("minus_two", [-2, 4]), ("wrong_count", [5, 5]),
                   ("huge", [2 ** 40, 2 ** 40]), ("zero_from_missing", [0, 0, 0, 0, 0, 0])]:
        c.add("shapes", f"reshape_{tag}", one_node("Reshape", None, ([2, 3, 4, 5],), None, inits=[i64("s", s)], extra_inputs=["s"]),
              "error", "Reshape: at most one -1, dims >= -1, same element count", node="bad_node")
    c.add("shapes", "reshape_shape_not_1d", one_node("Reshape", None, ([2, 3],), None, inits=[i64("s", [6], [1, 1])], extra_inputs=["s"]),
          "error", "Reshape's shape is 1-D", node="bad_node")
    c.add("shapes", "reshape_zero_allowzero", one_node("Reshape", {"allowzero": 1}, ([0, 3],), None, inits=[i64("s", [3, 0])], extra_inputs=["s"]),
          "ok", "allowzero=1 makes 0 a real zero dim: 0 elements either way")
    c.add("shapes", "conv_input_rank_1", one_node("Conv", None, ([4], [1, 1, 1]), None),
          "error", "Conv's X is N x C x spatial", node="bad_node")
    c.add("shapes", "conv_kernel_larger_than_input", one_node("Conv", None, ([1, 1, 2, 2], [1, 1, 5, 5]), None),
          "error", "the output spatial size would be negative", node="bad_node")
    c.add("shapes", "conv_channel_mismatch", one_node("Conv", None, ([1, 3, 8, 8], [4, 2, 3, 3]), None),
          "error", "W's C must be X's C / group", node="bad_node")
    c.add("shapes", "expand_incompatible", one_node("Expand", None, ([3],), None, inits=[i64("s", [4])], extra_inputs=["s"]),
          "error", "3 and 4 do not broadcast", node="bad_node")
    c.add("shapes", "expand_negative", one_node("Expand", None, ([1],), None, inits=[i64("s", [-4])], extra_inputs=["s"]),
          "error", "a negative dim is not a shape", node="bad_node")
    c.add("shapes", "slice_steps_zero", one_node("Slice", None, ([10],), None, inits=[i64("st", [0]), i64("en", [5]), i64("ax", [0]), i64("sp", [0])],
                                                  extra_inputs=["st", "en", "ax", "sp"]),
          "error", "Slice: steps cannot be 0", node="bad_node")
    c.add("shapes", "transpose_perm_wrong_length", one_node("Transpose", {"perm": [0, 1]}, ([2, 3, 4],), None),
          "error", "perm is a permutation of the axes", node="bad_node")
    c.add("shapes", "gemm_rank_3", one_node("Gemm", None, ([2, 3, 4], [4, 5]), None),
          "error", "Gemm's A is 2-D", node="bad_node")


def attribute_cases(c):
    A = helper.make_attribute
    cases = [
        ("concat_no_axis", "Concat", {}, ([2, 3], [2, 3]), "axis is required"),
        ("cast_no_to", "Cast", {}, ([4],), "to is required"),
        ("maxpool_no_kernel", "MaxPool", {}, ([1, 1, 4, 4],), "kernel_shape is required"),
        ("averagepool_no_kernel", "AveragePool", {}, ([1, 1, 4, 4],), "kernel_shape is required"),
        ("softmax_axis_beyond", "Softmax", {"axis": 4}, ([2, 3],), "axis in [-r, r-1]"),
        ("softmax_axis_neg_beyond", "Softmax", {"axis": -3}, ([2, 3],), "axis in [-r, r-1]"),
        ("softmax_axis_huge", "Softmax", {"axis": 2 ** 62}, ([2, 3],), "axis in [-r, r-1]"),
        ("softmax_axis_int64min", "Softmax", {"axis": -(2 ** 63)}, ([2, 3],), "axis in [-r, r-1]"),
        ("concat_axis_beyond", "Concat", {"axis": 2}, ([2, 3], [2, 3]), "axis in [-r, r-1]"),
        ("concat_axis_huge_neg", "Concat", {"axis": -(2 ** 40)}, ([2, 3], [2, 3]), "axis in [-r, r-1]"),
        ("flatten_axis_beyond", "Flatten", {"axis": 5}, ([2, 3],), "axis in [-r, r]"),
        ("gather_axis_beyond", "Gather", {"axis": 3}, ([2, 3], [2]), "axis in [-r, r-1]"),
        ("split_axis_beyond", "Split", {"axis": 7, "num_outputs": 1}, ([2, 3],), "axis in [-r, r-1]"),
        ("argmax_axis_beyond", "ArgMax", {"axis": 9}, ([2, 3],), "axis in [-r, r-1]"),
        ("layernorm_axis_beyond", "LayerNormalization", {"axis": 3}, ([2, 3], [3]), "axis in [-r, r-1]"),
        ("transpose_perm_dup", "Transpose", {"perm": [0, 0, 1]}, ([2, 3, 4],), "perm is a permutation"),
        ("transpose_perm_oob", "Transpose", {"perm": [0, 1, 5]}, ([2, 3, 4],), "perm is a permutation"),
        ("transpose_perm_neg", "Transpose", {"perm": [0, -1, 1]}, ([2, 3, 4],), "perm is a permutation"),
        ("conv_stride_zero", "Conv", {"strides": [0, 0]}, ([1, 1, 4, 4], [1, 1, 3, 3]), "strides are positive"),
        ("conv_stride_neg", "Conv", {"strides": [-1, 1]}, ([1, 1, 4, 4], [1, 1, 3, 3]), "strides are positive"),
        ("conv_kernel_neg", "Conv", {"kernel_shape": [-3, 3]}, ([1, 1, 4, 4], [1, 1, 3, 3]), "kernel_shape matches W"),
        ("conv_kernel_zero", "Conv", {"kernel_shape": [0, 0]}, ([1, 1, 4, 4], [1, 1, 3, 3]), "kernel_shape matches W"),
        ("conv_dilation_zero", "Conv", {"dilations": [0, 1]}, ([1, 1, 4, 4], [1, 1, 3, 3]), "dilations are positive"),
        ("conv_pads_neg", "Conv", {"pads": [-1, -1, -1, -1]}, ([1, 1, 4, 4], [1, 1, 3, 3]), "pads are >= 0"),
        ("conv_pads_wrong_len", "Conv", {"pads": [1, 1, 1]}, ([1, 1, 4, 4], [1, 1, 3, 3]), "pads has 2 values per spatial axis"),
        ("conv_pads_huge", "Conv", {"pads": [2 ** 62] * 4}, ([1, 1, 4, 4], [1, 1, 3, 3]), "output size overflows"),
        ("conv_group_zero", "Conv", {"group": 0}, ([1, 2, 4, 4], [2, 2, 3, 3]), "group >= 1"),
        ("conv_group_neg", "Conv", {"group": -2}, ([1, 2, 4, 4], [2, 2, 3, 3]), "group >= 1"),
        ("conv_group_not_dividing", "Conv", {"group": 3}, ([1, 4, 4, 4], [4, 1, 3, 3]), "C divisible by group"),
        ("conv_strides_wrong_len", "Conv", {"strides": [1, 1, 1]}, ([1, 1, 4, 4], [1, 1, 3, 3]), "one stride per spatial axis"),
        ("conv_auto_pad_bogus", "Conv", {"auto_pad": "SIDEWAYS"}, ([1, 1, 4, 4], [1, 1, 3, 3]), "auto_pad is one of four strings"),
        ("convtranspose_stride_2_31", "ConvTranspose", {"strides": [2 ** 31, 1]}, ([1, 1, 2 ** 30, 1], [1, 1, 1, 1]), "the output (2^61 rows) is over 1 TiB"),
        ("convtranspose_stride_huge", "ConvTranspose", {"strides": [2 ** 62, 1]}, ([1, 1, 2 ** 20, 1], [1, 1, 1, 1]), "the output size overflows"),
        ("convtranspose_outpad_huge", "ConvTranspose", {"output_padding": [2 ** 62, 0]}, ([1, 1, 4, 4], [1, 1, 3, 3]), "output_padding < stride"),
        ("convtranspose_dilation_huge", "ConvTranspose", {"dilations": [2 ** 40, 2 ** 40]}, ([1, 1, 4, 4], [1, 1, 2 ** 20, 1]), "the output size overflows"),
        ("conv_dilation_huge", "Conv", {"dilations": [2 ** 40, 2 ** 40]}, ([1, 1, 4, 4], [1, 1, 3, 3]), "the window overflows"),
        ("maxpool_kernel_zero", "MaxPool", {"kernel_shape": [0, 0]}, ([1, 1, 4, 4],), "kernel dims are positive"),
        ("maxpool_kernel_neg", "MaxPool", {"kernel_shape": [-2, 2]}, ([1, 1, 4, 4],), "kernel dims are positive"),
        ("maxpool_stride_zero", "MaxPool", {"kernel_shape": [2, 2], "strides": [0, 0]}, ([1, 1, 4, 4],), "strides are positive"),
        ("maxpool_kernel_huge", "MaxPool", {"kernel_shape": [2 ** 40, 2 ** 40]}, ([1, 1, 4, 4],), "kernel larger than the padded input"),
        ("avgpool_pads_neg", "AveragePool", {"kernel_shape": [2, 2], "pads": [-5, 0, 0, 0]}, ([1, 1, 4, 4],), "pads are >= 0"),
        ("lrn_size_zero", "LRN", {"size": 0}, ([1, 3, 4, 4],), "size is positive"),
        ("depthtospace_blocksize_zero", "DepthToSpace", {"blocksize": 0}, ([1, 4, 2, 2],), "blocksize is positive"),
        ("depthtospace_blocksize_neg", "DepthToSpace", {"blocksize": -2}, ([1, 4, 2, 2],), "blocksize is positive"),
        ("spacetodepth_blocksize_zero", "SpaceToDepth", {"blocksize": 0}, ([1, 1, 4, 4],), "blocksize is positive"),
        ("gemm_transA_string", "Gemm", {"transA": "yes"}, ([2, 3], [3, 4]), "transA is an int"),
        ("softmax_axis_string", "Softmax", {"axis": "one"}, ([2, 3],), "axis is an int"),
        ("softmax_axis_float", "Softmax", {"axis": 1.0}, ([2, 3],), "axis is an int"),
        ("softmax_axis_ints", "Softmax", {"axis": [1, 2]}, ([2, 3],), "axis is an int"),
        ("leakyrelu_alpha_string", "LeakyRelu", {"alpha": "0.1"}, ([4],), "alpha is a float"),
        ("layernorm_epsilon_int", "LayerNormalization", {"epsilon": 1}, ([2, 3], [3]), "epsilon is a float"),
        ("transpose_perm_float", "Transpose", {"perm": [1.0, 0.0]}, ([2, 3],), "perm is ints"),
        ("conv_strides_string", "Conv", {"strides": "1,1"}, ([1, 1, 4, 4], [1, 1, 3, 3]), "strides are ints"),
        ("cast_to_string_attr", "Cast", {"to": "float"}, ([4],), "to is an int"),
        ("concat_axis_graph", "Concat", None, ([2], [2]), "axis is an int, not a graph"),
        ("depthtospace_mode_bogus", "DepthToSpace", {"blocksize": 2, "mode": "XYZ"}, ([1, 4, 2, 2],), "mode is DCR or CRD"),
        ("resize_mode_bogus", "Resize", {"mode": "magic"}, ([1, 1, 2, 2],), "mode is nearest, linear or cubic"),
        ("gelu_approximate_bogus", "Gelu", {"approximate": "exact"}, ([4],), "approximate is none or tanh"),
        ("topk_k_missing", "TopK", {}, ([4],), "K is a required input"),
        ("onehot_axis_beyond", "Hardmax", {"axis": 5}, ([2, 3],), "axis in [-r, r-1]"),
        ("reducesum_keepdims_string", "ReduceSum", {"keepdims": "true"}, ([2, 3],), "keepdims is an int"),
        ("argmax_keepdims_float", "ArgMax", {"keepdims": 1.5}, ([2, 3],), "keepdims is an int"),
    ]
    for name, op, attrs, shapes, why in cases:
        if op == "LayerNormalization":
            m = one_node(op, attrs, (shapes[0],), None, inits=[helper.make_tensor("sc", F, [3], [1.0] * 3)], extra_inputs=["sc"])
        else:
            m = one_node(op, attrs, shapes, None)
        if name == "concat_axis_graph":
            m.graph.node[0].attribute.append(A("axis", helper.make_graph([], "sub", [], [])))
        if op == "Split":
            m.opset_import[0].version = 18
        if op == "Gelu":
            m.opset_import[0].version = 20
        if op == "Resize":
            m.graph.node[0].input.extend(["", "sc"])
            m.graph.initializer.append(helper.make_tensor("sc", F, [4], [1, 1, 2, 2]))
        if op == "Gather":
            m.graph.input[1].type.tensor_type.elem_type = I64
        c.add("attributes", name, m, "error", why, node="bad_node")
    # Attributes whose container is malformed.
    m = one_node("Softmax", {"axis": 1}, ([2, 3],), None)
    m.graph.node[0].attribute.extend([A("axis", 0)])
    c.add("attributes", "given_twice", m, "error", "attribute names are unique in a node", node="bad_node")
    m = one_node("Relu", None, ([4],), None)
    m.graph.node[0].attribute.extend([onnx.AttributeProto(name="", type=onnx.AttributeProto.INT, i=1)])
    c.add("attributes", "no_name", m, "error", "an attribute has a name", node="bad_node")
    m = one_node("Softmax", None, ([2, 3],), None)
    m.graph.node[0].attribute.extend([onnx.AttributeProto(name="axis")])
    c.add("attributes", "undefined_type_no_value", m, "error", "an attribute carries a value", node="bad_node")
    m = one_node("Softmax", None, ([2, 3],), None)
    a99 = onnx.AttributeProto()
    a99.ParseFromString(_key(1, 2) + _varint(4) + b"axis" + _key(20, 0) + _varint(99) + _key(3, 0) + _varint(1))
    m.graph.node[0].attribute.extend([a99])
    c.add("attributes", "type_99", m, "ok_or_error",
          "proto2 keeps an unknown enum value as an unknown field: `type` reads as unset (then the value present, i, decides)")
    m = one_node("Softmax", None, ([2, 3],), None)
    m.graph.node[0].attribute.extend([onnx.AttributeProto(name="axis", ref_attr_name="outer")])
    c.add("attributes", "ref_attr_outside_function", m, "error", "ref_attr_name is only valid in functions", node="bad_node")
    m = one_node("Relu", {"no_such_attribute": 3}, ([4],), None)
    c.add("attributes", "unknown_attribute", m, "ok_or_error", "the spec does not say whether unknown attributes are errors")
    m = one_node("Softmax", {"axis": -1}, ([2, 3],), None)
    c.add("attributes", "softmax_axis_minus_one", m, "ok", "axis -1 is the last axis")


def initializer_cases(c):
    def add_model(w, name="w"):
        return one_node("Add", None, ([4],), [4], inits=[w], extra_inputs=[name], name="add")

    t = raw_f("w", [4], [1.0] * 4)
    t.raw_data = t.raw_data[:7]
    c.add("initializers", "raw_too_short", add_model(t), "error", "raw_data is exactly numel * size bytes")
    t = raw_f("w", [4], [1.0] * 4)
    t.raw_data += b"\0" * 5
    c.add("initializers", "raw_too_long", add_model(t), "error", "raw_data is exactly numel * size bytes")
    t = onnx.TensorProto(name="w", data_type=F, dims=[4], float_data=[1.0] * 3)
    c.add("initializers", "float_data_too_short", add_model(t), "error", "float_data has numel values")
    t = onnx.TensorProto(name="w", data_type=F, dims=[4], float_data=[1.0] * 9)
    c.add("initializers", "float_data_too_long", add_model(t), "error", "float_data has numel values")
    t = raw_f("w", [4], [1.0] * 4)
    t.float_data.extend([1.0] * 4)
    c.add("initializers", "raw_and_typed", add_model(t), "error", "raw_data and typed fields are exclusive")
    t = helper.make_tensor("w", F, [4], [1.0] * 4)
    t.int64_data.extend([1] * 4)
    c.add("initializers", "float_and_int64_data", add_model(t), "error", "a float tensor keeps its values in float_data")
    t = onnx.TensorProto(name="w", data_type=F, dims=[4])
    t.int64_data.extend([1] * 4)
    c.add("initializers", "wrong_typed_field", add_model(t), "error", "a float tensor keeps its values in float_data")
    t = onnx.TensorProto(name="w", data_type=F, dims=[4])
    c.add("initializers", "no_data", add_model(t), "error", "4 elements need data")
    t = onnx.TensorProto(name="w", data_type=F, dims=[2 ** 31])
    t.raw_data = b"\0" * 16
    c.add("initializers", "claims_8gib_has_16b", add_model(t), "error", "raw_data shorter than the claim")
    t = onnx.TensorProto(name="w", data_type=F, dims=[2 ** 34])
    t.float_data.extend([1.0] * 4)
    c.add("initializers", "claims_64gib_typed", add_model(t), "error", "float_data shorter than the claim")
    t = onnx.TensorProto(name="w", data_type=F, dims=[-4])
    c.add("initializers", "negative_dim", add_model(t), "error", "dims are >= 0")
    t = onnx.TensorProto(name="w", data_type=F, dims=[2 ** 32, 2 ** 32])
    c.add("initializers", "dims_overflow", add_model(t), "error", "the element count overflows")
    t = helper.make_tensor("", F, [4], [1.0] * 4)
    c.add("initializers", "no_name", add_model(t, ""), "error", "an initializer has a name")
    t = onnx.TensorProto(name="w", data_type=TensorProto.STRING, dims=[2], string_data=[b"a", b"b"])
    c.add("initializers", "string_tensor", add_model(t), "error", "string tensors are not supported (docs/ops.md)")
    t = helper.make_tensor("w", F, [4], [1.0] * 4)
    t.data_location = TensorProto.EXTERNAL
    c.add("initializers", "external_and_inline", add_model(t), "error", "external data excludes inline data")
    t = helper.make_tensor("w", F, [4], [1.0] * 4)
    t.MergeFromString(_key(14, 0) + _varint(7))
    c.add("initializers", "data_location_7", add_model(t), "ok_or_error", "data_location 7 is not DataLocation")
    t = helper.make_tensor("w", TensorProto.FLOAT16, [3], [1.0] * 3)
    t.int32_data[:] = [1, 2]
    c.add("initializers", "fp16_int32_data_short", add_model(t), "error", "float16 values are numel entries of int32_data")
    t = helper.make_tensor("w", TensorProto.BOOL, [3], b"\1\1\1", raw=True)
    t.raw_data = b"\x05\x07\x09"
    c.add("initializers", "bool_bytes_not_01", one_node("And", None, ([3],), [3], inits=[t], extra_inputs=["w"], in_dtypes=[TensorProto.BOOL], out_dtype=TensorProto.BOOL),
          "ok_or_error", "bools stored as bytes other than 0/1")
    t = onnx.TensorProto(name="w", data_type=F, dims=[0])
    c.add("initializers", "empty_tensor_ok", one_node("Concat", {"axis": 0}, ([4],), [4], inits=[t], extra_inputs=["w"], name="cat"),
          "ok", "a 0-element initializer needs no data")
    t = helper.make_tensor("w", F, [], [3.0])
    c.add("initializers", "scalar_ok", add_model(t), "ok", "a rank-0 initializer")
    c.add("initializers", "int4_odd_count", add_model(helper.make_tensor("w", F, [4], [1.0] * 4)), "ok", "a plain valid initializer")
    t = helper.make_tensor("w", F, [4], [1.0] * 4)
    t.segment.begin, t.segment.end = 0, 2
    c.add("initializers", "segment_set", add_model(t), "ok_or_error", "segmented tensors are deprecated")


def external_cases(c):
    """External data: each case in its own folder, with the data file(s) beside the model."""
    def ext_model(location, offset=None, length=None, extra=(), dims=(4,)):
        t = onnx.TensorProto(name="w", data_type=F, dims=list(dims), data_location=TensorProto.EXTERNAL)
        entries = [("location", location)] if location is not None else []
        if offset is not None:
            entries.append(("offset", str(offset)))
        if length is not None:
            entries.append(("length", str(length)))
        entries += list(extra)
        for k, v in entries:
            e = t.external_data.add()
            e.key = k
            e.value = v
        return one_node("Add", None, ([4],), [4], inits=[t], extra_inputs=["w"], name="add")

    data16 = struct.pack("<4f", 1, 2, 3, 4)

    def with_file(m, files=(("w.bin", data16),), setup=None):
        def write(d):
            for fname, content in files:
                with open(os.path.join(d, fname), "wb") as f:
                    f.write(content)
            if setup:
                setup(d)
            return m.SerializeToString()
        return write

    def add(name, m, expect, why, files=(("w.bin", data16),), setup=None):
        c.add("external", name, with_file(m, files, setup), expect, why, folder=True)

    add("valid", ext_model("w.bin"), "ok", "a valid external reference")
    add("valid_offset", ext_model("w.bin", 16, 16), "ok", "offset and length inside the file",
        files=(("w.bin", b"\0" * 16 + data16),))
    add("valid_subfolder", ext_model("sub/w.bin"), "ok", "a file in a subfolder of the model's folder",
        setup=lambda d: (os.makedirs(os.path.join(d, "sub"), exist_ok=True),
                         shutil.copy(os.path.join(d, "w.bin"), os.path.join(d, "sub", "w.bin"))))
    add("dotdot", ext_model("../w.bin"), "error", "CVE-2022-25882: locations stay in the model's folder",
        setup=lambda d: open(os.path.join(d, "..", "w.bin"), "wb").write(data16))
    add("dotdot_deep", ext_model("sub/../../w.bin"), "error", "'..' leaving the folder",
        setup=lambda d: os.makedirs(os.path.join(d, "sub"), exist_ok=True))
    add("dotdot_many", ext_model("../" * 30 + "etc/passwd"), "error", "'..' leaving the folder")
    add("absolute_passwd", ext_model("/etc/passwd"), "error", "absolute paths are refused")
    add("absolute_self", ext_model(None), "error", "external data needs a location")
    add("dev_zero", ext_model("/dev/zero"), "error", "a device file is refused")
    add("dev_zero_relative", ext_model("../" * 30 + "dev/zero"), "error", "a device file is refused")
    add("proc_self_mem", ext_model("/proc/self/mem", 4096, 16), "error", "absolute paths are refused")
    add("empty_location", ext_model(""), "error", "an empty location is no file")
    add("location_is_folder", ext_model("."), "error", "a folder is not a data file")
    add("location_nul", ext_model("w.bin\0.evil"), "error", "a NUL byte in a path")
    add("missing_file", ext_model("absent.bin"), "error", "the file must exist")
    add("offset_beyond", ext_model("w.bin", 64), "error", "offset past the end of the file")
    add("length_beyond", ext_model("w.bin", 0, 4096), "error", "length past the end of the file")
    add("offset_plus_length_overflow", ext_model("w.bin", 2 ** 63 - 8, 16), "error", "offset + length overflows")
    add("offset_negative", ext_model("w.bin", -16), "error", "offsets are >= 0")
    add("length_negative", ext_model("w.bin", 0, -16), "error", "lengths are >= 0")
    add("length_mismatch", ext_model("w.bin", 0, 8), "error", "length must equal numel * size")
    add("offset_not_number", ext_model("w.bin", "12abc"), "error", "offset is a decimal integer")
    add("offset_huge_digits", ext_model("w.bin", "9" * 40), "error", "offset does not fit int64")
    add("file_too_short", ext_model("w.bin"), "error", "the file holds fewer bytes than the tensor",
        files=(("w.bin", b"\0" * 5),))
    add("claims_huge_file_small", ext_model("w.bin", dims=(2 ** 36,)), "error", "256 GiB claimed, 16 bytes there: refused before any allocation")

    def link_out(d):
        os.symlink("/etc/passwd", os.path.join(d, "link.bin"))
    add("symlink_outside", ext_model("link.bin"), "error", "a link leaving the folder is refused", setup=link_out)

    def link_dev(d):
        os.symlink("/dev/zero", os.path.join(d, "link.bin"))
    add("symlink_dev_zero", ext_model("link.bin"), "error", "a link to a device is refused", setup=link_dev)

    def link_parent(d):
        os.symlink("..", os.path.join(d, "up"))
    add("symlink_dir_escape", ext_model("up/w.bin"), "error", "a folder link leaving the folder is refused",
        setup=lambda d: (link_parent(d), open(os.path.join(d, "..", "w.bin"), "wb").write(data16)))

    def link_inside(d):
        os.symlink("w.bin", os.path.join(d, "link.bin"))
    add("symlink_inside", ext_model("link.bin"), "ok", "a link to a file inside the folder", setup=link_inside)

    def fifo(d):
        os.mkfifo(os.path.join(d, "fifo.bin"))
    add("fifo", ext_model("fifo.bin"), "error", "a FIFO is not a regular file (reading it would block)", setup=fifo)

    def loop(d):
        os.symlink("loop.bin", os.path.join(d, "loop.bin"))
    add("symlink_loop", ext_model("loop.bin"), "error", "a link to itself resolves to nothing", setup=loop)
    add("backslash_path", ext_model("..\\w.bin"), "error", "no such file (backslash is a name character on Linux)")
    add("unknown_key", ext_model("w.bin", extra=[("colour", "blue")]), "ok_or_error", "unknown keys are not defined by the spec")
    add("checksum_key", ext_model("w.bin", extra=[("checksum", "0" * 40)]), "ok", "checksum is a defined key")
    add("location_twice", ext_model("w.bin", extra=[("location", "/etc/passwd")]), "error", "keys are unique; the second escapes")


def opset_cases(c):
    n = helper.make_node
    x, y = vi("x", [1, 4]), vi("y", [1, 4])
    relu = [n("Relu", ["x"], ["y"], name="bad_node")]
    c.add("opsets", "custom_domain_op", model([n("Relu", ["x"], ["y"], name="bad_node", domain="com.evil")], [x], [y],
                                              opsets=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.evil", 1)]),
          "error", "an op of an unknown domain is not supported", node="bad_node")
    c.add("opsets", "domain_not_imported", model([n("Relu", ["x"], ["y"], name="bad_node", domain="com.other")], [x], [y]),
          "error", "a domain that is not imported", node="bad_node")
    c.add("opsets", "aotc_domain", model([n("FusedConv", ["x"], ["y"], name="bad_node", domain="aotc")], [x], [y],
                                         opsets=[helper.make_opsetid("", OPSET), helper.make_opsetid("aotc", 1)]),
          "error", "the compiler's internal domain is not for models", node="bad_node")
    c.add("opsets", "ml_domain", model([n("Normalizer", ["x"], ["y"], name="bad_node", domain="ai.onnx.ml")], [x], [y],
                                       opsets=[helper.make_opsetid("", OPSET), helper.make_opsetid("ai.onnx.ml", 3)]),
          "error", "ai.onnx.ml ops are not supported (docs/ops.md)", node="bad_node")
    for v in [0, -1, -(2 ** 63)]:
        c.add("opsets", f"version_{'neg' if v < 0 else v}{'_min' if v == -(2**63) else ''}", model(relu, [x], [y], opset=v),
              "error", "opset versions start at 1")
    for v in [NEWEST_OPSET + 1, 1000, 2 ** 31, 2 ** 63 - 1]:
        c.add("opsets", f"future_{v}", model(relu, [x], [y], opset=v),
              "error", "an opset newer than the ONNX release aotc knows has no defined semantics")
    c.add("opsets", "newest_known", model(relu, [x], [y], opset=NEWEST_OPSET), "ok", "the newest opset of the pinned onnx")
    c.add("opsets", "opset_1_relu", model(relu, [x], [y], opset=1), "ok_or_error", "opset 1 Relu had consumed_inputs")
    c.add("opsets", "no_opset_import", model(relu, [x], [y], opsets=[helper.make_opsetid("com.x", 1)]),
          "error", "the default domain must be imported")
    c.add("opsets", "no_opset_no_nodes", model([], [x], [x], opsets=[]), "ok_or_error", "no nodes need no opset")
    c.add("opsets", "default_domain_twice", model(relu, [x], [y], opsets=[helper.make_opsetid("", 13), helper.make_opsetid("", 17)]),
          "error", "a domain is imported once (IR.md: opset_import entries are per domain)")
    c.add("opsets", "ai_onnx_spelled_out", model([n("Relu", ["x"], ["y"], name="r", domain="ai.onnx")], [x], [y],
                                                 opsets=[helper.make_opsetid("ai.onnx", OPSET)]),
          "ok", "'ai.onnx' is the default domain spelled out")
    c.add("opsets", "op_newer_than_opset", model([n("Gelu", ["x"], ["y"], name="bad_node")], [x], [y], opset=13),
          "error", "Gelu exists from opset 20", node="bad_node")
    c.add("opsets", "op_removed", model([n("Scatter", ["x", "x", "x"], ["y"], name="bad_node")], [x], [y], opset=17),
          "error", "Scatter was removed in opset 11", node="bad_node")
    c.add("opsets", "function_in_model", (lambda d: _with_function().SerializeToString()),
          "error", "model-local functions are not supported", node="bad_node")


def _with_function():
    m = model([helper.make_node("MyFn", ["x"], ["y"], name="bad_node", domain="local")], [vi("x", [4])], [vi("y", [4])],
              opsets=[helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)])
    f = helper.make_function("local", "MyFn", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                             [helper.make_opsetid("", OPSET)])
    m.functions.append(f)
    return m


def name_cases(c):
    hostile = {
        "quote": "a\"b", "squote": "a'b", "backslash": "a\\b", "comment_close": "x*/ int evil; /*",
        "comment_open": "/* x", "line_comment": "// x", "newline": "a\nb", "crlf": "a\r\nb",
        "nul": "a\0b", "tab": "a\tb", "percent": "%s%n%x", "shell": "$(rm -rf /)`id`",
        "preprocessor": "\n#include </etc/passwd>\n", "c_string_break": "\"); system(\"id\"); (\"",
        "trigraph": "??/??=", "unicode": "größe_名前_🙂", "bidi": "a\u202eb", "leading_digit": "123",
        "keyword": "int", "dot_dot": "../../x", "slash": "a/b", "space": "a b", "brace": "}{",
        "backtick": "`x`", "dollar": "$x", "ansi_escape": "\x1b[31mred", "del": "a\x7fb",
        "only_underscores": "__", "reserved_prefix": "aotc_", "cuda_keyword": "__global__",
    }
    for tag, s in hostile.items():
        n = helper.make_node
        m = model([n("Relu", [s], [s + "_mid"], name=s), n("Relu", [s + "_mid"], [s + "_out"], name=s + "2")],
                  [vi(s, [1, 4])], [vi(s + "_out", [1, 4])], name=s)
        c.add("names", f"all_{tag}", m, "ok", "ONNX names are arbitrary strings; aotc escapes them (no injection)")
    # Non-UTF-8 names: proto2 does not validate strings; the spec does not decide.
    for tag, raw in [("latin1", b"gr\xf6\xdfe"), ("overlong", b"\xc0\xaf"), ("lone_cont", b"\x80\x80"), ("ff", b"\xff\xfe")]:
        base = relu_model().SerializeToString()
        m = relu_model()
        m.graph.node[0].name = "NODE_PLACEHOLDER"
        data = m.SerializeToString().replace(b"NODE_PLACEHOLDER", raw.ljust(16, b"_"))
        c.add("names", f"non_utf8_{tag}", data, "ok_or_error", "proto2 strings are not validated; UTF-8 is expected")
    # Name lengths at and beyond aotc's cap.
    for tag, length, expect in [("at_cap", MAX_NAME_BYTES, "ok"), ("over_cap", MAX_NAME_BYTES + 1, "error"),
                                ("one_mib", 1 << 20, "error"), ("sixteen_mib", 16 << 20, "error")]:
        s = "n" * length
        for where in ["node", "value", "input", "output", "initializer"]:
            if tag == "sixteen_mib" and where != "value":
                continue
            n = helper.make_node
            node_name = s if where == "node" else "bad_node"
            inp = s if where == "input" else "x"
            mid = s if where == "value" else "mid"
            out = s if where == "output" else "y"
            init = s if where == "initializer" else "w"
            m = model([n("Add", [inp, init], [mid], name=node_name), n("Relu", [mid], [out], name="r")],
                      [vi(inp, [4])], [vi(out, [4])], [helper.make_tensor(init, F, [4], [1.0] * 4)])
            c.add("names", f"long_{where}_{tag}", m, expect,
                  f"aotc caps names at {MAX_NAME_BYTES} bytes (docs/reliability.md)")
    # Compiled end to end: hostile names must not break the generated C/CUDA (a few, each runs nvcc).
    n = helper.make_node
    evil = "x*/\"\\\n#define __global__ evil\n/*'"
    m = model([n("Relu", [evil], [evil + "1"], name=evil), n("Sigmoid", [evil + "1"], ["y\"*/"], name=evil + "\r\n")],
              [vi(evil, [1, 4])], [vi("y\"*/", [1, 4])], name=evil)
    c.add("names", "compiled_injection", m, "ok", "names are reduced or escaped in generated source", mode="compile")


def bomb_cases(c):
    n = helper.make_node
    x = vi("x", [1])

    def expand(shape, name):
        return model([n("Expand", ["x", "s"], ["y"], name="bad_node")], [x], [vi("y", None)], [i64("s", shape)])
    c.add("bombs", "expand_over_1tib", expand([2 ** 20, 2 ** 20, 2 ** 4], "e"), "error", "over the 1 TiB tensor limit", node="bad_node")
    c.add("bombs", "expand_overflow", expand([2 ** 32, 2 ** 32, 2 ** 32], "e"), "error", "the element count overflows", node="bad_node")
    c.add("bombs", "tile_over_1tib", model([n("Tile", ["x", "r"], ["y"], name="bad_node")], [x], [vi("y", None)], [i64("r", [2 ** 40])]),
          "error", "over the 1 TiB tensor limit", node="bad_node")
    c.add("bombs", "tile_negative", model([n("Tile", ["x", "r"], ["y"], name="bad_node")], [x], [vi("y", None)], [i64("r", [-3])]),
          "error", "repeats are >= 0", node="bad_node")
    c.add("bombs", "tile_chain_overflow", model([n("Tile", ["x", "r"], ["t1"], name="t1"), n("Tile", ["t1", "r"], ["t2"], name="t2"),
                                                 n("Tile", ["t2", "r"], ["y"], name="bad_node")], [x], [vi("y", None)], [i64("r", [2 ** 14])]),
          "error", "2^14, 2^28, then 2^42 floats: the third Tile is over 1 TiB", node="bad_node")
    cos = helper.make_tensor("v", F, [1], [0.0])
    c.add("bombs", "constantofshape_over_1tib", model([n("ConstantOfShape", ["s"], ["y"], name="bad_node", value=cos)], [], [vi("y", None)],
                                                      [i64("s", [2 ** 41])]),
          "error", "over the 1 TiB tensor limit", node="bad_node")
    c.add("bombs", "constantofshape_negative", model([n("ConstantOfShape", ["s"], ["y"], name="bad_node", value=cos)], [], [vi("y", None)],
                                                     [i64("s", [-1])]),
          "error", "a negative dim", node="bad_node")
    c.add("bombs", "constantofshape_1gib_ok", model([n("ConstantOfShape", ["s"], ["y"], name="c", value=cos)], [], [vi("y", None)],
                                                    [i64("s", [2 ** 28])]),
          "ok", "1 GiB is under the tensor limit; too large to fold, so it is computed at run time")

    def rng(start, limit, delta, dt=I64):
        mk = (lambda nm, v: helper.make_tensor(nm, dt, [], [v]))
        return model([n("Range", ["a", "b", "d"], ["y"], name="bad_node")], [], [vi("y", None, dt)],
                     [mk("a", start), mk("b", limit), mk("d", delta)])
    c.add("bombs", "range_2e18", rng(0, 2 ** 62, 1), "error", "over the 1 TiB tensor limit", node="bad_node")
    c.add("bombs", "range_full_int64", rng(-(2 ** 63), 2 ** 63 - 1, 1), "error", "the count overflows", node="bad_node")
    c.add("bombs", "range_delta_zero", rng(0, 10, 0), "error", "a zero delta never ends", node="bad_node")
    c.add("bombs", "range_float_huge", rng(0.0, 1e30, 1e-30, F), "error", "1e60 elements", node="bad_node")
    c.add("bombs", "range_float_nan", rng(0.0, float("nan"), 1.0, F), "error", "a NaN limit has no count", node="bad_node")
    c.add("bombs", "range_float_inf", rng(0.0, float("inf"), 1.0, F), "error", "an infinite limit has no count", node="bad_node")
    c.add("bombs", "range_empty_ok", rng(10, 0, 1), "ok", "limit below start: zero elements")
    c.add("bombs", "pad_huge", model([n("Pad", ["x", "p"], ["y"], name="bad_node")], [x], [vi("y", None)], [i64("p", [2 ** 50, 2 ** 50])]),
          "error", "over the 1 TiB tensor limit", node="bad_node")
    c.add("bombs", "resize_huge_scales", model([n("Resize", ["x4", "", "sc"], ["y"], name="bad_node")], [vi("x4", [1, 1, 4, 4])], [vi("y", None)],
                                               [helper.make_tensor("sc", F, [4], [1, 1, 1e9, 1e9])]),
          "error", "over the 1 TiB tensor limit", node="bad_node")
    c.add("bombs", "resize_nan_scales", model([n("Resize", ["x4", "", "sc"], ["y"], name="bad_node")], [vi("x4", [1, 1, 4, 4])], [vi("y", None)],
                                              [helper.make_tensor("sc", F, [4], [1, 1, float("nan"), 2])]),
          "error", "a NaN scale has no size", node="bad_node")
    c.add("bombs", "resize_neg_scales", model([n("Resize", ["x4", "", "sc"], ["y"], name="bad_node")], [vi("x4", [1, 1, 4, 4])], [vi("y", None)],
                                              [helper.make_tensor("sc", F, [4], [1, 1, -2, 2])]),
          "error", "scales are positive", node="bad_node")
    c.add("bombs", "onehot_depth_huge", model([n("OneHot", ["i", "dep", "val"], ["y"], name="bad_node")], [vi("i", [4], I64)], [vi("y", None)],
                                              [i64("dep", [2 ** 40], []), helper.make_tensor("val", F, [2], [0.0, 1.0])]),
          "error", "over the 1 TiB tensor limit", node="bad_node")
    # Folding bombs: constants whose folded size or total would take unbounded memory.
    nodes = [n("ConstantOfShape", ["s"], [f"c{k}"], name=f"c{k}", value=cos) for k in range(200)]
    nodes.append(n("Sum", [f"c{k}" for k in range(200)], ["y"], name="sum"))
    c.add("bombs", "fold_200_x_64mib", model(nodes, [], [vi("y", None)], [i64("s", [2 ** 24 - 1])]),
          "ok_or_error", "200 constants of 64 MiB: folded or not, memory must stay bounded (refused by the fold budget or run at run time)")
    # Graph-size bombs.
    N = 50_000
    c.add("graph_size", "inputs_50000", model([n("Sum", [f"i{k}" for k in range(N)], ["y"], name="sum")], [vi(f"i{k}", [1]) for k in range(N)], [vi("y", [1])]),
          "error", f"over aotc's cap of {MAX_GRAPH_INPUTS} graph inputs (a C file the host compiler cannot finish)")
    c.add("graph_size", "inputs_50000_compile", lambda d: None, "error", "the same model through a full compile", mode="compile")
    c.cases[-1]["model"] = c.cases[-2]["model"]
    c.add("graph_size", "outputs_50000", model([n("Split", ["x5"], [f"o{k}" for k in range(N)], name="split", axis=0, num_outputs=N)],
                                          [vi("x5", [N])], [vi(f"o{k}", [1]) for k in range(N)], opset=18),
          "error", f"over aotc's cap of {MAX_GRAPH_OUTPUTS} graph outputs")
    c.add("graph_size", "inputs_at_cap", model([n("Sum", [f"i{k}" for k in range(MAX_GRAPH_INPUTS)], ["y"], name="sum")],
                                          [vi(f"i{k}", [1]) for k in range(MAX_GRAPH_INPUTS)], [vi("y", [1])]),
          "ok", f"exactly {MAX_GRAPH_INPUTS} inputs: at the cap")
    c.add("graph_size", "inputs_over_cap", model([n("Sum", [f"i{k}" for k in range(MAX_GRAPH_INPUTS + 1)], ["y"], name="sum")],
                                            [vi(f"i{k}", [1]) for k in range(MAX_GRAPH_INPUTS + 1)], [vi("y", [1])]),
          "error", f"one input over the cap")
    c.add("graph_size", "concat_20000_same_input", model([n("Concat", ["x"] * 20000, ["y"], name="bad_node", axis=0)], [x], [vi("y", [20000])]),
          "error", f"over aotc's cap of {MAX_NODE_INPUTS} inputs of one node (it grew to 5.6 GB)", node="bad_node", mode="compile")
    c.add("graph_size", "concat_at_cap", model([n("Concat", ["x"] * MAX_NODE_INPUTS, ["y"], name="cat", axis=0)], [x], [vi("y", [MAX_NODE_INPUTS])]),
          "ok", f"exactly {MAX_NODE_INPUTS} inputs of one node")
    c.add("graph_size", "concat_over_cap", model([n("Concat", ["x"] * (MAX_NODE_INPUTS + 1), ["y"], name="bad_node", axis=0)], [x], [vi("y", None)]),
          "error", f"one input over the cap", node="bad_node")
    c.add("graph_size", "deep_chain_20000", model([n("Relu", ["x" if k == 0 else f"v{k-1}"], [f"v{k}"], name=f"r{k}") for k in range(20000)],
                                             [x], [vi("v19999", [1])]),
          "ok", "a long chain is valid")
    c.add("graph_size", "deep_chain_20000_compile", lambda d: None, "ok_or_error", "the chain through the passes and codegen (bounded time)", mode="compile")
    c.cases[-1]["model"] = c.cases[-2]["model"]
    c.add("graph_size", "nodes_over_cap", lambda d: _many_nodes(MAX_NODES + 1), "error", f"over aotc's cap of {MAX_NODES} nodes")
    c.add("graph_size", "split_1m_outputs", model([n("Split", ["x6"], [f"o{k}" for k in range(1 << 20)], name="bad_node", axis=0, num_outputs=1 << 20)],
                                             [vi("x6", [1 << 20])], [vi("o0", [1])], opset=18),
          "error", "a node with a million outputs is over aotc's per-node cap", node="bad_node")


def _many_nodes(count):
    """A chain of `count` Identity nodes, serialized by hand (onnx.helper is slow at this size)."""
    def s(field, text):
        b = text.encode()
        return _key(field, 2) + _varint(len(b)) + b
    parts = []
    for k in range(count):
        body = s(1, "x" if k == 0 else f"v{k-1}") + s(2, f"v{k}") + s(4, "Identity")
        parts.append(_key(1, 2) + _varint(len(body)) + body)
    vi_x = onnx.helper.make_tensor_value_info("x", F, [1]).SerializeToString()
    vi_y = onnx.helper.make_tensor_value_info(f"v{count-1}", F, [1]).SerializeToString()
    graph = b"".join(parts) + s(2, "g") + _key(11, 2) + _varint(len(vi_x)) + vi_x + _key(12, 2) + _varint(len(vi_y)) + vi_y
    opset = helper.make_opsetid("", OPSET).SerializeToString()
    return _key(1, 0) + _varint(8) + _key(7, 2) + _varint(len(graph)) + graph + _key(8, 2) + _varint(len(opset)) + opset


def _key(field, wire):
    return _varint(field << 3 | wire)


def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def nesting_cases(c):
    n = helper.make_node

    def nested_if(depth):
        """If nodes nested `depth` deep through then_branch/else_branch, built as bytes (Python's
        protobuf refuses to serialize past its own recursion limit)."""
        leaf = helper.make_graph([n("Identity", ["c"], ["o"])], "leaf", [], [vi("o", [1], TensorProto.BOOL)]).SerializeToString()
        g = leaf
        for k in range(depth):
            node = n("If", ["c"], ["o"], name="bad_node" if k == depth - 1 else f"if{k}")
            nb = node.SerializeToString()
            # then_branch nests; else_branch is the leaf (both nesting would double per level).
            for field, sub in ((onnx.AttributeProto(name="then_branch", type=onnx.AttributeProto.GRAPH), g),
                               (onnx.AttributeProto(name="else_branch", type=onnx.AttributeProto.GRAPH), leaf)):
                ab = field.SerializeToString() + _key(6, 2) + _varint(len(sub)) + sub
                nb += _key(5, 2) + _varint(len(ab)) + ab
            outv = vi("o", [1], TensorProto.BOOL).SerializeToString()
            g = _key(1, 2) + _varint(len(nb)) + nb + _key(2, 2) + _varint(3) + b"sub" + _key(12, 2) + _varint(len(outv)) + outv
        # The outermost graph: input c, the nested If named bad_node.
        top = g
        top += _key(11, 2) + _varint(len(vi("c", [1], TensorProto.BOOL).SerializeToString())) + vi("c", [1], TensorProto.BOOL).SerializeToString()
        opset = helper.make_opsetid("", OPSET).SerializeToString()
        return _key(1, 0) + _varint(8) + _key(7, 2) + _varint(len(top)) + top + _key(8, 2) + _varint(len(opset)) + opset

    for depth in [1, 2, 3, 5, 10, 20, 30, 31, 32, 33, 40, 50, 64, 100, 200, 1000, 10000]:
        # Subgraphs are not supported: the outermost If is refused by name while the file parses.
        # Past protobuf's nesting limit the file itself is refused (one line, no node).
        c.add("nesting", f"if_depth_{depth}", nested_if(depth), "error",
              "If/Loop subgraphs are not supported (docs/ops.md); deep files hit the nesting cap",
              node="bad_node" if depth <= 31 else None)
    body = helper.make_graph([n("Identity", ["cond_in"], ["cond_out"]), n("Identity", ["v_in"], ["v_out"])], "body",
                             [vi("i", [], I64), vi("cond_in", [], TensorProto.BOOL), vi("v_in", [1])],
                             [vi("cond_out", [], TensorProto.BOOL), vi("v_out", [1])])
    m = model([n("Loop", ["M", "", "x"], ["y"], name="bad_node", body=body)], [vi("x", [1])], [vi("y", [1])], [i64("M", [1000000000], [])])
    c.add("nesting", "loop_1e9_trips", m, "error", "Loop is not supported (docs/ops.md)", node="bad_node")
    m = model([n("Scan", ["x"], ["y"], name="bad_node", body=body, num_scan_inputs=1)], [vi("x", [1])], [vi("y", [1])])
    c.add("nesting", "scan", m, "error", "Scan is not supported", node="bad_node")
    m = model([n("Relu", ["x"], ["y"], name="bad_node", body=body)], [vi("x", [1])], [vi("y", [1])])
    c.add("nesting", "graph_attr_on_relu", m, "error", "Relu takes no graph attribute", node="bad_node")
    m = model([n("If", ["c"], ["y"], name="bad_node")], [vi("c", [], TensorProto.BOOL)], [vi("y", [1])])
    c.add("nesting", "if_no_branches", m, "error", "If needs then_branch and else_branch", node="bad_node")
    # Deep tensor nesting: a TENSOR attribute inside a TENSOR attribute is not expressible; deep
    # TypeProto nesting (sequence of sequence ...) is.
    t = helper.make_tensor_type_proto(F, [1])
    for _ in range(45):
        t = helper.make_sequence_type_proto(t)
    m = model([n("Identity", ["x"], ["y"], name="r")], [helper.make_value_info("x", t)], [vi("y", [1])])
    c.add("nesting", "sequence_type_depth_45", m, "error", "sequence inputs are not supported")


def mutated_cases(c):
    """Field mutations of a real model (models/tiny_cnn.py: Conv, BatchNormalization, residual Add,
    MaxPool, Clip, GlobalAveragePool, Flatten, Gemm, Softmax). The spec does not decide each outcome
    in advance (a mutated stride may still be valid), so every case accepts success or one line:
    what they test is no crash, no hang and no file left, through import, inference and folding."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models"))
    import tiny_cnn
    base = tiny_cnn.build(seed=0)
    rng = random.Random(11)

    def variant():
        m = onnx.ModelProto()
        m.CopyFrom(base)
        return m
    picks = [0, -1, 2 ** 31, -(2 ** 63), 7, 2 ** 62]
    for ni, node in enumerate(base.graph.node):
        for ai, attr in enumerate(node.attribute):
            if attr.type not in (onnx.AttributeProto.INT, onnx.AttributeProto.INTS):
                continue
            for v in rng.sample(picks, 3):
                m = variant()
                a = m.graph.node[ni].attribute[ai]
                if attr.type == onnx.AttributeProto.INT:
                    a.i = v
                else:
                    a.ints[:] = [v] * max(1, len(a.ints))
                c.add("mutated", f"node{ni}_{attr.name}_{'m' if v < 0 else ''}{abs(v)}", m, "ok_or_error",
                      "a mutated attribute of a real model")
    for ii, init in enumerate(base.graph.initializer):
        for tag, f in [("dim0_zero", lambda d: 0), ("dim0_plus1", lambda d: d + 1), ("dim0_neg", lambda d: -d)]:
            if not init.dims:
                continue
            m = variant()
            m.graph.initializer[ii].dims[0] = f(init.dims[0])
            c.add("mutated", f"init{ii}_{tag}", m, "ok_or_error", "a mutated initializer shape of a real model")
        m = variant()
        t = m.graph.initializer[ii]
        t.dims[:] = list(reversed(t.dims))
        c.add("mutated", f"init{ii}_dims_reversed", m, "ok_or_error", "an initializer with its dims reversed")
    for ni, node in enumerate(base.graph.node):
        if len(node.input) >= 2:
            m = variant()
            ins = m.graph.node[ni].input
            ins[0], ins[1] = ins[1], ins[0]
            c.add("mutated", f"node{ni}_inputs_swapped", m, "ok_or_error", "two inputs of a real node swapped")
        m = variant()
        m.graph.node[ni].op_type = rng.choice(["Relu", "Add", "Conv", "Gemm", "Softmax", "Concat", "Transpose"])
        c.add("mutated", f"node{ni}_op_changed", m, "ok_or_error", "a node's op_type replaced")
    for dims in [[1, 3, 1, 1], [1, 3, 0, 32], [1, 1, 32, 32], [7, 3, 32, 32], [1, 3, 33, 31], [1, 3, 2 ** 20, 2 ** 20]]:
        m = variant()
        shape = m.graph.input[0].type.tensor_type.shape
        for k, d in enumerate(dims):
            shape.dim[k].Clear()
            shape.dim[k].dim_value = d
        c.add("mutated", "input_" + "x".join(map(str, dims)), m, "ok_or_error", "the image input reshaped")


def main():
    out = sys.argv[1]
    if os.path.isdir(os.path.join(out, "cases")):
        shutil.rmtree(os.path.join(out, "cases"))
    os.makedirs(out, exist_ok=True)
    c = Corpus(out)
    for gen in [protobuf_cases, structure_cases, type_cases, shape_cases, attribute_cases, initializer_cases,
                external_cases, opset_cases, name_cases, bomb_cases, nesting_cases, mutated_cases]:
        t0 = time.time()
        gen(c)
        if os.environ.get("GEN_CORPUS_VERBOSE"):
            print(f"  {gen.__name__}: {time.time() - t0:.1f} s", flush=True)
    # Valid-but-odd models also go through the passes, the memory plan and codegen (nvcc and the
    # host compiler run: a few only, to keep the run short).
    twins = ["structure.no_nodes_input_is_output", "structure.unused_input", "structure.dead_nodes",
             "structure.same_output_twice", "structure.initializer_is_output", "shapes.zero_dim_relu",
             "shapes.zero_dim_add_broadcast", "shapes.rank_0_input", "shapes.reshape_zero_allowzero",
             "bombs.range_empty_ok", "initializers.empty_tensor_ok", "external.valid_offset",
             "attributes.unknown_attribute", "names.all_unicode", "names.long_value_at_cap"]
    # Every hostile-name model: the names reach generated C, CUDA and the header.
    twins += [x["id"] for x in c.cases if x["id"].startswith("names.all_") and x["id"] != "names.all_unicode"]
    for cid in twins:
        case = next(x for x in c.cases if x["id"] == cid)
        c.cases.append(dict(case, id=cid + ".compile", mode="compile"))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"onnx": onnx.__version__, "cases": c.cases}, f, indent=1)
    classes = sorted({x["class"] for x in c.cases})
    print(f"gen_corpus: {len(c.cases)} cases in {len(classes)} classes -> {out}")


if __name__ == "__main__":
    main()
