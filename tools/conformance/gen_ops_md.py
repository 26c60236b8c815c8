#!/usr/bin/env python3
"""Writes docs/ops.md from aotc-conformance JSON results (CPU, and GPU when given): the pass
rates over all node tests and over the inference set, a per-op table, and the excluded tests by
reason. The file is generated: edit this script or rerun the conformance, never the output.

usage: gen_ops_md.py --cpu cpu.json [--gpu gpu.json] [--extra-cpu new.json [--extra-gpu new_gpu.json]]
                     [-o docs/ops.md]
--extra-cpu / --extra-gpu: results over another test folder (the node tests of newer ops generated
by tools/gen_node_test_data.py, e.g. build/node_tests_cpu_transformer.json), as a second section.
"""
import argparse
import collections
import datetime
import json
import os
import shlex
import subprocess
import sys


def test_data_version():
    """The Debian test-data package version, e.g. '1.12.0-2', or None when dpkg cannot say."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libonnx-testdata"],
                             capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    version = out.stdout.strip()
    return version if out.returncode == 0 and version else None


def rate(results, inference_only):
    tests = [t for t in results["tests"] if not inference_only or not t["exclusion"]]
    passed = sum(t["status"] == "passed" for t in tests)
    pct = 100.0 * passed / len(tests) if tests else 0.0
    return f"{pct:.1f}% ({passed}/{len(tests)})"


def cell(text, limit=140):
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def per_op(results):
    ops = collections.OrderedDict()
    for t in sorted(results["tests"], key=lambda t: (t["op"], t["name"])):
        ops.setdefault(t["op"], []).append(t)
    return ops


def note_for(tests, label):
    """Why tests of one op do not all pass: counts by status and the first problem."""
    bad = [t for t in tests if t["status"] != "passed"]
    if not bad:
        return ""
    counts = collections.Counter(t["status"] for t in bad)
    first = bad[0]
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    detail = first["detail"] or first["status"]
    return f"{label}: {parts}; {first['name']}: {detail}"


def op_table(cpu, gpu):
    """The per-op rows: tests, passed on the CPU, passed on the GPU (or 'not run'), notes."""
    gpu_by_name = {t["name"]: t for t in gpu["tests"]} if gpu else {}
    lines = ["| op | tests | passed on CPU | passed on GPU | notes |",
             "|---|---:|---:|---:|---|"]
    for op, tests in per_op(cpu).items():
        passed_cpu = sum(t["status"] == "passed" for t in tests)
        if gpu:
            gpu_tests = [gpu_by_name[t["name"]] for t in tests if t["name"] in gpu_by_name]
            passed_gpu = str(sum(t["status"] == "passed" for t in gpu_tests))
            if len(gpu_tests) != len(tests):
                passed_gpu += f" (of {len(gpu_tests)} run)"
        else:
            gpu_tests, passed_gpu = [], "not run"
        excluded = sorted({t["exclusion"].split(":")[0] for t in tests if t["exclusion"]})
        notes = []
        if excluded:
            n = sum(bool(t["exclusion"]) for t in tests)
            notes.append(f"{n} excluded ({', '.join(excluded)})")
        for label, group in (("CPU", tests), ("GPU", gpu_tests)):
            note = note_for(group, label)
            if note:
                notes.append(note)
        lines.append(f"| {cell(op, 60)} | {len(tests)} | {passed_cpu} | {passed_gpu} | "
                     f"{cell('; '.join(notes), 220)} |")
    return lines


def not_passed_table(cpu, gpu):
    """Every inference-set test that did not pass on the CPU or the GPU, with each side's reason."""
    gpu_by_name = {t["name"]: t for t in gpu["tests"]} if gpu else {}
    lines = ["| test | op | CPU | GPU |", "|---|---|---|---|"]
    for t in sorted(cpu["tests"], key=lambda t: (t["op"], t["name"])):
        if t["exclusion"]:
            continue
        g = gpu_by_name.get(t["name"])
        if t["status"] == "passed" and (not gpu or (g and g["status"] == "passed")):
            continue
        def side(r):
            if r is None:
                return "not run"
            return "passed" if r["status"] == "passed" else f"{r['status']}: {r['detail'] or r['status']}"
        lines.append(f"| {t['name']} | {cell(t['op'], 40)} | {cell(side(t), 160)} | "
                     f"{cell(side(g) if gpu else 'not run', 160)} |")
    if len(lines) == 2:
        lines.append("| (none) | | | |")
    return lines


def generated_data_version(data_dir):
    """The onnx version that tools/gen_node_test_data.py stamped next to the node/ folder."""
    try:
        with open(os.path.join(os.path.dirname(data_dir.rstrip("/")), "ONNX_VERSION")) as f:
            return f.read().strip() or None
    except OSError:
        return None


