#!/usr/bin/env python3
# Summarises an Nsight Compute CSV (ncu --csv --metrics gpu__time_duration.sum ...) of one or more
# runs of an aotc library: time per kernel name averaged over its launches per run, share of the
# total, sorted. Used by the device call to find where a model's time goes.
#   python3 tools/device/ncu_summary.py ncu.csv --runs N [--top 15] [--json out.json]
import argparse
import csv
import json
import sys


def summarize(rows, runs):
    per_kernel = {}
    for r in rows:
        name = r.get("Kernel Name", "?")
        try:
            value = float(r.get("Metric Value", "nan").replace(",", ""))
        except ValueError:
            continue
        unit = r.get("Metric Unit", "nsecond")
        scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}.get(unit, 1e-6)
        k = per_kernel.setdefault(name, [0.0, 0])
        k[0] += value * scale
        k[1] += 1
    total = sum(v[0] for v in per_kernel.values()) / max(runs, 1)
    out = [{"kernel": n, "ms_per_run": v[0] / max(runs, 1), "launches_per_run": v[1] / max(runs, 1),
            "share": (v[0] / max(runs, 1)) / total if total else 0.0}
           for n, v in per_kernel.items()]
    out.sort(key=lambda d: -d["ms_per_run"])
    return total, out


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("csv")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--json", default="")
    a = p.parse_args(argv)
    with open(a.csv, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu prints its own lines before the CSV
    total, out = summarize(list(csv.DictReader(lines)), a.runs)
    print(f"kernel time per run: {total:.4f} ms ({len(out)} distinct kernels)")
    for d in out[: a.top]:
        print(f"  {d['ms_per_run']:8.4f} ms {100 * d['share']:5.1f}%  x{d['launches_per_run']:<5.1f} {d['kernel'][:90]}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"total_ms": total, "kernels": out}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
