#!/usr/bin/env python3
# Small steps of tools/device_run.sh that are easier in Python than in bash:
#   cases MODELS_DIR NAME...            one line per exported (model, batch): LABEL BATCH MODEL DATA_DIR
#   plan MODELS_DIR NAME... [--precisions "fp32 fp16"] [--arch sm_90] [--ablation] [--ptx]
#                                       one line per case to compile/run (see plan_line)
#   compare --expected D --actual D --json F [--precision fp16]
#                                       whole-model metric of aotc's outputs against ORT's, with
#                                       the precision's tolerance (the verdict the table shows)
# The metric is computed here from the files, independently of aotc-run's own comparison (whose
# --model-metric always applies the fp32 limits).
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from models import reference_data as ref  # noqa: E402


kPrecisions = ("fp32", "fp16", "int8")
# Whole-model tolerance per precision: (rel L2 limit, max abs / max|ref| limit or None). fp32 is
# design.md section 4; fp16 (fp32 I/O, fp16 inside) is judged on rel L2 alone. int8 (calibrated on
# kCalibSamples random inputs, the rest fp16): 5e-2, provisional, twice the worst error ONNX
# Runtime's own quantize_static gave on our CPU test models (2.16e-2, docs/results.md); design.md
# asks for top-1 agreement and relative error, and the digits network's accuracy is still to come.
kTolerances = {"fp32": (ref.kRelL2Limit, ref.kMaxAbsOverRefLimit), "fp16": (1e-2, None), "int8": (5e-2, None)}
kCalibSamples = 8
# Ablation of resnet50: (variant, table header, passes disabled, CUDA graphs on). Each variant
# adds one optimisation to the previous one; "graphs" is the default build (the main case).
kAblationVariants = (
    # (variant, column header, passes disabled, CUDA graphs on, extra aotc arguments)
    ("baseline", "baseline", ("fuse_epilogue", "layout_nhwc"), False, ()),
    ("fusion", "+fusion", ("layout_nhwc",), False, ()),
    ("nhwc", "+NHWC/TC", (), False, ()),
    ("graphs", "+graphs", (), True, ()),
    # The default build with every tensor-core convolution on CUTLASS (no cuBLASLt for 1x1 or
    # underfilled convolutions; side column).
    ("cutlass_only", "convs CUTLASS only", (), True,
     ("--conv-pointwise", "cutlass", "--conv-im2col", "off")),
)


def variant_builds_library(variant):
    """Whether an ablation variant compiles its own library (else it runs the main case's)."""
    for v, _, disabled, _, extra in kAblationVariants:
        if v == variant:
            return bool(disabled or extra)
    return False


kAblationBatches = (1, 32)
kPtxArch = "compute_87"
kPtxBatch = 1
kPtxPrecision = "fp16"


def tolerance(precision):
    if precision not in kTolerances:
        raise ValueError(f"unknown precision '{precision}'; known: {', '.join(kTolerances)}")
    return kTolerances[precision]


def tolerance_text(precision):
    rel, ratio = tolerance(precision)
    return f"rel L2 < {rel:.0e}" + (f", max abs < {ratio:.0e} max|ref|" if ratio is not None else "")


def apply_tolerance(metric, precision):
    """A copy of one metric (reference_data.model_metric's dict) judged by the precision's
    limits: 'ok', 'precision' and, when not ok, 'reason'."""
    rel_limit, ratio_limit = tolerance(precision)
    m = dict(metric)
    rel = float(m.get("rel_l2", float("inf")))
    ratio = float(m.get("max_abs_over_max_ref", float("inf")))
    shape_ok = not str(m.get("reason", "")).startswith("shape")
    finite_ok = bool(m.get("nonfinite_match", True))
    ok = shape_ok and finite_ok and rel < rel_limit and (ratio_limit is None or ratio < ratio_limit)
    m["ok"] = bool(ok)
    m["precision"] = precision
    m.pop("reason", None)
    if not shape_ok:
        m["reason"] = metric.get("reason")
    elif not finite_ok:
        m["reason"] = "NaN/Inf positions differ"
    elif not ok:
        m["reason"] = f"over the {precision} limits ({tolerance_text(precision)})"
    return m


def case_name(label, batch, precision, variant=""):
    """The case folder and library name: LABEL_bsB_PREC[_VARIANT], e.g. resnet50_bs1_fp16,
    resnet50_bs32_fp32_baseline, resnet50_bs1_fp16_compute_87."""
    return f"{label}_bs{batch}_{precision}" + (f"_{variant}" if variant else "")


def ablation_case(label, batch, precision, variant):
    """Folder holding a variant's results: the main case for the default build with graphs."""
    return case_name(label, batch, precision, "" if variant == "graphs" else variant)


def plan_cases(cases, precisions, arch, ablation=False, ptx=False, ablation_label="resnet50"):
    """Every case device_run.sh compiles or runs, from list_cases' (label, batch, model, data):
    dicts with name, label, batch, precision, model, data, role (main|ablation|ptx), variant,
    lib (the case whose library it runs: itself when it compiles one), graphs (CUDA graphs on)
    and aotc_args. Main cases first (model, batch, precision order), then ablation, then PTX."""
    plan = []

    def add(label, batch, model, data, precision, role, variant="", lib=None, graphs=True,
            args=()):
        name = case_name(label, batch, precision, variant)
        plan.append({"name": name, "label": label, "batch": batch, "precision": precision,
                     "model": model, "data": data, "role": role, "variant": variant,
                     "lib": lib or name, "graphs": graphs,
                     "aotc_args": ["--precision", precision] + list(args)})
    for label, batch, model, data in cases:
        for precision in precisions:
            add(label, batch, model, data, precision, "main", args=["--arch", arch])
    if ablation:
        for label, batch, model, data in cases:
            if label != ablation_label or batch not in kAblationBatches:
                continue
            for precision in precisions:
                main = case_name(label, batch, precision)
                for variant, _, disabled, graphs, extra in kAblationVariants:
                    if variant == "graphs":
                        continue  # the main case itself
                    args = ["--arch", arch]
                    for pass_name in disabled:
                        args += ["--disable-pass", pass_name]
                    args += list(extra)
                    add(label, batch, model, data, precision, "ablation", variant,
                        lib=None if variant_builds_library(variant) else main, graphs=graphs,
                        args=args)
    if ptx:
        for label, batch, model, data in cases:
            if label == ablation_label and batch == kPtxBatch:
                add(label, batch, model, data, kPtxPrecision, "ptx", kPtxArch,
                    args=["--arch", kPtxArch])
    return plan


