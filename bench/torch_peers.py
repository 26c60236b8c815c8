#!/usr/bin/env python3
# Times the PyTorch peers of an aotc library on the GPU: eager and torch.compile (reduce-overhead,
# max-autotune), fp32 with TF32 off or fp16 (--precision fp16: model.half(), half float inputs,
# outputs compared with ORT's fp32 after .float()), same weights and inputs as
# models/export_torchvision.py (same construction and seeds). CUDA-event medians after warm-up, peak memory, one JSON line per
# (model, batch, mode). Each batch runs in a child process under a time limit so a slow
# max-autotune compile cannot eat the device call; modes finished before a timeout are kept.
#   python3 bench/torch_peers.py --model resnet50 --batches "1 32" --modes "eager reduce-overhead"
#   python3 bench/torch_peers.py --model resnet50 --precision fp16 --modes "eager max-autotune"
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from models import model_zoo  # noqa: E402
from models import reference_data as ref  # noqa: E402

kModes = ("eager", "reduce-overhead", "max-autotune")
kPrecisions = ("fp32", "fp16")
kPrecisionNotes = {
    "fp32": "fp32, matmul precision 'highest' (TF32 off for matmul and cuDNN)",
    "fp16": "fp16: model.half(), float inputs as half, outputs compared after .float()",
}
kTf32ProbeLimit = 1e-5  # IEEE fp32 gives ~1e-7 on the probe, TF32 ~1e-3


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="PyTorch eager / torch.compile timings for aotc's models")
    p.add_argument("--model", required=True, choices=sorted(model_zoo.MODEL_SPECS))
    p.add_argument("--batches", default="", help="e.g. '1 32' (default: the model's own)")
    p.add_argument("--modes", default="eager reduce-overhead",
                   help=f"space/comma list of {', '.join(kModes)} (default: eager reduce-overhead)")
    p.add_argument("--precision", choices=kPrecisions, default="fp32",
                   help="fp32 (TF32 off) or fp16 (model.half() and half inputs)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds per batch (all its modes) before the child is killed")
    p.add_argument("--data-dir", default="",
                   help="exported model folder (with test_data_set_bsB/output_0.pb): if given, "
                        "each peer's output is compared with ONNX Runtime's")
    p.add_argument("--jsonl", default="", help="append one JSON line per result to this file")
    p.add_argument("--no-cudnn-benchmark", action="store_true")
    p.add_argument("--attention", choices=("sdpa", "eager"), default="sdpa",
                   help="transformers' attention implementation for the peer (default sdpa, what "
                        "transformers runs by default and torch.compile users get; eager: the "
                        "explicit softmax graph the torchscript/dynamo exports of aotc trace)")
    p.add_argument("--child-batch", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.mode_list = [m for m in args.modes.replace(",", " ").split() if m]
    for m in args.mode_list:
        if m not in kModes:
            p.error(f"unknown mode '{m}'; known: {', '.join(kModes)}")
    try:
        args.batch_list = [int(b) for b in args.batches.replace(",", " ").split()]
    except ValueError:
        p.error(f"--batches must be integers, got '{args.batches}'")
    if not args.batch_list:
        args.batch_list = list(model_zoo.get_spec(args.model).default_batches)
    return args


def percentile(sorted_values, q):
    """Nearest-rank percentile (q in [0, 100]) of an ascending list; the median for odd n."""
    if not sorted_values:
        return float("nan")
    rank = max(1, -(-q * len(sorted_values) // 100))  # ceil(q*n/100), at least 1
    return float(sorted_values[int(min(rank, len(sorted_values))) - 1])


def median(values):
    v = sorted(values)
    n = len(v)
    if n == 0:
        return float("nan")
    return float(v[n // 2]) if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def summarize_times(times_ms):
    v = sorted(times_ms)
    return {"median_ms": median(v), "p90_ms": percentile(v, 90), "min_ms": v[0] if v else None,
            "iters": len(v)}


def set_fp32_highest(torch):
    """No TF32 anywhere: the fair comparison with aotc's fp32 (which never uses TF32). Uses the
    legacy switches only: PyTorch >= 2.9 raises when the legacy and the new fp32_precision APIs
    are mixed (pytorch/pytorch#166387), and Inductor still reads the legacy ones. Falls back to
    the new API where the legacy one is gone. probe_tf32 checks the effect numerically."""
    try:
        torch.set_float32_matmul_precision("highest")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        api = "legacy (set_float32_matmul_precision, allow_tf32)"
    except Exception:
        torch.backends.fp32_precision = "ieee"
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
        api = "fp32_precision = ieee"
    state = {"tf32_api": api}
    for key, read in (("float32_matmul_precision", torch.get_float32_matmul_precision),
                      ("matmul_allow_tf32", lambda: torch.backends.cuda.matmul.allow_tf32),
                      ("cudnn_allow_tf32", lambda: torch.backends.cudnn.allow_tf32)):
        try:
            state[key] = read()
        except Exception as exc:  # a read can raise in mixed-API states; say so
            state[key] = f"unreadable: {type(exc).__name__}"
    return state


def probe_tf32(torch):
    """Relative error of a GPU fp32 matmul and conv against float64 on the CPU: ~1e-7 in IEEE
    fp32, ~1e-3 with TF32. Proves the setting instead of trusting it."""
    import torch.nn.functional as F
    g = torch.Generator().manual_seed(0)
    a = torch.randn(512, 512, generator=g, dtype=torch.float64)
    b = torch.randn(512, 512, generator=g, dtype=torch.float64)
    x = torch.randn(4, 64, 28, 28, generator=g, dtype=torch.float64)
    w = torch.randn(64, 64, 3, 3, generator=g, dtype=torch.float64)

    def rel(got, ref):
        return float((got.double().cpu() - ref).norm() / ref.norm())
    mm = rel(a.float().cuda() @ b.float().cuda(), a @ b)
    cv = rel(F.conv2d(x.float().cuda(), w.float().cuda(), padding=1), F.conv2d(x, w, padding=1))
    return {"probe_matmul_rel_err": mm, "probe_conv_rel_err": cv,
            "tf32_suspected": bool(max(mm, cv) > kTf32ProbeLimit)}


def cast_model(model, precision):
    """The model in the benchmarked precision (fp16: .half(), BatchNorm statistics included)."""
    return model.half() if precision == "fp16" else model


def cast_input(tensor, precision):
    """fp16: floating inputs become half; token ids and masks (integers) stay as they are."""
    if precision == "fp16" and tensor.is_floating_point():
        return tensor.half()
    return tensor


def time_callable(torch, fn, inputs, warmup, iters):
    for _ in range(warmup):
        fn(*inputs)
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(iters)]
    for start, end in events:
        start.record()
        fn(*inputs)
        end.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in events]


def run_child(args, batch, emit):
    import gc
    import torch
    if not torch.cuda.is_available():
        for mode in args.mode_list:
            emit({"model": args.model, "batch": batch, "mode": mode, "ok": False,
                  "precision": args.precision, "error": "no CUDA GPU visible to PyTorch"})
        return
    settings = set_fp32_highest(torch)  # also for fp16: no TF32 in whatever stays fp32
    torch.backends.cudnn.benchmark = not args.no_cudnn_benchmark
    settings.update(probe_tf32(torch))
    spec = model_zoo.get_spec(args.model)
    model, _ = model_zoo.build_model(args.model, args.seed, attention=args.attention)
    model = cast_model(model.cuda().eval(), args.precision)
    arrays = ref.make_inputs(spec, batch, model_zoo.test_input_seed(args.seed, batch))
    inputs = [cast_input(torch.from_numpy(a).cuda(), args.precision) for a in arrays]
    expected = None
    ref_path = os.path.join(args.data_dir, f"test_data_set_bs{batch}", "output_0.pb")
    if args.data_dir and os.path.exists(ref_path):
        expected = ref.load_tensor(ref_path)
    torch.cuda.synchronize()
    weights_bytes = torch.cuda.memory_allocated()
    common = {"model": args.model, "batch": batch, "device": torch.cuda.get_device_name(),
              "torch": torch.__version__, "precision": args.precision,
              "precision_note": kPrecisionNotes[args.precision], **settings,
              "cudnn_benchmark": torch.backends.cudnn.benchmark,
              "resident_mb": weights_bytes / 2**20}
    for mode in args.mode_list:
        result = dict(common, mode=mode, ok=False)
        try:
            torch.cuda.reset_peak_memory_stats()
            fn = model if mode == "eager" else torch.compile(model, mode=mode)
            with torch.no_grad():
                t0 = time.time()
                out = fn(*inputs)
                torch.cuda.synchronize()
                result["first_call_seconds"] = round(time.time() - t0, 2)
                if expected is not None:
                    metric = ref.model_metric(out.float().cpu().numpy(), expected)
                    result["rel_l2_vs_ort"] = metric["rel_l2"]
                del out
                times = time_callable(torch, fn, inputs, args.warmup, args.iters)
            result.update(summarize_times(times))
            result["peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
            result["ok"] = True
        except Exception as exc:  # report and go on with the next mode
            result["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        emit(result)
        fn = None
        gc.collect()
        torch._dynamo.reset()
        torch.cuda.empty_cache()


def main(argv=None):
    args = parse_args(argv)
    if args.child_batch:
        def emit(record):
            line = json.dumps(record)
            print(line, flush=True)
            if args.jsonl:
                with open(args.jsonl, "a") as f:
                    f.write(line + "\n")
        emitted = []
        try:
            run_child(args, args.child_batch, lambda r: (emitted.append(r["mode"]), emit(r)))
        except Exception as exc:  # e.g. no torch, model construction failed: say so per mode
            for mode in args.mode_list:
                if mode not in emitted:
                    emit({"model": args.model, "batch": args.child_batch, "mode": mode,
                          "ok": False, "precision": args.precision,
                          "error": f"{type(exc).__name__}: {exc}"[:300]})
            return 1
        return 0
    # Parent: one child per batch, each under the time limit; collect what the children wrote.
    results = []
    for batch in args.batch_list:
        part = ((args.jsonl or f"/tmp/torch_peers_{os.getpid()}.jsonl") +
                f".bs{batch}.{args.precision}.part")
        if os.path.exists(part):
            os.remove(part)
        cmd = [sys.executable, os.path.abspath(__file__), "--model", args.model,
               "--modes", " ".join(args.mode_list), "--seed", str(args.seed),
               "--precision", args.precision,
               "--warmup", str(args.warmup), "--iters", str(args.iters), "--jsonl", part,
               "--data-dir", args.data_dir, "--child-batch", str(batch)]
        if args.no_cudnn_benchmark:
            cmd.append("--no-cudnn-benchmark")
        cmd += ["--attention", args.attention]
        timed_out, child_rc = run_with_timeout(cmd, args.timeout)
        got = read_jsonl(part)
        done = {r.get("mode") for r in got}
        for mode in args.mode_list:
            if mode not in done:
                got.append({"model": args.model, "batch": batch, "mode": mode, "ok": False,
                            "precision": args.precision, "error": f"timeout after {args.timeout:.0f} s" if timed_out
                            else f"child exited with {child_rc} before this mode"})
        results.extend(got)
        if os.path.exists(part):
            os.remove(part)
    if args.jsonl:
        with open(args.jsonl, "a") as f:
            for r in results:
                f.write(json.dumps(r) + "\n")
    print(json.dumps(results, indent=1))
    return 0 if all(r.get("ok") for r in results) else 1


def run_with_timeout(cmd, timeout):
    """Runs cmd in its own process group; on timeout kills that group (the child and the
    compile workers it spawned). Returns (timed_out, return code or None)."""
    import signal
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        return False, proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        return True, None


def read_jsonl(path):
    records = []
    if not os.path.exists(path):
        return records
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # a child killed mid-write leaves a partial last line
    return records


if __name__ == "__main__":
    sys.exit(main())
