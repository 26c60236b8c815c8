# Tests of the device script's helpers and of tools/device_run.sh itself, without a GPU: the
# table formatting, the summary (from a hand-made work folder), the output comparison, and one
# whole run of device_run.sh with stand-in aotc/aotc-run programs on a tiny hand-built model.
#   python3 -m unittest discover -s tools/device/tests
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np

kRepo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, kRepo)

from models import reference_data as ref  # noqa: E402
from tools.device import device_steps, summarize  # noqa: E402


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f)


def make_tiny_export(models_dir, label, batches):
    """An exported-model folder as models/export_torchvision.py writes it, for y = 2x + 1."""
    sys.path.insert(0, os.path.join(kRepo, "models", "tests"))
    from test_reference_data import tiny_add_model
    directory = os.path.join(models_dir, label)
    os.makedirs(directory, exist_ok=True)
    tiny_add_model(os.path.join(directory, "model.onnx"))
    cases = []
    for b in batches:
        x = np.random.default_rng(b).standard_normal((b, 3), dtype=np.float32)
        (y,) = ref.run_ort(os.path.join(directory, "model.onnx"), {"x": x})
        ref.write_test_data_set(os.path.join(directory, f"test_data_set_bs{b}"), ["x"], [x],
                                ["y"], [y])
        cases.append({"batch": b, "data_dir": f"test_data_set_bs{b}"})
    write_json(os.path.join(directory, "meta.json"), {"model": label, "model_file": "model.onnx",
                                                      "cases": cases})


class FormatTest(unittest.TestCase):
    def test_fmt(self):
        self.assertEqual(summarize.fmt(None, "ms"), "-")
        self.assertEqual(summarize.fmt(1.23456, "ms"), "1.235")
        self.assertEqual(summarize.fmt(12.345, "ms"), "12.35")
        self.assertEqual(summarize.fmt(2.5e-6, "e"), "2.5e-06")
        self.assertEqual(summarize.fmt(float("inf"), "e"), "inf")
        self.assertEqual(summarize.fmt(1.5, "x"), "1.50x")

    def test_table_is_aligned(self):
        rows = [{"model": "resnet50", "batch": 1, "aotc_ms": 1.0},
                {"model": "mobilenet_v2", "batch": 32, "check": "pass"}]
        lines = summarize.format_table(rows).splitlines()
        self.assertEqual(len(lines), 4)
        self.assertEqual(len({len(ln) for ln in lines}), 1)
        self.assertIn("torch peak MB", lines[0])
        self.assertIn("mobilenet_v2", lines[3])

    def test_find_number_nested(self):
        report = {"memory": {"plan": {"arena_bytes": 42}}, "stages": [{"median_ms": 3}]}
        self.assertEqual(summarize.find_number(report, ["arena_bytes"]), 42.0)
        self.assertEqual(summarize.find_number(report, ["median_ms"]), 3.0)
        self.assertIsNone(summarize.find_number(report, ["nope"]))
        self.assertIsNone(summarize.find_number({"ok": True}, ["ok"]))  # bools are not numbers


