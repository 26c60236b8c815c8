// Encoding of absorbed activations and pools in fused nodes (see epilogue.h).
#include "ir/ops/epilogue.h"

#include "ir/op_registry.h"

namespace aotc {

namespace {
const std::string kPrefix = "act.";
const std::string kPoolPrefix = "pool.";

// An absorbed node as attribute `kind` (its op type) + "<prefix><name>" attributes.
void store_absorbed(Node& fused, const Node& absorbed, const std::string& kind, const std::string& prefix) {
  fused.attrs[kind] = Attribute::of_string(absorbed.op_type);
  for (const auto& kv : absorbed.attrs) fused.attrs[prefix + kv.first] = kv.second;
}

Node load_absorbed(const Node& fused, const std::string& kind, const std::string& prefix) {
  Node n;
  n.name = fused.name;
  n.op_type = fused.attr_string(kind, "");
  for (const auto& kv : fused.attrs)
    if (kv.first.compare(0, prefix.size(), prefix) == 0) n.attrs[kv.first.substr(prefix.size())] = kv.second;
  return n;
}
}  // namespace

void store_pool(Node& fused, const Node& pool) { store_absorbed(fused, pool, "pool", kPoolPrefix); }
bool has_pool(const Node& fused) { return !fused.attr_string("pool", "").empty(); }
Node load_pool(const Node& fused) { return load_absorbed(fused, "pool", kPoolPrefix); }

void store_activation(Node& fused, const Node& activation) { store_absorbed(fused, activation, "activation", kPrefix); }
bool has_activation(const Node& fused) { return !fused.attr_string("activation", "").empty(); }
Node load_activation(const Node& fused) { return load_absorbed(fused, "activation", kPrefix); }

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
