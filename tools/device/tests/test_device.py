# Tests of the device script's helpers and of tools/device_run.sh itself, without a GPU: the
# table formatting, the summary (from a hand-made work folder), the output comparison, and one
# whole run of device_run.sh with stand-in aotc/aotc-run programs on a tiny hand-built model.
#   python3 -m unittest discover -s tools/device/tests
import contextlib
import io
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


class ModelOfTest(unittest.TestCase):
    def test_export_folders_map_to_their_model(self):
        import tempfile
        with tempfile.TemporaryDirectory() as work:
            os.makedirs(os.path.join(work, "models", "gpt2_dynamo23"))
            with open(os.path.join(work, "models", "gpt2_dynamo23", "meta.json"), "w") as f:
                json.dump({"model": "gpt2", "exporter": "dynamo23"}, f)
            self.assertEqual(summarize.model_of(work, "gpt2_dynamo23"), "gpt2")
            self.assertEqual(summarize.model_of(work, "resnet50"), "resnet50")  # no meta: the label


class FormatTest(unittest.TestCase):
    def test_fmt(self):
        self.assertEqual(summarize.fmt(None, "ms"), "-")
        self.assertEqual(summarize.fmt(1.23456, "ms"), "1.235")
        self.assertEqual(summarize.fmt(12.345, "ms"), "12.35")
        self.assertEqual(summarize.fmt(2.5e-6, "e"), "2.5e-06")
        self.assertEqual(summarize.fmt(float("inf"), "e"), "inf")
        self.assertEqual(summarize.fmt(1.5, "x"), "1.50x")

    def test_table_is_aligned(self):
        rows = [{"model": "resnet50", "batch": 1, "precision": "fp32", "aotc_ms": 1.0},
                {"model": "mobilenet_v2", "batch": 32, "precision": "fp16", "check": "PASS"}]
        lines = summarize.format_table(rows).splitlines()
        self.assertEqual(len(lines), 4)
        self.assertEqual(len({len(ln) for ln in lines}), 1)
        self.assertIn("| prec |", lines[0])
        self.assertNotIn("c-ma", lines[0])           # no max-autotune time: no columns for it
        self.assertIn("mobilenet_v2", lines[3])
        self.assertIn("fp16", lines[3])
        memory = summarize.format_table(rows, summarize.kMemoryColumns).splitlines()
        self.assertIn("torch peak MB", memory[0])

    def test_table_with_fp16_rows_and_missing_peers(self):
        rows = [{"model": "resnet50", "batch": 1, "precision": "fp32", "aotc_ms": 2.0,
                 "eager_ms": 4.0, "eager_ratio": 2.0, "max_autotune_ms": 1.0,
                 "max_autotune_ratio": 0.5, "rel_l2": 1e-6, "max_ratio": 2e-6, "check": "PASS",
                 "compile_s": 4.12},
                {"model": "resnet50", "batch": 1, "precision": "fp16", "aotc_ms": 1.0,
                 "rel_l2": 3e-3, "check": "PASS"},
                {"model": "resnet50", "batch": 32, "precision": "fp16", "check": "no lib"}]
        lines = summarize.format_table(rows).splitlines()
        self.assertEqual(len({len(ln) for ln in lines}), 1)
        header = [c.strip() for c in lines[0].strip("|").split("|")]
        self.assertIn("c-ma ms", header)
        self.assertIn("c-ma/aotc", header)
        cells = [dict(zip(header, (c.strip() for c in ln.strip("|").split("|")))) for ln in lines[2:]]
        self.assertEqual(cells[0]["eager/aotc"], "2.00x")
        self.assertEqual(cells[0]["c-ma/aotc"], "0.50x")
        self.assertEqual(cells[0]["compile s"], "4.1")
        self.assertEqual((cells[1]["prec"], cells[1]["check"], cells[1]["eager ms"]),
                         ("fp16", "PASS", "-"))
        self.assertEqual((cells[2]["aotc ms"], cells[2]["check"]), ("-", "no lib"))
        self.assertLess(max(len(ln) for ln in lines), 160)   # readable in a terminal

    def test_find_number_nested(self):
        report = {"memory": {"plan": {"arena_bytes": 42}}, "stages": [{"median_ms": 3}]}
        self.assertEqual(summarize.find_number(report, ["arena_bytes"]), 42.0)
        self.assertEqual(summarize.find_number(report, ["median_ms"]), 3.0)
        self.assertIsNone(summarize.find_number(report, ["nope"]))
        self.assertIsNone(summarize.find_number({"ok": True}, ["ok"]))  # bools are not numbers


class PrecisionTest(unittest.TestCase):
    def test_tolerance_per_precision(self):
        self.assertEqual(device_steps.tolerance("fp32"), (1e-4, 1e-3))
        self.assertEqual(device_steps.tolerance("fp16"), (1e-2, None))
        self.assertEqual(device_steps.tolerance("int8"), (5e-2, None))
        with self.assertRaises(ValueError):
            device_steps.tolerance("fp8")
        self.assertEqual(device_steps.tolerance_text("fp16"), "rel L2 < 1e-02")
        self.assertIn("max abs < 1e-03 max|ref|", device_steps.tolerance_text("fp32"))

    def test_apply_tolerance(self):
        metric = {"ok": False, "rel_l2": 3e-3, "max_abs_over_max_ref": 5e-2,
                  "nonfinite_match": True, "reason": "over the whole-model limits"}
        fp16 = device_steps.apply_tolerance(metric, "fp16")
        self.assertTrue(fp16["ok"])                      # max abs is not judged for fp16
        self.assertNotIn("reason", fp16)
        self.assertEqual(fp16["precision"], "fp16")
        fp32 = device_steps.apply_tolerance(metric, "fp32")
        self.assertFalse(fp32["ok"])
        self.assertIn("over the fp32 limits", fp32["reason"])
        self.assertFalse(device_steps.apply_tolerance(dict(metric, rel_l2=1e-2), "fp16")["ok"])
        self.assertFalse(device_steps.apply_tolerance(dict(metric, nonfinite_match=False),
                                                      "fp16")["ok"])
        shape = {"ok": False, "reason": "shape [2] != expected [3]", "rel_l2": float("inf"),
                 "max_abs_over_max_ref": float("inf")}
        self.assertIn("shape", device_steps.apply_tolerance(shape, "fp16")["reason"])
        self.assertTrue(device_steps.apply_tolerance(
            {"rel_l2": 5e-5, "max_abs_over_max_ref": 5e-4}, "fp32")["ok"])

    def test_compare_dirs_by_precision(self):
        with tempfile.TemporaryDirectory() as tmp:
            make_tiny_export(tmp, "t", [2])
            data = os.path.join(tmp, "t", "test_data_set_bs2")
            x = ref.read_test_data_set(data, "input")[0]
            out = os.path.join(tmp, "out")
            os.makedirs(out)
            ref.save_tensor(os.path.join(out, "output_0.pb"), (x * 2 + 1) * 1.002, "y")  # ~fp16
            m16 = device_steps.compare_dirs(data, out, "fp16")
            m32 = device_steps.compare_dirs(data, out, "fp32")
        self.assertTrue(m16["ok"])
        self.assertEqual(m16["precision"], "fp16")
        self.assertFalse(m32["ok"])
        self.assertAlmostEqual(m16["rel_l2"], m32["rel_l2"])
        self.assertTrue(summarize.check_verdict(m16, "fp16"))
        self.assertTrue(summarize.check_verdict({"rel_l2": 3e-3, "max_abs_over_max_ref": 1.0,
                                                 "ok": False}, "fp16"))   # older metric.json
        self.assertFalse(summarize.check_verdict({"rel_l2": 3e-3, "max_abs_over_max_ref": 1.0,
                                                  "ok": False}, "fp32"))

    def test_compare_cli(self):
        with tempfile.TemporaryDirectory() as tmp:
            make_tiny_export(tmp, "t", [1])
            data = os.path.join(tmp, "t", "test_data_set_bs1")
            x = ref.read_test_data_set(data, "input")[0]
            out = os.path.join(tmp, "out")
            os.makedirs(out)
            ref.save_tensor(os.path.join(out, "output_0.pb"), (x * 2 + 1) * 1.002, "y")
            js = os.path.join(tmp, "m.json")
            with contextlib.redirect_stdout(io.StringIO()) as printed:
                rc16 = device_steps.main(["compare", "--expected", data, "--actual", out,
                                          "--json", js, "--precision", "fp16"])
                rc32 = device_steps.main(["compare", "--expected", data, "--actual", out,
                                          "--json", js])
            with open(js) as f:
                self.assertEqual(json.load(f)["precision"], "fp32")
        self.assertEqual((rc16, rc32), (0, 1))
        self.assertIn("fp16 PASS", printed.getvalue())


