// convert_precision: gives every float32 value a storage dtype (graph.target.precision.dtype,
// fp16 or bf16) unless the op that produces or reads it must stay fp32 (opt/precision_policy.cc,
// --keep-fp32, or an op whose shape inference refuses the low precision). Constants are converted
// at compile time (once per value); a Cast is inserted only where a value crosses a precision
// boundary, once per (value, dtype). Graph inputs and outputs keep their declared dtypes, unless
// precision.low_io (--io-dtype) gives the float32 ones the low dtype: a graph input is then read
// as it comes (a Cast to fp32 only for nodes that stay fp32), a graph output is written in the
// low dtype by its producer (a Cast from fp32 only when the producer stays fp32).
#include <map>

#include "ir/op_registry.h"
#include "opt/passes.h"
#include "opt/precision_policy.h"

namespace aotc {
namespace {

bool listed(const std::vector<std::string>& keep, const Node& node) {
  for (const std::string& k : keep)
    if ((!node.name.empty() && k == node.name) || k == node.op_type) return true;
  return false;
}

bool is_fixed_input(const PrecisionPolicy* p, size_t index) {
  if (!p) return false;
  for (int i : p->fixed_inputs)
    if (static_cast<size_t>(i) == index) return true;
  return false;
}

class PrecisionRewriter {
 public:
  PrecisionRewriter(Graph& g, DType low) : g_(g), low_(low), registry_(default_registry()) {}

  Expected<bool> run() {
    const size_t n = g_.nodes.size();
    std::vector<Node> nodes = std::move(g_.nodes);
    g_.nodes.clear();
    // Which values started as float32: only those change type.
    origin_f32_.assign(g_.values.size(), false);
    for (size_t v = 0; v < g_.values.size(); ++v) origin_f32_[v] = g_.values[v].dtype == DType::kFloat32;
    bool changed = false;
    const bool low_io = g_.target.precision.low_io;
    if (low_io) {
      for (ValueId in : g_.inputs)
        if (is_f32_origin(in)) {
          g_.value(in).dtype = low_;  // version() now casts it to fp32 where a node needs that
          changed = true;
        }
    }
    for (size_t i = 0; i < n; ++i) {
      Node node = std::move(nodes[i]);
      const bool low = runs_low(node);
      const PrecisionPolicy* policy = find_precision_policy(node.op_type);
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        const ValueId v = node.inputs[k];
        if (v == kNoValue || !is_f32_origin(v)) continue;
        const DType want = (low && !is_fixed_input(policy, k)) ? low_ : DType::kFloat32;
        auto got = version(v, want);
        if (!got) return got.status();
        changed = changed || *got != v;
        node.inputs[k] = *got;
      }
      std::vector<std::pair<ValueId, ValueId>> output_casts;  // (low value, declared graph output)
      for (ValueId& out : node.outputs) {
        if (out == kNoValue || !is_f32_origin(out)) continue;
        if (!low) {
          if (low_io && g_.is_graph_output(out)) {
            // The producer stays fp32: it writes a new fp32 value, a Cast writes the declared
            // (now low) graph output.
            const ValueId declared = out;
            const Value copy = g_.value(declared);
            out = g_.add_value(g_.unique_name(copy.name + "_fp32"), DType::kFloat32, copy.shape, copy.shape_known);
            grow();
            g_.value(declared).dtype = low_;
            versions_[declared][DType::kFloat32] = out;
            versions_[declared][low_] = declared;
            output_casts.push_back({out, declared});
            changed = true;
            continue;
          }
          versions_[out][DType::kFloat32] = out;
          continue;
        }
        changed = true;
        if (g_.is_graph_output(out) && !low_io) {
          const ValueId declared = out;
          const Value copy = g_.value(declared);
          out = g_.add_value(g_.unique_name(copy.name + "_" + dtype_name(low_)), low_, copy.shape, copy.shape_known);
          grow();
          versions_[declared][low_] = out;
          versions_[declared][DType::kFloat32] = declared;
          output_casts.push_back({out, declared});
        } else {
          g_.value(out).dtype = low_;
          versions_[out][low_] = out;
        }
      }
      if (low) {
        const OpDef* def = registry_.find(node.op_type, node.domain);
        if (!def || !def->infer) return node_error(node, "precision: no shape inference for this op");
        Status s = def->infer(node, g_);
        if (!s) return Status::error("precision: " + s.message());
      }
      g_.nodes.push_back(std::move(node));
      for (const auto& [from, to] : output_casts) AOTC_RETURN_IF_ERROR(add_cast(from, to));
    }
    return changed;
  }

