// BatchNormalization (inference) folded into the preceding convolution:
//   s = gamma / sqrt(var + eps),  W' = W * s (per output channel),  b' = (b - mean) * s + beta.
// Computed in double and stored in the weights' dtype. Fires only when the conv output feeds the
// BN alone (and is not a graph output) and W, b, gamma, beta, mean and var are all constants.
#include <cmath>
#include <memory>
#include <vector>

#include "ir/ops/epilogue.h"
#include "opt/passes.h"

namespace aotc {

namespace {

bool is_foldable_conv(const Node& n) {
  if (n.op_type == "Conv" && n.domain.empty()) return true;
  // A fused conv that has absorbed nothing after its bias can still take the BN.
  return n.op_type == "FusedConv" && n.domain == "aotc" && !has_activation(n) && n.input(3) == kNoValue;
}

bool only_output_0_used(const Node& bn, const Graph& graph, const std::vector<std::vector<int>>& consumers) {
  for (size_t i = 1; i < bn.outputs.size(); ++i) {
    ValueId out = bn.outputs[i];
    if (out == kNoValue) continue;
    if (graph.is_graph_output(out) || !consumers[static_cast<size_t>(out)].empty()) return false;
  }
  return !bn.outputs.empty() && bn.outputs[0] != kNoValue;
}

// Tries to fold graph.nodes[bn_index] into its producer; true if it did.
bool try_fold(Graph& graph, size_t bn_index, const std::vector<int>& producers,
              const std::vector<std::vector<int>>& consumers) {
  const Node& bn = graph.nodes[bn_index];
  // spatial=0 (opset < 9) normalises per (channel, position): not a per-channel scale.
  if (bn.attr_int("training_mode", 0) != 0 || bn.attr_int("spatial", 1) == 0 || bn.inputs.size() != 5)
    return false;
  if (!only_output_0_used(bn, graph, consumers)) return false;
  ValueId x = bn.inputs[0];
  if (x == kNoValue || graph.is_graph_output(x)) return false;
  int conv_index = producers[static_cast<size_t>(x)];
  if (conv_index < 0 || consumers[static_cast<size_t>(x)].size() != 1) return false;
  const Node& conv = graph.nodes[static_cast<size_t>(conv_index)];
  if (!is_foldable_conv(conv) || conv.outputs.size() != 1 || conv.outputs[0] != x) return false;
  for (ValueId in : bn.inputs)
    if (in == kNoValue) return false;
  for (size_t i = 1; i < 5; ++i)
    if (!graph.value(bn.inputs[i]).is_constant()) return false;
  ValueId w_id = conv.input(1), b_id = conv.input(2);
  if (w_id == kNoValue || !graph.value(w_id).is_constant()) return false;
  if (b_id != kNoValue && !graph.value(b_id).is_constant()) return false;

  const Tensor& w = *graph.value(w_id).constant;
  if (!dtype_is_float(w.dtype()) || w.rank() < 1) return false;
  const int64_t channels = w.shape()[0];
  const Tensor* params[4];
  for (size_t i = 0; i < 4; ++i) {
    params[i] = graph.value(bn.inputs[i + 1]).constant.get();
    if (!dtype_is_float(params[i]->dtype()) || params[i]->rank() != 1 || params[i]->numel() != channels)
      return false;
  }
  const Tensor* b = b_id == kNoValue ? nullptr : graph.value(b_id).constant.get();
  if (b && (b->rank() != 1 || b->numel() != channels)) return false;

  const double eps = static_cast<double>(bn.attr_float("epsilon", 1e-5f));
  const Tensor &gamma = *params[0], &beta = *params[1], &mean = *params[2], &var = *params[3];
  Tensor new_w(w.dtype(), w.shape());
  Tensor new_b(w.dtype(), {channels});
  const int64_t per_channel = channels == 0 ? 0 : w.numel() / channels;
  for (int64_t c = 0; c < channels; ++c) {
    double s = gamma.get(c) / std::sqrt(var.get(c) + eps);
    for (int64_t k = 0; k < per_channel; ++k) new_w.set(c * per_channel + k, w.get(c * per_channel + k) * s);
    double bias = b ? b->get(c) : 0.0;
    new_b.set(c, (bias - mean.get(c)) * s + beta.get(c));
  }

  // add_constant may reallocate graph.values: no Value references are held past this point.
  const std::string w_name = graph.value(w_id).name;
  const ValueId bn_out = bn.outputs[0];
  ValueId nw = graph.add_constant(graph.unique_name(w_name + "_bnfold"), std::move(new_w));
  ValueId nb = graph.add_constant(graph.unique_name(w_name + "_bnfold_bias"), std::move(new_b));
  Node& target = graph.nodes[static_cast<size_t>(conv_index)];
  if (target.inputs.size() < 3) target.inputs.resize(3, kNoValue);
  target.inputs[1] = nw;
  target.inputs[2] = nb;
  target.outputs[0] = bn_out;
  graph.nodes.erase(graph.nodes.begin() + static_cast<std::ptrdiff_t>(bn_index));
  return true;
}

}  // namespace

Expected<bool> fold_batchnorm(Graph& graph) {
  bool changed = false;
  // One fold per scan, then fresh producer/consumer maps: simple, and O(nodes x BNs) is small.
  for (bool again = true; again;) {
    again = false;
    std::vector<int> producers = graph.producers();
    std::vector<std::vector<int>> consumers = graph.consumers();
    for (size_t n = 0; n < graph.nodes.size() && !again; ++n) {
      const Node& node = graph.nodes[n];
      if (node.op_type == "BatchNormalization" && node.domain.empty())
        again = try_fold(graph, n, producers, consumers);
    }
    changed = changed || again;
  }
  return changed;
}

}  // namespace aotc