class PlanTest(unittest.TestCase):
    kCases = [("resnet50", 1, "r.onnx", "r1"), ("resnet50", 32, "r.onnx", "r32"),
              ("mobilenet_v2", 1, "m.onnx", "m1")]

    def test_case_names(self):
        self.assertEqual(device_steps.case_name("resnet50", 1, "fp16"), "resnet50_bs1_fp16")
        self.assertEqual(device_steps.case_name("resnet50", 32, "fp32", "baseline"),
                         "resnet50_bs32_fp32_baseline")
        self.assertEqual(device_steps.ablation_case("resnet50", 32, "fp16", "graphs"),
                         "resnet50_bs32_fp16")
        self.assertEqual(device_steps.ablation_case("resnet50", 32, "fp16", "nhwc"),
                         "resnet50_bs32_fp16_nhwc")

    def test_main_cases_per_precision(self):
        plan = device_steps.plan_cases(self.kCases, ["fp32", "fp16"], "sm_90")
        self.assertEqual([e["name"] for e in plan],
                         ["resnet50_bs1_fp32", "resnet50_bs1_fp16", "resnet50_bs32_fp32",
                          "resnet50_bs32_fp16", "mobilenet_v2_bs1_fp32", "mobilenet_v2_bs1_fp16"])
        e = plan[1]
        self.assertEqual(e["aotc_args"], ["--precision", "fp16", "--arch", "sm_90"])
        self.assertEqual((e["lib"], e["graphs"], e["role"]), (e["name"], True, "main"))
        self.assertEqual(device_steps.plan_line(e),
                         "resnet50_bs1_fp16 resnet50 1 fp16 r.onnx r1 resnet50_bs1_fp16 on main - "
                         "--precision fp16 --arch sm_90")

    def test_ablation_and_ptx(self):
        plan = device_steps.plan_cases(self.kCases, ["fp32", "fp16"], "sm_90", ablation=True,
                                       ptx=True)
        abl = [e for e in plan if e["role"] == "ablation"]
        self.assertEqual(len(abl), 2 * 2 * 4)     # bs1/bs32 x fp32/fp16 x baseline/fusion/nhwc/cutlass_only
        self.assertTrue(all(e["label"] == "resnet50" for e in abl))
        self.assertTrue(all(e["graphs"] == (e["variant"] == "cutlass_only") for e in abl))
        pw = by_name = {e["name"]: e for e in abl}["resnet50_bs32_fp16_cutlass_only"]
        self.assertEqual(pw["aotc_args"][-4:], ["--conv-pointwise", "cutlass", "--conv-im2col", "off"])
        self.assertEqual(pw["lib"], pw["name"])   # its own library
        del by_name
        by = {e["name"]: e for e in abl}
        base = by["resnet50_bs32_fp16_baseline"]
        self.assertEqual(base["aotc_args"], ["--precision", "fp16", "--arch", "sm_90",
                                             "--disable-pass", "fuse_epilogue",
                                             "--disable-pass", "layout_nhwc"])
        self.assertEqual(base["lib"], base["name"])
        self.assertEqual(by["resnet50_bs1_fp32_fusion"]["aotc_args"][-2:],
                         ["--disable-pass", "layout_nhwc"])
        nhwc = by["resnet50_bs1_fp16_nhwc"]
        self.assertEqual(nhwc["lib"], "resnet50_bs1_fp16")   # the main library, graphs off
        ptx = [e for e in plan if e["role"] == "ptx"]
        self.assertEqual([e["name"] for e in ptx], ["resnet50_bs1_fp16_compute_87"])
        self.assertEqual(ptx[0]["aotc_args"], ["--precision", "fp16", "--arch", "compute_87"])
        self.assertEqual(plan[-1]["role"], "ptx")
        only32 = device_steps.plan_cases(self.kCases, ["fp32"], "sm_90", ablation=True, ptx=True)
        self.assertEqual(sum(e["role"] == "ablation" for e in only32), 8)
        self.assertEqual([e["precision"] for e in only32 if e["role"] == "ptx"], ["fp16"])
        none = device_steps.plan_cases(self.kCases[2:], ["fp32"], "sm_90", ablation=True, ptx=True)
        self.assertEqual([e["role"] for e in none], ["main"])   # no resnet50: nothing extra

    def test_plan_cli_rejects_unknown_precision(self):
        with tempfile.TemporaryDirectory() as tmp, self.assertRaises(ValueError):
            device_steps.main(["plan", tmp, "x", "--precisions", "fp32 fp8"])

    def test_calibration_inputs_are_fresh_floats_and_copied_integers(self):
        import numpy as np
        import onnx
        from onnx import numpy_helper
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data")
            os.makedirs(data)
            x = np.arange(12, dtype=np.float32).reshape(3, 4)
            ids = np.array([[5, 7, 9]], dtype=np.int64)
            for k, (a, n) in enumerate(((x, "image"), (ids, "ids"))):
                with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(a, n).SerializeToString())
            out = os.path.join(tmp, "calib")
            device_steps.main(["calib", data, out, "--count", "2"])
            self.assertEqual(sorted(os.listdir(out)), ["test_data_set_0", "test_data_set_1"])
            got = [[numpy_helper.to_array(onnx.load_tensor(os.path.join(out, f"test_data_set_{s}", f"input_{k}.pb")))
                    for k in range(2)] for s in range(2)]
            for s in range(2):
                self.assertEqual(got[s][0].shape, (3, 4))
                self.assertEqual(got[s][0].dtype, np.float32)
                self.assertFalse(np.array_equal(got[s][0], x))          # fresh random floats
                np.testing.assert_array_equal(got[s][1], ids)            # ids copied
            self.assertFalse(np.array_equal(got[0][0], got[1][0]))       # two different samples


