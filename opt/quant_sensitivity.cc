#include "opt/quant_sensitivity.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>

#include "ir/evaluator.h"
#include "ir/shape_inference.h"
#include "ir/ops/conv_configs.h"
#include "opt/passes.h"

namespace aotc {

std::vector<QuantLayer> quantizable_layers(const Graph& graph) {
  std::vector<QuantLayer> out;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (!node.domain.empty() || node.inputs.size() < 2 || node.inputs[0] == kNoValue || node.inputs[1] == kNoValue)
      continue;
    const Value& x = graph.value(node.inputs[0]);
    const Value& w = graph.value(node.inputs[1]);
    if (x.dtype != DType::kFloat32 || w.dtype != DType::kFloat32 || !w.is_constant() || x.is_constant()) continue;
    QuantLayer l;
    l.node = static_cast<int>(n);
    l.activation = node.inputs[0];
    l.weight = node.inputs[1];
    if (node.op_type == "Conv" && w.shape.size() >= 3) {
      l.weight_axis = 0;  // [K, C/group, kernel...]
    } else if (node.op_type == "Gemm" && w.shape.size() == 2) {
      l.weight_axis = node.attr_int("transB", 0) ? 0 : 1;
    } else if (node.op_type == "MatMul" && w.shape.size() == 2) {
      l.weight_axis = 1;
    } else {
      continue;
    }
    out.push_back(l);
  }
  return out;
}

std::string int8_kernel_missing(const Graph& graph, const QuantLayer& layer, const Target& target) {
  const Node& node = graph.nodes[static_cast<size_t>(layer.node)];
  if (node.op_type == "MatMul" || node.op_type == "Gemm") {
    // As a 1x1 convolution on the int8 kernel (opt/layout_nhwc): K and N multiples of 16.
    const Shape& w = graph.value(layer.weight).shape;
    if (!target.has_sm80_tensor_cores()) return "no Sm80+ target";
    const int64_t k = layer.weight_axis == 0 ? w[1] : w[0], n = layer.weight_axis == 0 ? w[0] : w[1];
    if (k % kInt8ChannelAlign != 0 || n % kInt8ChannelAlign != 0)
      return "K " + std::to_string(k) + " and N " + std::to_string(n) + " not multiples of " + std::to_string(kInt8ChannelAlign);
    return "";
  }
  if (node.op_type != "Conv") return "no int8 kernel for " + node.op_type;
  const Shape& x = graph.value(layer.activation).shape;
  const Shape& w = graph.value(layer.weight).shape;
  if (x.size() != 4 || w.size() != 4) return "not a 2-D convolution";
  const int64_t group = node.attr_int("group", 1);
  if (!conv_implicit_gemm_applies(target, DType::kInt8, group, x[1], w[0]))
    return group != 1 ? "grouped / depthwise: no int8 kernel yet"
                      : "channels " + std::to_string(x[1]) + " -> " + std::to_string(w[0]) + " not multiples of " +
                            std::to_string(kInt8ChannelAlign) + " (or no Sm80+ target)";
  if (w[2] > kImplicitGemmMaxWindow || w[3] > kImplicitGemmMaxWindow) return "window past 32";
  return "";
}

Expected<bool> prepare_for_quantization(Graph& graph) {
  auto a = dead_code(graph);
  if (!a) return a.status();
  auto b = fold_batchnorm(graph);
  if (!b) return b.status();
  return *a || *b;
}

namespace {

// Symmetric per-channel int8 quantization of a constant weight along `axis`: the int8 tensor and
// one float scale per channel (amax / 127; 1 for an all-zero channel, whose integers are all 0).
std::pair<Tensor, Tensor> quantize_weight(const Tensor& w, int axis) {
  const Shape& s = w.shape();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t channels = s[static_cast<size_t>(axis)];
  std::vector<double> amax(static_cast<size_t>(channels), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < inner; ++i)
        amax[static_cast<size_t>(c)] = std::max(amax[static_cast<size_t>(c)], std::fabs(w.get((o * channels + c) * inner + i)));
  Tensor q(DType::kInt8, s), scale(DType::kFloat32, {channels});
  for (int64_t c = 0; c < channels; ++c) {
    const double a = amax[static_cast<size_t>(c)];
    scale.set(c, a > 0 ? static_cast<double>(static_cast<float>(a / 127.0)) : 1.0);
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c) {
      const double sc = scale.get(c);  // the float scale DequantizeLinear multiplies by
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (o * channels + c) * inner + i;
        q.set_int(at, static_cast<int64_t>(std::clamp(std::nearbyint(w.get(at) / sc), -127.0, 127.0)));
      }
    }
  return {std::move(q), std::move(scale)};
}

