#!/usr/bin/env python3
# The one table of tools/device_run.sh: per (model, batch, precision) aotc's latency next to
# PyTorch eager / torch.compile in the same precision, the whole-model error against ONNX Runtime
# with the precision's PASS/FAIL, compile time; optionally the ablation table (ABLATION=1), the
# compute_87 PTX row (JETSON_PTX=1) and the top kernels of any case with profile.json; then one
# note per problem (so a failure is diagnosable from the last lines of stdout alone). Reads the
# work folder the script filled; writes table.md (plus memory table and all notes) and
# results.json into OUT.
#   python3 tools/device/summarize.py --work /tmp/aotc-gpu-run --out $OUT --models "resnet50 ..." \
#       --precisions "fp32 fp16" [--ablation] [--ptx]
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tools.device import device_steps  # noqa: E402
from tools.device.device_steps import list_cases  # noqa: E402

# The printed table: (header, row key, format). The max-autotune columns appear only when some
# row has a max-autotune time; memory figures go to table.md's second table and results.json.
kColumns = [
    ("model", "model", "s"), ("batch", "batch", "d"), ("prec", "precision", "s"),
    ("aotc ms", "aotc_ms", "ms"), ("eager ms", "eager_ms", "ms"),
    ("c-ro ms", "reduce_overhead_ms", "ms"), ("c-ma ms", "max_autotune_ms", "ms"),
    ("eager/aotc", "eager_ratio", "x"), ("c-ro/aotc", "reduce_overhead_ratio", "x"),
    ("c-ma/aotc", "max_autotune_ratio", "x"), ("relL2", "rel_l2", "e"),
    ("maxabs/ref", "max_ratio", "e"), ("check", "check", "s"), ("compile s", "compile_s", "s1"),
]
kOptionalKeys = {"max_autotune_ms", "max_autotune_ratio"}
kMemoryColumns = [
    ("model", "model", "s"), ("batch", "batch", "d"), ("prec", "precision", "s"),
    ("arena MB", "arena_mb", "mb"), ("arena/LB", "arena_ratio", "r"),
    ("wts MB", "weights_mb", "mb"), ("torch peak MB", "torch_peak_mb", "mb"),
]
kPeerModes = (("eager", "eager"), ("reduce-overhead", "reduce_overhead"),
              ("max-autotune", "max_autotune"))
kMaxPrintedNotes = 14
kProfileTop = 5
kPtxRowSuffix = f" ({device_steps.kPtxArch} PTX)"


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


def table_columns(rows):
    """kColumns without the max-autotune ones when no row has a max-autotune time."""
    has_ma = any(r.get("max_autotune_ms") is not None for r in rows)
    return [c for c in kColumns if has_ma or c[1] not in kOptionalKeys]


