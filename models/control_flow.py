#!/usr/bin/env python3
"""Small models with the compile-time control flow exporters write (issue 9), built with the onnx
package alone (no torch), for testing aotc's If / Loop / Scan inlining against ONNX Runtime:

  detection_post (opset 17): SSD-style post-processing. An If on a Shape-derived constant picks
              the score head (several classes: Softmax, background column dropped, ReduceMax;
              one class: Sigmoid of the only column), box deltas decoded against constant anchors (Slice, Mul, Exp,
              Concat), a second If on Shape(scores)[1] > k (torchvision's "at most k of the
              anchors") choosing TopK with k or with every anchor, boxes gathered by the kept
              indices (GatherElements).
  rnn_loop    (opset 17): an Elman RNN cell as a TorchScript-style Loop: trip count from
              Shape(x)[1] (8 steps), constant-true condition passed through Identity, carried
              hidden state h = tanh(x_t Wx + h Wh + b) (x_t gathered by the iteration number from
              the outer-scope input), every step's h as a scan output; outputs the final state
              projected by a MatMul and the stacked states transposed to batch-first.
  scan_bidir  (opset 17): two Scans over the sequence axis of x [batch, 6, 8] (scan_input_axes 1),
              one forward and one reverse (scan_input_directions / scan_output_directions 1), each
              carrying a running state through MatMul + Add + Tanh, outputs concatenated.

Each goes to OUT/<name>/model.onnx with seeded weights, the batch dim symbolic ("batch"), and
test_data_set_bs1 / test_data_set_bs2 holding seeded inputs (input_K.pb, named) and ONNX Runtime's
outputs (output_K.pb), the layout of models/tiny_transformers.py.

    python3 models/control_flow.py OUT [--seed N]
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_transformers  # noqa: E402  (write_cases: the shared test-data writer)

F = TensorProto.FLOAT
ANCHORS = 50
CLASSES = 3
KEEP = 10
STEPS = 8
FEAT = 16
HID = 24


def const(name, array, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(array, dtype=dtype), name)


def detection_post(rng):
    anchors = np.concatenate([rng.uniform(0.1, 0.9, size=(ANCHORS, 2)), rng.uniform(0.05, 0.3, size=(ANCHORS, 2))], 1)
    inits = [const("anchors", anchors), const("variance", [0.1, 0.1, 0.2, 0.2]), const("half", 0.5),
             const("two_i", 2, np.int64), const("one_i", 1, np.int64),
             const("k", [KEEP], np.int64), const("k_scalar", KEEP, np.int64), const("expand_shape", [1, 1, 4], np.int64), const("ax0", [0], np.int64),
             const("ax_last", [-1], np.int64), const("e2_split", [2, 2], np.int64)]
    n = [
        # Several score columns? (Shape(scores)[2] > 1: a constant once the shapes are static.)
        helper.make_node("Shape", ["scores"], ["scores_shape"]),
        helper.make_node("Gather", ["scores_shape", "two_i"], ["num_classes"]),
        helper.make_node("Greater", ["num_classes", "one_i"], ["multi_class"]),
        helper.make_node("If", ["multi_class"], ["score"], name="score_head",
                         then_branch=helper.make_graph([
                             helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
                             helper.make_node("Slice", ["probs", "one_i_1d", "big_1d", "ax_last"], ["fg"]),
                             helper.make_node("ReduceMax", ["fg"], ["best"], axes=[-1], keepdims=0),
                         ], "multi", [], [helper.make_tensor_value_info("best", F, None)],
                             [const("one_i_1d", [1], np.int64), const("big_1d", [1 << 30], np.int64)]),
                         else_branch=helper.make_graph([
                             helper.make_node("ReduceMax", ["scores"], ["logit"], axes=[-1], keepdims=0),
                             helper.make_node("Sigmoid", ["logit"], ["best"]),
                         ], "single", [], [helper.make_tensor_value_info("best", F, None)])),
        # Box decoding: centre = anchor_c + d_c * var * anchor_wh, size = anchor_wh * exp(d_wh * var).
        helper.make_node("Mul", ["deltas", "variance"], ["d"]),
        helper.make_node("Split", ["d", "e2_split"], ["d_c", "d_wh"], axis=2),
        helper.make_node("Split", ["anchors", "e2_split"], ["a_c", "a_wh"], axis=1),
        helper.make_node("Mul", ["d_c", "a_wh"], ["off"]),
        helper.make_node("Add", ["off", "a_c"], ["centre"]),
        helper.make_node("Exp", ["d_wh"], ["scale"]),
        helper.make_node("Mul", ["scale", "a_wh"], ["size"]),
        helper.make_node("Mul", ["size", "half"], ["half_size"]),
        helper.make_node("Sub", ["centre", "half_size"], ["top_left"]),
        helper.make_node("Add", ["centre", "half_size"], ["bottom_right"]),
        helper.make_node("Concat", ["top_left", "bottom_right"], ["boxes"], axis=2),
        # torchvision's "at most k of the anchors": an If on Shape(scores)[1] > k picks TopK with k
        # or with every anchor (both branches give [batch, min(k, anchors)]).
        helper.make_node("Shape", ["scores"], ["anchor_shape"]),
        helper.make_node("Gather", ["anchor_shape", "one_i"], ["num_anchors"]),
        helper.make_node("Greater", ["num_anchors", "k_scalar"], ["enough"]),
        helper.make_node("If", ["enough"], ["top_scores", "top_idx"], name="top_k",
                         then_branch=helper.make_graph([
                             helper.make_node("TopK", ["score", "k"], ["ts", "ti"], axis=1),
                         ], "k_of_them", [], [helper.make_tensor_value_info("ts", F, None),
                                              helper.make_tensor_value_info("ti", TensorProto.INT64, None)]),
                         else_branch=helper.make_graph([
                             helper.make_node("Unsqueeze", ["num_anchors", "ax0"], ["all_k"]),
                             helper.make_node("TopK", ["score", "all_k"], ["ts", "ti"], axis=1),
                         ], "all_of_them", [], [helper.make_tensor_value_info("ts", F, None),
                                                helper.make_tensor_value_info("ti", TensorProto.INT64, None)])),
        helper.make_node("Unsqueeze", ["top_idx", "ax_last"], ["idx3"]),
        helper.make_node("Expand", ["idx3", "expand_shape"], ["idx_boxes"]),
        helper.make_node("GatherElements", ["boxes", "idx_boxes"], ["out_boxes"], axis=1),
        helper.make_node("Identity", ["top_scores"], ["out_scores"]),
    ]
    inputs = [("deltas", F, ["batch", ANCHORS, 4]), ("scores", F, ["batch", ANCHORS, CLASSES])]
    outputs = [("out_boxes", F, ["batch", KEEP, 4]), ("out_scores", F, ["batch", KEEP])]
    return n, inits, inputs, outputs


def rnn_loop(rng):
    wx = rng.normal(0, 1 / np.sqrt(FEAT), size=(FEAT, HID))
    wh = rng.normal(0, 1 / np.sqrt(HID), size=(HID, HID))
    b = rng.normal(0, 0.1, size=(HID,))
    head = rng.normal(0, 1 / np.sqrt(HID), size=(HID, 5))
    inits = [const("Wx", wx), const("Wh", wh), const("b", b), const("head", head),
             const("one_i", 1, np.int64), const("true", True, np.bool_)]
    body = helper.make_graph([
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("Gather", ["x", "i"], ["x_t"], axis=1),  # x: the outer graph's input
        helper.make_node("MatMul", ["x_t", "Wx"], ["xw"]),
        helper.make_node("MatMul", ["h", "Wh"], ["hw"]),
        helper.make_node("Add", ["xw", "hw"], ["s"]),
        helper.make_node("Add", ["s", "b"], ["pre"]),
        helper.make_node("Tanh", ["pre"], ["h_out"]),
        helper.make_node("Identity", ["h_out"], ["h_scan"]),
    ], "rnn_step",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", F, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("h_out", F, None),
         helper.make_tensor_value_info("h_scan", F, None)])
    n = [
        helper.make_node("Shape", ["x"], ["x_shape"]),
        helper.make_node("Gather", ["x_shape", "one_i"], ["steps"]),  # trip count: Shape(x)[1]
        helper.make_node("Loop", ["steps", "true", "h0"], ["h_last", "h_all"], name="rnn", body=body),
        helper.make_node("MatMul", ["h_last", "head"], ["logits"]),
        helper.make_node("Transpose", ["h_all"], ["states"], perm=[1, 0, 2]),
    ]
    inputs = [("x", F, ["batch", STEPS, FEAT]), ("h0", F, ["batch", HID])]
    outputs = [("logits", F, ["batch", 5]), ("states", F, ["batch", STEPS, HID])]
    return n, inits, inputs, outputs


def scan_bidir(rng):
    inits = []
    n = []
    outs = []
    for d, name in ((0, "fwd"), (1, "bwd")):
        w = rng.normal(0, 1 / np.sqrt(8), size=(8, 8))
        u = rng.normal(0, 1 / np.sqrt(8), size=(8, 8))
        inits += [const(f"W_{name}", w), const(f"U_{name}", u)]
        body = helper.make_graph([
            helper.make_node("MatMul", ["x_t", f"W_{name}"], ["a"]),
            helper.make_node("MatMul", ["st", f"U_{name}"], ["c"]),
            helper.make_node("Add", ["a", "c"], ["pre"]),
            helper.make_node("Tanh", ["pre"], ["st_out"]),
            helper.make_node("Identity", ["st_out"], ["y_t"]),
        ], f"{name}_step",
            [helper.make_tensor_value_info("st", F, None), helper.make_tensor_value_info("x_t", F, None)],
            [helper.make_tensor_value_info("st_out", F, None), helper.make_tensor_value_info("y_t", F, None)])
        n.append(helper.make_node("Scan", ["s0", "x"], [f"last_{name}", f"ys_{name}"], name=f"scan_{name}", body=body,
                                  num_scan_inputs=1, scan_input_axes=[1], scan_input_directions=[d],
                                  scan_output_axes=[1], scan_output_directions=[d]))
        outs.append(f"ys_{name}")
    n.append(helper.make_node("Concat", outs, ["ys"], axis=2))
    n.append(helper.make_node("Add", ["last_fwd", "last_bwd"], ["last"]))
    inputs = [("x", F, ["batch", 6, 8]), ("s0", F, ["batch", 8])]
    outputs = [("ys", F, ["batch", 6, 16]), ("last", F, ["batch", 8])]
    return n, inits, inputs, outputs


MODELS = {"detection_post": detection_post, "rnn_loop": rnn_loop, "scan_bidir": scan_bidir}


def build(name, seed):
    rng = np.random.default_rng(seed)
    nodes, inits, inputs, outputs = MODELS[name](rng)
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="control_flow")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model, inputs


def normal_inputs(inputs, batch, rng):
    return {n: rng.normal(0.0, 1.0, size=[batch] + list(s[1:])).astype(np.float32) for n, _, s in inputs}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    for index, name in enumerate(MODELS):
        model, inputs = build(name, args.seed + index)
        results = tiny_transformers.write_cases(args.out, name, model, inputs, args.seed + index, normal_inputs)
        for batch, outs in results.items():
            print(f"{name}: batch {batch}: outputs " + ", ".join(str(list(r.shape)) for r in outs))


if __name__ == "__main__":
    main()