class SummaryTest(unittest.TestCase):
    def test_rows_and_notes_from_a_work_folder(self):
        with tempfile.TemporaryDirectory() as work:
            write_json(os.path.join(work, "models", "m", "meta.json"), {
                "model_file": "model.onnx", "cases": [{"batch": 1, "data_dir": "d1"},
                                                      {"batch": 8, "data_dir": "d8"}]})
            c1 = os.path.join(work, "cases", "m_bs1")
            write_json(os.path.join(c1, "compile.json"), {"rc": 0, "seconds": 12.5})
            write_json(os.path.join(c1, "report.json"), {"memory": {"arena_bytes": 3 * 2**20,
                                                                    "ratio_to_lower_bound": 1.0},
                                                         "weight_bytes": 2**21})
            write_json(os.path.join(c1, "metric.json"), {"ok": True, "rel_l2": 2e-6,
                                                         "max_abs_over_max_ref": 1e-5})
            write_json(os.path.join(c1, "bench.json"), {"timing": {"median_ms": 0.5}})
            c8 = os.path.join(work, "cases", "m_bs8")
            write_json(os.path.join(c8, "compile.json"), {"rc": 2, "seconds": 1.0})
            with open(os.path.join(c8, "compile.log"), "w") as f:
                f.write("[aotc] frontend\naotc: error: node 'n1' (Foo): unsupported op\n")
            peers = [{"model": "m", "batch": 1, "mode": "eager", "ok": True, "median_ms": 2.0,
                      "peak_mb": 99.0, "probe_matmul_rel_err": 1e-7, "probe_conv_rel_err": 2e-3,
                      "tf32_suspected": True},
                     {"model": "m", "batch": 1, "mode": "reduce-overhead", "ok": True,
                      "median_ms": 1.0, "rel_l2_vs_ort": 3e-3},
                     {"model": "m", "batch": 1, "mode": "max-autotune", "ok": False,
                      "error": "timeout after 240 s"}]
            with open(os.path.join(work, "peers.jsonl"), "w") as f:
                f.write("".join(json.dumps(p) + "\n" for p in peers) + '{"partial')
            rows, notes = summarize.summarize(work, ["m", "gone"])
        self.assertEqual(len(rows), 2)
        r1, r8 = rows
        self.assertEqual(r1["check"], "pass")
        self.assertEqual(r1["arena_mb"], 3.0)
        self.assertEqual(r1["weights_mb"], 2.0)
        self.assertEqual(r1["arena_ratio"], 1.0)
        self.assertEqual(r1["aotc_ms"], 0.5)
        self.assertEqual(r1["ratio"], 2.0)          # best peer 1.0 ms / aotc 0.5 ms
        self.assertEqual(r1["torch_peak_mb"], 99.0)
        self.assertEqual(r8["check"], "no lib")
        text = "\n".join(notes)
        self.assertIn("node 'n1' (Foo): unsupported op", text)
        self.assertIn("max-autotune: timeout after 240 s", text)
        self.assertIn("gone: export failed", text)
        self.assertIn("conv 2.0e-03 -> TF32 SUSPECTED", text)
        self.assertIn("reduce-overhead: output differs from ONNX Runtime by rel L2 3.0e-03", text)
        self.assertNotIn("torch eager: output differs", text)


class CompareTest(unittest.TestCase):
    def test_compare_dirs(self):
        with tempfile.TemporaryDirectory() as tmp:
            make_tiny_export(tmp, "t", [2])
            data = os.path.join(tmp, "t", "test_data_set_bs2")
            x = ref.read_test_data_set(data, "input")[0]
            out = os.path.join(tmp, "out")
            os.makedirs(out)
            np.save(os.path.join(out, "output_0.npy"), x * 2 + 1)   # computed here, not by ORT
            self.assertTrue(device_steps.compare_dirs(data, out)["ok"])
            ref.save_tensor(os.path.join(out, "output_0.pb"), x * 2 + 1.01, "y")  # .pb wins
            m = device_steps.compare_dirs(data, out)
            self.assertFalse(m["ok"])
            self.assertGreater(m["rel_l2"], 1e-4)
            os.remove(os.path.join(out, "output_0.pb"))
            os.remove(os.path.join(out, "output_0.npy"))
            self.assertIn("0 outputs written", device_steps.compare_dirs(data, out)["reason"])
            self.assertEqual(device_steps.list_cases(tmp, ["t", "missing"]),
                             [("t", 2, os.path.join(tmp, "t", "model.onnx"), data)])


kFakeAotc = """\
#!/usr/bin/env python3
# stand-in aotc: fails for models under a folder named 'bad', else writes a lib and a report
import json, os, sys
a = sys.argv[1:]
model, lib, report = a[0], a[a.index('-o') + 1], a[a.index('--report') + 1]
if '/bad/' in model:
    print("aotc: error: node 'conv_7' (Conv): group 3 does not divide 4 channels", file=sys.stderr)
    sys.exit(2)
open(lib, 'w').close()
json.dump({'ok': True, 'memory': {'arena_bytes': 1048576}, 'weight_bytes': 2097152}, open(report, 'w'))
"""