def format_table(rows, columns=None):
    columns = columns or table_columns(rows)
    cells = [[h for h, _, _ in columns]]
    for r in rows:
        cells.append([fmt(r.get(key), kind) for _, key, kind in columns])
    widths = [max(len(c[i]) for c in cells) for i in range(len(columns))]
    lines = []
    for n, c in enumerate(cells):
        lines.append("| " + " | ".join(v.rjust(w) if n and i > 0 else v.ljust(w)
                                       for i, (v, w) in enumerate(zip(c, widths))) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def model_of(work, label):
    """The model zoo name behind an export folder (NAME, NAME_dynamo, NAME_dynamo23): the peers run
    the model, whichever exporter wrote the ONNX file."""
    try:
        with open(os.path.join(work, "models", label, "meta.json")) as f:
            return json.load(f).get("model") or label
    except (OSError, ValueError):
        return label


def peer_precision(record):
    """'fp32' or 'fp16'; records written before --precision existed carried a note (fp32)."""
    value = str(record.get("precision", "fp32"))
    return "fp16" if value.startswith("fp16") else "fp32"


def peer_results(records, model, batch, precision="fp32"):
    out = {}
    base = model[:-len("_dynamo")] if model.endswith("_dynamo") else model  # same torch model
    for r in records:
        if (r.get("model") == base and int(r.get("batch", -1)) == batch and
                peer_precision(r) == precision):
            out[r.get("mode")] = r
    return out


def check_verdict(metric, precision):
    """PASS/FAIL by the precision's tolerance: the verdict device_steps.py compare wrote for this
    precision, else (older metric.json, no 'precision') the limits applied to its figures."""
    if metric.get("precision") == precision:
        return bool(metric.get("ok"))
    if "rel_l2" not in metric:
        return False
    return device_steps.apply_tolerance(metric, precision)["ok"]


def build_row(work, label, batch, peers, notes, precision="fp32", name=None, model_label=None):
    name = name or device_steps.case_name(label, batch, precision)
    case = os.path.join(work, "cases", name)
    who = f"{model_label or label} bs{batch} {precision}"
    row = {"model": model_label or label, "batch": batch, "precision": precision, "case": name}
    compile_info = read_json(os.path.join(case, "compile.json")) or {}
    report = read_json(os.path.join(case, "report.json")) or {}
    metric = read_json(os.path.join(case, "metric.json"))
    bench = read_json(os.path.join(case, "bench.json")) or {}
    row["compile_s"] = compile_info.get("seconds")
    row["compile_concurrent"] = bool(compile_info.get("concurrent", False))
    if compile_info.get("rc", 1) != 0:
        row["check"] = "no lib"
        notes.append(f"{who}: aotc failed (rc {compile_info.get('rc', '?')}): "
                     f"{first_error_line(os.path.join(case, 'compile.log'))}")
    arena = find_number(report, ["arena_bytes"])
    weights = find_number(report, ["weight_bytes", "weights_bytes"])
    row["arena_mb"] = arena / 2**20 if arena is not None else None
    row["arena_ratio"] = find_number(report, ["ratio_to_lower_bound"])
    row["weights_mb"] = weights / 2**20 if weights is not None else None
    if metric is not None:
        row["rel_l2"] = metric.get("rel_l2")
        row["max_ratio"] = metric.get("max_abs_over_max_ref")
        ok = check_verdict(metric, precision)
        row["check"] = "PASS" if ok else "FAIL"
        if not ok:
            notes.append(f"{who}: {metric.get('reason', 'mismatch')}")
    run_rc = read_json(os.path.join(case, "check_rc.json"))
    if metric is None and "check" not in row:
        row["check"] = "run err" if run_rc is not None else "no run"
        notes.append(f"{who}: aotc-run failed"
                     f"{' (rc %s)' % run_rc.get('rc') if run_rc else ''}: "
                     f"{first_error_line(os.path.join(case, 'check.log'))}")
    # aotc-run --model-metric always judges by the fp32 limits: only fp32 verdicts must agree.
    if (precision == "fp32" and metric is not None and run_rc is not None and
            (run_rc.get("rc") == 0) != (row["check"] == "PASS")):
        notes.append(f"{who}: aotc-run's own check exit {run_rc.get('rc')} disagrees "
                     f"with the independent metric ({row['check']})")
    row["aotc_ms"] = find_number(bench, ["median_ms", "median"])
    if row["aotc_ms"] is None and compile_info.get("rc") == 0 and row["check"] != "run err":
        notes.append(f"{who}: no aotc timing: "
                     f"{first_error_line(os.path.join(case, 'bench.log'))}")
    drift_limit = device_steps.tolerance(precision)[0]
    for mode, key in kPeerModes:
        r = peers.get(mode)
        if r and r.get("ok"):
            row[f"{key}_ms"] = r.get("median_ms")
            drift = r.get("rel_l2_vs_ort")
            if isinstance(drift, (int, float)) and not drift < drift_limit:
                notes.append(f"{label} bs{batch} {precision} torch {mode}: output differs from "
                             f"ONNX Runtime by rel L2 {drift:.1e}: not the exported "
                             f"weights/inputs{', or TF32?' if precision == 'fp32' else '?'}")
        elif r:
            notes.append(f"{label} bs{batch} {precision} torch {mode}: {r.get('error', 'failed')}")
        if row.get(f"{key}_ms") and row.get("aotc_ms"):
            row[f"{key}_ratio"] = row[f"{key}_ms"] / row["aotc_ms"]
    eager = peers.get("eager") or {}
    row["torch_peak_mb"] = eager.get("peak_mb") if eager.get("ok") else None
    peer_ms = [row[f"{k}_ms"] for _, k in kPeerModes if row.get(f"{k}_ms")]
    if row.get("aotc_ms") and peer_ms:
        row["ratio"] = min(peer_ms) / row["aotc_ms"]  # best peer / aotc
    return row


# ---- ablation ------------------------------------------------------------------------------------
def rejects_disable_pass(log_path):
    """True when aotc's compile log says it does not know --disable-pass (an older aotc)."""
    try:
        with open(log_path, errors="replace") as f:
            text = f.read()
    except OSError:
        return False
    low = text.lower()
    return "disable-pass" in low and any(w in low for w in ("unknown", "unrecognized",
                                                              "not supported", "bad", "usage"))


def ablation_cell(work, label, batch, precision, variant):
    """One variant's result: {"ms": float|None, "status": str, "rejected": bool}."""
    case = os.path.join(work, "cases", device_steps.ablation_case(label, batch, precision, variant))
    lib_name = device_steps.case_name(label, batch, precision,
                                      variant if device_steps.variant_builds_library(variant) else "")
    lib_case = os.path.join(work, "cases", lib_name)
    cell = {"ms": None, "status": "-", "rejected": False}
    compile_info = read_json(os.path.join(lib_case, "compile.json"))
    if compile_info is None:
        cell["status"] = "not run"
        return cell
    if compile_info.get("rc", 1) != 0:
        rejected = (variant in ("baseline", "fusion") and
                    rejects_disable_pass(os.path.join(lib_case, "compile.log")))
        cell.update(status="rejected" if rejected else "no lib", rejected=rejected)
        return cell
    metric = read_json(os.path.join(case, "metric.json"))
    cell["ms"] = find_number(read_json(os.path.join(case, "bench.json")) or {},
                             ["median_ms", "median"])
    if cell["ms"] is None:
        cell["status"] = "run err"
    elif metric is not None and not check_verdict(metric, precision):
        cell["status"] = "FAIL"
    else:
        cell["status"] = "ok"
    return cell


def ablation_rows(work, cases, precisions, label="resnet50"):
    rows = []
    for case_label, batch, _, _ in cases:
        if case_label != label or batch not in device_steps.kAblationBatches:
            continue
        for precision in precisions:
            cells = {v: ablation_cell(work, case_label, batch, precision, v)
                     for v, *_ in device_steps.kAblationVariants}
            rows.append({"model": case_label, "batch": batch, "precision": precision,
                         "cells": cells})
    return rows


def format_ablation(rows):
    """The ablation as a small table: ms per variant ('!' = over the tolerance), gain =
    baseline / default build."""
    if not rows:
        return ""
    variants = device_steps.kAblationVariants
    header = ["model", "batch", "prec"] + [h for _, h, *_ in variants] + ["base/+graphs"]
    cells = [header]
    rejected = False
    for r in rows:
        line = [r["model"], str(r["batch"]), r["precision"]]
        for v, *_ in variants:
            c = r["cells"][v]
            rejected = rejected or c["rejected"]
            if c["ms"] is not None:
                line.append(fmt(c["ms"], "ms") + ("!" if c["status"] == "FAIL" else ""))
            else:
                line.append(c["status"])
        base, best = r["cells"]["baseline"]["ms"], r["cells"]["graphs"]["ms"]
        line.append(fmt(base / best, "x") if base and best else "-")
        cells.append(line)
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    lines = ["ablation (aotc ms; baseline: --disable-pass fuse_epilogue,layout_nhwc, no CUDA graphs; "
             "+fusion; +NHWC/TC: default passes, no graphs; +graphs: default build):"]
    for n, c in enumerate(cells):
        lines.append("| " + " | ".join(v.rjust(w) if n and i > 0 else v.ljust(w)
                                       for i, (v, w) in enumerate(zip(c, widths))) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    if rejected:
        lines.append("ablation: this aotc rejects --disable-pass (older aotc): baseline/+fusion "
                     "not measured")
    return "\n".join(lines)


# ---- per-kernel profile (aotc-run --profile FILE, when it exists) ----------------------------------
kProfileListKeys = ("kernels", "steps", "entries", "records", "profile")
kProfileMsKeys = ("total_ms", "ms", "time_ms", "elapsed_ms", "sum_ms", "avg_ms", "mean_ms",
                  "median_ms")
kProfileUsKeys = ("total_us", "us", "time_us", "avg_us", "mean_us")
kProfileNameKeys = ("label", "name", "kernel", "symbol", "op", "step")


def parse_profile(obj):
    """[(kernel name, ms)] summed per name, largest first, from the likely layouts of a per-kernel
    profile JSON: a list of records, {"kernels": [...]}, or {name: ms}. Unknown layouts: []."""
    entries = obj
    if isinstance(obj, dict):
        for key in kProfileListKeys:
            if isinstance(obj.get(key), (list, dict)):
                entries = obj[key]
                break
    if isinstance(entries, dict):
        entries = [{"name": k, **v} if isinstance(v, dict) else {"name": k, "ms": v}
                   for k, v in entries.items()]
    if not isinstance(entries, list):
        return []
    totals = {}
    for e in entries:
        if not isinstance(e, dict):
            continue
        name = next((e[k] for k in kProfileNameKeys if isinstance(e.get(k), str)), None)
        ms = next((float(e[k]) for k in kProfileMsKeys
                   if isinstance(e.get(k), (int, float)) and not isinstance(e.get(k), bool)), None)
        if ms is None:
            ms = next((float(e[k]) / 1000 for k in kProfileUsKeys
                       if isinstance(e.get(k), (int, float)) and not isinstance(e.get(k), bool)),
                      None)
        if name is None or ms is None:
            continue
        totals[name] = totals.get(name, 0.0) + ms
    return sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))