 private:
  bool is_f32_origin(ValueId v) const { return static_cast<size_t>(v) < origin_f32_.size() && origin_f32_[v]; }
  void grow() { origin_f32_.resize(g_.values.size(), false); }

  // Whether the node runs in the low precision: policy, --keep-fp32, and a trial of its shape
  // inference with its float32 inputs in the low type.
  bool runs_low(const Node& node) {
    if (listed(g_.target.precision.keep_fp32, node)) return false;
    const PrecisionPolicy* policy = find_precision_policy(node.op_type);
    if (policy && policy->rule == PrecisionRule::kKeepFp32) return false;
    bool touches_f32 = false;
    for (ValueId v : node.inputs) touches_f32 = touches_f32 || (v != kNoValue && is_f32_origin(v));
    for (ValueId v : node.outputs) touches_f32 = touches_f32 || (v != kNoValue && is_f32_origin(v));
    if (!touches_f32) return false;
    const OpDef* def = registry_.find(node.op_type, node.domain);
    if (!def || !def->infer) return false;
    // Trial: a small graph holding copies of the node's values, float32 inputs in the low type.
    Graph trial;
    trial.opset = g_.opset;
    trial.target = g_.target;
    Node copy = node;
    for (size_t k = 0; k < copy.inputs.size(); ++k) {
      const ValueId v = copy.inputs[k];
      if (v == kNoValue) continue;
      Value val = g_.value(v);
      if (is_f32_origin(v) && !is_fixed_input(policy, k)) {
        val.dtype = low_;
        if (val.constant) val.constant = converted(v);
      }
      trial.values.push_back(val);
      copy.inputs[k] = static_cast<ValueId>(trial.values.size() - 1);
    }
    for (ValueId& v : copy.outputs) {
      if (v == kNoValue) continue;
      Value val = g_.value(v);
      val.constant.reset();
      trial.values.push_back(val);
      v = static_cast<ValueId>(trial.values.size() - 1);
    }
    if (!def->infer(copy, trial)) return false;
    for (ValueId v : copy.outputs)
      if (v != kNoValue && trial.value(v).dtype == DType::kFloat32) return false;  // would still write fp32
    return true;
  }

  std::shared_ptr<const Tensor> converted(ValueId v) {
    auto it = converted_.find(v);
    if (it != converted_.end()) return it->second;
    auto t = std::make_shared<Tensor>(convert_tensor(*g_.value(v).constant, low_));
    converted_[v] = t;
    return t;
  }

  // The value holding v's data in dtype `want`: v itself, a converted constant, or a Cast.
  Expected<ValueId> version(ValueId v, DType want) {
    auto& have = versions_[v];
    if (have.empty()) have[g_.value(v).dtype] = v;  // graph inputs and constants
    auto it = have.find(want);
    if (it != have.end()) return it->second;
    const Value src = g_.value(v);
    ValueId out;
    if (src.constant && want == low_) {
      out = g_.add_value(g_.unique_name(src.name + "_" + dtype_name(low_)), low_, src.shape, true);
      g_.value(out).constant = converted(v);
    } else {
      out = g_.add_value(g_.unique_name(src.name + "_" + dtype_name(want)), want, src.shape, src.shape_known);
      AOTC_RETURN_IF_ERROR(add_cast(have.begin()->second, out));
    }
    grow();
    have[want] = out;
    return out;
  }

  Status add_cast(ValueId from, ValueId to) {
    Node cast;
    cast.name = g_.unique_name(g_.value(from).name + "_cast");
    cast.op_type = "Cast";
    cast.inputs = {from};
    cast.outputs = {to};
    cast.attrs["to"] = Attribute::of_int(static_cast<int64_t>(g_.value(to).dtype));
    const OpDef* def = registry_.find("Cast");
    AOTC_RETURN_IF_ERROR(def->infer(cast, g_));
    g_.nodes.push_back(std::move(cast));
    return Status::ok();
  }

  Graph& g_;
  DType low_;
  const OpRegistry& registry_;
  std::vector<bool> origin_f32_;
  std::map<ValueId, std::map<DType, ValueId>> versions_;
  std::map<ValueId, std::shared_ptr<const Tensor>> converted_;
};

}  // namespace

Expected<bool> convert_precision(Graph& graph) {
  const DType low = graph.target.precision.dtype;
  if (low == DType::kFloat32) return false;
  if (low != DType::kFloat16 && low != DType::kBFloat16)
    return Status::error("precision: unsupported compute dtype " + dtype_name(low));
  return PrecisionRewriter(graph, low).run();
}

}  // namespace aotc
