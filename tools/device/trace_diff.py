#!/usr/bin/env python3
# Per-kernel comparison of two traced replays (trace_replay.py --json of a case and of its A/B
# build, e.g. cases/X/trace.json and cases/X/ab/trace.json of tools/device_run.sh's logs): which
# kernels an A/B changed, and by how much. Kernels are paired by position where both replays
# launch as many kernels (an A/B of a kernel choice), else by difflib's longest matching runs of
# names without their kNN_ / mmNN_ index prefixes (which shift between builds; cuBLASLt's kernels
# count as one name): an A/B where a pass added or removed kernels; a kernel without a partner is
# listed as only in A or only in B. With --report (a case's report.json,
# codegen.steps) each row of A names its graph node, which
# a library kernel's function name does not (it is named after the first node that uses it);
# steps and kernels are matched by conv_rate.py's assign.
#   python3 tools/device/trace_diff.py A/trace.json B/trace.json [--report A/report.json] [--min-us 2]
import argparse
import difflib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conv_rate import assign, kPrefix  # noqa: E402


def load(path):
    with open(path) as f:
        return [(float(dur), str(name)) for _, dur, name in json.load(f)["median_replay"]]


def key(name):
    """What pairs kernels across builds: the name without its index prefix (conv_rate.kPrefix);
    cuBLASLt's kernels (nvjet_*, sm90_xmma_*, ...: its heuristic's choice may differ between
    builds) as one name."""
    if not kPrefix.match(name):
        return "<library GEMM>"
    return kPrefix.sub("", name)


def nodes_of(report_path, kernels):
    """Graph node per kernel of the replay `kernels` ((duration, name) pairs), the steps of
    report.json matched to them as conv_rate.py does (by function; a matmul's kernels, memsets
    included, by position); None when the report lists no steps."""
    with open(report_path) as f:
        steps = json.load(f).get("codegen", {}).get("steps", [])
    if not steps:
        return None
    functions = [s.get("function") if s.get("kind") == "kernel" else None for s in steps]
    owned, _, _ = assign(steps, [(0.0, d, n) for d, n in kernels], functions)
    nodes = [""] * len(kernels)
    for s, ks in enumerate(owned):
        for i in ks:
            nodes[i] = steps[s].get("node", "") or steps[s].get("label", "")
    return nodes


def pair(a, b):
    """[(index in a or None, index in b or None)] in replay order: by index where both replays
    launch as many kernels (an A/B of a kernel choice), else by difflib's matching runs."""
    if len(a) == len(b):
        return [(i, i) for i in range(len(a))]
    out = []
    sm = difflib.SequenceMatcher(a=[key(n) for _, n in a], b=[key(n) for _, n in b], autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            out += [(i1 + k, j1 + k) for k in range(i2 - i1)]
        else:
            out += [(i, None) for i in range(i1, i2)] + [(None, j) for j in range(j1, j2)]
    return out


def diff(a, b, nodes=None, min_us=2.0):
    """Lines of the comparison: changed pairs, unpaired kernels, totals."""
    lines = [f"{'#A':>4} {'A us':>8} {'B us':>8} {'B-A':>8}  kernel (A) [node]"]
    paired_delta = only_a = only_b = 0.0
    for i, j in pair(a, b):
        da = a[i][0] if i is not None else None
        db = b[j][0] if j is not None else None
        name = a[i][1] if i is not None else b[j][1]
        node = f" [{nodes[i]}]" if nodes and i is not None else ""
        if da is not None and db is not None:
            paired_delta += db - da
            if abs(db - da) >= min_us:
                lines.append(f"{i:>4} {da:8.1f} {db:8.1f} {db - da:+8.1f}  {name}{node}")
        elif da is not None:
            only_a += da
            lines.append(f"{i:>4} {da:8.1f} {'-':>8} {-da:+8.1f}  {name}{node} (only in A)")
        else:
            only_b += db
            lines.append(f"{'-':>4} {'-':>8} {db:8.1f} {db:+8.1f}  {name} (only in B)")
    total_a, total_b = sum(d for d, _ in a), sum(d for d, _ in b)
    lines.append(f"busy: A {total_a:.1f} us ({len(a)} kernels), B {total_b:.1f} us ({len(b)} kernels), "
                 f"B-A {total_b - total_a:+.1f} us: paired {paired_delta:+.1f}, only in A -{only_a:.1f}, "
                 f"only in B +{only_b:.1f}")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description="per-kernel comparison of two trace_replay.py JSON files")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--report", default="", help="report.json of A's build: node names per kernel")
    ap.add_argument("--min-us", type=float, default=2.0, help="list paired kernels that changed this much")
    args = ap.parse_args(argv)
    a, b = load(args.a), load(args.b)
    nodes = nodes_of(args.report, a) if args.report else None
    if args.report and nodes is None:
        print("trace_diff: the report lists no steps; no node names", file=sys.stderr)
    print("\n".join(diff(a, b, nodes, args.min_us)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
