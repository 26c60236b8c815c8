#!/usr/bin/env python3
# Exports a model of models/model_zoo.py (torchvision CNNs/ViT, transformers GPT-2/BERT) with
# seeded random weights to ONNX and writes, per batch, a seeded input and ONNX Runtime's CPU output
# in the ONNX test_data_set layout, plus meta.json for tools/device_run.sh. Runs on the GPU machine
# (torch is needed); the pure parts (arguments, layout, meta) are tested without torch.
#   python3 models/export_torchvision.py --model resnet50 --out-dir /tmp/aotc/models
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from models import model_zoo  # noqa: E402
from models import reference_data as ref  # noqa: E402

kDefaultOpset = 17
kExporters = ("torchscript", "dynamo", "dynamo23")
kDynamo23Opset = 23
kExampleBatch = 2


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Export seeded random-weight models to ONNX with ONNX Runtime reference data.",
        epilog="Layout: OUT/NAME[_dynamo]/{model.onnx, meta.json, test_data_set_bsB/"
               "{input_K.pb,output_K.pb}}. Known models: " + ", ".join(sorted(model_zoo.MODEL_SPECS)))
    p.add_argument("--model", action="append", required=True,
                   help="model name (repeatable, or space/comma separated)")
    p.add_argument("--out-dir", default="out/models", help="output root (default out/models)")
    p.add_argument("--batches", default="",
                   help="batch sizes, e.g. '1 32' (default: the model's own, 1 32 or 1 8)")
    p.add_argument("--seed", type=int, default=0, help="weight seed; inputs derive from it")
    p.add_argument("--exporter", choices=kExporters, default="torchscript",
                   help="torchscript (opset --opset), dynamo (its default opset) or dynamo23 (dynamo "
                        "at opset 23 with transformers' SDPA attention, so that attention is the ONNX "
                        "Attention op)")
    p.add_argument("--opset", type=int, default=kDefaultOpset,
                   help="opset for the TorchScript exporter (dynamo: its default; dynamo23: 23)")
    p.add_argument("--ort-optimization", choices=("disable", "basic", "all"), default="basic")
    p.add_argument("--no-torch-check", action="store_true",
                   help="skip the ORT vs PyTorch (CPU) sanity comparison")
    args = p.parse_args(argv)
    args.models = split_list(args.model)
    for name in args.models:
        if name not in model_zoo.MODEL_SPECS:
            p.error(f"unknown model '{name}'; known: {', '.join(sorted(model_zoo.MODEL_SPECS))}")
    try:
        args.batch_list = [int(b) for b in split_list([args.batches])] if args.batches else []
    except ValueError:
        p.error(f"--batches must be integers, got '{args.batches}'")
    if any(b < 1 for b in args.batch_list):
        p.error("--batches must be >= 1")
    return args


def split_list(values):
    out = []
    for v in values:
        out.extend(x for x in v.replace(",", " ").split() if x)
    return out


def attention_of(exporter):
    """transformers' attention implementation per exporter: an explicit softmax(QK^T)V graph for
    torchscript / dynamo (both trace it the same way), SDPA for dynamo23 (exported as Attention)."""
    return "sdpa" if exporter == "dynamo23" else "eager"


def model_dir(out_dir, name, exporter):
    return os.path.join(out_dir, name if exporter == "torchscript" else f"{name}_{exporter}")


def case_dir_name(batch):
    return f"test_data_set_bs{batch}"


def io_meta(spec):
    return {"inputs": [{"name": i.name, "dtype": i.dtype, "shape": [model_zoo.kBatchDim] +
                        list(i.shape)} for i in spec.inputs],
            "outputs": [{"name": o} for o in spec.outputs]}


