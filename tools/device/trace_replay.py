#!/usr/bin/env python3
# Where the time of a replayed run goes (GPU machine): loads an aotc library through its C ABI
# (prebuilt.Library; ctypes, no aotc tool needed), runs it with CUDA graphs as a user would, and
# records RUNS replays with PyTorch's profiler (CUPTI: it lists the kernels of a graph replay, also
# those cuBLASLt launches, which aotc-run --profile can only time as whole steps and ncu only
# without graphs). Per replay: span from the first kernel's start to the last one's end, the
# kernels' busy time, and the idle gaps between them; then the median replay's kernels in order
# (duration, gap before) and the busiest kernel names.
#   python3 tools/device/trace_replay.py LIB.so --name NAME --data DIR [--runs 20] [--json F]
#   (NAME: the library's --name, the prefix of its C ABI; DIR: input_K.pb files)
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def short(name, width=70):
    name = name.replace("cutlass::", "").replace("(anonymous namespace)::", "")
    return name if len(name) <= width else name[:width - 3] + "..."


def replays(events, runs):
    """Kernel events (start, end, name) sorted, split into `runs` replays at the largest gaps."""
    events.sort()
    if runs <= 1 or len(events) < runs:
        return [events]
    gaps = sorted(range(1, len(events)), key=lambda i: events[i][0] - events[i - 1][1], reverse=True)[:runs - 1]
    cuts = [0] + sorted(gaps) + [len(events)]
    return [events[cuts[i]:cuts[i + 1]] for i in range(len(cuts) - 1)]


def analyse(replay):
    span = replay[-1][1] - replay[0][0]
    busy = sum(e - s for s, e, _ in replay)
    return {"kernels": len(replay), "span_us": span, "busy_us": busy, "gaps_us": span - busy}


def main(argv=None):
    import torch
    from torch.profiler import ProfilerActivity, profile

    from prebuilt import Library

    ap = argparse.ArgumentParser(description="kernel timeline of an aotc library's replayed run")
    ap.add_argument("lib")
    ap.add_argument("--name", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--list", type=int, default=200, help="kernels of the median replay to print")
    ap.add_argument("--json", default="")
    a = ap.parse_args(argv)

    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    stream = torch.cuda.current_stream()
    lib = Library(a.lib, a.name)
    st, model, message = lib.create()
    if st != 0:
        print(f"{a.name}: create failed: status {st}: {message}")
        return 1
    ins = [torch.from_numpy(arr).to(dev) for arr in lib.load_inputs(a.data)]
    outs = [torch.empty(shape, dtype=getattr(torch, dtype), device=dev) for dtype, shape in lib.io("output")]
    in_ptrs = (ctypes.c_void_p * len(ins))(*[t.data_ptr() for t in ins])
    out_ptrs = (ctypes.c_void_p * len(outs))(*[t.data_ptr() for t in outs])
    run = lib.run_fn()
    s = ctypes.c_void_p(stream.cuda_stream)
    for _ in range(20):
        if run(model, in_ptrs, out_ptrs, s) != 0:
            print(f"{a.name}: run failed")
            return 1
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(a.runs):
            run(model, in_ptrs, out_ptrs, s)
            torch.cuda.synchronize()
            time.sleep(0.002)  # a 2 ms gap between replays: the split below cannot cut inside one
    lib.destroy(model)
    events = []
    for e in prof.events():
        # memset / memcpy nodes too (cuBLASLt may add them): they are part of the replay
        if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.elapsed_us() > 0:
            events.append((e.time_range.start, e.time_range.end, e.name))
    if not events:
        print(f"{a.name}: the profiler saw no kernels")
        return 1
    reps = replays(events, a.runs)
    stats = [analyse(r) for r in reps]
    order = sorted(range(len(stats)), key=lambda i: stats[i]["span_us"])
    mid = reps[order[len(order) // 2]]
    med = {k: statistics.median(st[k] for st in stats) for k in ("kernels", "span_us", "busy_us", "gaps_us")}
    print(f"== {a.name}: {len(reps)} replays traced; median: {med['kernels']:.0f} kernels, span {med['span_us']:.1f} us, "
          f"busy {med['busy_us']:.1f} us, gaps {med['gaps_us']:.1f} us ({med['gaps_us'] / max(med['kernels'] - 1, 1):.2f} us per boundary)")
    by_name = {}
    for st, en, n in mid:
        d = by_name.setdefault(n, [0.0, 0])
        d[0] += en - st
        d[1] += 1
    print(f"top kernels of the median replay (us, launches):")
    for n, (t, c) in sorted(by_name.items(), key=lambda kv: -kv[1][0])[:a.top]:
        print(f"  {t:7.1f} {c:3d}  {short(n)}")
    print("median replay in order: #, start us, duration us, gap before us, kernel")
    t0 = mid[0][0]
    prev_end = t0
    for i, (st, en, n) in enumerate(mid[:a.list]):
        print(f"  {i:3d} {st - t0:7.1f} {en - st:6.1f} {st - prev_end:5.1f}  {short(n, 60)}")
        prev_end = en
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"name": a.name, "median": med, "replays": stats,
                       "median_replay": [(st - t0, en - st, n) for st, en, n in mid]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
