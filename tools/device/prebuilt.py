#!/usr/bin/env python3
# Libraries built on the development machine, checked and timed on the GPU machine: the short-call
# path for when device time is scarce (device_run.sh builds aotc, exports and compiles there).
#
#   build  (here, no GPU)  prebuilt.py build OUT --case NAME=MODEL_DIR:BATCH:PRECISION[:AOTC[:ARGS]] ...
#          compiles each case with that aotc binary (default build/bin/aotc) into OUT/NAME/libNAME.so,
#          copies MODEL_DIR/test_data_set_bsB (input_K.pb, ONNX Runtime's output_K.pb) beside it and
#          writes OUT/manifest.json. Cases sharing MODEL_DIR:BATCH:PRECISION form one A/B group.
#   count  (here, no GPU)  prebuilt.py count OUT: steps per library, by kind (the libraries'
#          profiling extension lists them without running anything).
#   run    (GPU machine)   prebuilt.py run OUT [--iters 200] [--turns 2] [--profile NAME ...]:
#          loads each library with ctypes (its C ABI only; no aotc tool, no protobuf library), runs
#          it on the exported input with PyTorch's CUDA tensors and stream, compares the outputs
#          with ONNX Runtime's through device_steps.compare_dirs (design.md section 4's limits), then
#          times every library of a group in turn, --turns times (median of --iters runs, one pair
#          of CUDA events per run after 10 warm-up runs), and prints one table.
import argparse
import collections
import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

kOnnxToNumpy = {1: "float32", 10: "float16", 16: "bfloat16", 11: "float64", 7: "int64", 6: "int32",
                3: "int8", 2: "uint8", 9: "bool"}


def parse_case(text):
    """NAME=MODEL_DIR:BATCH:PRECISION[:AOTC[:ARGS]] -> dict (ARGS: aotc arguments, spaces allowed)."""
    if "=" not in text:
        raise ValueError(f"case '{text}': expected NAME=MODEL_DIR:BATCH:PRECISION[:AOTC[:ARGS]]")
    name, rest = text.split("=", 1)
    parts = rest.split(":", 4)
    if not name.isidentifier() or len(parts) < 3:
        raise ValueError(f"case '{text}': NAME must be an identifier and MODEL_DIR:BATCH:PRECISION given")
    model_dir, batch, precision = parts[0], int(parts[1]), parts[2]
    aotc = parts[3] if len(parts) > 3 and parts[3] else ""
    args = parts[4].split() if len(parts) > 4 else []
    return {"name": name, "model_dir": model_dir, "batch": batch, "precision": precision,
            "aotc": aotc, "args": args, "group": f"{os.path.basename(os.path.normpath(model_dir))} bs{batch} {precision}"}


