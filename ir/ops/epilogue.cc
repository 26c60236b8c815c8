// Encoding of absorbed activations, pools and convolutions in fused nodes (see epilogue.h).
#include "ir/ops/epilogue.h"

#include "ir/op_registry.h"

namespace aotc {

namespace {
const std::string kPrefix = "act.";
const std::string kInputPrefix = "in_act.";
const std::string kPoolPrefix = "pool.";
const std::string kDepthwisePrefix = "dw.";
const std::string kNextPrefix = "next.";

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

// An absorbed channels_last convolution (a depthwise one before the node, the next pointwise one
// after it): stored as an aotc.FusedConv without the layout flag, loaded back with it.
void store_conv(Node& fused, const Node& conv, const std::string& kind, const std::string& prefix) {
  Node d = conv;
  d.op_type = "FusedConv";
  d.attrs.erase("channels_last");
  store_absorbed(fused, d, kind, prefix);
}
Node load_conv(const Node& fused, const std::string& kind, const std::string& prefix) {
  Node d = load_absorbed(fused, kind, prefix);
  d.domain = "aotc";
  d.attrs["channels_last"] = Attribute::of_int(1);
  return d;
}
void erase_absorbed(Node& fused, const std::string& kind, const std::string& prefix) {
  for (auto it = fused.attrs.begin(); it != fused.attrs.end();)
    it = it->first == kind || it->first.compare(0, prefix.size(), prefix) == 0 ? fused.attrs.erase(it) : std::next(it);
}
}  // namespace

void store_pool(Node& fused, const Node& pool) { store_absorbed(fused, pool, "pool", kPoolPrefix); }
bool has_pool(const Node& fused) { return !fused.attr_string("pool", "").empty(); }
Node load_pool(const Node& fused) { return load_absorbed(fused, "pool", kPoolPrefix); }

void store_quantize(Node& fused, const AbsorbedQuantize& q) {
  fused.attrs["quantize"] = Attribute::of_string("QuantizeLinear");
  fused.attrs["quantize.scale"] = Attribute::of_float(q.scale);
  fused.attrs["quantize.zero_point"] = Attribute::of_int(q.zero_point);
  fused.attrs["quantize.dtype"] = Attribute::of_int(static_cast<int64_t>(q.dtype));
}
bool has_quantize(const Node& fused) { return !fused.attr_string("quantize", "").empty(); }
AbsorbedQuantize load_quantize(const Node& fused) {
  AbsorbedQuantize q;
  q.scale = fused.attr_float("quantize.scale", 1.0f);
  q.zero_point = fused.attr_int("quantize.zero_point", 0);
  q.dtype = static_cast<DType>(fused.attr_int("quantize.dtype", static_cast<int64_t>(DType::kInt8)));
  return q;
}
Node without_quantize(const Node& fused) {
  Node n = fused;
  erase_absorbed(n, "quantize", "quantize.");
  return n;
}

void store_depthwise(Node& fused, const Node& depthwise) { store_conv(fused, depthwise, "depthwise", kDepthwisePrefix); }
Node load_depthwise(const Node& fused) { return load_conv(fused, "depthwise", kDepthwisePrefix); }
void erase_depthwise(Node& fused) { erase_absorbed(fused, "depthwise", kDepthwisePrefix); }

void store_next(Node& fused, const Node& next) { store_conv(fused, next, "next", kNextPrefix); }
Node load_next(const Node& fused) { return load_conv(fused, "next", kNextPrefix); }
void erase_next(Node& fused) { erase_absorbed(fused, "next", kNextPrefix); }
Node load_own_conv(const Node& fused) {
  Node n;
  n.name = fused.name;
  n.op_type = "FusedConv";
  n.domain = "aotc";
  n.attrs = fused.attrs;
  erase_depthwise(n);
  erase_next(n);
  n.attrs["channels_last"] = Attribute::of_int(1);
  return n;
}

void store_activation(Node& fused, const Node& activation) { store_absorbed(fused, activation, "activation", kPrefix); }
bool has_activation(const Node& fused) { return !fused.attr_string("activation", "").empty(); }
Node load_activation(const Node& fused) { return load_absorbed(fused, "activation", kPrefix); }

namespace {
std::string expr_of(const Node& act, const Graph& graph, const std::string& x) {
  const OpDef* def = default_registry().find(act.op_type);
  if (!def || !def->scalar_expr) return x;  // the fusion passes only absorb ops that have one
  return def->scalar_expr(act, graph, x);
}
Status reference_of(const Node& fused, const Node& act, Tensor& tensor) {
  const OpDef* def = default_registry().find(act.op_type);
  if (!def) return node_error(fused, "unknown absorbed activation '" + escape_for_message(act.op_type) + "'");
  std::vector<const Tensor*> in = {&tensor};
  std::vector<Tensor> out = {Tensor(tensor.dtype(), tensor.shape())};
  AOTC_RETURN_IF_ERROR(def->reference(act, in, out));
  tensor = std::move(out[0]);
  return Status::ok();
}
}  // namespace

std::string activation_expr(const Node& fused, const Graph& graph, const std::string& x) {
  return has_activation(fused) ? expr_of(load_activation(fused), graph, x) : x;
}

Status apply_activation_reference(const Node& fused, Tensor& tensor) {
  return has_activation(fused) ? reference_of(fused, load_activation(fused), tensor) : Status::ok();
}

void store_input_activation(Node& fused, const Node& activation) {
  store_absorbed(fused, activation, "input_activation", kInputPrefix);
}
bool has_input_activation(const Node& fused) { return !fused.attr_string("input_activation", "").empty(); }
Node load_input_activation(const Node& fused) { return load_absorbed(fused, "input_activation", kInputPrefix); }
std::string input_activation_expr(const Node& fused, const Graph& graph, const std::string& x) {
  return has_input_activation(fused) ? expr_of(load_input_activation(fused), graph, x) : x;
}
Status apply_input_activation_reference(const Node& fused, Tensor& tensor) {
  return has_input_activation(fused) ? reference_of(fused, load_input_activation(fused), tensor) : Status::ok();
}

}  // namespace aotc