def format_profile(case, kernels, top=kProfileTop):
    if not kernels:
        return ""
    total = sum(ms for _, ms in kernels)
    lines = [f"top {min(top, len(kernels))} kernels of {case} ({len(kernels)} kernels, "
             f"{total:.3f} ms in all):"]
    for name, ms in kernels[:top]:
        share = ms / total if total > 0 else 0.0
        lines.append(f"  {ms:8.3f} ms {100 * share:5.1f}%  {name[:90]}")
    return "\n".join(lines)


def profile_sections(work, cases):
    """Top kernels of every case folder that holds profile.json (device_run.sh profiles
    resnet50 bs32 fp16 when aotc-run has --profile); nothing when none does."""
    texts = []
    for name in cases:
        path = os.path.join(work, "cases", name, "profile.json")
        if not os.path.exists(path):
            continue
        data = read_json(path)
        kernels = parse_profile(data) if data is not None else []
        texts.append(format_profile(name, kernels) if kernels else
                     f"profile of {name}: unreadable or empty ({path})")
        rate = read_json(os.path.join(work, "cases", name, "conv_rate.json"))
        line = conv_rate_line(rate) if isinstance(rate, dict) else ""
        if line:
            texts.append(line)
    return "\n".join(texts)


def conv_rate_line(rate):
    """tools/device/conv_rate.py's result (TRACE_CASES): the convolutions' rate in the replay."""
    try:
        return (f"  convolutions in the graph replay: {rate['conv_steps']} steps, "
                f"{rate['conv_flops'] / 1e9:.1f} GFLOP in {rate['conv_replay_us']:.1f} us of kernels = "
                f"{rate['conv_tflops']:.0f} TFLOP/s, {100 * rate['conv_share_of_peak']:.1f}% of "
                f"{rate['peak_tflops']:.0f} (events, graphs off: {rate['conv_event_tflops']:.0f} TFLOP/s)")
    except (KeyError, TypeError, ZeroDivisionError):
        return ""


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


