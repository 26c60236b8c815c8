#!/usr/bin/env python3
"""fp16 sensitivity study on the CPU (ONNX Runtime, no torch, no GPU): why do fp16 libraries of
seeded random-weight ResNet-50 / MobileNetV2 miss rel L2 < 1e-2 against ONNX Runtime fp32?

What it does (docs/fp16_accuracy.md has the findings):
  1. Builds torchvision's resnet50 / mobilenet_v2 topology with the onnx package and torchvision's
     initialisation (convs kaiming_normal fan_out, BN gamma 1 / beta 0; ResNet's Linear is
     nn.Linear's default uniform(+-1/sqrt(fan_in)) for weight and bias, MobileNetV2's Linear is
     normal(0, 0.01) with zero bias; zero_init_residual False), drawn from numpy's PCG64, so the
     weights are NOT torch's for the same seed, only statistically alike.
  2. Re-estimates every BatchNorm's running mean / variance the way models/model_zoo.py does:
     kCalibrationPasses train-mode passes of kCalibrationBatch N(0,1) images (the same numpy inputs
     as model_zoo: seeds calibration_seed(seed, i)), cumulative average (momentum=None), unbiased
     variance for the running estimate, batch statistics used for normalisation inside each pass.
     Train-mode BN is written out as ReduceMean ops so one ORT run per pass gives every layer's
     batch statistics. `--no-recalibrate` keeps the reset statistics (mean 0, var 1) instead.
  3. Folds BN into the convs (what the exporter gives aotc) and runs variants in fp32 with ORT,
     emulating fp16 storage by rounding weights in numpy and inserting Cast(fp16)->Cast(fp32)
     after chosen values. Arithmetic stays fp32 (aotc accumulates in fp32).
  4. Reports, per variant, rel L2 = ||y - ref|| / ||ref|| of the logits against the unrounded fp32
     model and, with --depth, the rel L2 of every block output.

Rounding policies (--variants, comma-separated; `all` by default runs the list below):
  input         the graph input only
  perturb       input * (1 + 2^-11 * u), u ~ U(-1, 1) (not a rounding: is the network chaotic?);
                perturb:B uses 2^-B (linearity check)
  weights       conv / FC weights and biases only
  lib           what an aotc fp16 library stores in fp16: input, weights, and every value that
                leaves a fused kernel (conv+bias+[residual add]+act is one kernel; the conv output
                before Relu/Clip/Add and the Add before Relu are never stored)
  lib_acts      lib without weight rounding
  all_nodes     weights + input + every node output (also pre-activation / pre-add values)
  lib_stream32  lib, but the residual stream (block outputs) stays fp32
  lib_first32   lib, but the input, the first conv's weights and its output stay fp32
  lib_last32    lib, but the pooled features, the FC weights and the logits stay fp32
  lib_ends32    lib_first32 and lib_last32 together
  lib_bf16      lib with bfloat16 instead of fp16 (contrast)
  lib_stageK    lib's rounding applied only inside stage K - where does the error come from.
                ResNet-50: 0 stem (input, conv1, max pool), 1..4 layer1..4, 5 pooling + FC;
                MobileNetV2: 0 stem, 1..7 the inverted-residual groups, 8 last 1x1 conv + head
Parametrised (not in `all`):
  keep:S+S      lib, but stages S entirely fp32 (weights and stored values; stage 0: the input too)
  keepw:S+S     lib, but only the weights of stages S fp32
  keepa:S+S     lib, but only the stored values of stages S fp32
  keepfirst:K   lib, but the first K convs and everything before the (K+1)-th fp32
  perturb:B     perturb with 2^-B
  V_centred     variant V with centred storage: a stored value v is rounded as fp16(v - m) with m
                its per-channel mean (measured on 4 calibration images), a conv reading it adds
                the constant conv(m, W) in fp32
Each variant's line gives, where it keeps something fp32, the share of MACs whose weights stay
fp32 and the extra bytes (weights; stored activations per image).

Other modes: --costs (per-stage activations, parameters, MACs), --cancellation (per conv,
||conv without its folded bias|| / ||conv + bias||), --no-recalibrate (BN left at mean 0 /
var 1), --variance-only (re-estimated variance folded, mean taken as 0).

usage:
  python3 tools/fp16_sensitivity.py --model resnet50 [--seed 0] [--batch 8] [--variants all]
                                    [--depth input,lib] [--no-recalibrate] [--json OUT.json]
  python3 tools/fp16_sensitivity.py --model mobilenet_v2 ...
  python3 tools/fp16_sensitivity.py --model resnet50 --variants lib,keepfirst:7,keep:0+1
Deterministic: weights from --seed, test inputs from models/model_zoo.test_input_seed(seed, batch)
(the same numpy draw the device script's reference data uses), perturbations from seed 1234.
ORT runs single-threaded (--threads) so the study can share a small machine.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from models.model_zoo import (calibration_seed, kCalibrationBatch, kCalibrationPasses,  # noqa: E402
                              test_input_seed)

kEps = 1e-5
kOpset = 17


# ---------------------------------------------------------------------------------------------
# A tiny IR: a list of nodes, each producing one value. Conv nodes carry (W, gamma, beta, mean,
# var); the emitter writes either the train-mode calibration graph or the folded eval graph.

class Node:
    def __init__(self, op, inputs, out, stage, **kw):
        self.op, self.inputs, self.out, self.stage = op, inputs, out, stage
        self.attrs = kw.pop("attrs", {})
        self.fused = False      # consumed inside its consumer's kernel (never stored by aotc)
        self.stream = False     # a residual-stream value (block output)
        self.block_out = False  # report its error in the depth table
        self.role = kw.pop("role", "")
        self.p = kw


class Net:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.count = [], 0
        self.stage = 0

    def name(self, base):
        self.count += 1
        return f"{base}{self.count}"

    def add(self, node):
        self.nodes.append(node)
        return node

    def conv_bn(self, x, cin, cout, k, stride=1, groups=1, act=None, role=""):
        fan_out = cout * k * k  # torch's fan_out for (cout, cin/g, k, k): size(0) * receptive
        w = (self.rng.standard_normal((cout, cin // groups, k, k)) * math.sqrt(2.0 / fan_out))
        c = self.add(Node("conv", [x], self.name("conv"), self.stage, role=role,
                          attrs=dict(kernel_shape=[k, k], strides=[stride, stride],
                                     pads=[(k - 1) // 2] * 4, group=groups),
                          w=w.astype(np.float32), gamma=np.ones(cout, np.float32),
                          beta=np.zeros(cout, np.float32), mean=np.zeros(cout, np.float32),
                          var=np.ones(cout, np.float32)))
        if act is None:
            return c
        c.fused = True
        return self.add(Node(act, [c.out], self.name(act), self.stage))

    def binary_add(self, a, b):
        return self.add(Node("add", [a, b], self.name("add"), self.stage))

    def unary(self, op, x, **attrs):
        return self.add(Node(op, [x], self.name(op), self.stage, attrs=attrs))

    def fc(self, x, cin, cout, init):
        if init == "torch_default":
            bound = 1.0 / math.sqrt(cin)
            w = self.rng.uniform(-bound, bound, (cout, cin))
            b = self.rng.uniform(-bound, bound, cout)
        else:  # mobilenet_v2: normal(0, 0.01), zero bias
            w = self.rng.standard_normal((cout, cin)) * 0.01
            b = np.zeros(cout)
        return self.add(Node("fc", [x], "output", self.stage, w=w.astype(np.float32),
                             b=b.astype(np.float32)))


def build_resnet50(seed):
    n = Net(seed)
    x = n.conv_bn("input", 3, 64, 7, 2, act="relu", role="first").out
    x = n.unary("maxpool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]).out
    cin = 64
    for stage, (width, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2),
                                                      (512, 3, 2)], start=1):
        n.stage = stage
        for i in range(blocks):
            s = stride if i == 0 else 1
            cout = width * 4
            y = n.conv_bn(x, cin, width, 1, act="relu").out
            y = n.conv_bn(y, width, width, 3, s, act="relu").out
            c3 = n.conv_bn(y, width, cout, 1)
            c3.fused = True  # the residual add runs in conv3's epilogue
            shortcut = x
            if s != 1 or cin != cout:
                shortcut = n.conv_bn(x, cin, cout, 1, s).out
            a = n.binary_add(c3.out, shortcut)
            a.fused = True   # the Relu runs in the same epilogue
            r = n.unary("relu", a.out)
            r.stream = r.block_out = True
            x, cin = r.out, cout
    n.stage = 5
    g = n.unary("gap", x)
    g.role = "pooled"
    f = n.unary("flatten", g.out)
    f.role = "pooled"
    n.fc(f.out, 2048, 1000, "torch_default").role = "last"
    return n


def build_mobilenet_v2(seed):
    n = Net(seed)
    x = n.conv_bn("input", 3, 32, 3, 2, act="relu6", role="first").out
    cin = 32
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]
    for stage, (t, c, reps, s0) in enumerate(settings, start=1):
        n.stage = stage
        for i in range(reps):
            s = s0 if i == 0 else 1
            hidden = int(round(cin * t))
            y = x
            if t != 1:
                y = n.conv_bn(y, cin, hidden, 1, act="relu6").out
            y = n.conv_bn(y, hidden, hidden, 3, s, groups=hidden, act="relu6").out
            p = n.conv_bn(y, hidden, c, 1)
            out = p
            if s == 1 and cin == c:
                p.fused = True  # the residual add runs in the projection conv's epilogue
                out = n.binary_add(p.out, x)
            out.stream = out.block_out = True
            x, cin = out.out, c
    n.stage = 8
    x = n.conv_bn(x, 320, 1280, 1, act="relu6")
    x.block_out = True
    g = n.unary("gap", x.out)
    g.role = "pooled"
    f = n.unary("flatten", g.out)
    f.role = "pooled"
    n.fc(f.out, 1280, 1000, "mobilenet").role = "last"
    return n


BUILDERS = {"resnet50": build_resnet50, "mobilenet_v2": build_mobilenet_v2}


# ---------------------------------------------------------------------------------------------
# Emission.

def _act_nodes(node, src, dst):
    if node.op == "relu":
        return [helper.make_node("Relu", [src], [dst])]
    if node.op == "relu6":
        return [helper.make_node("Clip", [src, "c_zero", "c_six"], [dst])]
    raise KeyError(node.op)


def calibration_graph(net, batch):
    """Train-mode BN: normalise with batch statistics; every BN's batch mean / biased variance is a
    graph output."""
    nodes, inits, outs = [], [], []
    inits += [numpy_helper.from_array(np.array(0, np.float32), "c_zero"),
              numpy_helper.from_array(np.array(6, np.float32), "c_six"),
              numpy_helper.from_array(np.array(kEps, np.float32), "c_eps")]
    for nd in net.nodes:
        if nd.op == "conv":
            w = nd.out + "_w"
            inits.append(numpy_helper.from_array(nd.p["w"], w))
            raw = nd.out + "_raw"
            nodes.append(helper.make_node("Conv", [nd.inputs[0], w], [raw], **nd.attrs))
            m, d, sq, v, ve, sd = (nd.out + s for s in ("_m", "_d", "_sq", "_v", "_ve", "_sd"))
            nodes += [helper.make_node("ReduceMean", [raw], [m], axes=[0, 2, 3], keepdims=1),
                      helper.make_node("Sub", [raw, m], [d]),
                      helper.make_node("Mul", [d, d], [sq]),
                      helper.make_node("ReduceMean", [sq], [v], axes=[0, 2, 3], keepdims=1),
                      helper.make_node("Add", [v, "c_eps"], [ve]),
                      helper.make_node("Sqrt", [ve], [sd])]
            g, b = nd.out + "_g", nd.out + "_b"
            inits += [numpy_helper.from_array(nd.p["gamma"].reshape(1, -1, 1, 1), g),
                      numpy_helper.from_array(nd.p["beta"].reshape(1, -1, 1, 1), b)]
            nodes += [helper.make_node("Div", [d, sd], [nd.out + "_n"]),
                      helper.make_node("Mul", [nd.out + "_n", g], [nd.out + "_gn"]),
                      helper.make_node("Add", [nd.out + "_gn", b], [nd.out])]
            outs += [helper.make_tensor_value_info(m, TensorProto.FLOAT, None),
                     helper.make_tensor_value_info(v, TensorProto.FLOAT, None)]
        else:
            nodes += _plain_nodes(nd, nd.inputs, nd.out, inits)
    graph = helper.make_graph(
        nodes, "calib",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, 224, 224])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)] + outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", kOpset)])


def _plain_nodes(nd, ins, out, inits):
    if nd.op in ("relu", "relu6"):
        return _act_nodes(nd, ins[0], out)
    if nd.op == "add":
        return [helper.make_node("Add", ins, [out])]
    if nd.op == "maxpool":
        return [helper.make_node("MaxPool", ins, [out], **nd.attrs)]
    if nd.op == "gap":
        return [helper.make_node("GlobalAveragePool", ins, [out])]
    if nd.op == "flatten":
        return [helper.make_node("Flatten", ins, [out], axis=1)]
    if nd.op == "fc":
        inits += [numpy_helper.from_array(nd.p["wq"], "fc_w"),
                  numpy_helper.from_array(nd.p["bq"], "fc_b")]
        return [helper.make_node("Gemm", ins + ["fc_w", "fc_b"], [out], transB=1)]
    raise KeyError(nd.op)


def recalibrate(net, threads, seed, log):
    """model_zoo.recalibrate_batchnorm: kCalibrationPasses train-mode passes, cumulative average
    of batch means and unbiased batch variances."""
    for nd in net.nodes:
        if nd.op == "fc":
            nd.p["wq"], nd.p["bq"] = nd.p["w"], nd.p["b"]
    model = calibration_graph(net, kCalibrationBatch)
    sess = make_session(model, threads)
    convs = [nd for nd in net.nodes if nd.op == "conv"]
    sums = {nd.out: [0.0, 0.0] for nd in convs}
    names = [o.name for o in sess.get_outputs()]
    for i in range(kCalibrationPasses):
        x = np.random.default_rng(calibration_seed(seed, i)).standard_normal(
            (kCalibrationBatch, 3, 224, 224), dtype=np.float32)
        t0 = time.time()
        res = dict(zip(names, sess.run(None, {"input": x})))
        log(f"  calibration pass {i + 1}/{kCalibrationPasses}: {time.time() - t0:.1f} s")
        for nd in convs:
            m = res[nd.out + "_m"].reshape(-1).astype(np.float64)
            v = res[nd.out + "_v"].reshape(-1).astype(np.float64)
            count = kCalibrationBatch * net.spatial[nd.out]
            sums[nd.out][0] = sums[nd.out][0] + m
            sums[nd.out][1] = sums[nd.out][1] + v * count / (count - 1)
    for nd in convs:
        nd.p["mean"] = (sums[nd.out][0] / kCalibrationPasses).astype(np.float32)
        nd.p["var"] = (sums[nd.out][1] / kCalibrationPasses).astype(np.float32)


def infer_spatial(net):
    """H*W of every conv output (for the unbiased-variance count)."""
    hw = {"input": 224}
    out = {}
    for nd in net.nodes:
        h = hw[nd.inputs[0]]
        if nd.op in ("conv", "maxpool"):
            k = nd.attrs["kernel_shape"][0]
            s = nd.attrs["strides"][0]
            p = nd.attrs["pads"][0]
            h = (h + 2 * p - k) // s + 1
        elif nd.op in ("gap", "flatten", "fc"):
            h = 1
        hw[nd.out] = h
        if nd.op == "conv":
            out[nd.out] = h * h
    net.spatial = out


def fold(net, stats="both"):
    """BN folded into each conv (the exporter's output): W' = W g / sqrt(var + eps), b' = beta -
    mean g / sqrt(var + eps). stats: "both" re-estimated mean and variance; "var" the re-estimated
    variance with mean 0 (an experiment: no mean cancellation in the folded bias); "none" the
    reset statistics (mean 0, var 1)."""
    for nd in net.nodes:
        if nd.op != "conv":
            continue
        mean = nd.p["mean"] if stats == "both" else np.zeros_like(nd.p["mean"])
        var = nd.p["var"] if stats != "none" else np.ones_like(nd.p["var"])
        scale = nd.p["gamma"].astype(np.float64) / np.sqrt(var.astype(np.float64) + kEps)
        nd.p["wf"] = (nd.p["w"] * scale.reshape(-1, 1, 1, 1)).astype(np.float32)
        nd.p["bf"] = (nd.p["beta"] - mean * scale).astype(np.float32)


def rnd(a, dtype):
    if dtype == "fp16":
        return a.astype(np.float16).astype(np.float32)
    if dtype == "bf16":  # round to nearest even on the upper 16 bits
        u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
        return u.astype(np.uint32).view(np.float32)
    return a


def value_hw(net):
    hw = {"input": 224}
    for nd in net.nodes:
        h = hw[nd.inputs[0]]
        if nd.op in ("conv", "maxpool"):
            k, st, p = nd.attrs["kernel_shape"][0], nd.attrs["strides"][0], nd.attrs["pads"][0]
            h = (h + 2 * p - k) // st + 1
        elif nd.op in ("gap", "flatten", "fc"):
            h = 1
        hw[nd.out] = h
    return hw


def channel_means(net, threads, seed, batch=4):
    """Per-channel means of every stored 4-D value (not the input), from the fp32 folded model
    on the first `batch` images of the first calibration pass: the offsets of centred storage."""
    names = [nd.out for nd in net.nodes if not nd.fused and nd.op in CENTRED_OPS]
    x = np.random.default_rng(calibration_seed(seed, 0)).standard_normal(
        (kCalibrationBatch, 3, 224, 224), dtype=np.float32)[:batch]
    model = eval_graph(net, batch, lambda nd: False, lambda nd: False, "fp16", names)
    outs = make_session(model, threads).run(None, {"input": x})[1:]
    return {n: o.mean(axis=(0, 2, 3)).astype(np.float32) for n, o in zip(names, outs)}


CENTRED_OPS = ("conv", "relu", "relu6", "add", "maxpool")


def eval_graph(net, batch, round_value, round_weight, dtype, extra_outputs=(), centre=None):
    """The folded fp32 graph; round_value(node) -> bool rounds a node's output (Cast pair),
    round_weight(node) -> bool rounds its weights, round_value(None) rounds the graph input.
    centre: {value: per-channel mean}: such a value is stored as round(v - mean) (+ mean for
    non-conv readers), and a conv reading it computes conv(round(v - mean), W16) plus the
    compile-time constant conv(mean, W32) (zero padding included) - centred fp16 storage."""
    centre = centre or {}
    hw = value_hw(net)
    centred = {}
    to = TensorProto.FLOAT16 if dtype == "fp16" else TensorProto.BFLOAT16
    nodes, inits = [], [numpy_helper.from_array(np.array(0, np.float32), "c_zero"),
                        numpy_helper.from_array(np.array(6, np.float32), "c_six")]

    def cast_pair(src, dst):
        return [helper.make_node("Cast", [src], [dst + "_h"], to=to),
                helper.make_node("Cast", [dst + "_h"], [dst], to=TensorProto.FLOAT)]

    rename = {}
    if round_value(None):
        nodes += cast_pair("input", "input_r")
        rename["input"] = "input_r"
    for nd in net.nodes:
        ins = [rename.get(i, i) for i in nd.inputs]
        out = nd.out + "_pre" if round_value(nd) else nd.out
        if nd.op == "conv":
            w, b = nd.p["wf"], nd.p["bf"]
            if round_weight(nd):
                w, b = rnd(w, dtype), rnd(b, dtype)
            inits += [numpy_helper.from_array(w, nd.out + "_w"),
                      numpy_helper.from_array(b, nd.out + "_b")]
            src = nd.inputs[0]
            if src in centred:
                mu = centre[src]
                h = hw[src]
                mt = np.broadcast_to(mu.reshape(1, -1, 1, 1), (1, mu.size, h, h)).copy()
                inits += [numpy_helper.from_array(mt, nd.out + "_mu"),
                          numpy_helper.from_array(nd.p["wf"], nd.out + "_w32")]
                nodes += [helper.make_node("Conv", [centred[src], nd.out + "_w", nd.out + "_b"],
                                           [nd.out + "_cc"], **nd.attrs),
                          helper.make_node("Conv", [nd.out + "_mu", nd.out + "_w32"],
                                           [nd.out + "_cm"], **nd.attrs),
                          helper.make_node("Add", [nd.out + "_cc", nd.out + "_cm"], [out])]
            else:
                nodes.append(helper.make_node("Conv", [ins[0], nd.out + "_w", nd.out + "_b"],
                                              [out], **nd.attrs))
        else:
            if nd.op == "fc":
                r = round_weight(nd)
                nd.p["wq"] = rnd(nd.p["w"], dtype) if r else nd.p["w"]
                nd.p["bq"] = rnd(nd.p["b"], dtype) if r else nd.p["b"]
            nodes += _plain_nodes(nd, ins, out, inits)
        if round_value(nd) and nd.out in centre:
            mu = nd.out + "_mu1"
            inits.append(numpy_helper.from_array(centre[nd.out].reshape(1, -1, 1, 1), mu))
            nodes.append(helper.make_node("Sub", [out, mu], [nd.out + "_d"]))
            nodes += cast_pair(nd.out + "_d", nd.out + "_c")
            nodes.append(helper.make_node("Add", [nd.out + "_c", mu], [nd.out]))
            centred[nd.out] = nd.out + "_c"
        elif round_value(nd):
            nodes += cast_pair(out, nd.out)
    outs = [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)]
    outs += [helper.make_tensor_value_info(v, TensorProto.FLOAT, None) for v in extra_outputs]
    graph = helper.make_graph(
        nodes, "eval",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, 224, 224])],
        outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", kOpset)])


def make_session(model, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


# ---------------------------------------------------------------------------------------------
# Variants: (round_value(node), round_weight(node), dtype); "perturb" changes the input instead.

def variants(net):
    stored = lambda nd: nd is None or not nd.fused  # noqa: E731  (what aotc writes to memory)
    never = lambda nd: False                          # noqa: E731
    always = lambda nd: True                          # noqa: E731
    first_val = {nd.out for nd in net.nodes if nd.role == "first"}
    # the first conv's stored output: its activation
    first_val |= {nd.out for nd in net.nodes if nd.inputs and nd.inputs[0] in first_val
                  and nd.op in ("relu", "relu6")}

    def lib_except(skip_input=False, skip=lambda nd: False):
        def f(nd):
            if nd is None:
                return not skip_input
            return stored(nd) and not skip(nd)
        return f

    first = lambda nd: nd.out in first_val          # noqa: E731
    last = lambda nd: nd.role in ("pooled", "last")  # noqa: E731
    v = {
        "input": (lambda nd: nd is None, never, "fp16"),
        "perturb": (never, never, "fp16"),
        "weights": (never, always, "fp16"),
        "lib": (stored, always, "fp16"),
        "lib_acts": (stored, never, "fp16"),
        "all_nodes": (always, always, "fp16"),
        "lib_stream32": (lib_except(skip=lambda nd: nd.stream), always, "fp16"),
        "lib_first32": (lib_except(True, first), lambda nd: nd.role != "first", "fp16"),
        "lib_last32": (lib_except(skip=last), lambda nd: nd.role != "last", "fp16"),
        "lib_ends32": (lib_except(True, lambda nd: first(nd) or last(nd)),
                       lambda nd: nd.role not in ("first", "last"), "fp16"),
        "lib_bf16": (stored, always, "bf16"),
    }
    for s in sorted({nd.stage for nd in net.nodes}):
        def in_stage(nd, s=s):
            return (s == 0 if nd is None else nd.stage == s)
        v[f"lib_stage{s}"] = (lambda nd, f=in_stage: f(nd) and stored(nd),
                              lambda nd, f=in_stage: f(nd), "fp16")
    return v


def parse_variant(net, name, table):
    """A named variant, or keep:S+S (stages S fully fp32: weights and stored values), keepw:S+S
    (only the weights of stages S fp32), keepa:S+S (only the stored values of stages S fp32); the
    rest as lib. Stage 0 is the stem and includes the graph input."""
    if name.endswith("_centred"):
        name = name[:-len("_centred")]
    if name in table:
        return table[name]
    if name.startswith("perturb:"):
        return table["perturb"]
    kind, _, stages = name.partition(":")
    if kind == "keepfirst":  # the first K convs (and everything before the (K+1)-th) fp32
        k = int(stages)
        conv_pos = [i for i, nd in enumerate(net.nodes) if nd.op == "conv"]
        cut = conv_pos[k] if k < len(conv_pos) else len(net.nodes)
        early = {nd.out for nd in net.nodes[:cut]}
        in_early = lambda nd: nd is None or nd.out in early  # noqa: E731
        stored = lambda nd: nd is None or not nd.fused  # noqa: E731
        return (lambda nd: stored(nd) and not in_early(nd), lambda nd: not in_early(nd), "fp16")
    keep = {int(t) for t in stages.split("+")}
    in_keep = lambda nd: (0 in keep) if nd is None else nd.stage in keep  # noqa: E731
    stored = lambda nd: nd is None or not nd.fused  # noqa: E731
    if kind == "keep":
        return (lambda nd: stored(nd) and not in_keep(nd), lambda nd: not in_keep(nd), "fp16")
    if kind == "keepw":
        return (stored, lambda nd: not in_keep(nd), "fp16")
    if kind == "keepa":
        return (lambda nd: stored(nd) and not in_keep(nd), lambda nd: True, "fp16")
    raise KeyError(f"unknown variant '{name}'")


def policy_cost(net, rv, rw):
    """What a policy keeps in fp32: share of MACs in convs / FC whose weights stay fp32 (they need
    fp32-accurate arithmetic, not fp16 tensor cores), extra weight bytes, and extra bytes per image
    of stored activations (fp32 instead of fp16: 2 more bytes an element)."""
    hw = value_hw(net)
    macs = fp32_macs = wbytes = abytes = 0
    for nd in net.nodes:
        if nd.op in ("conv", "fc"):
            h = hw[nd.out]
            m = nd.p["w"].size * h * h
            macs += m
            if not rw(nd):
                fp32_macs += m
                wbytes += 2 * (nd.p["w"].size + nd.p["w"].shape[0])
        if not nd.fused and nd.op not in ("flatten", "fc") and not rv(nd):
            c = nd.p["w"].shape[0] if nd.op == "conv" else None
            if c is None:
                c = _channels(net, nd)
            abytes += 2 * c * hw[nd.out] * hw[nd.out]
    return fp32_macs / macs, wbytes, abytes


def _channels(net, nd):
    by_out = {n.out: n for n in net.nodes}
    while nd.op != "conv":
        nd = by_out.get(nd.inputs[0])
        if nd is None:
            return 3
    return nd.p["w"].shape[0]


def stage_costs(net):
    """Per stage: stored (unfused) activation elements per image, parameters, conv/FC MACs per
    image (for the bytes and FLOPs a keep-fp32 policy costs)."""
    hw = {"input": 224}
    chans = {"input": 3}
    rows = {}
    for nd in net.nodes:
        r = rows.setdefault(nd.stage, {"act_elems": 0, "params": 0, "macs": 0})
        h, c = hw[nd.inputs[0]], chans[nd.inputs[0]]
        if nd.op == "conv":
            k, st, p = nd.attrs["kernel_shape"][0], nd.attrs["strides"][0], nd.attrs["pads"][0]
            h = (h + 2 * p - k) // st + 1
            c = nd.p["w"].shape[0]
            r["params"] += nd.p["w"].size + c
            r["macs"] += nd.p["w"].size * h * h
        elif nd.op == "maxpool":
            h = (h + 2 - 3) // 2 + 1
        elif nd.op in ("gap", "flatten"):
            h = 1
        elif nd.op == "fc":
            h, c = 1, nd.p["w"].shape[0]
            r["params"] += nd.p["w"].size + c
            r["macs"] += nd.p["w"].size
        hw[nd.out], chans[nd.out] = h, c
        if not nd.fused and nd.op != "flatten":
            r["act_elems"] += c * h * h
    rows[0]["act_elems"] += 3 * 224 * 224  # the input's fp16 copy
    return rows


# Policies a library could ship (their cost line is printed); the others are diagnostics.
DEPLOYABLE = ("lib", "lib_stream32", "lib_first32", "lib_last32", "lib_ends32")


def rel_l2(y, ref):
    return float(np.linalg.norm((y - ref).ravel().astype(np.float64)) /
                 np.linalg.norm(ref.ravel().astype(np.float64)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("--model", choices=sorted(BUILDERS), default="resnet50")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--variants", default="all")
    ap.add_argument("--depth", default="", help="variants whose per-block rel L2 is printed")
    ap.add_argument("--no-recalibrate", action="store_true",
                    help="keep BN's reset statistics (mean 0, var 1), as without model_zoo's step")
    ap.add_argument("--variance-only", action="store_true",
                    help="re-estimate BN statistics but fold only the variance (mean taken as 0)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default="")
    ap.add_argument("--cancellation", action="store_true",
                    help="print, per conv, ||conv(x) without its folded bias|| / ||conv(x) + bias||"
                         " on the test batch (how much the folded BN mean cancels), then exit")
    ap.add_argument("--costs", action="store_true",
                    help="print per-stage stored activations, parameters and MACs, then exit")
    args = ap.parse_args()

    def log(msg):
        print(msg, flush=True)

    t0 = time.time()
    net = BUILDERS[args.model](args.seed)
    if args.costs:
        rows = stage_costs(net)
        tot = {k: sum(r[k] for r in rows.values()) for k in ("act_elems", "params", "macs")}
        log("stage  stored act elems/image  params      MACs/image   (share of total)")
        for st, r in sorted(rows.items()):
            log(f"{st:5d}  {r['act_elems']:12d} ({r['act_elems'] / tot['act_elems']:5.1%})  "
                f"{r['params']:9d} ({r['params'] / tot['params']:5.1%})  "
                f"{r['macs']:11d} ({r['macs'] / tot['macs']:5.1%})")
        log(f"total  {tot['act_elems']:12d}          {tot['params']:9d}          {tot['macs']:11d}")
        return
    infer_spatial(net)
    if args.no_recalibrate:
        fold(net, "none")
        log(f"{args.model} seed {args.seed}: BatchNorm statistics NOT re-estimated (mean 0, var 1)")
    else:
        recalibrate(net, args.threads, args.seed, log)
        fold(net, "var" if args.variance_only else "both")
        log(f"{args.model} seed {args.seed}: BatchNorm re-estimated"
            f"{' (folded with mean 0: variance only)' if args.variance_only else ''} ({kCalibrationPasses} x "
            f"{kCalibrationBatch} images) in {time.time() - t0:.0f} s")

    x = np.random.default_rng(test_input_seed(args.seed, args.batch)).standard_normal(
        (args.batch, 3, 224, 224), dtype=np.float32)
    if args.cancellation:
        convs = [nd for nd in net.nodes if nd.op == "conv"]
        model = eval_graph(net, args.batch, lambda nd: False, lambda nd: False, "fp16",
                           [nd.out for nd in convs])
        outs = make_session(model, args.threads).run(None, {"input": x})[1:]
        ratios = []
        for nd, y in zip(convs, outs):
            y = y.astype(np.float64)
            nobias = y - nd.p["bf"].reshape(1, -1, 1, 1)
            ratios.append(np.linalg.norm(nobias) / np.linalg.norm(y))
        log("conv  stage  ||Wx||/||Wx+b||")
        for i, (nd, r) in enumerate(zip(convs, ratios)):
            log(f"{i:4d}  {nd.stage:5d}  {r:.2f}")
        for st in sorted({nd.stage for nd in convs}):
            rs = [r for nd, r in zip(convs, ratios) if nd.stage == st]
            log(f"stage {st}: {len(rs)} convs, geometric mean {math.exp(np.mean(np.log(rs))):.2f}")
        return
    all_v = variants(net)
    names = []
    for token in args.variants.split(","):
        names += list(all_v) if token == "all" else [token]
    depth = set(filter(None, args.depth.split(",")))
    blocks = [nd.out for nd in net.nodes if nd.block_out]
    extra = blocks if depth else []

    ref_model = eval_graph(net, args.batch, lambda nd: False, lambda nd: False, "fp16", extra)
    ref = make_session(ref_model, args.threads).run(None, {"input": x})
    logits = ref[0]
    log(f"reference logits: rms {np.sqrt(np.mean(logits.astype(np.float64) ** 2)):.3g}, "
        f"per-image std over classes {logits.std(axis=1).mean():.3g}, spread over batch of "
        f"the mean logit vector {np.linalg.norm(logits - logits.mean(0)) / np.linalg.norm(logits):.3g}"
        f" (rel), max |block output| {max(float(np.abs(r).max()) for r in ref[1:]) if extra else 0:.3g}")
    results = {}
    means = None
    for name in names:
        rv, rw, dtype = parse_variant(net, name, all_v)
        feed = x
        if name.startswith("perturb"):
            bits = int(name.partition(":")[2] or 11)
            u = np.random.default_rng(1234).uniform(-1, 1, x.shape).astype(np.float32)
            feed = (x * (1 + np.float32(2.0 ** -bits) * u)).astype(np.float32)
        centre = None
        if name.endswith("_centred"):
            if means is None:
                means = channel_means(net, args.threads, args.seed)
            centre = means
        model = eval_graph(net, args.batch, rv, rw, dtype, extra, centre)
        t1 = time.time()
        out = make_session(model, args.threads).run(None, {"input": feed})
        e = rel_l2(out[0], logits)
        top1 = float(np.mean(out[0].argmax(1) == logits.argmax(1)))
        share, wb, ab = policy_cost(net, rv, rw)
        results[name] = {"rel_l2": e, "top1_agree": top1, "fp32_mac_share": share,
                         "extra_weight_bytes": wb, "extra_act_bytes_per_image": ab}
        if extra:
            results[name]["blocks"] = [rel_l2(o, r) for o, r in zip(out[1:], ref[1:])]
        cost = ""
        base = name[:-len("_centred")] if name.endswith("_centred") else name
        if (base.startswith("keep") or base in DEPLOYABLE) and (share or ab):
            cost = (f"   kept fp32: {share:.1%} of MACs, +{wb / 1e6:.2f} MB weights, "
                    f"+{ab / 1e6:.2f} MB activations/image")
        log(f"{name:14s} rel L2 {e:.3e}   top-1 agreement {top1:.2f}   ({time.time() - t1:.1f} s)"
            + cost)
        if name in depth:
            log("   per block: " + " ".join(f"{b:.1e}" for b in results[name]["blocks"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "seed": args.seed, "batch": args.batch,
                       "recalibrated": not args.no_recalibrate, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