def plan_line(entry):
    """NAME LABEL BATCH PRECISION MODEL DATA LIB GRAPHS(on|off) ROLE VARIANT(- if none) AOTC_ARGS..."""
    return " ".join([entry["name"], entry["label"], str(entry["batch"]), entry["precision"],
                     entry["model"], entry["data"], entry["lib"],
                     "on" if entry["graphs"] else "off", entry["role"], entry["variant"] or "-"]
                    + entry["aotc_args"])


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


def compare_dirs(expected_dir, actual_dir, precision="fp32"):
    expected = ref.read_test_data_set(expected_dir, "output")
    actual = load_outputs(actual_dir)
    if not expected:
        return {"ok": False, "reason": f"no expected outputs in {expected_dir}",
                "rel_l2": float("inf"), "max_abs_over_max_ref": float("inf"),
                "precision": precision}
    if len(actual) != len(expected):
        return {"ok": False, "reason": f"{len(actual)} outputs written, {len(expected)} expected",
                "rel_l2": float("inf"), "max_abs_over_max_ref": float("inf"),
                "precision": precision}
    result = ref.combine_metrics([apply_tolerance(ref.model_metric(a, e), precision)
                                  for a, e in zip(actual, expected)])
    result["precision"] = precision
    if not result["ok"] and "reason" not in result:  # the worst rel L2 passed, another did not
        result["reason"] = f"an output is over the {precision} limits ({tolerance_text(precision)})"
    return result


def write_calibration_inputs(data_dir, out_dir, count, seed, batch=None):
    """OUT/test_data_set_K/input_J.pb for K < count: float inputs drawn from a standard normal
    (seeded; the exported test inputs are random normal too, but never these), integer inputs
    (token ids, masks) copied from the test input, which has the only valid values we know."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    rng = np.random.default_rng(seed)
    inputs = []
    j = 0
    while os.path.exists(os.path.join(data_dir, f"input_{j}.pb")):
        inputs.append(onnx.load_tensor(os.path.join(data_dir, f"input_{j}.pb")))
        j += 1
    if not inputs:
        raise SystemExit(f"no input_0.pb in {data_dir}")
    for k in range(count):
        d = os.path.join(out_dir, f"test_data_set_{k}")
        os.makedirs(d, exist_ok=True)
        for j, t in enumerate(inputs):
            a = numpy_helper.to_array(t)
            if batch is not None and a.ndim >= 1:  # the first `batch` rows (the batch dim)
                a = a[:batch] if a.shape[0] >= batch else np.concatenate([a] * batch)[:batch]
            if np.issubdtype(a.dtype, np.floating):
                a = rng.standard_normal(a.shape).astype(a.dtype)
            with open(os.path.join(d, f"input_{j}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, t.name).SerializeToString())


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
    m.add_argument("--precision", choices=sorted(kTolerances), default="fp32")
    cb = sub.add_parser("calib", help="write calibration inputs for an int8 case")
    cb.add_argument("data_dir", help="a test_data_set folder: input_K.pb give the shapes and dtypes")
    cb.add_argument("out_dir")
    cb.add_argument("--count", type=int, default=kCalibSamples)
    cb.add_argument("--seed", type=int, default=1234)
    cb.add_argument("--batch", type=int, default=None,
                    help="write inputs of this batch size (default: the test input's)")
    pl = sub.add_parser("plan")
    pl.add_argument("models_dir")
    pl.add_argument("names", nargs="+")
    pl.add_argument("--precisions", default="fp32")
    pl.add_argument("--arch", default="sm_90")
    pl.add_argument("--ablation", action="store_true")
    pl.add_argument("--ptx", action="store_true")
    pl.add_argument("--ablation-label", default="resnet50")
    args = p.parse_args(argv)
    if args.cmd == "cases":
        for label, batch, model, data in list_cases(args.models_dir, args.names):
            print(label, batch, model, data)
        return 0
    if args.cmd == "calib":
        write_calibration_inputs(args.data_dir, args.out_dir, args.count, args.seed, args.batch)
        return 0
    if args.cmd == "plan":
        precisions = args.precisions.replace(",", " ").split()
        for precision in precisions:
            tolerance(precision)  # unknown precision: ValueError, exit != 0
        for entry in plan_cases(list_cases(args.models_dir, args.names), precisions, args.arch,
                                args.ablation, args.ptx, args.ablation_label):
            print(plan_line(entry))
        return 0
    result = compare_dirs(args.expected, args.actual, args.precision)
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)
    print(f"rel L2 {result['rel_l2']:.3e}  max abs/max|ref| {result['max_abs_over_max_ref']:.3e}  "
          f"{args.precision} {'PASS' if result['ok'] else 'FAIL: ' + str(result.get('reason', ''))}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