def summarize(work, models, precisions=("fp32",), ablation=False, ptx=False,
              ablation_label="resnet50"):
    """(main rows, ablation rows, notes) from the work folder device_run.sh filled."""
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
    cases = list_cases(os.path.join(work, "models"), models)
    plan = device_steps.plan_cases(cases, list(precisions), "-", ablation, ptx, ablation_label)
    for entry in plan:
        if entry["role"] == "ablation":
            continue
        label, batch, precision = entry["label"], entry["batch"], entry["precision"]
        shown = label + (kPtxRowSuffix if entry["role"] == "ptx" else "")
        rows.append(build_row(work, label, batch, peer_results(peers, model_of(work, label), batch, precision),
                              notes, precision, entry["name"], shown))
    abl = ablation_rows(work, cases, list(precisions), ablation_label) if ablation else []
    return rows, abl, list(dict.fromkeys(notes))  # the PTX row repeats its peers' notes


def legend(rows, precisions):
    text = ("check: aotc vs ONNX Runtime CPU fp32 outputs, PASS "
            + "; ".join(f"{p}: {device_steps.tolerance_text(p)}" for p in precisions)
            + ". ms: CUDA-event medians. eager/c-ro/c-ma: PyTorch eager, torch.compile "
              "reduce-overhead/max-autotune in the row's precision (fp32: TF32 off); "
              "peer/aotc > 1: aotc faster.")
    if any(r.get("compile_concurrent") for r in rows):
        text += " compile s: wall time, cases compiled concurrently (AOTC_PARALLEL=0: one at a time)."
    return text