// Relative L2 error over every floating-point output of all batches.
double rel_l2(const std::vector<std::vector<Tensor>>& got, const std::vector<std::vector<Tensor>>& ref) {
  double num = 0, den = 0;
  for (size_t b = 0; b < ref.size(); ++b)
    for (size_t o = 0; o < ref[b].size(); ++o) {
      if (!dtype_is_float(ref[b][o].dtype())) continue;
      for (int64_t i = 0; i < ref[b][o].numel(); ++i) {
        const double r = ref[b][o].get(i), d = got[b][o].get(i) - r;
        num += d * d;
        den += r * r;
      }
    }
  return den > 0 ? std::sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
}

Expected<std::vector<std::vector<Tensor>>> run_all(const Graph& g, const std::vector<std::vector<Tensor>>& batches) {
  std::vector<std::vector<Tensor>> out;
  for (const auto& b : batches) {
    auto r = evaluate_graph(g, b);
    if (!r) return r.status();
    out.push_back(std::move(*r));
  }
  return out;
}

// The fp32 graph's values per batch, kept so that a quantized variant of it (quantize_to_qdq keeps
// every original value's id and appends its own) is evaluated from its first changed node on: a
// value is changed when it is new and not a constant, or when a node reading a changed value
// produces it; the nodes producing changed values run, fed with the unchanged values they read
// from the fp32 run. The reference functions are deterministic, so the outputs are those of a
// whole evaluation, bit for bit (QuantSensitivity.SuffixEvaluationEqualsTheWholeGraph). Off when
// the values of all batches would take more than kMaxCachedBytes.
constexpr int64_t kMaxCachedBytes = int64_t{2} << 30;

struct Fp32Values {
  size_t original_values = 0;
  std::vector<std::vector<std::shared_ptr<const Tensor>>> per_batch;  // [batch][value id]; empty: not kept
  std::vector<std::vector<Tensor>> outputs;                           // [batch][graph output]
};

Expected<Fp32Values> run_fp32(const Graph& graph, const std::vector<std::vector<Tensor>>& batches) {
  Fp32Values f;
  f.original_values = graph.values.size();
  int64_t bytes = 0;
  for (const Value& v : graph.values)
    if (!v.constant && v.dtype != DType::kUndefined) {
      const int64_t n = shape_numel(v.shape);
      bytes += n < 0 ? kMaxCachedBytes : n * std::max<int64_t>(1, dtype_size(v.dtype));
    }
  const bool kept = bytes * static_cast<int64_t>(batches.size()) <= kMaxCachedBytes;
  for (const auto& b : batches) {
    std::vector<std::shared_ptr<const Tensor>> values(graph.values.size());
    ValueObserver keep;
    if (kept) keep = [&](ValueId id, const Tensor& t) { values[static_cast<size_t>(id)] = std::make_shared<const Tensor>(t); };
    auto r = evaluate_graph(graph, b, default_registry(), keep);
    if (!r) return r.status();
    f.outputs.push_back(std::move(*r));
    if (kept) f.per_batch.push_back(std::move(values));
  }
  return f;
}

