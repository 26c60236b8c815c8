#!/usr/bin/env python3
# The convolutions' tensor-core rate of an aotc library, from its graph-replayed kernels (issue 6's
# "at least 40% of the GPU's dense fp16 rate in its convolutions"). `aotc-run --profile` times each
# step between CUDA events with graphs off, so every step also carries an event pair and a launch
# gap (~3 us a step: 1.084 ms of steps against a 0.91 ms replay for ResNet-50 bs32 fp16);
# trace_replay.py lists the kernels of a replay as the user runs it (CUPTI durations). This joins
# the two: each profile step gets the kernels of the replay that belong to it, each step is called a
# convolution or not from the compile report's op of its node, and the convolutions' FLOPs (the
# profile's counts) are divided by their kernels' time in the replay.
#   python3 tools/device/conv_rate.py --profile profile.json --trace trace.json --report report.json
#          [--peak 798] [--json out.json]
# Matching: with the report's launch sequence (aotc's report since the twenty-third session:
# codegen.steps, each step's launched function and op), kernel steps are found by the function
# they launch and classified by their own op. Older reports: a kernel step's label is its CUDA
# function's name unless it runs an identical earlier
# kernel's function; a step found under its own name takes the next replay kernel of that name, and
# the replay kernels between two such steps belong to the steps between them (cuBLASLt matmuls,
# copies, kernels running a shared function): one each, in order, when the counts agree, all of
# them to a lone step; a run whose steps are all convolutions or all not needs no finer split,
# otherwise the run is reported as unassigned.
import argparse
import json
import re
import sys

kPrefix = re.compile(r"^(k\d+_lib_|k\d+_|mm\d+_|copy\d+_)")


def sanitize(text, max_len=40):
    """codegen/identifiers.cc sanitize_identifier: [A-Za-z0-9_], no leading or doubled '_'."""
    out = ""
    for c in text:
        if len(out) >= max_len:
            break
        keep = c if (c.isascii() and (c.isalnum() or c == "_")) else "_"
        if keep == "_" and (not out or out[-1] == "_"):
            continue
        out += keep
    return out or "x"


def is_conv_op(op):
    return "Conv" in op and "Concat" not in op


def node_ops(report):
    ops = {}
    for n in report.get("node_precision", []):
        ops.setdefault(sanitize(n["node"]), n["op"])
    return ops


def step_op(step, ops):
    return ops.get(kPrefix.sub("", step["label"]), "?")


def assign(steps, kernels, functions=None):
    """Per step the list of replay-kernel indices; plus the unassigned runs [(step ids, kernel ids)]."""
    owned = [[] for _ in steps]
    unassigned = []
    positional = []  # kernel steps not found under their own name
    pending = []  # steps since the last kernel step matched by name
    k = 0

    def flush(upto):
        nonlocal pending
        run = list(range(k_start[0], upto))
        # A memset in the replay (cuBLASLt clearing its split-K workspace) belongs with the kernel
        # after it.
        groups, lead = [], []
        for i in run:
            if kernels[i][2].startswith("Memset"):
                lead.append(i)
            else:
                groups.append(lead + [i])
                lead = []
        if lead:
            (groups[-1].extend(lead) if groups else groups.append(lead))
        if pending:
            if len(pending) == 1:
                owned[pending[0]] = run
            elif len(groups) == len(pending):
                for s, g in zip(pending, groups):
                    owned[s] = g
            else:
                unassigned.append((list(pending), run))
        elif run:
            unassigned.append(([], run))
        pending = []

    k_start = [0]
    for s, st in enumerate(steps):
        if st["kind"] != "kernel":
            pending.append(s)
            continue
        want = functions[s] if functions else st["label"]
        j = k
        while j < len(kernels) and kernels[j][2] != want:
            j += 1
        if j == len(kernels):
            # Not under its own name: identical kernels share one function, named after the first
            # (the replay shows k5_lib_layer2_... where the step is k9_lib_layer3_...). One kernel
            # of the run to the next matched step, like a matmul's.
            pending.append(s)
            positional.append(s)
            continue
        flush(j)
        owned[s] = [j]
        k = j + 1
        k_start[0] = k
    flush(len(kernels))
    return owned, unassigned, positional