def load(path, mode, parser):
    with open(path) as f:
        results = json.load(f)
    if results.get("mode") != mode:
        parser.error(f"{path} is a '{results.get('mode')}' result, not --{mode}")
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", required=True, help="JSON of aotc-conformance --cpu")
    parser.add_argument("--gpu", help="JSON of aotc-conformance --gpu")
    parser.add_argument("--extra-cpu", help="JSON of aotc-conformance --cpu over generated node tests")
    parser.add_argument("--extra-gpu", help="JSON of aotc-conformance --gpu over the same tests")
    parser.add_argument("-o", "--output", default="docs/ops.md")
    args = parser.parse_args()
    cpu = load(args.cpu, "cpu", parser)
    gpu = load(args.gpu, "gpu", parser) if args.gpu else None
    extra_cpu = load(args.extra_cpu, "cpu", parser) if args.extra_cpu else None
    extra_gpu = load(args.extra_gpu, "gpu", parser) if args.extra_gpu else None
    if extra_gpu and not extra_cpu:
        parser.error("--extra-gpu needs --extra-cpu")

    version = test_data_version()
    data = (f"onnx {version.split('-')[0]} (Debian libonnx-testdata {version})" if version
            else "unknown version (dpkg-query found no libonnx-testdata)")
    command = "python3 tools/conformance/gen_ops_md.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")

    lines = [
        "<!-- GENERATED FILE, do not edit: rerun the conformance and this command instead. -->",
        "# ONNX operator conformance",
        "",
        f"Generated on {today} by `{command}`.",
        "",
        f"Test data: the ONNX backend node tests of {data}, folder `{cpu['data_dir']}`.",
        f"CPU results: `{cpu['command']}` ({cpu['date']}).",
    ]
    if gpu:
        lines.append(f"GPU results: `{gpu['command']}` ({gpu['date']}).")
    lines += [
        "",
        "Tolerances per element: fp32/fp64 atol 1e-5 rtol 1e-4, fp16 atol 2.5e-3 rtol 1e-3; integers",
        "and bool exact; NaN and Inf positions must match. The inference set is every node test except",
        "training ops, sequence/optional/map/string types, control flow that does not resolve at compile time, random",
        "generators and data-dependent output shapes (see docs/conformance.md).",
        "",
        f"inference set (CPU reference): {rate(cpu, True)}",
        "",
        f"all node tests (CPU reference): {rate(cpu, False)}",
        "",
    ]
    if gpu:
        lines += [f"inference set (GPU): {rate(gpu, True)}", "",
                  f"all node tests (GPU): {rate(gpu, False)}", ""]
    else:
        lines += ["GPU: not run in this build", ""]

    lines += ["## Per op", ""] + op_table(cpu, gpu)
    lines += ["", "### Inference-set tests not passed, with their reasons", ""] + not_passed_table(cpu, gpu)

    if extra_cpu:
        version = generated_data_version(extra_cpu["data_dir"])
        lines += ["", f"## The node tests of onnx {version or '(version not recorded)'}", "",
                  f"Test data: every node test of onnx {version or '(version not recorded)'}, written by "
                  f"`tools/gen_node_test_data.py` into `{extra_cpu['data_dir']}` (Debian's data above predates "
                  "the newer ops; see docs/conformance.md; the GPU run reads an unpacked copy of the same folder, "
                  "`.deps/onnx123_node_tests.tar.gz`).",
                  f"CPU results: `{extra_cpu['command']}` ({extra_cpu['date']}).",
                  f"GPU results: `{extra_gpu['command']}` ({extra_gpu['date']})." if extra_gpu else
                  "GPU: not run in this build.",
                  "",
                  f"inference set (CPU reference): {rate(extra_cpu, True)}", "",
                  f"all these node tests (CPU reference): {rate(extra_cpu, False)}", ""]
        if extra_gpu:
            lines += [f"inference set (GPU): {rate(extra_gpu, True)}", "",
                      f"all these node tests (GPU): {rate(extra_gpu, False)}", ""]
        lines += op_table(extra_cpu, extra_gpu)
        lines += ["", f"### Inference-set tests of onnx {version or '(version not recorded)'} not passed, with their reasons",
                  ""] + not_passed_table(extra_cpu, extra_gpu)

    lines += ["", "## Excluded from the inference set", "", "| test | reason |", "|---|---|"]
    for t in sorted(cpu["tests"], key=lambda t: (t["exclusion"], t["name"])):
        if t["exclusion"]:
            lines.append(f"| {t['name']} | {cell(t['exclusion'])} |")
    lines.append("")
    with open(args.output, "w") as f:
        f.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
