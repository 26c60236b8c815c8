"""Shared pieces of the malformed-model corpus (gen_corpus.py): the Corpus that records each case
with its expected outcome, the caps it probes, small model builders and protobuf wire helpers."""
import os
import struct

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