class AblationTableTest(unittest.TestCase):
    def make_case(self, work, name, compile_rc=0, ms=None, ok=True, log=""):
        c = os.path.join(work, "cases", name)
        os.makedirs(c, exist_ok=True)
        if compile_rc is not None:
            write_json(os.path.join(c, "compile.json"), {"rc": compile_rc, "seconds": 1.0})
        with open(os.path.join(c, "compile.log"), "w") as f:
            f.write(log)
        if ms is not None:
            write_json(os.path.join(c, "bench.json"), {"median_ms": ms})
            write_json(os.path.join(c, "metric.json"), {"ok": ok, "rel_l2": 1e-3 if ok else 0.5,
                                                        "max_abs_over_max_ref": 1e-3,
                                                        "precision": "fp16"})

    def test_cells_and_table(self):
        with tempfile.TemporaryDirectory() as work:
            self.make_case(work, "resnet50_bs1_fp16_baseline", ms=4.0)
            self.make_case(work, "resnet50_bs1_fp16_fusion", ms=3.0, ok=False)
            self.make_case(work, "resnet50_bs1_fp16_nhwc", compile_rc=None, ms=2.0)
            self.make_case(work, "resnet50_bs1_fp16", ms=1.0)
            for v in ("baseline", "fusion"):
                self.make_case(work, f"resnet50_bs32_fp16_{v}", compile_rc=2,
                               log="aotc: error: unknown option '--disable-pass'\n")
            self.make_case(work, "resnet50_bs32_fp16", compile_rc=2,
                           log="aotc: error: --precision fp16 is not supported yet\n")
            cases = [("resnet50", 1, "m", "d"), ("resnet50", 32, "m", "d"),
                     ("resnet50", 8, "m", "d"), ("mobilenet_v2", 1, "m", "d")]
            rows = summarize.ablation_rows(work, cases, ["fp16"])
        self.assertEqual([(r["batch"], r["precision"]) for r in rows], [(1, "fp16"), (32, "fp16")])
        c1, c32 = rows[0]["cells"], rows[1]["cells"]
        self.assertEqual([c1[v]["ms"] for v in ("baseline", "fusion", "nhwc", "graphs")],
                         [4.0, 3.0, 2.0, 1.0])
        self.assertEqual(c1["fusion"]["status"], "FAIL")
        self.assertEqual(c32["baseline"]["status"], "rejected")
        self.assertEqual(c32["graphs"]["status"], "no lib")     # fp16 not supported: not a rejection
        text = summarize.format_ablation(rows)
        lines = text.splitlines()
        self.assertIn("+NHWC/TC", lines[1])
        self.assertIn("3.000!", lines[3])
        self.assertIn("4.00x", lines[3])                      # baseline 4 ms / default 1 ms
        self.assertIn("rejected", lines[4])
        self.assertIn("rejects --disable-pass", lines[-1])
        self.assertEqual(len({len(ln) for ln in lines[1:5]}), 1)
        self.assertEqual(summarize.format_ablation([]), "")


class ProfileTest(unittest.TestCase):
    def test_layouts(self):
        expect = [("conv_b", 3.0), ("conv_a", 1.5), ("relu", 0.5)]
        self.assertEqual(summarize.parse_profile({"kernels": [
            {"name": "conv_a", "total_ms": 1.0}, {"name": "conv_b", "total_ms": 3.0},
            {"name": "conv_a", "total_ms": 0.5}, {"name": "relu", "total_us": 500},
            {"name": "broken"}, "junk"]}), expect)
        self.assertEqual(summarize.parse_profile([{"kernel": "conv_b", "ms": 3},
                                                  {"kernel": "conv_a", "ms": 1.5},
                                                  {"kernel": "relu", "ms": 0.5}]), expect)
        self.assertEqual(summarize.parse_profile({"conv_a": 1.5, "conv_b": 3.0, "relu": 0.5}),
                         expect)
        self.assertEqual(summarize.parse_profile({"kernels": {"conv_b": {"avg_ms": 3.0}}}),
                         [("conv_b", 3.0)])
        self.assertEqual(summarize.parse_profile("nonsense"), [])
        self.assertEqual(summarize.parse_profile({"ok": True}), [])

    def test_top_five_and_absence(self):
        kernels = [(f"k{i}", float(10 - i)) for i in range(8)]   # 10+9+...+3 = 52 ms
        text = summarize.format_profile("resnet50_bs32_fp16", kernels)
        lines = text.splitlines()
        self.assertEqual(len(lines), 6)
        self.assertIn("top 5 kernels of resnet50_bs32_fp16 (8 kernels, 52.000 ms", lines[0])
        self.assertIn("10.000 ms  19.2%  k0", lines[1])
        with tempfile.TemporaryDirectory() as work:
            self.assertEqual(summarize.profile_sections(work, ["a", "b"]), "")
            write_json(os.path.join(work, "cases", "b", "profile.json"),
                       [{"name": "gemm", "ms": 2.0}])
            os.makedirs(os.path.join(work, "cases", "c"))
            with open(os.path.join(work, "cases", "c", "profile.json"), "w") as f:
                f.write("{trunc")
            text = summarize.profile_sections(work, ["a", "b", "c"])
        self.assertIn("top 1 kernels of b", text)
        self.assertIn("100.0%  gemm", text)
        self.assertIn("profile of c: unreadable", text)
        self.assertNotIn("graph replay", text)

    def test_conv_rate_line_under_the_profile(self):
        with tempfile.TemporaryDirectory() as work:
            write_json(os.path.join(work, "cases", "b", "profile.json"), [{"name": "gemm", "ms": 2.0}])
            write_json(os.path.join(work, "cases", "b", "conv_rate.json"),
                       {"conv_steps": 49, "conv_flops": 261.6e9, "conv_replay_us": 851.3, "conv_tflops": 307.3,
                        "conv_share_of_peak": 0.385, "peak_tflops": 798.0, "conv_event_tflops": 260.0})
            text = summarize.profile_sections(work, ["b"])
            self.assertIn("convolutions in the graph replay: 49 steps, 261.6 GFLOP in 851.3 us of kernels = "
                          "307 TFLOP/s, 38.5% of 798", text)
            write_json(os.path.join(work, "cases", "b", "conv_rate.json"), {"conv_steps": 1})  # incomplete
            self.assertNotIn("graph replay", summarize.profile_sections(work, ["b"]))


