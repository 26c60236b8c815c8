// fuse_qdq: quantized layers from QuantizeLinear / DequantizeLinear pairs (issue 8). A model in QDQ
// form (ONNX Runtime's quantize_static, PyTorch's quantized export, or aotc's own int8 insertion in
// opt/quantize_int8.cc) writes an int8 layer as
//     DequantizeLinear(x_q) -> Conv / MatMul / Gemm(DequantizeLinear(w_q), bias) [-> Relu / Clip] -> QuantizeLinear
// and means float arithmetic on the dequantized values. This pass turns it into one
// aotc.QLinearConv / aotc.QLinearMatMul that reads the int8 tensors, accumulates in int32 and
// requantizes once (ir/ops/integer_matmul.cc), which is what an int8 kernel computes:
//   - the bias becomes int32 at scale x_scale * w_scale[c] (exact when it was written at that
//     scale, as quantize_static does; otherwise rounded to it);
//   - a Relu or a Clip with constant bounds between the layer and the QuantizeLinear becomes the
//     clamp qmin..qmax of the requantized value: Q is monotonic, so Q(clip(y, lo, hi)) =
//     clamp(Q(y), Q(lo), Q(hi)) exactly (Relu: lo = 0, Q(0) = y_zero_point);
//   - a layer whose output is read by anything but one QuantizeLinear keeps a float output
//     (dequantize mode: float(sum) * x_scale * w_scale[c]), and its readers are unchanged.
// Differences from the float reading of the QDQ graph: the sum is exact in int32 where float
// accumulation rounds, so a requantized value can differ by one step where y / y_scale lies
// within rounding of a half (ONNX Runtime's own int8 kernels differ the same way).
// Applies only to what the int8 kernels handle: per-tensor activation scale and zero point,
// per-tensor or per-output-channel weight scale (int8 / uint8 weights, constants), no blocked
// quantization; anything else is left as written (and fold_constants then folds the weight's
// DequantizeLinear into a float weight). Also: DQ + DQ -> Add [-> Relu] -> Q -> aotc.QLinearAdd,
// and DQ -> MaxPool -> Q with unchanged parameters -> MaxPool on the int8 tensor (exact).
#include <cmath>
#include <set>

#include "ir/op_registry.h"
#include "ir/shape_inference.h"
#include "opt/passes.h"

