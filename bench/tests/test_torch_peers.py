# Tests of bench/torch_peers.py's torch-free parts: arguments, the timing statistics (checked
# against hand-computed values), the JSON-lines reading, the per-batch time limit (a process
# group is killed), and the parent's reporting when a child dies (here: no torch installed).
#   python3 -m unittest discover -s bench/tests
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from bench import torch_peers as tp  # noqa: E402


class ArgsTest(unittest.TestCase):
    def test_defaults_and_lists(self):
        a = tp.parse_args(["--model", "resnet50"])
        self.assertEqual(a.mode_list, ["eager", "reduce-overhead"])
        self.assertEqual(a.batch_list, [1, 32])
        b = tp.parse_args(["--model", "gpt2", "--modes", "eager,max-autotune", "--batches", "2 3"])
        self.assertEqual(b.mode_list, ["eager", "max-autotune"])
        self.assertEqual(b.batch_list, [2, 3])
        self.assertEqual(tp.parse_args(["--model", "gpt2"]).batch_list, [1, 8])

    def test_precision(self):
        self.assertEqual(tp.parse_args(["--model", "resnet50"]).precision, "fp32")
        a = tp.parse_args(["--model", "resnet50", "--precision", "fp16", "--modes",
                           "eager reduce-overhead max-autotune"])
        self.assertEqual(a.precision, "fp16")
        self.assertEqual(a.mode_list, ["eager", "reduce-overhead", "max-autotune"])
        self.assertIn("half", tp.kPrecisionNotes["fp16"])
        self.assertIn("TF32 off", tp.kPrecisionNotes["fp32"])

    def test_casts_without_torch(self):
        class FakeTensor:
            def __init__(self, floating):
                self.floating, self.dtype = floating, "float32" if floating else "int64"

            def is_floating_point(self):
                return self.floating

            def half(self):
                self.dtype = "float16"
                return self

        class FakeModel:
            halved = False

            def half(self):
                self.halved = True
                return self
        self.assertEqual(tp.cast_input(FakeTensor(True), "fp16").dtype, "float16")
        self.assertEqual(tp.cast_input(FakeTensor(False), "fp16").dtype, "int64")  # token ids
        self.assertEqual(tp.cast_input(FakeTensor(True), "fp32").dtype, "float32")
        self.assertTrue(tp.cast_model(FakeModel(), "fp16").halved)
        self.assertFalse(tp.cast_model(FakeModel(), "fp32").halved)

    def test_bad_arguments_exit_2(self):
        for argv in (["--model", "resnet50", "--modes", "fast"], ["--model", "alexnet"],
                     ["--model", "resnet50", "--batches", "1 x"],
                     ["--model", "resnet50", "--precision", "bf16"]):
            with self.assertRaises(SystemExit) as cm, contextlib.redirect_stderr(io.StringIO()):
                tp.parse_args(argv)
            self.assertEqual(cm.exception.code, 2)


class StatsTest(unittest.TestCase):
    def test_median_and_percentiles_by_hand(self):
        self.assertEqual(tp.median([3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(tp.median([4.0, 1.0, 3.0, 2.0]), 2.5)
        values = [float(i) for i in range(1, 101)]          # 1..100
        self.assertEqual(tp.percentile(values, 90), 90.0)     # nearest rank: ceil(0.9*100) = 90
        self.assertEqual(tp.percentile(values, 100), 100.0)
        self.assertEqual(tp.percentile([5.0], 90), 5.0)
        s = tp.summarize_times([5.0, 1.0, 3.0])
        self.assertEqual((s["median_ms"], s["min_ms"], s["iters"]), (3.0, 1.0, 3))

    def test_read_jsonl_skips_a_partial_last_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.jsonl")
            with open(path, "w") as f:
                f.write(json.dumps({"mode": "eager"}) + "\n" + '{"mode": "reduce')
            self.assertEqual(tp.read_jsonl(path), [{"mode": "eager"}])
            self.assertEqual(tp.read_jsonl(os.path.join(tmp, "none")), [])


class ChildProcessTest(unittest.TestCase):
    def test_timeout_kills_the_whole_group(self):
        with tempfile.TemporaryDirectory() as tmp:
            marker = os.path.join(tmp, "late")
            t0 = time.time()
            timed_out, rc = tp.run_with_timeout(
                ["bash", "-c", f"(sleep 3; touch {marker}) & sleep 30"], 1.0)
            self.assertTrue(timed_out)
            self.assertIsNone(rc)
            self.assertLess(time.time() - t0, 10)
            time.sleep(3.5)
            self.assertFalse(os.path.exists(marker))   # the grandchild died with the group

    def test_no_timeout(self):
        self.assertEqual(tp.run_with_timeout(["bash", "-c", "exit 3"], 10), (False, 3))

    @unittest.skipIf(subprocess.run([sys.executable, "-c", "import torch"],
                                    capture_output=True).returncode == 0,
                     "torch is installed: the child would really benchmark")
    def test_a_dying_child_is_reported_per_mode(self):
        with tempfile.TemporaryDirectory() as tmp:
            jsonl = os.path.join(tmp, "peers.jsonl")
            with contextlib.redirect_stdout(io.StringIO()) as out:
                rc = tp.main(["--model", "mobilenet_v2", "--batches", "1", "--timeout", "60",
                              "--jsonl", jsonl, "--precision", "fp16"])
            self.assertEqual(rc, 1)
            results = json.loads(out.getvalue())
            self.assertEqual([r["mode"] for r in results], ["eager", "reduce-overhead"])
            for r in results:
                self.assertFalse(r["ok"])
                self.assertIn("ModuleNotFoundError", r["error"])   # the child's own reason
                self.assertEqual(r["precision"], "fp16")
            self.assertEqual(len(tp.read_jsonl(jsonl)), 2)


if __name__ == "__main__":
    unittest.main()