Expected<std::vector<std::vector<Tensor>>> run_changed_part(const Graph& g, const Fp32Values& fp32,
                                                            const std::vector<std::vector<Tensor>>& batches) {
  if (fp32.per_batch.empty()) return run_all(g, batches);  // not kept (or no batches)
  auto original = [&](ValueId v) { return static_cast<size_t>(v) < fp32.original_values; };
  std::vector<bool> changed(g.values.size(), false);
  for (size_t v = 0; v < g.values.size(); ++v) changed[v] = !original(static_cast<ValueId>(v)) && !g.values[v].constant;
  Graph part = g;
  part.nodes.clear();
  for (const Node& node : g.nodes) {
    bool reads_changed = false;
    for (ValueId in : node.inputs) reads_changed = reads_changed || (in != kNoValue && changed[static_cast<size_t>(in)]);
    bool writes_changed = reads_changed;
    for (ValueId out : node.outputs)
      if (out != kNoValue) {
        if (reads_changed) changed[static_cast<size_t>(out)] = true;
        writes_changed = writes_changed || changed[static_cast<size_t>(out)];
      }
    if (writes_changed) part.nodes.push_back(node);
  }
  // The part's inputs: the unchanged, non-constant values its nodes read, and unchanged outputs.
  std::vector<bool> is_input(g.values.size(), false);
  part.inputs.clear();
  auto add_input = [&](ValueId v) {
    if (v == kNoValue || changed[static_cast<size_t>(v)] || g.value(v).constant || is_input[static_cast<size_t>(v)]) return;
    is_input[static_cast<size_t>(v)] = true;
    part.inputs.push_back(v);
  };
  for (const Node& node : part.nodes)
    for (ValueId in : node.inputs) add_input(in);
  for (ValueId out : g.outputs) add_input(out);
  std::vector<std::vector<Tensor>> out;
  for (size_t b = 0; b < batches.size(); ++b) {
    std::vector<Tensor> feed;
    for (ValueId v : part.inputs) {
      if (!original(v) || !fp32.per_batch[b][static_cast<size_t>(v)])
        return Status::error("sensitivity: value '" + escape_for_message(g.value(v).name) + "' has no fp32 value");
      feed.push_back(*fp32.per_batch[b][static_cast<size_t>(v)]);
    }
    auto r = evaluate_graph(part, feed);
    if (!r) return r.status();
    out.push_back(std::move(*r));
  }
  return out;
}

}  // namespace

Expected<Graph> quantize_to_qdq(const Graph& graph, const std::vector<QuantLayer>& layers,
                              const std::vector<bool>& quantize, const CalibrationResult& calibration) {
  std::map<std::string, double> amax;
  for (const TensorCalibration& t : calibration.tensors) amax[t.name] = t.amax;
  Graph g = graph;
  g.nodes.clear();
  std::map<ValueId, ValueId> dequantized;  // activation -> its DequantizeLinear output (one pair per value)
  std::map<int, const QuantLayer*> by_node;
  for (size_t i = 0; i < layers.size(); ++i)
    if (i < quantize.size() && quantize[i]) by_node[layers[i].node] = &layers[i];
  const std::vector<int> producer = graph.producers();
  // The one QuantizeLinear -> DequantizeLinear pair of a value (symmetric int8, amax / 127).
  auto dequantize_of = [&](ValueId v, const Node& reader) -> Expected<ValueId> {
    auto done = dequantized.find(v);
    if (done != dequantized.end()) return done->second;
    const Value& x = graph.value(v);
    auto range = amax.find(x.name);
    if (range == amax.end()) return node_error(reader, "no calibrated range for its input '" + escape_for_message(x.name) + "'");
    Tensor scale(DType::kFloat32, {});
    scale.set(0, range->second > 0 ? range->second / 127.0 : 1.0);
    Tensor zero(DType::kInt8, {});
    ValueId s = g.add_constant(g.unique_name(x.name + "_scale"), scale);
    ValueId z = g.add_constant(g.unique_name(x.name + "_zero"), zero);
    ValueId q = g.add_value(g.unique_name(x.name + "_q"));
    ValueId dq = g.add_value(g.unique_name(x.name + "_dq"));
    g.nodes.push_back(Node{g.unique_name(x.name + "_quantize"), "QuantizeLinear", "", {v, s, z}, {q}, {}});
    g.nodes.push_back(Node{g.unique_name(x.name + "_dequantize"), "DequantizeLinear", "", {q, s, z}, {dq}, {}});
    dequantized.emplace(v, dq);
    return dq;
  };
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    Node node = graph.nodes[n];
    // A residual Add fed by a quantized layer: both operands through Q/DQ too, so the layer
    // requantizes and the Add runs on int8 tensors (aotc.QLinearAdd, opt/fuse_qdq).
    if (node.op_type == "Add" && node.domain.empty() && node.inputs.size() == 2 && node.outputs.size() == 1 &&
        node.inputs[0] != kNoValue && node.inputs[1] != kNoValue) {
      const Value& a = graph.value(node.inputs[0]);
      const Value& b = graph.value(node.inputs[1]);
      const Value& y = graph.value(node.outputs[0]);
      auto from_quantized = [&](ValueId v) {
        const int p = producer[static_cast<size_t>(v)];
        return p >= 0 && by_node.count(p) != 0;
      };
      if (a.dtype == DType::kFloat32 && b.dtype == DType::kFloat32 && !a.is_constant() && !b.is_constant() &&
          a.shape == y.shape && b.shape == y.shape && (from_quantized(node.inputs[0]) || from_quantized(node.inputs[1])) &&
          amax.count(a.name) && amax.count(b.name)) {
        for (int k = 0; k < 2; ++k) {
          auto dq = dequantize_of(node.inputs[static_cast<size_t>(k)], node);
          if (!dq) return dq.status();
          node.inputs[static_cast<size_t>(k)] = *dq;
        }
      }
    }
    auto it = by_node.find(static_cast<int>(n));
    if (it != by_node.end()) {
      const QuantLayer& l = *it->second;
      auto dq = dequantize_of(l.activation, node);
      if (!dq) return dq.status();
      node.inputs[0] = *dq;
      const Value& w = graph.value(l.weight);
      auto [wq, ws] = quantize_weight(*w.constant, l.weight_axis);
      ValueId wq_id = g.add_constant(g.unique_name(w.name + "_int8"), std::move(wq));
      ValueId ws_id = g.add_constant(g.unique_name(w.name + "_scale"), std::move(ws));
      ValueId wdq = g.add_value(g.unique_name(w.name + "_dq"));
      Node dqw{g.unique_name(w.name + "_dequantize"), "DequantizeLinear", "", {wq_id, ws_id}, {wdq}, {}};
      dqw.attrs["axis"] = Attribute::of_int(l.weight_axis);
      g.nodes.push_back(std::move(dqw));
      node.inputs[1] = wdq;
    }
    g.nodes.push_back(std::move(node));
  }
  AOTC_RETURN_IF_ERROR(infer_shapes(g));
  return g;
}