class SummaryTest(unittest.TestCase):
    def test_fp16_rows_peers_per_precision(self):
        with tempfile.TemporaryDirectory() as work:
            write_json(os.path.join(work, "models", "m", "meta.json"), {
                "model_file": "model.onnx", "cases": [{"batch": 1, "data_dir": "d1"}]})
            for prec, ms, rel, run_rc in (("fp32", 2.0, 2e-6, 0), ("fp16", 1.0, 3e-3, 1)):
                c = os.path.join(work, "cases", f"m_bs1_{prec}")
                write_json(os.path.join(c, "compile.json"), {"rc": 0, "seconds": 3.0})
                write_json(os.path.join(c, "metric.json"),
                           device_steps.apply_tolerance({"rel_l2": rel, "max_abs_over_max_ref": rel},
                                                        prec))
                write_json(os.path.join(c, "check_rc.json"), {"rc": run_rc})
                write_json(os.path.join(c, "bench.json"), {"median_ms": ms})
            peers = [{"model": "m", "batch": 1, "mode": "eager", "ok": True, "median_ms": 4.0,
                      "precision": "fp32, matmul precision 'highest'"},   # an older record
                     {"model": "m", "batch": 1, "mode": "eager", "ok": True, "median_ms": 3.0,
                      "precision": "fp16", "rel_l2_vs_ort": 2e-3},
                     {"model": "m", "batch": 1, "mode": "reduce-overhead", "ok": False,
                      "precision": "fp16", "error": "timeout after 240 s"}]
            with open(os.path.join(work, "peers.jsonl"), "w") as f:
                f.write("".join(json.dumps(p) + "\n" for p in peers))
            rows, abl, notes = summarize.summarize(work, ["m"], ["fp32", "fp16"])
            text, full = summarize.render("hdr", rows, abl, notes, "", ["fp32", "fp16"])
        self.assertEqual(abl, [])
        r32, r16 = rows
        self.assertEqual((r32["precision"], r32["check"], r32["eager_ms"]), ("fp32", "PASS", 4.0))
        self.assertEqual((r16["precision"], r16["check"], r16["eager_ms"]), ("fp16", "PASS", 3.0))
        self.assertEqual(r16["eager_ratio"], 3.0)
        self.assertIsNone(r16.get("reduce_overhead_ms"))
        joined = "\n".join(notes)
        self.assertNotIn("disagrees", joined)      # aotc-run's fp32 verdict on fp16: expected
        self.assertNotIn("differs from ONNX Runtime", joined)   # 2e-3 is fine for fp16
        self.assertIn("m bs1 fp16 torch reduce-overhead: timeout after 240 s", joined)
        self.assertIn("fp16: rel L2 < 1e-02", text)
        self.assertIn("memory:", full)
        self.assertNotIn("memory:", text)

    def test_notes_are_capped_in_the_printed_text(self):
        notes = [f"n{i}" for i in range(30)]
        text, full = summarize.render("", [], [], notes, "", ["fp32"], max_notes=5)
        self.assertIn("note: n4", text)
        self.assertNotIn("note: n5\n", text)
        self.assertIn("25 more notes in table.md", text)
        self.assertIn("note: n29", full)

    def test_rows_and_notes_from_a_work_folder(self):
        with tempfile.TemporaryDirectory() as work:
            write_json(os.path.join(work, "models", "m", "meta.json"), {
                "model_file": "model.onnx", "cases": [{"batch": 1, "data_dir": "d1"},
                                                      {"batch": 8, "data_dir": "d8"}]})
            c1 = os.path.join(work, "cases", "m_bs1_fp32")
            write_json(os.path.join(c1, "compile.json"), {"rc": 0, "seconds": 12.5})
            write_json(os.path.join(c1, "report.json"), {"memory": {"arena_bytes": 3 * 2**20,
                                                                    "ratio_to_lower_bound": 1.0},
                                                         "weight_bytes": 2**21})
            write_json(os.path.join(c1, "metric.json"), {"ok": True, "rel_l2": 2e-6,
                                                         "max_abs_over_max_ref": 1e-5})
            write_json(os.path.join(c1, "bench.json"), {"timing": {"median_ms": 0.5}})
            c8 = os.path.join(work, "cases", "m_bs8_fp32")
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
            rows, _, notes = summarize.summarize(work, ["m", "gone"])
        self.assertEqual(len(rows), 2)
        r1, r8 = rows
        self.assertEqual(r1["check"], "PASS")
        self.assertEqual(r1["arena_mb"], 3.0)
        self.assertEqual(r1["weights_mb"], 2.0)
        self.assertEqual(r1["arena_ratio"], 1.0)
        self.assertEqual(r1["aotc_ms"], 0.5)
        self.assertEqual(r1["ratio"], 2.0)          # best peer 1.0 ms / aotc 0.5 ms
        self.assertEqual(r1["torch_peak_mb"], 99.0)
        self.assertEqual(r8["check"], "no lib")
        text = "\n".join(notes)
        self.assertIn("node 'n1' (Foo): unsupported op", text)
        self.assertIn("fp32 torch max-autotune: timeout after 240 s", text)
        self.assertIn("gone: export failed", text)
        self.assertIn("conv 2.0e-03 -> TF32 SUSPECTED", text)
        self.assertIn("fp32 torch reduce-overhead: output differs from ONNX Runtime by rel L2 3.0e-03", text)
        self.assertNotIn("torch eager: output differs", text)
        self.assertEqual(r1["eager_ratio"], 4.0)
        self.assertEqual(r1["reduce_overhead_ratio"], 2.0)


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
# stand-in aotc: fails for models under a folder named 'bad'; an 'older aotc' (FAKE_OLD_AOTC=1)
# rejects --disable-pass; else writes a lib (its arguments in it) and a report
import json, os, sys
a = sys.argv[1:]
model, lib = a[0], a[a.index('-o') + 1]
report = a[a.index('--report') + 1] if '--report' in a else None
if '/bad/' in model:
    print("aotc: error: node 'conv_7' (Conv): group 3 does not divide 4 channels", file=sys.stderr)
    sys.exit(2)
if '--disable-pass' in a and os.environ.get('FAKE_OLD_AOTC') == '1':
    print("aotc: error: unknown option '--disable-pass' (see aotc --help)", file=sys.stderr)
    sys.exit(2)
open(lib, 'w').write(' '.join(a))
if report:
    json.dump({'ok': True, 'memory': {'arena_bytes': 1048576}, 'weight_bytes': 2097152}, open(report, 'w'))
"""

kFakeAotcRun = """\
#!/usr/bin/env python3
# stand-in aotc-run: computes y = 2x + 1 itself; batch 4 gets a deliberate error, fp16 libraries
# a small one (fp16 PASS, fp32 FAIL); times tell the build apart: 1 ms with both passes
# disabled, 0.75 ms with layout_nhwc disabled, 0.5 ms with graphs off, else 0.25 ms
import json, os, sys
sys.path.insert(0, %r)
import numpy as np
from models import reference_data as ref
a = sys.argv[1:]
if a[0] == '--help':
    print('usage: aotc-run ...' + ('  --profile --profile-json FILE' if os.environ.get('FAKE_PROFILE') else ''))
    sys.exit(0)
built = open(a[0]).read()
if '--expect-dir' in a:
    d = a[a.index('--expect-dir') + 1]
    out = a[a.index('--output-dir') + 1]
    os.makedirs(out, exist_ok=True)
    x = ref.load_tensor(os.path.join(d, 'input_0.pb'))
    y = x * 2 + 1 + (0.5 if x.shape[0] == 4 else 0.0)
    if '--precision fp16' in built:
        y = y * 1.002
    ref.save_tensor(os.path.join(out, 'output_0.pb'), y.astype(np.float32), 'y')
    sys.exit(0)
if '--profile' in a:  # aotc-run's layout: {"steps": [{"label", "ms", ...}], ...}
    json.dump({'steps': [{'index': 0, 'label': 'conv_fwd', 'ms': 3.0}, {'index': 1, 'label': 'relu', 'ms': 1.0}]},
              open(a[a.index('--profile-json') + 1], 'w'))
    sys.exit(0)
ms = 0.25
if os.environ.get('AOTC_NO_CUDA_GRAPH') == '1':
    ms = 0.5
if '--disable-pass layout_nhwc' in built:
    ms = 0.75
if '--disable-pass fuse_epilogue' in built:
    ms = 1.0
if '--json' in a:
    json.dump({'bench': {'median_ms': ms, 'p90_ms': 0.3}}, open(a[a.index('--json') + 1], 'w'))
