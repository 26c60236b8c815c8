// LinearAttention-27: the recurrent (linear) attention of Gated DeltaNet / RetNet-style models,
// for prefill (T > 1) and decode (T = 1). Inputs are packed [B, T, H*D]; per batch and KV head a
// state S [d_k, d_v] (past_state or zeros) is updated token by token:
//   gated rules:  S = exp(g_t) * S          (g_t per KV head, or per key dim: decay [B, T, H_kv*d_k])
//   delta rules:  v_t = beta_t * (v_t - S^T k_t)   (beta per KV head, or one for all: [B, T, 1])
//   always:       S = S + k_t v_t^T;   o_t = scale * q_t^T S  for each of the G = H_q / H_kv query
//                 heads sharing the KV head (scale 0 or absent: 1 / sqrt(d_k))
// update_rule: linear (neither), gated, delta, gated_delta (the default). Outputs: output
// [B, T, H_q*d_v] and present_state [B, H_kv, d_k, d_v] (past_state's dtype, else the output's).
// Computed in fp32 (the spec's reference) or fp64; one thread block per (batch, KV head) on the GPU.
#include <cmath>
#include <string>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};
enum { kQ = 0, kK = 1, kV = 2, kPast = 3, kDecay = 4, kBeta = 5 };

struct Dims {
  int64_t batch = 0, len = 0, q_heads = 0, kv_heads = 0, dk = 0, dv = 0;
  bool gated = false, delta = false;
  bool decay_per_dim = false, beta_shared = false;
  double scale = 0;
};

Expected<Dims> dims_of(const Node& node, const std::vector<const Shape*>& in) {
  const std::string rule = node.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    return node_error(node, "update_rule '" + escape_for_message(rule, 40) +
                                "' is not one of linear, gated, delta, gated_delta");
  Dims d;
  d.gated = rule == "gated" || rule == "gated_delta";
  d.delta = rule == "delta" || rule == "gated_delta";
  d.q_heads = node.attr_int("q_num_heads", 0);
  d.kv_heads = node.attr_int("kv_num_heads", 0);
  if (d.q_heads <= 0 || d.kv_heads <= 0 || d.q_heads % d.kv_heads != 0)
    return node_error(node, "q_num_heads (" + std::to_string(d.q_heads) + ") must be a positive multiple of kv_num_heads (" +
                                std::to_string(d.kv_heads) + ")");
  const Shape &q = *in[kQ], &k = *in[kK], &v = *in[kV];
  if (q.size() != 3 || k.size() != 3 || v.size() != 3)
    return node_error(node, "query, key and value must be [B, T, H*D], got " + shape_str(q) + ", " + shape_str(k) + ", " +
                                shape_str(v));
  d.batch = q[0];
  d.len = q[1];
  if (k[0] != d.batch || v[0] != d.batch || k[1] != d.len || v[1] != d.len)
    return node_error(node, "query, key and value must agree on batch and length");
  if (q[2] % d.q_heads != 0 || k[2] % d.kv_heads != 0 || v[2] % d.kv_heads != 0)
    return node_error(node, "the last dims must be multiples of the head counts");
  d.dk = q[2] / d.q_heads;
  d.dv = v[2] / d.kv_heads;
  if (k[2] / d.kv_heads != d.dk) return node_error(node, "key's head dim must be query's (" + std::to_string(d.dk) + ")");
  const Shape* decay = in[kDecay];
  const Shape* beta = in[kBeta];
  if (d.gated != (decay != nullptr))
    return node_error(node, "update_rule '" + rule + (d.gated ? "' needs" : "' takes no") + " decay input");
  if (d.delta != (beta != nullptr))
    return node_error(node, "update_rule '" + rule + (d.delta ? "' needs" : "' takes no") + " beta input");
  if (decay) {
    if (decay->size() != 3 || (*decay)[0] != d.batch || (*decay)[1] != d.len ||
        ((*decay)[2] != d.kv_heads && (*decay)[2] != d.kv_heads * d.dk))
      return node_error(node, "decay must be [B, T, kv_num_heads] or [B, T, kv_num_heads*d_k], got " + shape_str(*decay));
    d.decay_per_dim = (*decay)[2] == d.kv_heads * d.dk && d.dk != 1;
  }
  if (beta) {
    if (beta->size() != 3 || (*beta)[0] != d.batch || (*beta)[1] != d.len ||
        ((*beta)[2] != d.kv_heads && (*beta)[2] != 1))
      return node_error(node, "beta must be [B, T, kv_num_heads] or [B, T, 1], got " + shape_str(*beta));
    d.beta_shared = (*beta)[2] == 1 && d.kv_heads != 1;
  }
  if (in[kPast] && *in[kPast] != Shape{d.batch, d.kv_heads, d.dk, d.dv})
    return node_error(node, "past_state must be " + shape_str({d.batch, d.kv_heads, d.dk, d.dv}) + ", got " +
                                shape_str(*in[kPast]));
  const double s = node.attr_float("scale", 0.0f);
  d.scale = s == 0.0 ? 1.0 / std::sqrt(static_cast<double>(d.dk)) : s;
  return d;
}