Expected<SensitivityReport> quantization_sensitivity(const Graph& graph, const CalibrationResult& calibration,
                                                     const std::vector<std::vector<Tensor>>& batches, double budget,
                                                     const std::function<void(const std::string&)>& progress) {
  std::vector<QuantLayer> layers = quantizable_layers(graph);
  if (layers.empty()) return Status::error("sensitivity: the model has no Conv, Gemm or MatMul with a constant weight");
  auto fp32 = run_fp32(graph, batches);
  if (!fp32) return fp32.status();
  const std::vector<std::vector<Tensor>>& ref = fp32->outputs;
  SensitivityReport r;
  r.budget = budget;
  auto error_of = [&](const std::vector<bool>& q) -> Expected<double> {
    auto g = quantize_to_qdq(graph, layers, q, calibration);
    if (!g) return g.status();
    auto got = run_changed_part(*g, *fp32, batches);
    if (!got) return got.status();
    return rel_l2(*got, ref);
  };
  for (size_t i = 0; i < layers.size(); ++i) {
    std::vector<bool> q(layers.size(), false);
    q[i] = true;
    auto e = error_of(q);
    if (!e) return e.status();
    LayerSensitivity s;
    s.node = graph.nodes[static_cast<size_t>(layers[i].node)].name;
    s.op_type = graph.nodes[static_cast<size_t>(layers[i].node)].op_type;
    s.rel_l2 = *e;
    s.sqnr_db = *e > 0 ? -20.0 * std::log10(*e) : INFINITY;
    r.layers.push_back(s);
    if (progress) progress("sensitivity: layer " + std::to_string(i + 1) + "/" + std::to_string(layers.size()));
  }
  std::vector<bool> q(layers.size(), true);
  auto all = error_of(q);
  if (!all) return all.status();
  r.all_int8_rel_l2 = r.chosen_rel_l2 = *all;
  if (budget > 0 && r.chosen_rel_l2 > budget) {
    // Most sensitive first: move layers to fp16 until the whole model meets the budget.
    std::vector<size_t> order(layers.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return r.layers[a].rel_l2 > r.layers[b].rel_l2; });
    for (size_t k : order) {
      q[k] = false;
      r.layers[k].precision = "fp16";
      auto e = error_of(q);
      if (!e) return e.status();
      r.chosen_rel_l2 = *e;
      if (progress) progress("budget: " + r.layers[k].node + " -> fp16, whole-model rel L2 " + std::to_string(*e));
      if (r.chosen_rel_l2 <= budget) break;
    }
  }
  r.budget_met = budget <= 0 || r.chosen_rel_l2 <= budget;
  return r;
}

}  // namespace aotc
