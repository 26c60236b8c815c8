"""Corpus cases about the file and the graph's form: protobuf, structure, types, shapes,
attributes and initializer data (see gen_corpus.py for what an expectation means)."""
import os
import random
import shutil
import struct
import sys

import onnx
from onnx import TensorProto, helper

from corpus_util import *  # noqa: F401,F403 (builders and constants)
from corpus_util import _key, _varint, _many_nodes


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
    for t in [0, 99, 1000, -3]:
        c.add("types", f"cast_to_{t if t >= 0 else 'neg'}", one_node("Cast", {"to": t}, ([4],), [4]),
              "error", "Cast's `to` must be a TensorProto.DataType", node="bad_node")
    # 17 (FLOAT8E4M3FN) is a valid target; the declared float output then contradicts it.
    c.add("types", "cast_to_17", one_node("Cast", {"to": 17}, ([4],), [4]),
          "error", "Cast to float8e4m3fn makes float8; the declared float output contradicts it")
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
          "error", "zero elements, but the other dims' product overflows int64 (ops multiply subsets of the dims)")
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
    # A fuzz find (fuzz_model_mutator, 2026-11-25): block_size near 2^63 overflowed the blocked-scale check.
    m = one_node("QuantizeLinear", {"axis": 1, "block_size": 2 ** 63 - 1}, ([4, 6],), None,
                 inits=[helper.make_tensor("sc", F, [4, 1], [1.0] * 4)], extra_inputs=["sc"],
                 out_dtype=TensorProto.UINT8)
    m.opset_import[0].version = 21
    c.add("attributes", "quantize_block_size_huge", m, "ok", "block_size past the axis: one block of 6 (the check overflowed)")
    # A fuzz find (fuzz_model_mutator, 2026-11-27): blocksize 2^40 overflowed blocksize^2 (UBSan).
    m = one_node("DepthToSpace", {"blocksize": 2 ** 40}, ([1, 8, 2, 2],), None)
    c.add("attributes", "depth_to_space_blocksize_huge", m, "error", "blocksize^2 overflows: not a divisor of the channels")
    m = one_node("SpaceToDepth", {"blocksize": 2 ** 40}, ([1, 8, 2, 2],), None)
    c.add("attributes", "space_to_depth_blocksize_huge", m, "error", "blocksize past the height and width")
    # A fuzz find (fuzz_model_mutator, 2026-11-30): an empty W [0, 2^62, 1, 1] with group 12: C / group
    # (2^62) times group overflowed DeformConv's channel check (UBSan); now compared by division.
    m = one_node("DeformConv", {"group": 12}, ([1, 12, 4, 4], [0, 2 ** 62, 1, 1], [1, 2, 4, 4]), None)
    m.opset_import[0].version = 19
    c.add("attributes", "deform_conv_group_times_channels_huge", m, "error", "channels do not split", node="bad_node")
    # A fuzz find (fuzz_model_mutator, 2026-11-27): an empty Einsum operand with dims whose product
    # overflows int64 overflowed its strides (UBSan in shape_strides).
    m = one_node("Einsum", {"equation": "abc,abc->a"}, ([0, 2 ** 62, 3], [0, 2 ** 62, 3]), None)
    m.opset_import[0].version = 12
    c.add("attributes", "einsum_empty_huge_dims", m, "error", "dims too large for the index arithmetic")
    # Fuzz finds (fuzz_model_mutator, 2026-11-28, device call 3): Attention's output layout multiplied
    # Q's sequence by V's head size unchecked (UBSan: signed overflow); TopK's Indices output absent
    # (an empty name) on a folded input was written anyway (assertion in Tensor::set); ScatterElements
    # on an empty folded data tensor passed null pointers to memcpy (UBSan).
    m = model([helper.make_node("Attention", ["q", "k", "v"], ["y"], name="bad_node")],
              [vi("q", [2, 3, 2 ** 31, 8]), vi("k", [2, 3, 8, 8]), vi("v", [2, 3, 8, 2 ** 31 - 1])], [vi("y", None)],
              opset=23)
    c.add("attributes", "attention_output_overflows", m, "error", "Y's element count overflows int64", node="bad_node")
    m = model([helper.make_node("Shape", ["x"], ["s"]), helper.make_node("TopK", ["s", "k"], ["v", ""], name="topk")],
              [vi("x", [2, 3, 4])], [vi("v", None, I64)], [i64("k", [1])], opset=17)
    c.add("structure", "topk_indices_absent_folded", m, "ok", "an absent optional output is not written")
    m = model([helper.make_node("Shape", ["x"], ["e"], start=3, end=1), helper.make_node("Shape", ["x"], ["i"], start=1, end=2),
               helper.make_node("ScatterElements", ["e", "i", "u"], ["y"], name="bad_node")],
              [vi("x", [2, 4, 8])], [vi("y", None, I64)], [i64("u", [3])], opset=18)
    c.add("shape", "scatter_elements_empty_data_folded", m, "error", "index 4 outside an empty axis", node="bad_node")
    # A fuzz find (fuzz_model_mutator on this machine, 2026-11-28, at the final code): DynamicQuantizeLinear
    # of an initializer with its outputs absent (empty names) was folded and stored through a null pointer
    # (UBSan). A node with no output is no longer folded; absent outputs are not written.
    k = helper.make_tensor("k", F, [3, 4], [0.5 * i - 2 for i in range(12)])
    m = model([helper.make_node("DynamicQuantizeLinear", ["k"], ["", "", ""], name="dq"),
               helper.make_node("Identity", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])], [k], opset=16)
    c.add("structure", "dynamic_quantize_outputs_absent_folded", m, "ok", "a node without outputs is not folded")
    m = model([helper.make_node("DynamicQuantizeLinear", ["k"], ["q", "", ""], name="dq")], [],
              [vi("q", [3, 4], TensorProto.UINT8)], [k], opset=16)
    c.add("structure", "dynamic_quantize_scale_absent_folded", m, "ok", "absent outputs are not written")
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
    # Found by the external_data fuzz harness (tests/fuzz): empty (a zero dim), but the other dims'
    # product overflows int64; computing it was undefined behaviour (UBSan). [2^62, 4, 0] does not
    # broadcast with Add's [4].
    t = onnx.TensorProto(name="w", data_type=F, dims=[2 ** 62, 4, 0])
    c.add("initializers", "empty_with_overflowing_dims", add_model(t), "error", "dims [2^62, 4, 0] do not broadcast with [4]")
    # Found by the model_mutator fuzz harness: CenterCropPad's input_data absent (an empty name) was read
    # at value index -1 while the op was rewritten to Pad. Both inputs are required (Operators.md).
    c.add("structure", "center_crop_pad_absent_input", model([helper.make_node("CenterCropPad", ["", "s"], ["y"], name="bad_node")], [],
          [vi("y", None)], [i64("s", [2, 2])], opset=18), "error", "input_data is required", node="bad_node")
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
