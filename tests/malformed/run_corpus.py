#!/usr/bin/env python3
"""Runs aotc over the malformed-model corpus (gen_corpus.py) and checks every case against its
expected outcome: the exit code (2 = error, 0 = success, never a signal or another code), exactly
one stderr line on exit 2 (naming the node where the case says a node is at fault), no "internal
error", no file left behind (the -o folder, $TMPDIR and the case's own folder are compared before
and after), and under --max-seconds each (compile-mode cases: aotc's own time, the wall time less the nvcc
and host-compiler stages of its --report). Prints the figures; exit status 1 if any case fails.
Usage: run_corpus.py --aotc build/tools/aotc --corpus build/tests/malformed/corpus [--only SUBSTR]
"""
import argparse
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def listing(root):
    """Every path under root with its size and mtime (links not followed)."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return out


def run_case(case, args, scratch):
    model = os.path.join(args.corpus, case["model"])
    case_dir = os.path.dirname(model)
    work = tempfile.mkdtemp(prefix="case-", dir=scratch)
    tmp = os.path.join(work, "tmp")
    out = os.path.join(work, "out")
    os.makedirs(tmp)
    os.makedirs(out)
    if case["mode"] == "check":
        cmd = [args.aotc, "check", model] + case["args"]
    else:
        cmd = [args.aotc, model, "-o", os.path.join(out, "libcase.so"), "--no-cache", "-q",
               "--report", os.path.join(work, "report.json")] + case["args"]
    env = dict(os.environ, TMPDIR=tmp)
    # A compile runs nvcc and the host compiler, whose time depends on the machine and on which
    # kernels the model needs (CUTLASS instantiations take many seconds): they get a longer kill
    # timeout, and the per-case limit applies to aotc's own share (the stages in its --report).
    kill = max(args.kill_seconds, 300.0) if case["mode"] == "compile" else args.kill_seconds
    before = listing(case_dir)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=kill)
        hung = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        hung = True
    seconds = time.monotonic() - t0
    rc = proc.returncode
    problems = []
    err_lines = stderr.decode("utf-8", "replace").splitlines()
    out_lines = stdout.decode("utf-8", "replace").splitlines()
    if hung:
        problems.append(f"did not finish in {kill} s (killed)")
    elif rc not in (0, 2):
        problems.append(f"exit code {rc}" + (" (signal %d)" % -rc if rc < 0 else ""))
    else:
        expect = case["expect"]
        if expect == "ok" and rc != 0:
            problems.append("expected success, got exit 2")
        if expect == "error" and rc != 2:
            problems.append("expected exit 2, got success")
        if rc == 2:
            prefix = "aotc: check: " if case["mode"] == "check" else "aotc: error: "
            if len(err_lines) != 1 or not err_lines[0].startswith(prefix):
                problems.append(f"expected one stderr line starting '{prefix}', got {len(err_lines)}")
            node = case.get("node")
            where = out_lines[:1] if case["mode"] == "check" else err_lines[:1]
            if case["mode"] == "check" and not out_lines:
                problems.append("check listed no problem on stdout")
            if node and not any(node in line for line in where):
                problems.append(f"the message does not name node '{node}'")
        if any("internal error" in line for line in err_lines + out_lines):
            problems.append("internal error")
    external = 0.0
    report = os.path.join(work, "report.json")
    if case["mode"] == "compile" and os.path.exists(report):
        try:
            with open(report) as f:
                stages = json.load(f).get("seconds", {})
            external = float(stages.get("nvcc") or 0.0) + float(stages.get("host_cc") or 0.0)  # null: not reached
        except (ValueError, OSError, AttributeError, TypeError):
            problems.append("unreadable --report")
    own = seconds - external
    if own > args.max_seconds:
        problems.append(f"took {seconds:.2f} s, {own:.2f} s without nvcc and cc (limit {args.max_seconds} s)")
    left = sorted(listing(out)) if rc != 0 else []
    if left:
        problems.append(f"left {left[:3]} in the -o folder")
    if listing(tmp):
        problems.append(f"left {sorted(listing(tmp))[:3]} in $TMPDIR")
    if listing(case_dir) != before:
        problems.append("changed the model's folder")
    shutil.rmtree(work, ignore_errors=True)
    msg = (out_lines[:1] if case["mode"] == "check" else err_lines[:1]) or err_lines[:1]
    return problems, seconds, rc, (msg[0] if msg else ""), own


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--aotc", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--max-seconds", type=float, default=5.0)
    ap.add_argument("--kill-seconds", type=float, default=20.0)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    args.kill_seconds = max(args.kill_seconds, 2 * args.max_seconds)
    with open(os.path.join(args.corpus, "manifest.json")) as f:
        manifest = json.load(f)
    cases = [c for c in manifest["cases"] if args.only in c["id"]]
    scratch = tempfile.mkdtemp(prefix="aotc-corpus-")
    t_all = time.monotonic()
    failed, slowest = [], ("", 0.0)
    by_class = collections.Counter()
    passed_by_class = collections.Counter()
    outcomes = collections.Counter()
    slowest_own = ("", 0.0)
    try:
        for case in cases:
            problems, seconds, rc, msg, own = run_case(case, args, scratch)
            if own > slowest_own[1]:
                slowest_own = (case["id"], own)
            by_class[case["class"]] += 1
            outcomes["exit %d" % rc if rc in (0, 2) else "other"] += 1
            if seconds > slowest[1]:
                slowest = (case["id"], seconds)
            if problems:
                failed.append(case["id"])
                print(f"FAIL {case['id']} [{case['mode']}, expect {case['expect']}; {case['why']}]: "
                      f"{'; '.join(problems)} | {msg[:300]}", flush=True)
            else:
                passed_by_class[case["class"]] += 1
                if args.verbose:
                    print(f"ok   {case['id']} ({seconds:.2f} s, exit {rc}) {msg[:160]}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    total = time.monotonic() - t_all
    print("\nclass          cases  passed")
    for cls in sorted(by_class):
        print(f"{cls:<14} {by_class[cls]:>5}  {passed_by_class[cls]:>6}")
    print(f"malformed corpus: {len(cases)} cases in {len(by_class)} classes, {len(cases) - len(failed)} passed, "
          f"{len(failed)} failed; exits: {dict(outcomes)}; slowest {slowest[0]} {slowest[1]:.2f} s; "
          f"slowest without nvcc and cc {slowest_own[0]} {slowest_own[1]:.2f} s; "
          f"total {total:.1f} s (onnx {manifest.get('onnx')})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
