#!/usr/bin/env python3
# The one table of tools/device_run.sh: per (model, batch) the whole-model error against ONNX
# Runtime, aotc's latency next to PyTorch eager / torch.compile, memory and compile time; then one
# note per problem (so a failure is diagnosable from the last lines of stdout alone). Reads the
# work folder the script filled; writes table.md and results.json into OUT.
#   python3 tools/device/summarize.py --work /tmp/aotc-gpu-run --out $OUT --models "resnet50 ..."
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tools.device.device_steps import list_cases  # noqa: E402

kPeerDriftLimit = 1e-4  # a peer's output vs ORT's: same model, same inputs, fp32 on both sides
kColumns = [  # (header, row key, format)
    ("model", "model", "s"), ("batch", "batch", "d"), ("relL2", "rel_l2", "e"),
    ("maxabs/max|ref|", "max_ratio", "e"), ("check", "check", "s"),
    ("aotc ms", "aotc_ms", "ms"), ("eager ms", "eager_ms", "ms"),
    ("c-ro ms", "reduce_overhead_ms", "ms"), ("c-ma ms", "max_autotune_ms", "ms"),
    ("best/aotc", "ratio", "x"), ("arena MB", "arena_mb", "mb"), ("arena/LB", "arena_ratio", "r"),
    ("wts MB", "weights_mb", "mb"),
    ("torch peak MB", "torch_peak_mb", "mb"), ("compile s", "compile_s", "s1"),
]


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_jsonl(path):
    records = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    records.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return records


def find_number(obj, names):
    """First numeric value under any of `names` (a key anywhere in nested dicts/lists, breadth
    first), so the summary survives small changes of the report layouts."""
    queue = [obj]
    while queue:
        cur = queue.pop(0)
        if isinstance(cur, dict):
            for name in names:
                v = cur.get(name)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    return float(v)
            queue.extend(cur.values())
        elif isinstance(cur, list):
            queue.extend(cur)
    return None


def first_error_line(path, limit=160):
    """The most telling line of a log: the last 'error' line, else the last non-empty line."""
    try:
        with open(path, errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip()]
    except OSError:
        return ""
    errors = [ln for ln in lines if "error" in ln.lower()]
    line = errors[-1] if errors else (lines[-1] if lines else "")
    return line[:limit]


def fmt(value, kind):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if kind == "s":
        return str(value)
    if kind == "d":
        return str(int(value))
    if kind == "e":
        return "inf" if math.isinf(value) else f"{value:.1e}"
    if kind == "ms":
        return f"{value:.3f}" if value < 10 else f"{value:.2f}"
    if kind == "x":
        return f"{value:.2f}x"
    if kind == "mb":
        return f"{value:.1f}" if value >= 1 or value == 0 else f"{value:.3f}"
    if kind == "r":
        return f"{value:.3f}"
    if kind == "s1":
        return f"{value:.1f}"
    raise ValueError(kind)


