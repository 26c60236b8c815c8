"""Corpus cases about what a model reaches and costs: external data, opsets, names, bombs,
graph size, nesting and mutations of a real model (see gen_corpus.py)."""
import os
import random
import shutil
import struct
import sys

import onnx
from onnx import TensorProto, helper

from corpus_util import *  # noqa: F401,F403 (builders and constants)
from corpus_util import _key, _varint, _many_nodes


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

    def hard_link(d):
        os.link(os.path.join(d, "w.bin"), os.path.join(d, "hard.bin"))
    add("hard_link", ext_model("hard.bin"), "error",
        "a file with a second hard link may be a file from outside the folder: refused", setup=hard_link)

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
    # The same graph with plain names: what the injection case must compile like.
    plain = model([n("Relu", ["x"], ["x1"], name="relu"), n("Sigmoid", ["x1"], ["y"], name="sigmoid")],
                  [vi("x", [1, 4])], [vi("y", [1, 4])], name="plain")
    c.add("names", "compiled_plain", plain, "ok", "the benign twin of names.compiled_injection", mode="compile")


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
    # Folding work (docs/reliability.md Limits): 1 MiB fills, then nine constant MatMuls of 2^28 to
    # 2^30 multiply-adds each. Valid; before the work cap `aotc check` folded them all (50 s here).
    mm = [n("ConstantOfShape", ["sa"], ["a"], name="fill_a", value=cos), n("ConstantOfShape", ["sb"], ["b"], name="fill_b", value=cos),
          n("MatMul", ["a", "b"], ["y0"], name="mm0")] + [n("MatMul", [f"y{k - 1}", f"y{k - 1}"], [f"y{k}"], name=f"mm{k}") for k in range(1, 9)]
    c.add("bombs", "fold_matmul_chain_2e30", model(mm, [], [vi("y8", None)], [i64("sa", [1024, 256]), i64("sb", [256, 1024])]),
          "ok", "a valid chain of constant MatMuls; the 5 s per case bounds the folding time")
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
          "ok_or_error", "200 constants of 64 MiB: expanding folds run at run time, memory and time stay bounded")
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
        # The condition is a graph input, not known at compile time: the outermost If is refused by
        # name while the file parses. Past protobuf's nesting limit the file itself is refused
        # (one line, no node).
        c.add("nesting", f"if_depth_{depth}", nested_if(depth), "error",
              "If compiles only on a compile-time condition (docs/conformance.md); deep files hit the nesting cap",
              node="bad_node" if depth <= 31 else None)
    body = helper.make_graph([n("Identity", ["cond_in"], ["cond_out"]), n("Identity", ["v_in"], ["v_out"])], "body",
                             [vi("i", [], I64), vi("cond_in", [], TensorProto.BOOL), vi("v_in", [1])],
                             [vi("cond_out", [], TensorProto.BOOL), vi("v_out", [1])])
    m = model([n("Loop", ["M", "", "x"], ["y"], name="bad_node", body=body)], [vi("x", [1])], [vi("y", [1])], [i64("M", [1000000000], [])])
    c.add("nesting", "loop_1e9_trips", m, "error", "a Loop is unrolled at most 4096 times (docs/reliability.md, Limits)", node="bad_node")
    m = model([n("Scan", ["x"], ["y"], name="bad_node", body=body, num_scan_inputs=1)], [vi("x", [1])], [vi("y", [1])])
    c.add("nesting", "scan", m, "error", "the Scan body's inputs do not match the node's (Operators.md)", node="bad_node")
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