print('median %%.3f ms' %% ms)
"""


class PackFailuresTest(unittest.TestCase):
    """tools/device/pack_failures.sh packs exactly the cases that failed beyond fp16's known miss."""

    def make_case(self, work, name, compile_rc, last_line, model_bytes=16):
        c = os.path.join(work, "cases", name)
        write_json(os.path.join(c, "compile.json"), {"rc": compile_rc, "seconds": 1.0})
        with open(os.path.join(c, "compile.log"), "w") as f:
            f.write("compile log of %s\n" % name)
        if last_line is not None:
            with open(os.path.join(c, "check.log"), "w") as f:
                f.write("output 0 'output': ...\n" + last_line + "\n")
        model_dir = os.path.join(work, "models", name.split("_bs")[0])
        os.makedirs(model_dir, exist_ok=True)
        with open(os.path.join(model_dir, "model.onnx"), "wb") as f:
            f.write(os.urandom(model_bytes))

    def pack(self, work, max_mb="15"):
        archive = os.path.join(work, "failures.tgz")
        proc = subprocess.run(["bash", os.path.join(kRepo, "tools", "device", "pack_failures.sh"),
                               work, archive, max_mb], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        if not os.path.exists(archive):
            return proc.stdout, None
        names = subprocess.run(["tar", "-tzf", archive], capture_output=True, text=True,
                               check=True).stdout.split()
        return proc.stdout, names

    def test_only_failures_are_packed(self):
        with tempfile.TemporaryDirectory() as work:
            self.make_case(work, "good_bs1_fp32", 0, "rel L2 1e-06 ... fp32 PASS")
            self.make_case(work, "known_bs1_fp16", 0,
                           "rel L2 1.4e-02 ... fp16 FAIL: over the fp16 limits (rel L2 < 1e-02)")
            self.make_case(work, "nocompile_bs1_fp16", 2, None)
            self.make_case(work, "wrong_bs1_fp32", 0,
                           "rel L2 3e-01 ... fp32 FAIL: over the fp32 limits")
            self.make_case(work, "norun_bs1_fp16", 0, "error: aotc-run exited with 3")
            out, names = self.pack(work)
            self.assertIsNotNone(names, out)
            models = sorted(n for n in names if n.endswith("model.onnx"))
            self.assertEqual(models, ["models/nocompile/model.onnx", "models/norun/model.onnx",
                                      "models/wrong/model.onnx"])
            self.assertIn("cases/nocompile_bs1_fp16/compile.log", names)
            self.assertFalse(any(n.startswith("cases/good") or n.startswith("cases/known")
                                 for n in names), names)

    def test_nothing_failed_writes_no_archive(self):
        with tempfile.TemporaryDirectory() as work:
            self.make_case(work, "good_bs1_fp32", 0, "rel L2 1e-06 ... fp32 PASS")
            out, names = self.pack(work)
            self.assertIsNone(names)
            self.assertIn("nothing failed", out)

    def test_models_over_the_size_cap_stay_behind(self):
        with tempfile.TemporaryDirectory() as work:
            self.make_case(work, "big_bs1_fp32", 2, None, model_bytes=3 * 1024 * 1024)
            out, names = self.pack(work, max_mb="1")
            self.assertIn("cases/big_bs1_fp32/compile.log", names)
            self.assertFalse(any(n.endswith("model.onnx") for n in names), names)


class DeviceRunScriptTest(unittest.TestCase):
    def test_whole_script_with_stand_in_tools(self):
        for parallel in ("1", "0"):
            with self.subTest(AOTC_PARALLEL=parallel):
                self.run_script(parallel)

    def test_ablation_ptx_profile_with_an_older_aotc(self):
        out, stdout, rows, results = self.run_script(
            "1", ABLATION="1", JETSON_PTX="1", ABLATION_MODEL="tiny", FAKE_OLD_AOTC="1",
            FAKE_PROFILE="1", PROFILE_CASES="tiny_bs4_fp16 tiny_bs1_fp32")
        ptx = rows[("tiny (compute_87 PTX)", 1, "fp16")]
        self.assertEqual((ptx["check"], ptx["aotc_ms"]), ("PASS", 0.25))
        abl = {(r["batch"], r["precision"]): r["cells"] for r in results["ablation"]}
        self.assertEqual(sorted(abl), [(1, "fp16"), (1, "fp32")])   # batch 4 is not ablated
        cells = abl[(1, "fp16")]
        self.assertEqual(cells["baseline"]["status"], "rejected")
        self.assertEqual(cells["nhwc"]["ms"], 0.5)                  # run with graphs off
        self.assertEqual(cells["graphs"]["ms"], 0.25)
        self.assertIn("rejects --disable-pass", stdout)
        self.assertIn("top 2 kernels of tiny_bs4_fp16", stdout)
        self.assertIn("top 2 kernels of tiny_bs1_fp32", stdout)
        self.assertIn("75.0%  conv_fwd", stdout)
        self.assertNotIn("tiny_bs1_fp32_baseline", stdout)          # ablation: no progress lines
        self.assertLessEqual(len(stdout.splitlines()), 60)

    def test_ablation_with_disable_pass(self):
        _, stdout, _, results = self.run_script(
            "1", ABLATION="1", ABLATION_MODEL="tiny", PRECISIONS="fp16", MODELS="tiny")
        (row,) = results["ablation"]
        self.assertEqual([row["cells"][v]["ms"] for v in ("baseline", "fusion", "nhwc", "graphs")],
                         [1.0, 0.75, 0.5, 0.25])
        self.assertIn("4.00x", stdout)
        self.assertNotIn("rejects --disable-pass", stdout)
        self.assertNotIn("top ", stdout)                      # no --profile in this aotc-run

    def test_conformance_folders_side_by_side_and_reliability_groups(self):
        # Two node-test folders run at once, one GPU each (CONFORMANCE_GPUS), jobs split by test
        # counts, each its own JSON; two reliability groups' rows end in one table.
        with tempfile.TemporaryDirectory() as tmp:
            folders = []
            for name, count in (("big", 3), ("small", 1)):
                folder = os.path.join(tmp, name)
                for i in range(count):
                    os.makedirs(os.path.join(folder, "test_%d" % i))
                folders.append(folder)
            fake = textwrap.dedent("""\
                #!/usr/bin/env python3
                import json, os, sys
                a = sys.argv[1:]
                json.dump({'args': a, 'gpus': os.environ.get('CUDA_VISIBLE_DEVICES')},
                          open(a[a.index('--json') + 1], 'w'))
                print('inference set (GPU): 100.0% (1/1)')
                """)

            def check(out, stdout):
                runs = []
                for suffix in ("", "_2"):
                    with open(os.path.join(out, "conformance_gpu%s.json" % suffix)) as f:
                        runs.append(json.load(f))
                for run, folder, gpus, jobs in zip(runs, folders, ("0", "1"), ("6", "2")):
                    self.assertEqual(run["args"][run["args"].index("--data") + 1], folder)
                    self.assertEqual(run["gpus"], gpus)
                    self.assertEqual(run["args"][run["args"].index("--jobs") + 1], jobs)
                self.assertIn("conform started in the background", stdout)
                with open(os.path.join(out, "table.md")) as f:
                    table = f.read()
                section = table[table.index("## Reliability"):]
                self.assertEqual(section.count("| check |"), 1)
                self.assertIn("| all checks | nope_a | FAILED |", section)
                self.assertIn("| all checks | nope_b | FAILED |", section)
                self.assertLess(section.index("nope_b"), section.index("abi_stress:"))

            self.run_script(
                "1", inspect=check, MODELS="tiny", PRECISIONS="fp32", CONFORMANCE="all",
                CONFORMANCE_BACKGROUND="1", CONFORMANCE_GPUS="0,1", CONFORMANCE_JOBS="8", CONFORMANCE_DATA=" ".join(folders),
                FAKE_CONFORMANCE=fake, RELIABILITY="1",
                # A '|' inside a value stays there (split only before NAME=): split naively, "B"
                # would be run as a command by env and group 1's rows would be missing.
                RELIABILITY_GROUPS="RELIABILITY_CASES=nope_a|RELIABILITY_PARTS=misuse|SANITIZER_CTEST_ARGS=-R A|B;"
                                   "RELIABILITY_CASES=nope_b|RELIABILITY_PARTS=misuse")

    def test_ab_variants_are_each_compiled_and_timed_in_the_same_turns(self):
        # Two ';'-separated variants: each its own library, timed after the built one, twice;
        # the fake aotc-run's times tell the builds apart (0.25 as built, 0.75, 1.0).
        _, stdout, _, _ = self.run_script(
            "1", MODELS="tiny", PRECISIONS="fp32", BATCHES="1",
            AB_AOTC_ARGS="--disable-pass layout_nhwc;--disable-pass fuse_epilogue")
        line = [l for l in stdout.splitlines() if "tiny_bs1_fp32:" in l]
        self.assertEqual(len(line), 1, stdout)
        self.assertIn("as built / with --disable-pass layout_nhwc / with --disable-pass fuse_epilogue "
                      "(ms, twice): 0.250/0.750/1.000 0.250/0.750/1.000", line[0])

    def test_ncu_cases_profile_the_named_kernels_of_their_library(self):
        # A stand-in ncu records its arguments and prints two launches' durations; the case's
        # ncu.log holds them and the progress line counts them; other cases run no ncu.
        with tempfile.TemporaryDirectory() as tmp:
            fake = os.path.join(tmp, "ncu")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\necho \"args: $*\"\necho \"env: $AOTC_NO_CUDA_GRAPH\"\n"
                        "echo '    Duration  us  8.10'\necho '    Duration  us  6.90'\n")
            os.chmod(fake, 0o755)
            logs = {}

            def inspect(out, stdout):
                listing = subprocess.run(["tar", "-xzf", os.path.join(out, "logs.tar.gz"), "-C", tmp],
                                         capture_output=True, text=True)
                self.assertEqual(listing.returncode, 0, listing.stderr)
                for case in ("tiny_bs1_fp32", "tiny_bs1_fp16"):
                    path = os.path.join(tmp, "cases", case, "ncu.log")
                    logs[case] = None
                    if os.path.exists(path):
                        with open(path) as f:
                            logs[case] = f.read()

            _, stdout, _, _ = self.run_script(
                "1", inspect=inspect, MODELS="tiny", BATCHES="1", NCU=fake, NCU_CASES="tiny_bs1_fp32",
                NCU_KERNELS="regex:k1[67]_", NCU_COUNT="3")
            self.assertIn("tiny_bs1_fp32: ncu: 2 kernel launch(es) profiled", stdout)
            log = logs["tiny_bs1_fp32"]
            self.assertIsNotNone(log)
            self.assertIn("--kernel-name regex:k1[67]_ --launch-count 3 --section SpeedOfLight", log)
            self.assertIn("libtiny_bs1_fp32.so", log)
            self.assertIn("--bench 1 --warmup 0", log)
            self.assertIn("env: 1", log)
            self.assertIsNone(logs["tiny_bs1_fp16"])

    def run_script(self, parallel, inspect=None, **extra_env):
        with tempfile.TemporaryDirectory() as tmp:
            work, out, build = (os.path.join(tmp, d) for d in ("work", "out", "build"))
            make_tiny_export(os.path.join(work, "models"), "tiny", [1, 4])
            make_tiny_export(os.path.join(work, "models"), "bad", [1])
            os.makedirs(os.path.join(build, "bin"))
            tools = [("aotc", kFakeAotc), ("aotc-run", kFakeAotcRun % kRepo)]
            if "FAKE_CONFORMANCE" in extra_env:
                tools.append(("aotc-conformance", extra_env["FAKE_CONFORMANCE"]))
            for name, text in tools:
                path = os.path.join(build, "bin", name)
                with open(path, "w") as f:
                    f.write(textwrap.dedent(text))
                os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
            env = dict(os.environ, OUT=out, WORK=work, MODELS="tiny bad", SKIP_BUILD="1",
                       SKIP_CTEST="1", SKIP_EXPORT="1", SKIP_PEERS="1", AOTC_BUILD_DIR=build,
                       ARCH="sm_90", PYTHON=sys.executable, DEPS_PREFIX=os.path.join(tmp, "deps"),
                       AOTC_PARALLEL=parallel)
            for key in ("PRECISIONS", "ABLATION", "JETSON_PTX", "FAKE_OLD_AOTC", "FAKE_PROFILE"):
                env.pop(key, None)
            env.update(extra_env)
            proc = subprocess.run(["bash", os.path.join(kRepo, "tools", "device_run.sh")],
                                  env=env, capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            stdout = proc.stdout
            self.assertLess(len(stdout), 12000)
            with open(os.path.join(out, "results.json")) as f:
                results = json.load(f)
            rows = {(r["model"], r["batch"], r["precision"]): r for r in results["rows"]}
            if inspect:
                inspect(out, stdout)
            if extra_env:
                return out, stdout, rows, results
            self.assertEqual(rows[("tiny", 1, "fp32")]["check"], "PASS")
            self.assertEqual(rows[("tiny", 1, "fp32")]["aotc_ms"], 0.25)
            self.assertEqual(rows[("tiny", 1, "fp32")]["arena_mb"], 1.0)
            self.assertEqual(rows[("tiny", 1, "fp16")]["check"], "PASS")   # rel L2 2e-3 < 1e-2
            self.assertGreater(rows[("tiny", 1, "fp16")]["rel_l2"], 1e-4)
            self.assertEqual(rows[("tiny", 4, "fp32")]["check"], "FAIL")
            self.assertEqual(rows[("tiny", 4, "fp16")]["check"], "FAIL")
            self.assertEqual(rows[("bad", 1, "fp32")]["check"], "no lib")
            self.assertEqual(rows[("bad", 1, "fp16")]["check"], "no lib")
            self.assertEqual(len(rows), 6)
            self.assertEqual(rows[("tiny", 1, "fp32")]["compile_concurrent"], parallel == "1")
            self.assertIn("group 3 does not divide 4 channels", stdout)
            self.assertIn("| tiny ", stdout)
            self.assertIn("tiny bs4 fp32: aotc-run's own check exit 0 disagrees", stdout)
            self.assertNotIn("fp16: aotc-run's own check", stdout)   # its fp32 limits: no note
            self.assertIn("[device] aotc ", stdout)
            self.assertNotIn("ablation", stdout)
            self.assertTrue(os.path.exists(os.path.join(out, "table.md")))
            listing = subprocess.run(["tar", "-tzf", os.path.join(out, "logs.tar.gz")],
                                     capture_output=True, text=True).stdout
            self.assertIn("cases/tiny_bs1_fp16/report.json", listing)
            self.assertIn("cases/tiny_bs1_fp16/metric.json", listing)
            self.assertNotIn(".pb", listing)
            self.assertLessEqual(len(os.listdir(out)), 8)
            return out, stdout, rows, results


if __name__ == "__main__":
    unittest.main()


class PrebuiltTest(unittest.TestCase):
    """tools/device/prebuilt.py: the case syntax and the build step's manifest (a stand-in aotc
    records its arguments and writes the library file; running needs the GPU machine)."""

    def test_case_syntax(self):
        from tools.device import prebuilt
        c = prebuilt.parse_case("a_new=/m/mobilenet_v3_small:1:fp16")
        self.assertEqual((c["name"], c["batch"], c["precision"], c["aotc"], c["args"], c["group"]),
                         ("a_new", 1, "fp16", "", [], "mobilenet_v3_small bs1 fp16"))
        c = prebuilt.parse_case("b=/m/x/:32:fp32:/old/aotc:--disable-pass fuse_silu")
        self.assertEqual((c["aotc"], c["args"], c["group"]), ("/old/aotc", ["--disable-pass", "fuse_silu"], "x bs32 fp32"))
        for bad in ("noequals", "bad-name=/m:1:fp16", "a=/m:1", "a=/m:one:fp16"):
            with self.assertRaises(ValueError, msg=bad):
                prebuilt.parse_case(bad)

    def test_build_writes_the_manifest_and_passes_the_arguments(self):
        from tools.device import prebuilt
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "m")
            os.makedirs(os.path.join(model, "test_data_set_bs1"))
            for f in ("model.onnx", "test_data_set_bs1/input_0.pb", "test_data_set_bs1/output_0.pb"):
                open(os.path.join(model, f), "w").close()
            fake = os.path.join(tmp, "aotc")
            with open(fake, "w") as f:
                f.write("#!/usr/bin/env python3\nimport json, sys\na = sys.argv[1:]\n"
                        "if a == ['--version']: print('aotc fake'); sys.exit(0)\n"
                        "open(a[a.index('-o') + 1], 'w').write(json.dumps(a))\n")
            os.chmod(fake, 0o755)
            out = os.path.join(tmp, "out")
            prebuilt.main(["build", out, "--aotc", fake, "--arch", "sm_87",
                           "--case", "p=%s:1:fp16" % model, "--case", "q=%s:1:fp16::--disable-pass x" % model])
            with open(os.path.join(out, "manifest.json")) as f:
                m = json.load(f)
            self.assertEqual([c["name"] for c in m["cases"]], ["p", "q"])
            self.assertEqual({c["group"] for c in m["cases"]}, {"m bs1 fp16"})
            with open(os.path.join(out, "q", "libq.so")) as f:
                args = json.load(f)
            self.assertEqual(args[args.index("--name") + 1], "q")
            self.assertEqual(args[args.index("--arch") + 1], "sm_87")
            self.assertEqual(args[-2:], ["--disable-pass", "x"])
            self.assertTrue(os.path.isfile(os.path.join(out, "p", "data", "output_0.pb")))
            self.assertEqual(m["cases"][0]["aotc_version"], "aotc fake")