def cmd_build(a):
    os.makedirs(a.out, exist_ok=True)
    cases = []
    for text in a.case:
        c = parse_case(text)
        aotc = c["aotc"] or a.aotc
        d = os.path.join(a.out, c["name"])
        os.makedirs(d, exist_ok=True)
        data = os.path.join(c["model_dir"], f"test_data_set_bs{c['batch']}")
        if not os.path.isdir(data):
            raise SystemExit(f"{c['name']}: no {data}")
        shutil.copytree(data, os.path.join(d, "data"), dirs_exist_ok=True)
        cmd = [aotc, os.path.join(c["model_dir"], "model.onnx"), "-o", os.path.join(d, f"lib{c['name']}.so"),
               "--name", c["name"], "--batch", str(c["batch"]), "--precision", c["precision"],
               "--arch", a.arch] + c["args"]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        c["compile_seconds"] = round(time.monotonic() - t0, 2)
        c["aotc_version"] = subprocess.run([aotc, "--version"], capture_output=True, text=True).stdout.strip()
        if proc.returncode != 0:
            raise SystemExit(f"{c['name']}: aotc failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
        c["lib"] = os.path.join(c["name"], f"lib{c['name']}.so")
        c["data"] = os.path.join(c["name"], "data")
        c["command"] = " ".join(cmd)
        cases.append(c)
        print(f"{c['name']}: built in {c['compile_seconds']} s ({os.path.getsize(os.path.join(a.out, c['lib'])) / 1e6:.1f} MB)",
              flush=True)
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump({"arch": a.arch, "cases": cases}, f, indent=1)


def load_manifest(out):
    with open(os.path.join(out, "manifest.json")) as f:
        return json.load(f)


class Library:
    """One library through its C ABI (runtime/aotc_runtime.h, prefixed by the case name)."""

    def __init__(self, path, prefix):
        self.lib = ctypes.CDLL(os.path.abspath(path))
        self.p = prefix

    def fn(self, name, restype=ctypes.c_int, argtypes=None):
        f = getattr(self.lib, f"{self.p}_{name}")
        f.restype = restype
        if argtypes is not None:
            f.argtypes = argtypes
        return f

    def steps(self):
        n = self.fn("profile_num_steps")()
        kind = self.fn("profile_step_kind", ctypes.c_char_p, [ctypes.c_int])
        label = self.fn("profile_step_label", ctypes.c_char_p, [ctypes.c_int])
        return [(kind(i).decode(), label(i).decode()) for i in range(n)]

    def create(self):
        """(status, handle, message): NAME_create on device 0 with the default options."""
        model = ctypes.c_void_p()
        create = self.fn("create", ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p])
        st = create(ctypes.byref(model), 0, None, None)
        return st, model, self.last_error(model) if st != 0 else ""

    def last_error(self, model):
        return (self.fn("last_error", ctypes.c_char_p, [ctypes.c_void_p])(model) or b"").decode()

    def run_fn(self):
        """NAME_run(handle, input pointers, output pointers, stream) -> status."""
        return self.fn("run", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p])

    def destroy(self, model):
        self.fn("destroy", None, [ctypes.c_void_p])(model)

    def load_inputs(self, data_dir):
        """The numpy arrays of data_dir/input_K.pb for the library's inputs; ValueError when a
        file's dtype or shape differs from the library's."""
        import numpy as np
        import onnx
        from onnx import numpy_helper
        arrays = []
        for k, (dtype, shape) in enumerate(self.io("input")):
            arr = numpy_helper.to_array(onnx.load_tensor(os.path.join(data_dir, f"input_{k}.pb")))
            if str(arr.dtype) != dtype or tuple(arr.shape) != shape:
                raise ValueError(f"input {k}: file {arr.dtype}{arr.shape}, library {dtype}{shape}")
            arrays.append(np.ascontiguousarray(arr))
        return arrays

    def io(self, which):
        count = self.fn(f"num_{which}s")()
        dtype = self.fn(f"{which}_dtype", ctypes.c_int, [ctypes.c_int])
        rank = self.fn(f"{which}_rank", ctypes.c_int, [ctypes.c_int])
        shape = self.fn(f"{which}_shape", ctypes.POINTER(ctypes.c_longlong), [ctypes.c_int])
        out = []
        for i in range(count):
            r = rank(i)
            s = shape(i)
            out.append((kOnnxToNumpy.get(dtype(i), "?"), tuple(s[k] for k in range(r))))
        return out


def step_summary(steps):
    kinds = collections.Counter(k for k, _ in steps)
    transposes = sum(1 for _, label in steps if "transpose" in label.lower())
    return kinds, transposes


def cmd_count(a):
    m = load_manifest(a.out)
    for c in m["cases"]:
        kinds, transposes = step_summary(Library(os.path.join(a.out, c["lib"]), c["name"]).steps())
        print(f"{c['name']:<28} {c['group']:<32} steps {sum(kinds.values()):>4}  "
              + "  ".join(f"{k} {v}" for k, v in sorted(kinds.items())) + f"  (labels with 'transpose': {transposes})")