def render(header, rows, abl, notes, profiles, precisions, max_notes=kMaxPrintedNotes):
    """(printed text, table.md text): table.md adds the memory table and every note."""
    def assemble(note_lines):
        return "\n".join(filter(None, [header, format_table(rows), legend(rows, precisions),
                                       format_ablation(abl), profiles] + note_lines))
    all_notes = [f"note: {n}" for n in notes]
    shown = all_notes[:max_notes]
    if len(all_notes) > max_notes:
        shown.append(f"note: ... {len(all_notes) - max_notes} more notes in table.md")
    full = assemble(all_notes) + "\n\nmemory:\n" + format_table(rows, kMemoryColumns)
    return assemble(shown), full


def main(argv=None):
    p = argparse.ArgumentParser(description="print and save the device run's table")
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--models", required=True, help="space separated model folder names")
    p.add_argument("--header", default="", help="lines printed above the table")
    p.add_argument("--precisions", default="fp32", help="e.g. 'fp32 fp16'")
    p.add_argument("--ablation", action="store_true", help="add the ablation table")
    p.add_argument("--ptx", action="store_true", help="add the compute_87 PTX row")
    p.add_argument("--ablation-label", default="resnet50")
    args = p.parse_args(argv)
    precisions = args.precisions.replace(",", " ").split() or ["fp32"]
    rows, abl, notes = summarize(args.work, args.models.split(), precisions, args.ablation,
                                 args.ptx, args.ablation_label)
    profiles = profile_sections(args.work, [r["case"] for r in rows])
    text, full = render(args.header, rows, abl, notes, profiles, precisions)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(full + "\n")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"rows": rows, "ablation": abl, "notes": notes}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
