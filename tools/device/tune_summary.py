#!/usr/bin/env python3
# Summarises tools/device/tune_conv.sh: median ms per (model, batch, configuration), and from the
# ncu CSVs (one per configuration, same launch order) the fastest configuration per convolution
# launch with its grid, so the pick rule in ir/ops/conv_configs.h can be chosen from data.
import argparse
import collections
import csv
import glob
import os
import re
import sys


def read_tune(path):
    rows = []
    for line in open(path):
        parts = line.split()
        if len(parts) >= 4:
            rows.append((parts[0], int(parts[1]), parts[2], parts[3], " ".join(parts[4:])))
    return rows


def read_ncu(path, runs):
    lines = [l for l in open(path, errors="replace") if l.startswith('"')]
    seq = []
    for r in csv.DictReader(lines):
        name = r.get("Kernel Name", "")
        if name.endswith("_params"):
            continue
        try:
            v = float(r.get("Metric Value", "nan").replace(",", "")) / 1000.0
        except ValueError:
            continue
        seq.append((name, r.get("Grid Size", ""), v))
    n = len(seq) // max(runs, 1)
    return seq[-n:] if n else []


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--tune", required=True)
    p.add_argument("--ncu-dir", default="")
    p.add_argument("--runs", type=int, default=2)
    a = p.parse_args(argv)
    rows = read_tune(a.tune)
    by_case = collections.defaultdict(list)
    for label, batch, config, ms, rel in rows:
        by_case[(label, batch)].append((config, ms, rel))
    print("median ms per configuration (rule = the default pick rule):")
    for (label, batch), items in sorted(by_case.items()):
        cells = "  ".join(f"{c}={ms}" for c, ms, _ in items)
        print(f"  {label} bs{batch}: {cells}")
    if not a.ncu_dir:
        return 0
    for path in sorted(glob.glob(os.path.join(a.ncu_dir, "ncu_*_rule.csv"))):
        case = os.path.basename(path)[len("ncu_"):-len("_rule.csv")]
        per_config = {}
        for other in glob.glob(os.path.join(a.ncu_dir, f"ncu_{case}_*.csv")):
            cfg = os.path.basename(other)[len(f"ncu_{case}_"):-len(".csv")]
            per_config[cfg] = read_ncu(other, a.runs)
        base = per_config.get("rule", [])
        print(f"\n{case}: per launch, us (tensor-core convolutions only), fastest first")
        best_total = 0.0
        rule_total = 0.0
        wins = collections.Counter()
        for i, (name, grid, t_rule) in enumerate(base):
            if not re.search(r"Conv", name) or "fill" in name:
                continue
            times = {c: seq[i][2] for c, seq in per_config.items() if i < len(seq) and len(seq) == len(base)}
            best = min(times, key=times.get)
            wins[best] += 1
            best_total += times[best]
            rule_total += t_rule
            top = sorted(times.items(), key=lambda kv: kv[1])[:3]
            print(f"  #{i:3d} grid {grid:14s} rule {t_rule:7.1f}  " + "  ".join(f"{c} {t:.1f}" for c, t in top))
        print(f"  conv total: rule {rule_total:.1f} us, best per launch {best_total:.1f} us; wins: {dict(wins)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