def cmd_run(a):
    import torch
    from onnx import numpy_helper

    import device_steps

    m = load_manifest(a.out)
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    print(f"# {torch.cuda.get_device_name(0)}; torch {torch.__version__}; arch of the libraries {m['arch']}")
    stream = torch.cuda.current_stream()
    handles, results = {}, {}
    for c in m["cases"]:
        r = results[c["name"]] = {"group": c["group"], "name": c["name"]}
        lib = Library(os.path.join(a.out, c["lib"]), c["name"])
        st, model, message = lib.create()
        if st != 0:
            r["error"] = f"create: status {st}: {message}"
            continue
        data = os.path.join(a.out, c["data"])
        try:
            ins = [torch.from_numpy(arr).to(dev) for arr in lib.load_inputs(data)]
        except ValueError as e:
            r["error"] = str(e)
            continue
        outs = [torch.empty(shape, dtype=getattr(torch, dtype), device=dev) for dtype, shape in lib.io("output")]
        in_ptrs = (ctypes.c_void_p * len(ins))(*[t.data_ptr() for t in ins])
        out_ptrs = (ctypes.c_void_p * len(outs))(*[t.data_ptr() for t in outs])
        run = lib.run_fn()
        for t in outs:
            t.view(torch.uint8).fill_(0xFF)  # unwritten elements show up as NaN
        st = run(model, in_ptrs, out_ptrs, ctypes.c_void_p(stream.cuda_stream))
        torch.cuda.synchronize()
        if st != 0:
            r["error"] = f"run: status {st}: {lib.last_error(model)}"
            continue
        got = os.path.join(a.out, c["name"], "outputs")
        os.makedirs(got, exist_ok=True)
        for k, t in enumerate(outs):
            with open(os.path.join(got, f"output_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(t.cpu().numpy(), f"output_{k}").SerializeToString())
        metric = device_steps.compare_dirs(data, got, c["precision"])
        r.update(ok=bool(metric["ok"]), rel_l2=metric["rel_l2"], max_abs_over_max_ref=metric["max_abs_over_max_ref"])
        handles[c["name"]] = (lib, model, run, in_ptrs, out_ptrs, ins, outs)
    for turn in range(a.turns):
        for c in m["cases"]:
            if c["name"] not in handles:
                continue
            _, model, run, in_ptrs, out_ptrs, _, _ = handles[c["name"]]
            s = ctypes.c_void_p(stream.cuda_stream)
            for _ in range(10):
                run(model, in_ptrs, out_ptrs, s)
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(a.iters)]
            for e0, e1 in ev:
                e0.record(stream)
                run(model, in_ptrs, out_ptrs, s)
                e1.record(stream)
            torch.cuda.synchronize()
            results[c["name"]].setdefault("medians_ms", []).append(statistics.median(e0.elapsed_time(e1) for e0, e1 in ev))
    for name in a.profile:
        if name not in handles:
            continue
        lib, model, _, in_ptrs, out_ptrs, _, _ = handles[name]
        steps = lib.steps()
        prof = lib.fn("profile_run", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                                   ctypes.POINTER(ctypes.c_float)])
        per = [[] for _ in steps]
        buf = (ctypes.c_float * len(steps))()
        for it in range(22):
            if prof(model, in_ptrs, out_ptrs, ctypes.c_void_p(stream.cuda_stream), buf) != 0:
                break
            if it >= 2:
                for i in range(len(steps)):
                    per[i].append(buf[i])
        if per and per[0]:
            by_kind = collections.defaultdict(float)
            for (k, _), t in zip(steps, per):
                by_kind[k] += statistics.median(t)
            results[name]["profile"] = {"steps": len(steps), "ms_by_kind": dict(by_kind),
                                        "top": sorted(((statistics.median(t), lab) for (_, lab), t in zip(steps, per)), reverse=True)[:8]}
    for name, (lib, model, *_rest) in handles.items():
        lib.destroy(model)
    print(f"\n| case | group | check (rel L2) | median ms, turn by turn (iters {a.iters}) |\n|---|---|---|---|")
    for c in m["cases"]:
        r = results[c["name"]]
        if "error" in r:
            print(f"| {c['name']} | {c['group']} | ERROR {r['error'][:120]} | |")
            continue
        med = " / ".join(f"{x:.4f}" for x in r.get("medians_ms", []))
        print(f"| {c['name']} | {c['group']} | {'PASS' if r['ok'] else 'FAIL'} {r['rel_l2']:.2e} | {med} |")
    groups = collections.OrderedDict()
    for c in m["cases"]:
        groups.setdefault(c["group"], []).append(c["name"])
    print()
    for g, names in groups.items():
        timed = [n for n in names if results[n].get("medians_ms")]
        if len(timed) > 1:
            base = min(results[timed[0]]["medians_ms"])
            print(f"{g}: " + ", ".join(f"{n} {min(results[n]['medians_ms']) / base:.3f}x of {timed[0]}'s time" for n in timed[1:]))
    for name in a.profile:
        p = results.get(name, {}).get("profile")
        if p:
            print(f"\nprofile {name} (no CUDA graphs, events around each step): {p['steps']} steps; "
                  + ", ".join(f"{k} {v:.4f} ms" for k, v in sorted(p["ms_by_kind"].items())))
            for t, lab in p["top"]:
                print(f"  {t:.4f} ms  {lab}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if all(r.get("ok") for r in results.values()) else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("out")
    b.add_argument("--case", action="append", required=True)
    b.add_argument("--aotc", default="build/bin/aotc")
    b.add_argument("--arch", default="sm_90")
    c = sub.add_parser("count")
    c.add_argument("out")
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--iters", type=int, default=200)
    r.add_argument("--turns", type=int, default=2)
    r.add_argument("--profile", nargs="*", default=[])
    r.add_argument("--json", default="")
    a = ap.parse_args(argv)
    return {"build": cmd_build, "count": cmd_count, "run": cmd_run}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