class TraceReplayTest(unittest.TestCase):
    """tools/device/trace_replay.py: replays are split at the gaps between them (not inside one),
    and a replay's span, busy time and gaps are what its kernels say."""

    def test_split_and_analyse(self):
        from tools.device import trace_replay
        events = []
        for r in range(3):  # three replays 2000 us apart, 4 kernels each with 1-3 us gaps
            t = r * 2000.0
            for k in range(4):
                events.append((t, t + 5.0, f"k{k}"))
                t += 5.0 + 1.0 + k
        shuffled = events[::-1]
        reps = trace_replay.replays(list(shuffled), 3)
        self.assertEqual([len(r) for r in reps], [4, 4, 4])
        self.assertEqual([e[2] for e in reps[1]], ["k0", "k1", "k2", "k3"])
        st = trace_replay.analyse(reps[0])
        self.assertEqual(st["kernels"], 4)
        self.assertAlmostEqual(st["busy_us"], 20.0)
        self.assertAlmostEqual(st["gaps_us"], 1.0 + 2.0 + 3.0)
        self.assertAlmostEqual(st["span_us"], 26.0)
        self.assertEqual(len(trace_replay.replays(events[:3], 5)), 1)  # fewer kernels than replays


class DigitsCnnTest(unittest.TestCase):
    """models/digits_cnn.py's helpers: the test split padded to whole batches, and the layer
    precisions read from aotc's report (the int8 section when there is one)."""

    def test_batches_pad_the_last(self):
        from models import digits_cnn
        x = np.arange(130 * 64, dtype=np.float32).reshape(130, 1, 8, 8)
        b = digits_cnn.batches(x)
        self.assertEqual([t.shape[0] for t in b], [64, 64, 64])
        self.assertTrue(np.array_equal(np.concatenate(b)[:130], x))
        self.assertFalse(np.any(b[-1][2:]))

    def test_layer_precisions(self):
        from models import digits_cnn
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, "r.json")
            write_json(p, {"int8": {"layers": [{"precision": "int8"}, {"precision": "fp16"}, {"precision": "int8"}]},
                           "node_precision": [{"op": "aotc.FusedConv", "dtype": "float16"}]})
            self.assertEqual(digits_cnn.layer_precisions(p), {"int8": 2, "fp16": 1})
            write_json(p, {"node_precision": [{"op": "aotc.FusedConv", "dtype": "float"},
                                              {"op": "Gemm", "dtype": "float"}, {"op": "Relu", "dtype": "float"}]})
            self.assertEqual(digits_cnn.layer_precisions(p), {"fp32": 2})
            self.assertEqual(digits_cnn.layer_precisions(os.path.join(tmp, "missing.json")), {})