def main(argv=None):
    ap = argparse.ArgumentParser(description="convolutions' rate of an aotc library in its graph replay")
    ap.add_argument("--profile", required=True, help="aotc-run --profile-json output")
    ap.add_argument("--trace", required=True, help="trace_replay.py --json output")
    ap.add_argument("--report", required=True, help="aotc --report output")
    ap.add_argument("--peak", type=float, default=798.0,
                    help="dense fp16 tensor-core TFLOP/s of the GPU (798: measured on the H200 kind, KINDS.md)")
    ap.add_argument("--json", default="")
    a = ap.parse_args(argv)
    with open(a.profile) as f:
        profile = json.load(f)
    with open(a.trace) as f:
        trace = json.load(f)
    with open(a.report) as f:
        report = json.load(f)
    steps = profile["steps"]
    # median_replay rows: [start us, duration us, name]
    kernels = [(float(r[0]), float(r[1]), r[2]) for r in trace["median_replay"]]
    ops = node_ops(report)
    # aotc's report lists the launch sequence (codegen.steps: each step's function and op) since
    # the twenty-third session; with it, kernels are matched by the function they launch and
    # steps classified by their own op. Older reports: labels and node names (above).
    listed = ((report.get("codegen") or {}).get("steps") or []) if isinstance(report, dict) else []
    functions = None
    if len(listed) == len(steps) and all(l.get("label") == st["label"] for l, st in zip(listed, steps)):
        functions = [l.get("function") if l.get("kind") == "kernel" else None for l in listed]
        step_ops = [l.get("op") or "?" for l in listed]
        step_op_of = lambda i, st: step_ops[i]  # noqa: E731
    else:
        step_op_of = lambda i, st: step_op(st, ops)  # noqa: E731
    owned, unassigned, positional = assign(steps, kernels, functions)

    conv = {"flops": 0, "replay_us": 0.0, "event_ms": 0.0, "steps": 0}
    other = {"replay_us": 0.0, "event_ms": 0.0, "steps": 0, "names": []}
    rows = []
    ambiguous_us = 0.0
    for s, st in enumerate(steps):
        op = step_op_of(s, st)
        us = sum(kernels[i][1] for i in owned[s])
        rows.append({"index": s, "label": st["label"], "op": op, "kernels": len(owned[s]), "replay_us": us,
                     "event_ms": st["ms"], "flops": st["flops"]})
        bucket = conv if is_conv_op(op) else other
        bucket["steps"] += 1
        bucket["event_ms"] += st["ms"]
        bucket["replay_us"] += us
        if bucket is conv:
            conv["flops"] += st["flops"]
        else:
            other["names"].append(f"{st['label']} ({op})")
    for run_steps, run in unassigned:
        us = sum(kernels[i][1] for i in run)
        kinds = {is_conv_op(step_op_of(s, steps[s])) for s in run_steps}
        if len(kinds) == 1:  # every step of the run on one side: the split inside does not matter
            (conv if kinds.pop() else other)["replay_us"] += us
        else:
            ambiguous_us += us
    busy = sum(k[1] for k in kernels)
    span = (kernels[-1][0] + kernels[-1][1] - kernels[0][0]) if kernels else 0.0
    rate = conv["flops"] / (conv["replay_us"] * 1e-6) / 1e12 if conv["replay_us"] > 0 else 0.0
    ev_rate = conv["flops"] / (conv["event_ms"] * 1e-3) / 1e12 if conv["event_ms"] > 0 else 0.0
    print(f"replay: {len(kernels)} kernels, span {span:.1f} us, busy {busy:.1f} us; "
          f"profile: {len(steps)} steps, {profile.get('total_ms', 0):.4f} ms of events")
    print(f"convolutions: {conv['steps']} steps, {conv['flops'] / 1e9:.1f} GFLOP, "
          f"{conv['replay_us']:.1f} us of kernels in the replay -> {rate:.0f} TFLOP/s = "
          f"{100 * rate / a.peak:.1f}% of {a.peak:.0f} (events, graphs off: {conv['event_ms'] * 1e3:.1f} us, "
          f"{ev_rate:.0f} TFLOP/s = {100 * ev_rate / a.peak:.1f}%)")
    print(f"not convolutions: {other['steps']} steps, {other['replay_us']:.1f} us in the replay: "
          + ", ".join(other["names"]))
    if positional:
        print(f"{len(positional)} kernel steps matched by position (they run an identical earlier kernel's "
              "function; right while every step of their runs launches one kernel)")
    if ambiguous_us > 0:
        print(f"unassigned: {ambiguous_us:.1f} us of replay kernels between steps of both kinds "
              "(counted in neither)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"conv_steps": conv["steps"], "conv_flops": conv["flops"], "conv_replay_us": conv["replay_us"],
                       "conv_tflops": rate, "conv_share_of_peak": rate / a.peak, "conv_event_ms": conv["event_ms"],
                       "conv_event_tflops": ev_rate, "other_replay_us": other["replay_us"],
                       "unassigned_us": ambiguous_us, "matched_by_position": len(positional), "replay_span_us": span, "replay_busy_us": busy,
                       "peak_tflops": a.peak, "steps": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