def export_onnx(model, spec, example, path, exporter, opset):
    import torch
    names_in = [i.name for i in spec.inputs]
    names_out = list(spec.outputs)
    if exporter == "torchscript":
        dynamic = {n: {0: model_zoo.kBatchDim} for n in names_in + names_out}
        torch.onnx.export(model, tuple(example), path, dynamo=False, opset_version=opset,
                          input_names=names_in, output_names=names_out, dynamic_axes=dynamic,
                          do_constant_folding=True)
        return opset
    batch = torch.export.Dim("batch", min=1, max=1024)
    extra = {"opset_version": kDynamo23Opset} if exporter == "dynamo23" else {}
    program = torch.onnx.export(model, tuple(example), path, dynamo=True,
                                input_names=names_in, output_names=names_out,
                                dynamic_shapes=tuple({0: batch} for _ in names_in), **extra)
    try:
        return int(program.model.opset_imports.get("", 0))
    except Exception:
        return None


def export_one(name, args, log):
    import numpy as np
    import torch
    spec = model_zoo.get_spec(name)
    batches = args.batch_list or list(spec.default_batches)
    directory = model_dir(args.out_dir, name, args.exporter)
    os.makedirs(directory, exist_ok=True)
    meta = {"model": name, "source": spec.source, "exporter": args.exporter, "seed": args.seed,
            "notes": spec.notes, **io_meta(spec), "cases": []}
    t0 = time.time()
    model, info = model_zoo.build_model(name, args.seed, attention=attention_of(args.exporter))
    meta.update(info)
    meta["build_seconds"] = round(time.time() - t0, 2)
    log(f"{name}: built ({info['parameters']/1e6:.1f} M params, "
        f"{info['batchnorm_recalibrated']} BatchNorms re-estimated, "
        f"re-initialised: {info['reinitialised'] or 'none'}) in {meta['build_seconds']} s")

    path = os.path.join(directory, "model.onnx")
    # Traced at batch 2: a batch of 1 can be folded into shapes as a constant broadcast dim.
    example = [torch.from_numpy(a) for a in ref.make_inputs(spec, kExampleBatch, 1)]
    t0 = time.time()
    meta["opset"] = export_onnx(model, spec, example, path, args.exporter, args.opset)
    meta["export_seconds"] = round(time.time() - t0, 2)
    meta["model_file"] = "model.onnx"
    log(f"{name}: exported with {args.exporter} in {meta['export_seconds']} s -> {path}")

    in_names, out_names = ref.ort_io_names(path)
    for batch in batches:
        inputs = ref.make_inputs(spec, batch, model_zoo.test_input_seed(args.seed, batch))
        feeds = dict(zip(in_names, inputs))
        t0 = time.time()
        outputs = ref.run_ort(path, feeds, args.ort_optimization)
        ort_seconds = time.time() - t0
        case_dir = os.path.join(directory, case_dir_name(batch))
        ref.write_test_data_set(case_dir, in_names, inputs, out_names, outputs)
        case = {"batch": batch, "data_dir": case_dir_name(batch), "input_names": in_names,
                "output_names": out_names, "ort_seconds": round(ort_seconds, 2),
                "output_shapes": [list(o.shape) for o in outputs],
                "output_max_abs": [float(np.max(np.abs(o))) for o in outputs]}
        if not args.no_torch_check:
            with torch.no_grad():
                got = model(*[torch.from_numpy(a) for a in inputs])
            metric = ref.model_metric(got.numpy(), outputs[0])
            case["ort_vs_torch_cpu"] = {k: metric[k] for k in ("rel_l2", "max_abs_over_max_ref")}
            log(f"{name} bs{batch}: ORT vs PyTorch (CPU) rel L2 {metric['rel_l2']:.2e}, "
                f"max abs/max|ref| {metric['max_abs_over_max_ref']:.2e}, "
                f"max|ref| {metric['max_ref']:.3g}")
        meta["cases"].append(case)
    with open(os.path.join(directory, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


def main(argv=None):
    args = parse_args(argv)
    log = lambda msg: print(f"[export] {msg}", flush=True)  # noqa: E731
    import torch
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    failures = 0
    for name in args.models:
        try:
            export_one(name, args, log)
        except Exception as exc:  # one model failing must not hide the others
            failures += 1
            log(f"{name}: FAILED: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            directory = model_dir(args.out_dir, name, args.exporter)
            os.makedirs(directory, exist_ok=True)
            with open(os.path.join(directory, "export_error.txt"), "w") as f:
                import traceback
                f.write(traceback.format_exc())
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