namespace aotc {

namespace {
// The checks of one absorbed activation, `act` (loaded from its attributes; `what` names it in the
// messages: "activation" / "input activation"). An output activation must be a registered op; an
// input activation, which the depthwise kernels apply while staging, an epilogue activation.
Status check_absorbed_known(const Node& node, const Node& act, const std::string& what, bool need_epilogue_trait) {
  const OpDef* def = default_registry().find(act.op_type);
  if (!def) return node_error(node, "absorbed " + what + " '" + escape_for_message(act.op_type) + "' is unknown");
  if (need_epilogue_trait && !def->traits.epilogue_activation)
    return node_error(node, "absorbed " + what + " '" + escape_for_message(act.op_type) +
                                "' is not a unary epilogue activation");
  return Status::ok();
}
Status check_absorbed_lowerable(const Node& node, const Node& act, const std::string& what) {
  const OpDef* def = default_registry().find(act.op_type);
  if (!def || !def->scalar_expr)
    return node_error(node, "absorbed " + what + " '" + escape_for_message(act.op_type) + "' has no CUDA expression");
  return Status::ok();
}
}  // namespace

Status check_activation_known(const Node& node, const Node& fused) {
  if (has_activation(fused))
    AOTC_RETURN_IF_ERROR(check_absorbed_known(node, load_activation(fused), "activation", /*need_epilogue_trait=*/false));
  if (has_input_activation(fused))
    AOTC_RETURN_IF_ERROR(check_absorbed_known(node, load_input_activation(fused), "input activation", true));
  return Status::ok();
}

bool epilogue_may_absorb(const Graph& graph, const Node& act, bool anchor_is_gemm) {
  const OpDef* def = default_registry().find(act.op_type, act.domain);
  if (!def || !def->traits.epilogue_activation || !def->scalar_expr || act.inputs.size() != 1) return false;
  if (anchor_is_gemm && def->traits.epilogue_not_on_gemm) return false;
  for (const std::string& op : graph.target.epilogue_excluded)
    if (op == act.op_type) return false;
  return true;
}

bool conv_runs_as_gemm(const Graph& graph, const Node& conv) {
  if (conv.inputs.size() < 2 || conv.input(1) == kNoValue || conv.attr_int("group", 1) != 1) return false;
  const Shape& w = graph.value(conv.inputs[1]).shape;
  if (w.size() < 3) return false;
  for (size_t i = 2; i < w.size(); ++i)
    if (w[i] != 1) return false;
  if (conv.has_attr("strides"))
    for (int64_t s : conv.attr_ints("strides"))
      if (s != 1) return false;
  if (conv.has_attr("pads"))
    for (int64_t p : conv.attr_ints("pads"))
      if (p != 0) return false;
  return true;
}

bool gemm_activation_changes_kernel(const Graph& graph) { return graph.target.gemm_wgmma; }

Status check_activation_lowerable(const Node& node, const Node& fused) {
  if (has_input_activation(fused))
    AOTC_RETURN_IF_ERROR(check_absorbed_lowerable(node, load_input_activation(fused), "input activation"));
  if (has_activation(fused)) AOTC_RETURN_IF_ERROR(check_absorbed_lowerable(node, load_activation(fused), "activation"));
  return Status::ok();
}

}  // namespace aotc