def format_table(rows):
    cells = [[h for h, _, _ in kColumns]]
    for r in rows:
        cells.append([fmt(r.get(key), kind) for _, key, kind in kColumns])
    widths = [max(len(c[i]) for c in cells) for i in range(len(kColumns))]
    lines = []
    for n, c in enumerate(cells):
        lines.append("| " + " | ".join(v.rjust(w) if n and i > 0 else v.ljust(w)
                                       for i, (v, w) in enumerate(zip(c, widths))) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def peer_results(records, model, batch):
    out = {}
    base = model[:-len("_dynamo")] if model.endswith("_dynamo") else model  # same torch model
    for r in records:
        if r.get("model") == base and int(r.get("batch", -1)) == batch:
            out[r.get("mode")] = r
    return out


def build_row(work, label, batch, peers, notes):
    case = os.path.join(work, "cases", f"{label}_bs{batch}")
    row = {"model": label, "batch": batch}
    compile_info = read_json(os.path.join(case, "compile.json")) or {}
    report = read_json(os.path.join(case, "report.json")) or {}
    metric = read_json(os.path.join(case, "metric.json"))
    bench = read_json(os.path.join(case, "bench.json")) or {}
    row["compile_s"] = compile_info.get("seconds")
    row["compile_concurrent"] = bool(compile_info.get("concurrent", False))
    if compile_info.get("rc", 1) != 0:
        row["check"] = "no lib"
        notes.append(f"{label} bs{batch}: aotc failed (rc {compile_info.get('rc', '?')}): "
                     f"{first_error_line(os.path.join(case, 'compile.log'))}")
    arena = find_number(report, ["arena_bytes"])
    weights = find_number(report, ["weight_bytes", "weights_bytes"])
    row["arena_mb"] = arena / 2**20 if arena is not None else None
    row["arena_ratio"] = find_number(report, ["ratio_to_lower_bound"])
    row["weights_mb"] = weights / 2**20 if weights is not None else None
    if metric is not None:
        row["rel_l2"] = metric.get("rel_l2")
        row["max_ratio"] = metric.get("max_abs_over_max_ref")
        row["check"] = "pass" if metric.get("ok") else "FAIL"
        if not metric.get("ok"):
            notes.append(f"{label} bs{batch}: {metric.get('reason', 'mismatch')}")
    run_rc = read_json(os.path.join(case, "check_rc.json"))
    if metric is None and "check" not in row:
        row["check"] = "run err" if run_rc is not None else "no run"
        notes.append(f"{label} bs{batch}: aotc-run failed"
                     f"{' (rc %s)' % run_rc.get('rc') if run_rc else ''}: "
                     f"{first_error_line(os.path.join(case, 'check.log'))}")
    if metric is not None and run_rc is not None and (run_rc.get("rc") == 0) != bool(metric.get("ok")):
        notes.append(f"{label} bs{batch}: aotc-run's own check exit {run_rc.get('rc')} disagrees "
                     f"with the independent metric ({row['check']})")
    row["aotc_ms"] = find_number(bench, ["median_ms", "median"])
    if row["aotc_ms"] is None and compile_info.get("rc") == 0 and row["check"] != "run err":
        notes.append(f"{label} bs{batch}: no aotc timing: "
                     f"{first_error_line(os.path.join(case, 'bench.log'))}")
    for mode, key in (("eager", "eager_ms"), ("reduce-overhead", "reduce_overhead_ms"),
                      ("max-autotune", "max_autotune_ms")):
        r = peers.get(mode)
        if r and r.get("ok"):
            row[key] = r.get("median_ms")
            drift = r.get("rel_l2_vs_ort")
            if isinstance(drift, (int, float)) and not drift < kPeerDriftLimit:
                notes.append(f"{label} bs{batch} torch {mode}: output differs from ONNX Runtime "
                             f"by rel L2 {drift:.1e}: not the exported weights/inputs, or TF32?")
        elif r:
            notes.append(f"{label} bs{batch} torch {mode}: {r.get('error', 'failed')}")
    eager = peers.get("eager") or {}
    row["torch_peak_mb"] = eager.get("peak_mb") if eager.get("ok") else None
    peer_ms = [row[k] for k in ("eager_ms", "reduce_overhead_ms", "max_autotune_ms") if row.get(k)]
    if row.get("aotc_ms") and peer_ms:
        row["ratio"] = min(peer_ms) / row["aotc_ms"]
    return row


def precision_line(peers):
    """What the peers' fp32 really was: the worst TF32 probe over all peer runs."""
    probes = [r for r in peers if "probe_matmul_rel_err" in r]
    if not probes:
        return ""
    mm = max(float(r["probe_matmul_rel_err"]) for r in probes)
    cv = max(float(r["probe_conv_rel_err"]) for r in probes)
    suspected = any(r.get("tf32_suspected") for r in probes)
    return (f"torch fp32 check: GPU vs float64 rel err matmul {mm:.1e}, conv {cv:.1e} -> "
            + ("TF32 SUSPECTED: peer timings are not plain fp32" if suspected else "TF32 off"))


def summarize(work, models):
    notes = []
    peers = read_jsonl(os.path.join(work, "peers.jsonl"))
    line = precision_line(peers)
    if line:
        notes.append(line)
    rows = []
    for label in models:
        meta_dir = os.path.join(work, "models", label)
        if not os.path.exists(os.path.join(meta_dir, "meta.json")):
            notes.append(f"{label}: export failed: "
                         f"{first_error_line(os.path.join(meta_dir, 'export_error.txt'))}")
    for label, batch, _, _ in list_cases(os.path.join(work, "models"), models):
        rows.append(build_row(work, label, batch, peer_results(peers, label, batch), notes))
    return rows, notes


def main(argv=None):
    p = argparse.ArgumentParser(description="print and save the device run's table")
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--models", required=True, help="space separated model folder names")
    p.add_argument("--header", default="", help="lines printed above the table")
    args = p.parse_args(argv)
    rows, notes = summarize(args.work, args.models.split())
    legend = ("relL2, maxabs/max|ref|: aotc vs ONNX Runtime CPU (pass: < 1e-4 and < 1e-3). ms: "
              "CUDA-event medians. arena/LB: arena over the liveness lower bound. c-ro/c-ma: torch.compile reduce-overhead/max-autotune, fp32 "
              "TF32 off. best/aotc > 1: aotc faster than the best peer. torch peak: eager "
              "max_memory_allocated (weights included).")
    if any(r.get("compile_concurrent") for r in rows):
        legend += (" compile s: aotc wall time here, all cases compiled concurrently "
                   "(AOTC_PARALLEL=0 for one at a time).")
    text = "\n".join(filter(None, [args.header, format_table(rows), legend] +
                            [f"note: {n}" for n in notes]))
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"rows": rows, "notes": notes}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