class LibraryAbiTest(unittest.TestCase):
    """prebuilt.Library's C ABI helpers (create, last_error, run, destroy, load_inputs), which
    prebuilt.py run, trace_replay.py and models/digits_cnn.py share, on a stand-in library
    compiled here with cc: create fails when asked, one float input [2, 3]."""

    kSource = textwrap.dedent("""
        static int destroyed = 0;
        int fake_create(void** h, int device, void* a, void* b) { (void)a; (void)b; *h = (void*)0x10; return device == 0 ? 0 : 2; }
        const char* fake_last_error(void* h) { (void)h; return "stand-in error"; }
        int fake_run(void* h, void* in, void* out, void* s) { (void)h; (void)in; (void)out; (void)s; return 7; }
        void fake_destroy(void* h) { (void)h; destroyed = 1; }
        int fake_destroyed(void) { return destroyed; }
        int fake_num_inputs(void) { return 1; }
        int fake_input_dtype(int i) { (void)i; return 1; }
        int fake_input_rank(int i) { (void)i; return 2; }
        static long long shape[2] = {2, 3};
        long long* fake_input_shape(int i) { (void)i; return shape; }
    """)

    def test_helpers(self):
        import shutil
        from onnx import numpy_helper
        from tools.device import prebuilt
        if not shutil.which("cc"):
            self.skipTest("no C compiler")
        with tempfile.TemporaryDirectory() as tmp:
            src, so = os.path.join(tmp, "fake.c"), os.path.join(tmp, "libfake.so")
            with open(src, "w") as f:
                f.write(self.kSource)
            subprocess.run(["cc", "-shared", "-fPIC", "-o", so, src], check=True)
            lib = prebuilt.Library(so, "fake")
            st, model, message = lib.create()
            self.assertEqual((st, message), (0, ""))
            self.assertEqual(lib.run_fn()(model, None, None, None), 7)
            self.assertEqual(lib.last_error(model), "stand-in error")
            lib.destroy(model)
            self.assertEqual(lib.fn("destroyed")(), 1)
            for name, arr in (("ok", np.arange(6, dtype=np.float32).reshape(2, 3)),
                              ("shape", np.zeros((3, 2), np.float32)), ("dtype", np.zeros((2, 3), np.float64))):
                d = os.path.join(tmp, name)
                os.makedirs(d)
                with open(os.path.join(d, "input_0.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(arr, "x").SerializeToString())
                if name == "ok":
                    got = lib.load_inputs(d)
                    self.assertEqual(len(got), 1)
                    self.assertTrue(np.array_equal(got[0], arr))
                else:
                    with self.assertRaises(ValueError):
                        lib.load_inputs(d)


class ConvRateTest(unittest.TestCase):
    """tools/device/conv_rate.py on a hand-made profile, replay trace and compile report."""

    def run_tool(self, steps, kernels, nodes, codegen_steps=None):
        from tools.device import conv_rate
        with tempfile.TemporaryDirectory() as tmp:
            paths = {k: os.path.join(tmp, k + ".json") for k in ("profile", "trace", "report", "out")}
            write_json(paths["profile"], {"total_ms": 1.0, "steps": [
                {"index": i, "label": l, "kind": kind, "ms": ms, "flops": fl} for i, (l, kind, ms, fl) in enumerate(steps)]})
            t, rows = 0.0, []
            for dur, name in kernels:
                rows.append([t, dur, name])
                t += dur + 1.0
            write_json(paths["trace"], {"median_replay": rows})
            report = {"node_precision": [{"node": n, "op": op} for n, op in nodes]}
            if codegen_steps is not None:
                report["codegen"] = {"steps": codegen_steps}
            write_json(paths["report"], report)
            with contextlib.redirect_stdout(io.StringIO()) as out:
                self.assertEqual(conv_rate.main(["--profile", paths["profile"], "--trace", paths["trace"], "--report",
                                                 paths["report"], "--peak", "100", "--json", paths["out"]]), 0)
            with open(paths["out"]) as f:
                return json.load(f), out.getvalue()

    def test_sanitize_matches_the_codegen_rule(self):
        from tools.device import conv_rate
        self.assertEqual(conv_rate.sanitize("/layer1/layer1.0/conv1/Conv"), "layer1_layer1_0_conv1_Conv")
        self.assertEqual(conv_rate.sanitize("__a--b"), "a_b")
        self.assertEqual(conv_rate.sanitize("x" * 50), "x" * 40)
        self.assertEqual(conv_rate.sanitize("/"), "x")

    def test_kernels_matmuls_and_copies_are_split_by_kind(self):
        # stem kernel (conv, 2e6 FLOP), two matmul convs in a row (one kernel each), a copy (Concat),
        # a wgmma conv, the pool kernel, the classifier matmul with a split-K reduce (two kernels).
        steps = [("k0_stem", "kernel", 0.010, 2_000_000), ("mm0_c1", "matmul", 0.010, 1_000_000),
                 ("mm1_c2", "matmul", 0.010, 1_000_000), ("copy0_cat", "copy", 0.005, 0),
                 ("k1_lib_c3", "kernel", 0.010, 4_000_000), ("k2_pool", "kernel", 0.004, 0),
                 ("mm2_fc", "matmul", 0.004, 500_000)]
        kernels = [(8.0, "k0_stem"), (5.0, "nvjet_a"), (6.0, "nvjet_b"), (2.0, "Memcpy DtoD"),
                   (7.0, "k1_lib_c3"), (3.0, "k2_pool"), (1.5, "nvjet_c"), (0.5, "splitKreduce")]
        nodes = [("stem", "aotc.FusedConv"), ("c1", "aotc.FusedConv"), ("c2", "Conv"), ("cat", "Concat"),
                 ("c3", "aotc.FusedConv"), ("pool", "GlobalAveragePool"), ("fc", "aotc.FusedGemm")]
        got, text = self.run_tool(steps, kernels, nodes)
        # convolutions: 8 + 5 + 6 + 7 = 26 us for 8e6 FLOP -> 0.3077 TFLOP/s
        self.assertEqual(got["conv_steps"], 4)
        self.assertEqual(got["conv_flops"], 8_000_000)
        self.assertAlmostEqual(got["conv_replay_us"], 26.0)
        self.assertAlmostEqual(got["conv_tflops"], 8e6 / 26e-6 / 1e12)
        self.assertAlmostEqual(got["other_replay_us"], 2.0 + 3.0 + 2.0)
        self.assertEqual(got["unassigned_us"], 0)
        self.assertAlmostEqual(got["conv_event_ms"], 0.040)
        by_label = {r["label"]: r for r in got["steps"]}
        self.assertEqual(by_label["mm2_fc"]["kernels"], 2)
        self.assertAlmostEqual(by_label["mm1_c2"]["replay_us"], 6.0)
        self.assertIn("copy0_cat (Concat)", text)

    def test_a_kernel_running_a_shared_function_takes_its_place_in_the_run(self):
        # k2_lib_b runs k0_lib_a's function (identical kernels share one): the replay shows k0_lib_a
        # twice. The run between the matched k1_pool and the end (k2_lib_b, mm0_fc) gets its two
        # kernels in order: 6 us to the convolution, 2 us to the classifier.
        steps = [("k0_lib_a", "kernel", 0.01, 1_000_000), ("k1_pool", "kernel", 0.01, 0),
                 ("k2_lib_b", "kernel", 0.01, 3_000_000), ("mm0_fc", "matmul", 0.01, 500_000)]
        kernels = [(5.0, "k0_lib_a"), (1.0, "k1_pool"), (6.0, "k0_lib_a"), (2.0, "nvjet_fc")]
        got, _ = self.run_tool(steps, kernels, [("a", "Conv"), ("pool", "MaxPool"), ("b", "Conv"), ("fc", "Gemm")])
        by_label = {r["label"]: r for r in got["steps"]}
        self.assertAlmostEqual(by_label["k2_lib_b"]["replay_us"], 6.0)
        self.assertAlmostEqual(by_label["mm0_fc"]["replay_us"], 2.0)
        self.assertAlmostEqual(got["conv_replay_us"], 11.0)
        self.assertAlmostEqual(got["conv_tflops"], 4e6 / 11e-6 / 1e12)
        self.assertEqual(got["unassigned_us"], 0)
        self.assertEqual(got["matched_by_position"], 1)

    def test_the_reports_step_list_matches_by_function_and_op(self):
        # aotc's report names each step's function and op: k2_lib_b launches k0_lib_a's function,
        # and node names that would not resolve (no node_precision at all) do not matter.
        steps = [("k0_lib_a", "kernel", 0.01, 1_000_000), ("k1_pool", "kernel", 0.01, 0),
                 ("k2_lib_b", "kernel", 0.01, 3_000_000), ("mm0_fc", "matmul", 0.01, 500_000)]
        kernels = [(5.0, "k0_lib_a"), (1.0, "k1_pool"), (6.0, "k0_lib_a"), (2.0, "nvjet_fc")]
        listed = [{"label": "k0_lib_a", "kind": "kernel", "function": "k0_lib_a", "node": "a", "op": "aotc.FusedConv"},
                  {"label": "k1_pool", "kind": "kernel", "function": "k1_pool", "node": "p", "op": "MaxPool"},
                  {"label": "k2_lib_b", "kind": "kernel", "function": "k0_lib_a", "node": "b", "op": "aotc.FusedConv"},
                  {"label": "mm0_fc", "kind": "matmul", "function": "cublasLt", "node": "fc", "op": "aotc.FusedGemm"}]
        got, _ = self.run_tool(steps, kernels, [], listed)
        by_label = {r["label"]: r for r in got["steps"]}
        self.assertAlmostEqual(by_label["k2_lib_b"]["replay_us"], 6.0)
        self.assertEqual(by_label["k2_lib_b"]["op"], "aotc.FusedConv")
        self.assertAlmostEqual(got["conv_replay_us"], 11.0)
        self.assertAlmostEqual(got["other_replay_us"], 3.0)
        self.assertEqual(got["matched_by_position"], 0)
        # A list that does not describe this profile (another library's) is not used.
        got, _ = self.run_tool(steps, kernels, [("a", "Conv"), ("pool", "MaxPool"), ("b", "Conv"), ("fc", "Gemm")],
                               listed[:3])
        self.assertEqual(got["matched_by_position"], 1)

    def test_a_memset_goes_with_the_kernel_after_it(self):
        # Two matmuls after a matched kernel, the second preceded by cuBLASLt's workspace memset.
        steps = [("k0_a", "kernel", 0.01, 1_000_000), ("mm0_b", "matmul", 0.01, 1_000_000),
                 ("mm1_fc", "matmul", 0.01, 1_000_000)]
        kernels = [(4.0, "k0_a"), (3.0, "nvjet_b"), (0.5, "Memset (Device)"), (2.0, "nvjet_fc")]
        got, _ = self.run_tool(steps, kernels, [("a", "Conv"), ("b", "Conv"), ("fc", "Gemm")])
        by_label = {r["label"]: r for r in got["steps"]}
        self.assertAlmostEqual(by_label["mm0_b"]["replay_us"], 3.0)
        self.assertAlmostEqual(by_label["mm1_fc"]["replay_us"], 2.5)
        self.assertAlmostEqual(got["conv_replay_us"], 7.0)
        self.assertEqual(got["unassigned_us"], 0)

    def test_a_run_of_mixed_steps_with_extra_kernels_is_left_unassigned(self):
        # a conv matmul and the classifier back to back, three kernels between them: no split is safe.
        steps = [("k0_a", "kernel", 0.01, 1_000_000), ("mm0_c", "matmul", 0.01, 1_000_000),
                 ("mm1_fc", "matmul", 0.01, 1_000_000)]
        kernels = [(4.0, "k0_a"), (1.0, "x"), (2.0, "y"), (3.0, "z")]
        got, text = self.run_tool(steps, kernels, [("a", "Conv"), ("c", "Conv"), ("fc", "Gemm")])
        self.assertAlmostEqual(got["conv_replay_us"], 4.0)
        self.assertAlmostEqual(got["unassigned_us"], 6.0)
        self.assertIn("unassigned", text)
