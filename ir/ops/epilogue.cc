// Encoding of absorbed activations in fused nodes (see epilogue.h).
#include "ir/ops/epilogue.h"

#include "ir/op_registry.h"

namespace aotc {

namespace {
const std::string kPrefix = "act.";
const std::string kPoolPrefix = "pool.";
}

void store_pool(Node& fused, const Node& pool) {
  fused.attrs["pool"] = Attribute::of_string(pool.op_type);
  for (const auto& kv : pool.attrs) fused.attrs[kPoolPrefix + kv.first] = kv.second;
}

bool has_pool(const Node& fused) { return !fused.attr_string("pool", "").empty(); }

Node load_pool(const Node& fused) {
  Node pool;
  pool.name = fused.name;
  pool.op_type = fused.attr_string("pool", "");
  for (const auto& kv : fused.attrs)
    if (kv.first.compare(0, kPoolPrefix.size(), kPoolPrefix) == 0) pool.attrs[kv.first.substr(kPoolPrefix.size())] = kv.second;
  return pool;
}

void store_activation(Node& fused, const Node& activation) {
  fused.attrs["activation"] = Attribute::of_string(activation.op_type);
  for (const auto& kv : activation.attrs) fused.attrs[kPrefix + kv.first] = kv.second;
}

bool has_activation(const Node& fused) { return !fused.attr_string("activation", "").empty(); }

Node load_activation(const Node& fused) {
  Node act;
  act.name = fused.name;
  act.op_type = fused.attr_string("activation", "");
  for (const auto& kv : fused.attrs)
    if (kv.first.compare(0, kPrefix.size(), kPrefix) == 0) act.attrs[kv.first.substr(kPrefix.size())] = kv.second;
  return act;
}

std::string activation_expr(const Node& fused, const Graph& graph, const std::string& x) {
  if (!has_activation(fused)) return x;
  Node act = load_activation(fused);
  const OpDef* def = default_registry().find(act.op_type);
  if (!def || !def->scalar_expr) return x;  // the fusion pass only absorbs ops that have one
  return def->scalar_expr(act, graph, x);
}

Status apply_activation_reference(const Node& fused, Tensor& tensor) {
  if (!has_activation(fused)) return Status::ok();
  Node act = load_activation(fused);
  const OpDef* def = default_registry().find(act.op_type);
  if (!def) return node_error(fused, "unknown absorbed activation '" + act.op_type + "'");
  std::vector<const Tensor*> in = {&tensor};
  std::vector<Tensor> out = {Tensor(tensor.dtype(), tensor.shape())};
  AOTC_RETURN_IF_ERROR(def->reference(act, in, out));
  tensor = std::move(out[0]);
  return Status::ok();
}

}  // namespace aotc