kFakeAotcRun = """\
#!/usr/bin/env python3
# stand-in aotc-run: computes y = 2x + 1 itself; batch 4 gets a deliberate error
import json, os, sys
sys.path.insert(0, %r)
import numpy as np
from models import reference_data as ref
a = sys.argv[1:]
if '--expect-dir' in a:
    d = a[a.index('--expect-dir') + 1]
    out = a[a.index('--output-dir') + 1]
    os.makedirs(out, exist_ok=True)
    x = ref.load_tensor(os.path.join(d, 'input_0.pb'))
    y = x * 2 + 1 + (0.5 if x.shape[0] == 4 else 0.0)
    ref.save_tensor(os.path.join(out, 'output_0.pb'), y.astype(np.float32), 'y')
    sys.exit(0)
json.dump({'bench': {'median_ms': 0.25, 'p90_ms': 0.3}}, open(a[a.index('--json') + 1], 'w'))
print('median 0.250 ms')
"""


class DeviceRunScriptTest(unittest.TestCase):
    def test_whole_script_with_stand_in_tools(self):
        for parallel in ("1", "0"):
            with self.subTest(AOTC_PARALLEL=parallel):
                self.run_script(parallel)

    def run_script(self, parallel):
        with tempfile.TemporaryDirectory() as tmp:
            work, out, build = (os.path.join(tmp, d) for d in ("work", "out", "build"))
            make_tiny_export(os.path.join(work, "models"), "tiny", [1, 4])
            make_tiny_export(os.path.join(work, "models"), "bad", [1])
            os.makedirs(os.path.join(build, "bin"))
            for name, text in (("aotc", kFakeAotc), ("aotc-run", kFakeAotcRun % kRepo)):
                path = os.path.join(build, "bin", name)
                with open(path, "w") as f:
                    f.write(textwrap.dedent(text))
                os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
            env = dict(os.environ, OUT=out, WORK=work, MODELS="tiny bad", SKIP_BUILD="1",
                       SKIP_CTEST="1", SKIP_EXPORT="1", SKIP_PEERS="1", AOTC_BUILD_DIR=build,
                       ARCH="sm_90", PYTHON=sys.executable, DEPS_PREFIX=os.path.join(tmp, "deps"),
                       AOTC_PARALLEL=parallel)
            proc = subprocess.run(["bash", os.path.join(kRepo, "tools", "device_run.sh")],
                                  env=env, capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            stdout = proc.stdout
            self.assertLess(len(stdout), 12000)
            with open(os.path.join(out, "results.json")) as f:
                rows = {(r["model"], r["batch"]): r for r in json.load(f)["rows"]}
            self.assertEqual(rows[("tiny", 1)]["check"], "pass")
            self.assertEqual(rows[("tiny", 1)]["aotc_ms"], 0.25)
            self.assertEqual(rows[("tiny", 1)]["arena_mb"], 1.0)
            self.assertEqual(rows[("tiny", 4)]["check"], "FAIL")
            self.assertEqual(rows[("bad", 1)]["check"], "no lib")
            self.assertEqual(rows[("tiny", 1)]["compile_concurrent"], parallel == "1")
            self.assertIn("group 3 does not divide 4 channels", stdout)
            self.assertIn("| tiny ", stdout)
            self.assertTrue(os.path.exists(os.path.join(out, "table.md")))
            listing = subprocess.run(["tar", "-tzf", os.path.join(out, "logs.tar.gz")],
                                     capture_output=True, text=True).stdout
            self.assertIn("cases/tiny_bs1/report.json", listing)
            self.assertNotIn(".pb", listing)
            self.assertLessEqual(len(os.listdir(out)), 8)


if __name__ == "__main__":
    unittest.main()
