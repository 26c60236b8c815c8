# Tests of tools/device/trace_diff.py on hand-made replays: pairing by position when both builds
# launch as many kernels (index prefixes and cuBLASLt's kernel names may differ), by matching runs
# when a pass removed kernels (the removed ones listed as only in A, totals split accordingly), and
# node names from a report's steps matched to the kernels as conv_rate.py matches them.
#   python3 -m unittest discover -s tools/device/tests
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import trace_diff  # noqa: E402


class TraceDiffTest(unittest.TestCase):
    def test_same_count_pairs_by_position(self):
        a = [(100.0, "k1_lib_conv_a"), (10.0, "nvjet_sm90_64x48"), (5.0, "k3_add")]
        b = [(60.0, "k1_lib_conv_a"), (11.0, "nvjet_sm90_64x56"), (5.5, "k3_add")]
        self.assertEqual(trace_diff.pair(a, b), [(0, 0), (1, 1), (2, 2)])
        lines = trace_diff.diff(a, b, nodes=["/conv", "/pw", "/add"], min_us=1.0)
        self.assertIn("-40.0", lines[1])
        self.assertIn("[/conv]", lines[1])
        self.assertIn("+1.0", lines[2])
        self.assertEqual(len(lines), 4)  # header, two changed (>= 1 us), totals; the Add moved 0.5
        self.assertIn("B-A -38.5 us: paired -38.5", lines[-1])

    def test_removed_kernels_are_listed_as_only_in_a(self):
        # B fused the Swish kernels (k2, k6) into the depthwise convolutions; B's index prefixes shift.
        a = [(20.0, "k1_expand"), (7.0, "k2_swish"), (9.0, "k3_dw"), (3.0, "k4_pool"),
             (20.0, "k5_expand"), (7.0, "k6_swish"), (9.0, "k7_dw")]
        b = [(20.0, "k1_expand"), (11.0, "k2_dw"), (3.0, "k3_pool"), (20.0, "k4_expand"), (11.0, "k5_dw")]
        pairs = trace_diff.pair(a, b)
        self.assertIn((1, None), pairs)
        self.assertIn((5, None), pairs)
        self.assertIn((2, 1), pairs)
        self.assertIn((6, 4), pairs)
        self.assertEqual(sum(1 for i, j in pairs if i is not None and j is not None), 5)
        last = trace_diff.diff(a, b)[-1]
        self.assertIn("paired +4.0", last)
        self.assertIn("only in A -14.0", last)
        self.assertIn("only in B +0.0", last)

    def test_report_names_nodes_through_conv_rates_matching(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "report.json")
            with open(path, "w") as f:
                json.dump({"codegen": {"steps": [{"label": "k0_x", "kind": "kernel", "function": "k0_x", "node": "/a"},
                                                 {"label": "k1_y", "kind": "kernel", "function": "k1_y", "node": ""}]}}, f)
            self.assertEqual(trace_diff.nodes_of(path, [(1.0, "k0_x"), (2.0, "k1_y")]), ["/a", "k1_y"])
            # A matmul step launching two kernels (a memset and cuBLASLt's GEMM) between kernel steps.
            with open(path, "w") as f:
                json.dump({"codegen": {"steps": [{"label": "k0_x", "kind": "kernel", "function": "k0_x", "node": "/a"},
                                                 {"label": "mm1_fc", "kind": "matmul", "node": "/fc"},
                                                 {"label": "k2_z", "kind": "kernel", "function": "k2_z", "node": "/z"}]}}, f)
            kernels = [(1.0, "k0_x"), (0.5, "Memset (Device)"), (3.0, "nvjet_sm90_hsh"), (1.0, "k2_z")]
            self.assertEqual(trace_diff.nodes_of(path, kernels), ["/a", "/fc", "/fc", "/z"])
            with open(path, "w") as f:
                json.dump({"codegen": {}}, f)
            self.assertIsNone(trace_diff.nodes_of(path, kernels))

    def test_load_reads_the_median_replay(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "trace.json")
            with open(path, "w") as f:
                json.dump({"median_replay": [[0.0, 12.5, "k0_conv"], [13.0, 2.0, "k1_add"]]}, f)
            self.assertEqual(trace_diff.load(path), [(12.5, "k0_conv"), (2.0, "k1_add")])


if __name__ == "__main__":
    unittest.main()
