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
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import onnx  # noqa: E402

from cases_format import (attribute_cases, initializer_cases, protobuf_cases, shape_cases,  # noqa: E402
                          structure_cases, type_cases)
from cases_resources import (bomb_cases, external_cases, mutated_cases, name_cases, nesting_cases,  # noqa: E402
                             opset_cases, qdq_cases)
from corpus_util import Corpus  # noqa: E402


def main():
    out = sys.argv[1]
    if os.path.isdir(os.path.join(out, "cases")):
        shutil.rmtree(os.path.join(out, "cases"))
    os.makedirs(out, exist_ok=True)
    c = Corpus(out)
    for gen in [protobuf_cases, structure_cases, type_cases, shape_cases, attribute_cases, initializer_cases,
                external_cases, opset_cases, name_cases, bomb_cases, nesting_cases, mutated_cases, qdq_cases]:
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
