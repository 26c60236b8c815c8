# Tests of the torch-free parts of the model scripts: seeded inputs, the whole-model metric (against
# values computed by hand here), the test_data_set layout round trip through ONNX Runtime on a
# tiny hand-built model, and the exporter's argument parsing. Run from the repo root:
#   python3 -m unittest discover -s models/tests -t .
import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from models import model_zoo  # noqa: E402
from models import reference_data as ref  # noqa: E402
from models import export_torchvision as exporter  # noqa: E402


def tiny_add_model(path):
    """y = x * 2 + 1 on a [batch, 3] float input with a symbolic batch dim."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    two = numpy_helper.from_array(np.full((3,), 2.0, np.float32), "two")
    one = numpy_helper.from_array(np.ones((3,), np.float32), "one")
    graph = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["t"]),
                               helper.make_node("Add", ["t", "one"], ["y"])],
                              "tiny", [x], [y], [two, one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


class MakeInputsTest(unittest.TestCase):
    def test_image_inputs_are_seeded_normal_and_not_zero(self):
        spec = model_zoo.get_spec("resnet50")
        a = ref.make_inputs(spec, 2, 5)
        b = ref.make_inputs(spec, 2, 5)
        c = ref.make_inputs(spec, 2, 6)
        self.assertEqual(len(a), 1)
        self.assertEqual(a[0].shape, (2, 3, 224, 224))
        self.assertEqual(a[0].dtype, np.float32)
        np.testing.assert_array_equal(a[0], b[0])
        self.assertFalse(np.array_equal(a[0], c[0]))
        self.assertEqual(int(np.count_nonzero(a[0] == 0)), 0)
        self.assertAlmostEqual(float(a[0].std()), 1.0, delta=0.02)

    def test_token_and_mask_inputs(self):
        spec = model_zoo.get_spec("bert_base")
        ids, mask = ref.make_inputs(spec, 8, 3)
        self.assertEqual(ids.shape, (8, 128))
        self.assertEqual(ids.dtype, np.int64)
        self.assertTrue(ids.min() >= 0 and ids.max() < model_zoo.kBertVocab)
        self.assertEqual(mask.dtype, np.int64)
        self.assertTrue(np.all(mask[0] == 1))
        for row in mask:  # a prefix of ones, then zeros, at least half the sequence
            n = int(row.sum())
            self.assertGreaterEqual(n, 64)
            self.assertTrue(np.all(row[:n] == 1) and np.all(row[n:] == 0))


class ModelMetricTest(unittest.TestCase):
    def test_relative_l2_and_max_ratio_by_hand(self):
        expected = np.full(100, 2.0, np.float32)   # ||e|| = 20, max|e| = 2
        actual = expected.copy()
        d = 2.0 ** -12                              # exact in fp32 next to 2.0
        actual[7] += d                              # ||a-e|| = d
        m = ref.model_metric(actual, expected)
        self.assertAlmostEqual(m["rel_l2"], d / 20, delta=1e-12)
        self.assertAlmostEqual(m["max_abs_over_max_ref"], d / 2, delta=1e-12)
        self.assertTrue(m["ok"])

    def test_fails_over_limits(self):
        expected = np.full(100, 2.0, np.float32)
        actual = expected.copy()
        actual[0] += 0.01   # rel L2 5e-4 > 1e-4
        self.assertFalse(ref.model_metric(actual, expected)["ok"])
        big = np.zeros(10000, np.float32)
        big[0] = 100.0
        near = big.copy()
        near[1] = 0.2       # max abs 0.2 > 1e-3 * 100, rel L2 2e-3
        self.assertFalse(ref.model_metric(near, big)["ok"])

    def test_nan_positions_must_match(self):
        e = np.array([1.0, np.nan, 3.0], np.float32)
        self.assertTrue(ref.model_metric(e.copy(), e)["ok"])
        a = np.array([1.0, 2.0, 3.0], np.float32)
        m = ref.model_metric(a, e)
        self.assertFalse(m["ok"])
        self.assertFalse(m["nonfinite_match"])

    def test_shape_mismatch_and_combine(self):
        self.assertFalse(ref.model_metric(np.zeros(3), np.zeros(4))["ok"])
        good = ref.model_metric(np.ones(4), np.ones(4))
        bad = ref.model_metric(np.ones(4) * 2, np.ones(4))
        self.assertTrue(ref.combine_metrics([good, good])["ok"])
        both = ref.combine_metrics([good, bad])
        self.assertFalse(both["ok"])
        self.assertAlmostEqual(both["rel_l2"], 1.0)
        self.assertFalse(ref.combine_metrics([])["ok"])


class TestDataSetTest(unittest.TestCase):
    def test_ort_outputs_round_trip_through_the_layout(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.onnx")
            tiny_add_model(path)
            x = np.random.default_rng(0).standard_normal((5, 3), dtype=np.float32)
            (y,) = ref.run_ort(path, {"x": x})
            np.testing.assert_allclose(y, x * 2 + 1, rtol=1e-6, atol=1e-6)  # independent math
            data = os.path.join(tmp, "test_data_set_bs5")
            ref.write_test_data_set(data, ["x"], [x], ["y"], [y])
            self.assertEqual(sorted(os.listdir(data)), ["input_0.pb", "output_0.pb"])
            np.testing.assert_array_equal(ref.read_test_data_set(data, "input")[0], x)
            np.testing.assert_array_equal(ref.read_test_data_set(data, "output")[0], y)
            import onnx
            t = onnx.TensorProto()
            with open(os.path.join(data, "output_0.pb"), "rb") as f:
                t.ParseFromString(f.read())
            self.assertEqual(t.name, "y")
            self.assertEqual(list(t.dims), [5, 3])
            self.assertEqual(ref.ort_io_names(path), (["x"], ["y"]))

    def test_name_count_mismatch_is_refused(self):
        with self.assertRaises(ValueError):
            ref.write_test_data_set("/nonexistent", ["a", "b"], [np.zeros(1)], [], [])


class ExporterArgsTest(unittest.TestCase):
    def test_models_and_batches(self):
        a = exporter.parse_args(["--model", "resnet50 mobilenet_v2", "--model", "gpt2",
                                 "--batches", "1,32"])
        self.assertEqual(a.models, ["resnet50", "mobilenet_v2", "gpt2"])
        self.assertEqual(a.batch_list, [1, 32])
        self.assertEqual(a.exporter, "torchscript")
        self.assertEqual(a.opset, 17)
        self.assertEqual(exporter.parse_args(["--model", "vit_b_16"]).batch_list, [])

    def test_bad_arguments_exit_2(self):
        import contextlib
        import io
        for argv in (["--model", "resnet51"], ["--model", "resnet50", "--batches", "x"],
                     ["--model", "resnet50", "--batches", "0"], []):
            with self.assertRaises(SystemExit) as cm, contextlib.redirect_stderr(io.StringIO()):
                exporter.parse_args(argv)
            self.assertEqual(cm.exception.code, 2, argv)

    def test_layout_names(self):
        self.assertEqual(exporter.model_dir("o", "gpt2", "torchscript"), os.path.join("o", "gpt2"))
        self.assertEqual(exporter.model_dir("o", "gpt2", "dynamo"), os.path.join("o", "gpt2_dynamo"))
        self.assertEqual(exporter.model_dir("o", "gpt2", "dynamo23"), os.path.join("o", "gpt2_dynamo23"))
        self.assertEqual(exporter.parse_args(["--model", "gpt2", "--exporter", "dynamo23"]).exporter,
                         "dynamo23")
        self.assertEqual(exporter.attention_of("dynamo23"), "sdpa")
        self.assertEqual(exporter.attention_of("torchscript"), "eager")
        self.assertEqual(exporter.attention_of("dynamo"), "eager")
        self.assertEqual(exporter.case_dir_name(32), "test_data_set_bs32")
        meta = exporter.io_meta(model_zoo.get_spec("bert_base"))
        self.assertEqual([i["name"] for i in meta["inputs"]], ["input_ids", "attention_mask"])
        self.assertEqual(meta["inputs"][0]["shape"], ["batch", 128])

    def test_every_spec_is_consistent(self):
        for name, spec in model_zoo.MODEL_SPECS.items():
            self.assertEqual(spec.name, name)
            self.assertIn(spec.source, ("torchvision", "transformers"))
            self.assertTrue(spec.inputs and spec.outputs and spec.default_batches)
            arrays = ref.make_inputs(spec, 1, 0)
            self.assertEqual([a.shape[1:] for a in arrays], [i.shape for i in spec.inputs])
        with self.assertRaises(KeyError):
            model_zoo.get_spec("nope")


if __name__ == "__main__":
    unittest.main()


class ExportOneWithStandInTorchTest(unittest.TestCase):
    """export_one's flow (layout, ORT references, meta.json, the torch sanity metric) with a
    stand-in 'torch' module and a model computing y = 2x + 1, so that only the torch calls
    themselves are left untested without torch."""

    def test_export_one_writes_the_layout_and_meta(self):
        import contextlib
        import json
        import types
        spec = model_zoo.ModelSpec("tiny", "torchvision", (model_zoo.InputSpec("x", "float32", (3,)),),
                                   ("y",), (1, 4))

        class Out:
            def __init__(self, a):
                self.a = a

            def numpy(self):
                return self.a

        fake_torch = types.SimpleNamespace(from_numpy=lambda a: a, no_grad=contextlib.nullcontext)
        saved = (sys.modules.get("torch"), dict(model_zoo.MODEL_SPECS), model_zoo.build_model,
                 exporter.export_onnx)
        try:
            sys.modules["torch"] = fake_torch
            model_zoo.MODEL_SPECS["tiny"] = spec
            model_zoo.build_model = lambda name, seed, attention="eager": (
                lambda x: Out(x * 2 + 1), {"reinitialised": [], "batchnorm_recalibrated": 0,
                                           "parameters": 6, "seed": seed})
            exporter.export_onnx = lambda model, s, example, path, exp, opset: (
                tiny_add_model(path), opset)[1]
            with tempfile.TemporaryDirectory() as tmp:
                args = exporter.parse_args(["--model", "tiny", "--out-dir", tmp])
                logs = []
                meta = exporter.export_one("tiny", args, logs.append)
                with open(os.path.join(tmp, "tiny", "meta.json")) as f:
                    self.assertEqual(json.load(f), json.loads(json.dumps(meta)))
                self.assertEqual(meta["opset"], 17)
                self.assertEqual([c["batch"] for c in meta["cases"]], [1, 4])
                for case in meta["cases"]:
                    d = os.path.join(tmp, "tiny", case["data_dir"])
                    (x,) = ref.read_test_data_set(d, "input")
                    (y,) = ref.read_test_data_set(d, "output")
                    self.assertEqual(x.shape, (case["batch"], 3))
                    np.testing.assert_allclose(y, x * 2 + 1, rtol=1e-6)
                    seed = model_zoo.test_input_seed(0, case["batch"])
                    np.testing.assert_array_equal(x, ref.make_inputs(spec, case["batch"], seed)[0])
                    self.assertLess(case["ort_vs_torch_cpu"]["rel_l2"], 1e-6)
                self.assertTrue(any("ORT vs PyTorch" in m for m in logs))
        finally:
            if saved[0] is None:
                sys.modules.pop("torch", None)
            else:
                sys.modules["torch"] = saved[0]
            model_zoo.MODEL_SPECS.clear()
            model_zoo.MODEL_SPECS.update(saved[1])
            model_zoo.build_model, exporter.export_onnx = saved[2], saved[3]