Status linear_attention_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, 6));
  if (node.outputs.empty() || node.outputs.size() > 2) return node_error(node, "expects 1 or 2 outputs");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, kQ, kFloatTypes));
  const DType t = input_value(graph, node, kQ).dtype;
  for (size_t i : {kK, kV, kDecay, kBeta})
    if (node.input(i) != kNoValue && graph.value(node.inputs[i]).dtype != t)
      return node_error(node, "input " + std::to_string(i) + " must have query's dtype " + dtype_name(t));
  if (node.input(kPast) != kNoValue) AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, kPast, kFloatTypes));
  auto d = dims_of(node, optional_input_shapes(graph, node, 6));
  if (!d) return d.status();
  const DType state_t = node.input(kPast) != kNoValue ? graph.value(node.inputs[kPast]).dtype : t;
  set_output(graph, node, 0, t, {d->batch, d->len, d->q_heads * d->dv});
  set_output(graph, node, 1, state_t, {d->batch, d->kv_heads, d->dk, d->dv});
  return Status::ok();
}

Status linear_attention_reference(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  std::vector<Shape> shapes(6);
  std::vector<const Shape*> ptrs(6, nullptr);
  for (size_t i = 0; i < 6 && i < in.size(); ++i)
    if (in[i]) {
      shapes[i] = in[i]->shape();
      ptrs[i] = &shapes[i];
    }
  auto dd = dims_of(node, ptrs);
  if (!dd) return dd.status();
  const Dims& d = *dd;
  const Tensor &q = *in[kQ], &k = *in[kK], &v = *in[kV];
  const Tensor* past = in.size() > kPast ? in[kPast] : nullptr;
  const Tensor* decay = in.size() > kDecay ? in[kDecay] : nullptr;
  const Tensor* beta = in.size() > kBeta ? in[kBeta] : nullptr;
  const int64_t group = d.q_heads / d.kv_heads;
  std::vector<double> s(static_cast<size_t>(d.dk * d.dv)), vt(static_cast<size_t>(d.dv));
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.kv_heads; ++h) {
      const int64_t state_base = (b * d.kv_heads + h) * d.dk * d.dv;
      for (int64_t i = 0; i < d.dk * d.dv; ++i) s[static_cast<size_t>(i)] = past ? past->get(state_base + i) : 0.0;
      for (int64_t t = 0; t < d.len; ++t) {
        const int64_t row = b * d.len + t;
        auto key = [&](int64_t i) { return k.get((row * d.kv_heads + h) * d.dk + i); };
        if (d.gated)
          for (int64_t i = 0; i < d.dk; ++i) {
            const double g = d.decay_per_dim ? decay->get((row * d.kv_heads + h) * d.dk + i) : decay->get(row * d.kv_heads + h);
            for (int64_t j = 0; j < d.dv; ++j) s[static_cast<size_t>(i * d.dv + j)] *= std::exp(g);
          }
        for (int64_t j = 0; j < d.dv; ++j) vt[static_cast<size_t>(j)] = v.get((row * d.kv_heads + h) * d.dv + j);
        if (d.delta) {
          const double bt = beta->get(d.beta_shared ? row : row * d.kv_heads + h);
          for (int64_t j = 0; j < d.dv; ++j) {
            double r = 0;
            for (int64_t i = 0; i < d.dk; ++i) r += s[static_cast<size_t>(i * d.dv + j)] * key(i);
            vt[static_cast<size_t>(j)] = bt * (vt[static_cast<size_t>(j)] - r);
          }
        }
        for (int64_t i = 0; i < d.dk; ++i)
          for (int64_t j = 0; j < d.dv; ++j) s[static_cast<size_t>(i * d.dv + j)] += key(i) * vt[static_cast<size_t>(j)];
        for (int64_t gq = 0; gq < group; ++gq) {
          const int64_t qh = h * group + gq;
          for (int64_t j = 0; j < d.dv; ++j) {
            double o = 0;
            for (int64_t i = 0; i < d.dk; ++i) o += q.get((row * d.q_heads + qh) * d.dk + i) * s[static_cast<size_t>(i * d.dv + j)];
            out[0].set((row * d.q_heads + qh) * d.dv + j, d.scale * o);
          }
        }
      }
      if (node.outputs.size() > 1 && node.outputs[1] != kNoValue)  // present_state asked for
        for (int64_t i = 0; i < d.dk * d.dv; ++i) out[1].set(state_base + i, s[static_cast<size_t>(i)]);
    }
  return Status::ok();
}

