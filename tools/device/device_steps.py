#!/usr/bin/env python3
# Small steps of tools/device_run.sh that are easier in Python than in bash:
#   cases MODELS_DIR NAME...            one line per exported (model, batch): LABEL BATCH MODEL DATA_DIR
#   compare --expected D --actual D --json F   whole-model metric of aotc's outputs against ORT's
# The metric is computed here from the files, independently of aotc-run's own comparison.
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from models import reference_data as ref  # noqa: E402


def list_cases(models_dir, names):
    """(label, batch, model_path, data_dir) for every case in each NAME's meta.json; a model
    without meta.json (export failed) yields nothing."""
    cases = []
    for name in names:
        directory = os.path.join(models_dir, name)
        meta_path = os.path.join(directory, "meta.json")
        if not os.path.exists(meta_path):
            continue
        with open(meta_path) as f:
            meta = json.load(f)
        for case in meta.get("cases", []):
            cases.append((name, int(case["batch"]), os.path.join(directory, meta["model_file"]),
                          os.path.join(directory, case["data_dir"])))
    return cases


def load_outputs(directory):
    """output_K.pb in order, or output_K.npy where the .pb is missing."""
    import numpy as np
    arrays = []
    k = 0
    while True:
        pb = os.path.join(directory, f"output_{k}.pb")
        npy = os.path.join(directory, f"output_{k}.npy")
        if os.path.exists(pb):
            arrays.append(ref.load_tensor(pb))
        elif os.path.exists(npy):
            arrays.append(np.load(npy))
        else:
            return arrays
        k += 1


def compare_dirs(expected_dir, actual_dir):
    expected = ref.read_test_data_set(expected_dir, "output")
    actual = load_outputs(actual_dir)
    if not expected:
        return {"ok": False, "reason": f"no expected outputs in {expected_dir}",
                "rel_l2": float("inf"), "max_abs_over_max_ref": float("inf")}
    if len(actual) != len(expected):
        return {"ok": False, "reason": f"{len(actual)} outputs written, {len(expected)} expected",
                "rel_l2": float("inf"), "max_abs_over_max_ref": float("inf")}
    return ref.combine_metrics([ref.model_metric(a, e) for a, e in zip(actual, expected)])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cases")
    c.add_argument("models_dir")
    c.add_argument("names", nargs="+")
    m = sub.add_parser("compare")
    m.add_argument("--expected", required=True)
    m.add_argument("--actual", required=True)
    m.add_argument("--json", required=True)
    args = p.parse_args(argv)
    if args.cmd == "cases":
        for label, batch, model, data in list_cases(args.models_dir, args.names):
            print(label, batch, model, data)
        return 0
    result = compare_dirs(args.expected, args.actual)
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)
    print(f"rel L2 {result['rel_l2']:.3e}  max abs/max|ref| {result['max_abs_over_max_ref']:.3e}  "
          f"{'pass' if result['ok'] else 'FAIL: ' + str(result.get('reason', ''))}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