namespace aotc {
namespace {

bool is_8bit(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

class QdqFuser {
 public:
  explicit QdqFuser(Graph& g) : g_(g), registry_(default_registry()) { refresh(); }

  Expected<bool> run() {
    bool changed = false;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      Expected<bool> fused = removed_.count(static_cast<int>(i)) ? Expected<bool>(false) : try_layer(static_cast<int>(i));
      if (fused && !*fused && !removed_.count(static_cast<int>(i))) fused = try_add(static_cast<int>(i));
      if (fused && !*fused && !removed_.count(static_cast<int>(i))) fused = try_maxpool(static_cast<int>(i));
      if (!fused) return fused.status();
      if (*fused) {
        changed = true;
        refresh();
      }
    }
    if (changed) {
      std::vector<Node> kept;
      for (size_t i = 0; i < g_.nodes.size(); ++i)
        if (!removed_.count(static_cast<int>(i))) kept.push_back(std::move(g_.nodes[i]));
      g_.nodes = std::move(kept);
    }
    return changed;
  }

 private:
  void refresh() {
    producers_ = g_.producers();
    consumers_ = g_.consumers();
  }
  const Node* producer(ValueId v, const char* op) const {
    if (v == kNoValue) return nullptr;
    const int p = producers_[static_cast<size_t>(v)];
    if (p < 0 || removed_.count(p)) return nullptr;
    const Node& n = g_.nodes[static_cast<size_t>(p)];
    return n.op_type == op && n.domain.empty() ? &n : nullptr;
  }
  const Tensor* constant(ValueId v) const {
    return v != kNoValue && g_.value(v).is_constant() ? g_.value(v).constant.get() : nullptr;
  }
  // The only reader of `v` (or -1): v must not be a graph output.
  int single_consumer(ValueId v) const {
    if (g_.is_graph_output(v) || consumers_[static_cast<size_t>(v)].size() != 1) return -1;
    return consumers_[static_cast<size_t>(v)][0];
  }

  // A DequantizeLinear usable as a quantized kernel's operand: per-tensor (or, for weights,
  // per-channel along `channel_axis`) float scale and matching zero point, constants, no blocks.
  struct Dq {
    ValueId q = kNoValue, scale = kNoValue, zp = kNoValue;
  };
  bool usable_dq(const Node* dq, bool weight, int channel_axis, Dq* out) const {
    if (!dq || dq->inputs.empty() || dq->attr_int("block_size", 0) != 0) return false;
    const Value& q = g_.value(dq->inputs[0]);
    if (!is_8bit(q.dtype) || (weight && !q.is_constant())) return false;
    const Tensor* scale = constant(dq->input(1));
    if (!scale || (scale->dtype() != DType::kFloat32)) return false;
    const Tensor* zp = constant(dq->input(2));
    if (dq->input(2) != kNoValue && (!zp || zp->numel() != scale->numel())) return false;
    if (scale->numel() != 1) {
      if (!weight || scale->shape().size() != 1) return false;
      int64_t axis = dq->attr_int("axis", 1);
      if (axis < 0) axis += static_cast<int64_t>(q.shape.size());
      if (axis != channel_axis || q.shape[static_cast<size_t>(axis)] != scale->numel()) return false;
    }
    for (int64_t i = 0; i < scale->numel(); ++i)
      if (!(scale->get(i) > 0) || !std::isfinite(scale->get(i))) return false;
    *out = Dq{dq->inputs[0], dq->inputs[1], dq->input(2)};
    return true;
  }

  // A QuantizeLinear the layer can requantize into: per-tensor scale and zero point constants.
  bool usable_q(const Node& q, float* scale, int64_t* zp, DType* type) const {
    if (q.op_type != "QuantizeLinear" || !q.domain.empty() || q.attr_int("block_size", 0) != 0) return false;
    const Tensor* s = constant(q.input(1));
    const Tensor* z = constant(q.input(2));
    if (!s || s->numel() != 1 || s->dtype() != DType::kFloat32 || !(s->get(0) > 0) || !std::isfinite(s->get(0))) return false;
    if (q.input(2) != kNoValue && (!z || z->numel() != 1)) return false;
    *type = g_.value(q.outputs[0]).dtype;
    if (!is_8bit(*type)) return false;
    *scale = static_cast<float>(s->get(0));
    *zp = z ? static_cast<int64_t>(z->get(0)) : 0;
    return true;
  }

  // What follows a layer: [Relu | Clip(constant bounds)] then one QuantizeLinear (quant >= 0), the
  // clamp bounds the activation gives (lo / hi in float) and the QuantizeLinear's parameters.
  struct Tail {
    int act = -1, quant = -1;
    double lo = -INFINITY, hi = INFINITY;
    float scale = 0;
    int64_t zp = 0;
    DType type = DType::kUndefined;
  };
  bool quantized_tail(ValueId y, Tail* t) const {
    *t = Tail{};
    const int c1 = single_consumer(y);
    if (c1 < 0) return false;
    const Node& n1 = g_.nodes[static_cast<size_t>(c1)];
    if (n1.domain.empty() && (n1.op_type == "Relu" || n1.op_type == "Clip") && n1.outputs.size() == 1) {
      bool ok = n1.op_type == "Relu";
      if (n1.op_type == "Clip") {
        // Bounds as attributes (Clip's importer moves constant bounds there, and opset < 11
        // writes them so) or as constant inputs.
        const Tensor* cmin = constant(n1.input(1));
        const Tensor* cmax = constant(n1.input(2));
        ok = (n1.input(1) == kNoValue || (cmin && cmin->numel() == 1)) && (n1.input(2) == kNoValue || (cmax && cmax->numel() == 1));
        if (ok) {
          if (n1.has_attr("min")) t->lo = n1.attr_float("min", 0.f);
          if (n1.has_attr("max")) t->hi = n1.attr_float("max", 0.f);
          if (cmin) t->lo = cmin->get(0);
          if (cmax) t->hi = cmax->get(0);
        }
      } else {
        t->lo = 0;
      }
      const int c2 = ok ? single_consumer(n1.outputs[0]) : -1;
      if (c2 < 0 || g_.nodes[static_cast<size_t>(c2)].op_type != "QuantizeLinear") return false;
      t->act = c1;
      t->quant = c2;
    } else if (n1.op_type == "QuantizeLinear") {
      t->quant = c1;
    } else {
      return false;
    }
    return usable_q(g_.nodes[static_cast<size_t>(t->quant)], &t->scale, &t->zp, &t->type);
  }
  void set_clamp(const Tail& t, Node* f) const {
    if (t.act < 0) return;
    if (t.lo > -INFINITY) f->attrs["qmin"] = Attribute::of_int(quantize(t.lo, t.scale, t.zp, t.type));
    if (t.hi < INFINITY) f->attrs["qmax"] = Attribute::of_int(quantize(t.hi, t.scale, t.zp, t.type));
  }

  // ONNX QuantizeLinear of one float value: saturate(rint(v / s) + zp).
  static int64_t quantize(double v, float s, int64_t zp, DType t) {
    const double lo = t == DType::kInt8 ? -128 : 0, hi = t == DType::kInt8 ? 127 : 255;
    double q = std::nearbyint(static_cast<double>(static_cast<float>(v) / s)) + static_cast<double>(zp);
    return static_cast<int64_t>(std::min(hi, std::max(lo, q)));
  }

  // DequantizeLinear(a) + DequantizeLinear(b) [-> Relu / Clip] -> QuantizeLinear, a and b of the
  // output's shape, every parameter per tensor -> aotc.QLinearAdd on the int8 tensors.
  Expected<bool> try_add(int i) {
    const Node& add = g_.nodes[static_cast<size_t>(i)];
    if (add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2 || add.outputs.size() != 1) return false;
    Dq a, b;
    if (!usable_dq(producer(add.inputs[0], "DequantizeLinear"), false, 0, &a) ||
        !usable_dq(producer(add.inputs[1], "DequantizeLinear"), false, 0, &b))
      return false;
    const Shape& out_shape = g_.value(add.outputs[0]).shape;
    if (g_.value(a.q).shape != out_shape || g_.value(b.q).shape != out_shape) return false;
    Tail t;
    if (!quantized_tail(add.outputs[0], &t)) return false;
    Node f;
    f.name = g_.unique_name(add.name.empty() ? "qadd" : add.name);
    f.op_type = "QLinearAdd";
    f.domain = "aotc";
    const Node& q = g_.nodes[static_cast<size_t>(t.quant)];
    ValueId y_zp = q.input(2);
    if (y_zp == kNoValue) y_zp = g_.add_constant(g_.unique_name(f.name + "_y_zero_point"), Tensor(t.type, {}));
    f.inputs = {a.q, a.scale, a.zp, b.q, b.scale, b.zp, q.inputs[1], y_zp};
    f.outputs = {q.outputs[0]};
    set_clamp(t, &f);
    const Value before = g_.value(q.outputs[0]);
    Status st = infer_node(f, g_, registry_);
    if (!st.is_ok() || g_.value(q.outputs[0]).shape != before.shape || g_.value(q.outputs[0]).dtype != before.dtype) {
      g_.value(q.outputs[0]) = before;
      return false;
    }
    g_.nodes[static_cast<size_t>(i)] = std::move(f);
    if (t.act >= 0) removed_.insert(t.act);
    removed_.insert(t.quant);
    return true;
  }

  // DequantizeLinear -> MaxPool -> QuantizeLinear with the same scale and zero point -> MaxPool on
  // the int8 tensor: the max commutes with the monotonic dequantization, and requantizing a
  // dequantized value with the same parameters gives it back, so this is exact.
  bool try_maxpool(int i) {
    const Node& pool = g_.nodes[static_cast<size_t>(i)];
    if (pool.op_type != "MaxPool" || !pool.domain.empty() || pool.inputs.size() != 1 || pool.outputs.size() != 1) return false;
    Dq x;
    if (!usable_dq(producer(pool.inputs[0], "DequantizeLinear"), false, 0, &x)) return false;
    const int c = single_consumer(pool.outputs[0]);
    if (c < 0) return false;
    const Node& q = g_.nodes[static_cast<size_t>(c)];
    float scale = 0;
    int64_t zp = 0;
    DType type = DType::kUndefined;
    if (!usable_q(q, &scale, &zp, &type)) return false;
    const Value& xq = g_.value(x.q);
    const float x_scale = static_cast<float>(g_.value(x.scale).constant->get(0));
    const int64_t x_zp = x.zp == kNoValue ? 0 : static_cast<int64_t>(g_.value(x.zp).constant->get(0));
    if (type != xq.dtype || scale != x_scale || zp != x_zp) return false;
    Node p = pool;
    p.inputs = {x.q};
    p.outputs = {q.outputs[0]};
    const Value before = g_.value(q.outputs[0]);
    Status st = infer_node(p, g_, registry_);
    if (!st.is_ok() || g_.value(q.outputs[0]).shape != before.shape || g_.value(q.outputs[0]).dtype != before.dtype) {
      g_.value(q.outputs[0]) = before;
      return false;
    }
    g_.nodes[static_cast<size_t>(i)] = std::move(p);
    removed_.insert(c);
    return true;
  }

  Expected<bool> try_layer(int i) {
    if (removed_.count(i)) return false;
    const Node& layer = g_.nodes[static_cast<size_t>(i)];
    if (!layer.domain.empty() || layer.outputs.size() != 1) return false;
    const bool conv = layer.op_type == "Conv", gemm = layer.op_type == "Gemm", matmul = layer.op_type == "MatMul";
    if (!conv && !gemm && !matmul) return false;
    if (gemm && (layer.attr_int("transA", 0) != 0 || layer.attr_float("alpha", 1.f) != 1.f ||
                 layer.attr_float("beta", 1.f) != 1.f))
      return false;
    const bool trans_b = gemm && layer.attr_int("transB", 0) != 0;
    Dq x, w;
    if (!usable_dq(producer(layer.input(0), "DequantizeLinear"), false, 0, &x)) return false;
    const Node* wdq = producer(layer.input(1), "DequantizeLinear");
    if (!wdq || g_.value(wdq->inputs[0]).shape.size() != (conv ? g_.value(layer.input(0)).shape.size() : 2)) return false;
    const int channel_axis = conv ? 0 : (trans_b ? 0 : 1);
    if (!usable_dq(wdq, true, channel_axis, &w)) return false;
    const Shape& wshape = g_.value(w.q).shape;
    const int64_t channels = conv ? wshape[0] : (trans_b ? wshape[0] : wshape[1]);

    // The bias, as float per channel: a constant, or DequantizeLinear of a constant.
    std::vector<double> bias;
    const ValueId bias_in = layer.input(2);
    if (bias_in != kNoValue) {
      const Tensor* b = constant(bias_in);
      Tensor folded;
      if (!b) {
        const Node* bdq = producer(bias_in, "DequantizeLinear");
        if (!bdq || !constant(bdq->inputs[0]) || (bdq->input(1) != kNoValue && !constant(bdq->input(1))) ||
            (bdq->input(2) != kNoValue && !constant(bdq->input(2))))
          return false;
        std::vector<const Tensor*> args;
        for (ValueId v : bdq->inputs) args.push_back(v == kNoValue ? nullptr : constant(v));
        std::vector<Tensor> outs;
        outs.emplace_back(g_.value(bdq->outputs[0]).dtype, g_.value(bdq->outputs[0]).shape);
        AOTC_RETURN_IF_ERROR(registry_.find("DequantizeLinear")->reference(*bdq, args, outs));
        folded = std::move(outs[0]);
        b = &folded;
      }
      if (b->numel() != channels || (b->shape().size() != 1 && !(b->shape().size() == 2 && b->shape()[0] == 1)))
        return false;
      for (int64_t c = 0; c < channels; ++c) bias.push_back(b->get(c));
    }

    // What reads the layer: [Relu | Clip(constant bounds)] then one QuantizeLinear -> requantize;
    // anything else -> a float output.
    Tail t;
    const bool requant = quantized_tail(layer.outputs[0], &t);
    const int act = requant ? t.act : -1, quant = requant ? t.quant : -1;
    const ValueId y = layer.outputs[0];

    // The fused node.
    const float xs = static_cast<float>(g_.value(x.scale).constant->get(0));
    const Tensor& ws = *g_.value(w.scale).constant;
    Node f;
    f.name = g_.unique_name(layer.name.empty() ? "qlayer" : layer.name);
    f.op_type = conv ? "QLinearConv" : "QLinearMatMul";
    f.domain = "aotc";
    if (conv) f.attrs = layer.attrs;
    ValueId wq = w.q, wscale = w.scale, wzp = w.zp;
    if (trans_b) {  // [N, K] -> [K, N] at compile time; the per-channel parameters stay per N
      const Tensor& src = *g_.value(w.q).constant;
      const int64_t n = wshape[0], k = wshape[1];
      Tensor t(src.dtype(), {k, n});
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < k; ++c) t.set_int(c * n + r, src.get_int(r * k + c));
      wq = g_.add_constant(g_.unique_name(g_.value(w.q).name + "_kn"), std::move(t));
    }
    ValueId bias_v = kNoValue;
    if (!bias.empty()) {
      Tensor bq(DType::kInt32, {channels});
      for (int64_t c = 0; c < channels; ++c) {
        const double s = static_cast<double>(xs * static_cast<float>(ws.get(ws.numel() == 1 ? 0 : c)));
        const double v = std::nearbyint(bias[static_cast<size_t>(c)] / s);
        if (!(std::fabs(v) < 2147483647.0)) return false;  // a bias int32 cannot hold: leave the layer
        bq.set_int(c, static_cast<int64_t>(v));
      }
      bias_v = g_.add_constant(g_.unique_name(f.name + "_bias_int32"), std::move(bq));
    }
    ValueId y_scale_v = kNoValue, y_zp_v = kNoValue, out = y;
    if (quant >= 0) {
      const Node& q = g_.nodes[static_cast<size_t>(quant)];
      y_scale_v = q.inputs[1];
      if (q.input(2) != kNoValue) {
        y_zp_v = q.inputs[2];
      } else {
        Tensor z(t.type, {});
        y_zp_v = g_.add_constant(g_.unique_name(f.name + "_y_zero_point"), std::move(z));
      }
      out = q.outputs[0];
      set_clamp(t, &f);
    }
    f.inputs = {x.q, x.scale, x.zp, wq, wscale, wzp, y_scale_v, y_zp_v, bias_v};
    while (!f.inputs.empty() && f.inputs.back() == kNoValue) f.inputs.pop_back();
    f.outputs = {out};
    // Its shape inference must agree with the layer's (same output shape and dtype), or the
    // layer stays as written.
    const Value before = g_.value(out);
    Status st = infer_node(f, g_, registry_);
    if (!st.is_ok() || g_.value(out).shape != before.shape || g_.value(out).dtype != before.dtype) {
      g_.value(out) = before;
      return false;
    }
    g_.nodes[static_cast<size_t>(i)] = std::move(f);
    if (act >= 0) removed_.insert(act);
    if (quant >= 0) removed_.insert(quant);
    return true;
  }

  Graph& g_;
  const OpRegistry& registry_;
  std::vector<int> producers_;
  std::vector<std::vector<int>> consumers_;
  std::set<int> removed_;
};

}  // namespace

Expected<bool> fuse_qdq(Graph& graph) { return QdqFuser(graph).run(); }

}  // namespace aotc