def _qdq_block():
    """An inverted residual in QDQ form as ONNX Runtime's quantize_static writes one (int8
    activations with zero point -128 after a ReLU, 5 after the linear projection, per-channel int8
    weights, int32 biases): Q -> pointwise conv + ReLU -> MaxPool -> depthwise conv + ReLU ->
    pointwise projection -> residual Add -> DQ. It exercises fuse_qdq, reencode_uint8, the
    zero-point fold into the tensor-core kernel's bias word and the NHWC depthwise path."""
    import numpy as np
    from onnx import numpy_helper
    rng = np.random.default_rng(5)
    inits, nodes = [], []

    def const(name, array, dtype=None):
        inits.append(numpy_helper.from_array(np.asarray(array, dtype=dtype), name))
        return name

    def q(x, s, z, name):
        nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [name], name=name))
        return name

    def dq(x, s, z, name, axis=None):
        attrs = {} if axis is None else {"axis": axis}
        nodes.append(helper.make_node("DequantizeLinear", [x, s] + ([z] if z else []), [name], name=name, **attrs))
        return name

    def conv(x, cin, cout, k, group, name, relu, s_in, z_out, s_out):
        wq = const(name + "_w", rng.integers(-127, 128, (cout, cin // group, k, k)), np.int8)
        w_scale = rng.uniform(0.002, 0.02, cout).astype(np.float32)
        ws = const(name + "_ws", w_scale)
        bs = const(name + "_bs", np.float32(0.05) * w_scale)  # x_scale * w_scale, as quantize_static writes it
        bq = const(name + "_b", rng.integers(-500, 500, cout), np.int32)
        w = dq(wq, ws, None, name + "_wd", axis=0)
        b = dq(bq, bs, None, name + "_bd", axis=0)
        nodes.append(helper.make_node("Conv", [x, w, b], [name + "_c"], name=name, group=group,
                                      pads=[k // 2] * 4, kernel_shape=[k, k]))
        y = name + "_c"
        if relu:
            nodes.append(helper.make_node("Relu", [y], [name + "_r"], name=name + "_relu"))
            y = name + "_r"
        return dq(q(y, s_out, z_out, name + "_q"), s_out, z_out, name + "_dq")

    s = const("s", np.float32(0.05))
    zm = const("zm", np.int8(-128))
    z5 = const("z5", np.int8(5))
    x = dq(q("x", s, z5, "xq"), s, z5, "xd")
    e = conv(x, 16, 32, 1, 1, "expand", True, s, zm, s)
    nodes.append(helper.make_node("MaxPool", [e], ["pool"], name="pool", kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 1, 1]))
    p = dq(q("pool", s, zm, "pool_q"), s, zm, "pool_dq")
    d = conv(p, 32, 32, 3, 32, "dw", True, s, zm, s)
    pr = conv(d, 32, 16, 1, 1, "project", False, s, z5, s)
    nodes.append(helper.make_node("Add", [pr, x], ["sum"], name="residual"))
    y = dq(q("sum", s, z5, "sum_q"), s, z5, "y")
    return model(nodes, [vi("x", [1, 16, 8, 8])], [vi(y, [1, 16, 8, 8])], inits)


def qdq_cases(c):
    """The QDQ block above as written (must compile) and mutated in what the int8 passes key on:
    zero points (value, type, per-axis shape), scales (zero, negative, NaN, infinite, tiny), the
    depthwise group. The specification allows some of them (an int8 zero point of 127, a tiny
    scale), so each accepts success or one line; what they test is no crash, no hang, no file."""
    base = _qdq_block()
    c.add("qdq", "inverted_residual", base, "ok", "a QDQ inverted residual as ONNX Runtime writes it")
    # Compiled (the int8 passes run only there).
    c.add("qdq", "inverted_residual_compile", base, "ok", "the QDQ block through codegen, nvcc and cc", mode="compile")

    def variant():
        m = onnx.ModelProto()
        m.CopyFrom(base)
        return m

    def init(m, name):
        return next(t for t in m.graph.initializer if t.name == name)

    for zname in ("zm", "z5"):
        for tag, dtype, value in [("0", TensorProto.INT8, 0), ("127", TensorProto.INT8, 127), ("m127", TensorProto.INT8, -127),
                                  ("uint8_128", TensorProto.UINT8, 128), ("int32", TensorProto.INT32, -128)]:
            m = variant()
            t = init(m, zname)
            t.CopyFrom(helper.make_tensor(zname, dtype, [], [value]))
            c.add("qdq", f"{zname}_{tag}", m, "ok_or_error", "a shared zero point changed in value or type",
                  mode="compile")
        m = variant()
        t = init(m, zname)
        t.CopyFrom(helper.make_tensor(zname, TensorProto.INT8, [2], [-128, 3]))
        c.add("qdq", f"{zname}_two_values", m, "ok_or_error", "a per-tensor zero point given two values",
              mode="compile")
    for tag, value in [("zero", 0.0), ("negative", -0.05), ("nan", float("nan")), ("inf", float("inf")), ("tiny", 1e-38)]:
        m = variant()
        init(m, "s").CopyFrom(helper.make_tensor("s", F, [], [value]))
        c.add("qdq", f"scale_{tag}", m, "ok_or_error", "the shared activation scale made degenerate",
              mode="compile")
    for group in (1, 2, 31, 0, -1):
        m = variant()
        node = next(n for n in m.graph.node if n.name == "dw")
        next(a for a in node.attribute if a.name == "group").i = group
        c.add("qdq", f"dw_group_{group}".replace("-", "m"), m, "ok_or_error", "the depthwise layer's group changed",
              mode="compile")