// The GPU kernel keeps S in shared memory (fp32, or fp64 for double): d_k * d_v elements.
constexpr int64_t kMaxStateBytes = 40 * 1024;

Expected<Lowering> linear_attention_lower(const Node& node, const Graph& graph) {
  auto dd = dims_of(node, optional_input_shapes(graph, node, 6));
  if (!dd) return dd.status();
  const Dims& d = *dd;
  const DType t = input_value(graph, node, kQ).dtype;
  const bool f64 = t == DType::kFloat64;
  const int64_t state_bytes = (d.dk * d.dv + d.dk + 2 * d.dv) * (f64 ? 8 : 4);
  if (state_bytes > kMaxStateBytes)
    return node_error(node, "a state of d_k " + std::to_string(d.dk) + " x d_v " + std::to_string(d.dv) +
                                " is over the kernel's shared-memory limit (" + std::to_string(kMaxStateBytes) + " bytes)");
  Lowering low;
  if (d.batch * d.kv_heads == 0) return low;
  const bool present = node.outputs.size() > 1 && node.outputs[1] != kNoValue;
  const DType state_t = node.input(kPast) != kNoValue ? graph.value(node.inputs[kPast]).dtype : t;
  auto arg = [&](size_t i) { return node.input(i) == kNoValue ? kNullArg : node.inputs[i]; };
  const float scale = static_cast<float>(d.scale);
  KernelStep k;
  k.template_name = "linear_attention";
  k.holes = {{"comment", "LinearAttention " + node.attr_string("update_rule", "gated_delta") + " B " +
                             std::to_string(d.batch) + " T " + std::to_string(d.len) + " heads " +
                             std::to_string(d.q_heads) + "/" + std::to_string(d.kv_heads) + " d_k " + std::to_string(d.dk) +
                             " d_v " + std::to_string(d.dv) + " " + dtype_name(t)},
             {"T", dtype_c_type(t)},
             {"ST", dtype_c_type(state_t)},
             {"CT", f64 ? "double" : "float"},
             {"LEN", int_literal(d.len)},
             {"HQ", int_literal(d.q_heads)},
             {"HKV", int_literal(d.kv_heads)},
             {"DK", int_literal(d.dk)},
             {"DV", int_literal(d.dv)},
             {"GATED", d.gated ? "true" : "false"},
             {"DELTA", d.delta ? "true" : "false"},
             {"DECAY_PER_DIM", d.decay_per_dim ? "true" : "false"},
             {"BETA_SHARED", d.beta_shared ? "true" : "false"},
             {"HAS_PAST", node.input(kPast) != kNoValue ? "true" : "false"},
             {"HAS_PRESENT", present ? "true" : "false"},
             {"SCALE", float_literal(scale)}};
  k.args = {node.inputs[kQ], node.inputs[kK], node.inputs[kV], arg(kPast), arg(kDecay), arg(kBeta), node.outputs[0],
            present ? node.outputs[1] : kNullArg};
  k.block = Dim3{256, 1, 1};
  k.grid = Dim3{d.kv_heads, d.batch, 1};
  k.shared_bytes = state_bytes;
  low.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return low;
}

}  // namespace

void register_linear_attention_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "LinearAttention";
  def.infer = linear_attention_infer;
  def.reference = linear_attention_reference;
  def.lower = linear_attention_lower;
  registry.add(def);
}

}  // namespace aotc
