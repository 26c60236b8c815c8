#!/usr/bin/env python3
"""Instruction counts of compiled kernels, from `cuobjdump -sass` text: a static view of what an
epilogue costs per element, on a machine without a GPU (docs/perf_notes.md v49).

Getting SASS here (CUDA 13's nvcc has no cuobjdump / nvdisasm; NVIDIA's PyPI wheels do):
    pip download --no-deps nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm -d /tmp/sass
    (cd /tmp/sass && for w in *.whl; do unzip -o -q $w; done)
    export PATH=$PATH:/tmp/sass/nvidia/cu13/bin
    aotc M.onnx -o x.so ... --emit-source SRC          # the device files, as compiled
    nvcc -cubin -O3 -std=c++17 --expt-relaxed-constexpr -DNDEBUG -I$CUTLASS/include \\
         -I$CUTLASS/tools/util/include -arch=sm_90a -o k.cubin SRC/NAME_dev0.cu
    cuobjdump -sass k.cubin > k.sass
    python3 tools/sass_hist.py k.sass [--function NAME] [--loop]

Per function: the instruction total and counts by opcode (modifiers dropped). --loop: only the
body of the largest backward branch whose body holds a plain global store (the CUTLASS 2.x
epilogue's loop: one iteration per output fragment), with its store count - divide by the
elements a store writes for instructions per element.
"""
import argparse
import collections
import re
import sys

INSN = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
FUNC = re.compile(r"\s+Function : (\S+)")


def opcode(text):
    words = text.split()
    op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
    return op.split(".")[0]


def functions(lines):
    funcs, cur = collections.OrderedDict(), None
    for line in lines:
        m = FUNC.match(line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
            continue
        m = INSN.match(line)
        if m and cur is not None:
            funcs[cur].append((int(m.group(1), 16), m.group(2)))
    return funcs


def epilogue_loop(insns):
    best = None
    for addr, text in insns:
        m = re.search(r"\bBRA (?:`\()?\.?(0x[0-9a-f]+)", text)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target >= addr:
            continue
        body = [x for x in insns if target <= x[0] <= addr]
        if any(re.search(r"\bSTG\b", t) and "STRONG" not in t for _, t in body) and (best is None or len(body) > len(best)):
            best = body
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sass")
    ap.add_argument("--function", help="only functions whose name contains this")
    ap.add_argument("--loop", action="store_true", help="count the epilogue loop only")
    ap.add_argument("--top", type=int, default=40, help="opcodes listed per function")
    a = ap.parse_args()
    with open(a.sass) as f:
        funcs = functions(f)
    if not funcs:
        sys.exit("sass_hist: no functions in " + a.sass + " (cuobjdump -sass output expected)")
    for name, insns in funcs.items():
        if a.function and a.function not in name:
            continue
        what = insns
        if a.loop:
            what = epilogue_loop(insns)
            if what is None:
                print(f"{name}: no loop with a global store")
                continue
        counts = collections.Counter(opcode(t) for _, t in what)
        stores = sum(1 for _, t in what if re.search(r"\bSTG\b", t))
        print(f"{name}: {len(what)} instructions" + (f" in the epilogue loop, {stores} store(s)" if a.loop else ""))
        print("  " + " ".join(f"{k}:{v}" for k, v in counts.most_common(a.top)))


if __name__ == "__main__":
    main()
