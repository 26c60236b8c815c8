// Control flow known at compile time, inlined while importing (issue 9): an If whose condition
// folds to a constant becomes its taken branch; a Loop with a constant trip count (or a condition
// that folds to a constant in every iteration) and a Scan (opset 9+, static sequence length) are
// unrolled, one copy of the body per iteration, scan outputs stacked with Unsqueeze + Concat.
// Everything else is refused with one line naming the node, op and reason. Unrolling is bounded
// by ImportLimits::max_loop_iterations and max_unrolled_nodes (docs/reliability.md, Limits).
#include <algorithm>
#include <unordered_set>

#include "frontend/onnx_attributes.h"
#include "frontend/onnx_importer.h"
#include "ir/constant_folding.h"
#include "ir/shape_inference.h"

namespace aotc {
namespace {

const onnx::GraphProto* graph_attribute(const onnx::NodeProto& proto, const std::string& name) {
  for (const auto& a : proto.attribute())
    if (a.name() == name && (a.type() == onnx::AttributeProto::GRAPH ||
                             (a.type() == onnx::AttributeProto::UNDEFINED && a.has_g())))
      return &a.g();
  return nullptr;
}

// The one element of a constant condition / trip count.
bool truth(const Value& v) { return v.constant->get(0) != 0; }

Tensor bool_scalar(bool b) {
  Tensor t(DType::kBool, {});
  t.set(0, b ? 1.0 : 0.0);
  return t;
}

// The prefix of the names a copy of a subgraph creates: the control-flow node's name (its first
// output's when it has none) and the part ("then", "iter3").
std::string copy_prefix(const onnx::NodeProto& proto, const Scope& scope, const std::string& part) {
  const std::string& base = proto.name().empty() ? proto.output(0) : proto.name();
  return scope.prefix + base + "/" + part + "/";
}

}  // namespace

Status Importer::charge_unrolled(const Node& node, int64_t body_nodes, int64_t iterations) {
  const int64_t cap = options_.limits.max_unrolled_nodes;
  const int64_t room = cap - unrolled_nodes_;
  if (body_nodes > 0 && iterations > room / body_nodes)
    return node_error(node, "unrolling " + std::to_string(iterations) + " iterations of a " +
                                std::to_string(body_nodes) + "-node body would take the unrolled subgraph nodes past " +
                                std::to_string(cap) + ", the limit (docs/reliability.md, Limits)");
  return Status::ok();
}

Status Importer::import_subgraph_nodes(const onnx::GraphProto& body, Scope& scope, const Node& owner,
                                       const std::string& what) {
  Status limits = check_limits(body, options_.limits);
  if (!limits.is_ok()) return node_error(owner, what + ": " + limits.message());
  AOTC_RETURN_IF_ERROR(charge_unrolled(owner, body.node_size(), 1));
  unrolled_nodes_ += body.node_size();
  if (body.sparse_initializer_size() > 0) return node_error(owner, what + ": sparse initializers are not supported");
  for (const auto& init : body.initializer()) {
    Status s = import_initializer(init, scope);
    if (!s.is_ok()) return node_error(owner, what + ": " + s.message());
  }
  for (const auto& n : body.node()) AOTC_RETURN_IF_ERROR(import_node(n, scope));
  return Status::ok();
}

Status Importer::define_results(const onnx::NodeProto& proto, const Node& node, Scope& scope,
                                const std::vector<ValueId>& results, size_t first_new_value) {
  std::unordered_set<ValueId> renamed;
  for (int k = 0; k < proto.output_size(); ++k) {
    const std::string& out = proto.output(k);
    if (out.empty()) continue;
    const ValueId v = results[static_cast<size_t>(k)];
    if (static_cast<size_t>(v) >= first_new_value && renamed.insert(v).second) {
      // Made by this node's subgraph: it takes the output's name (the C ABI names graph outputs).
      invented_.erase(graph_.value(v).name);
      if (scope.is_model_graph()) {
        claim_name(out);
        graph_.value(v).name = out;
      } else {
        const std::string name = fresh_name(scope.prefix + out);
        graph_.value(v).name = name;
        invented_[name] = v;
      }
      define(scope, out, v);
      continue;
    }
    // An outer value, or one already named by another output: an Identity (a view) carries it.
    Node copy;
    copy.name = node.name;
    copy.op_type = "Identity";
    copy.inputs = {v};
    copy.outputs = {new_output_value(scope, out)};
    const ValueId id = copy.outputs[0];
    AOTC_RETURN_IF_ERROR(add_node(std::move(copy)));
    define(scope, out, id);
  }
  return Status::ok();
}

Status Importer::import_control_flow(const onnx::NodeProto& proto, Node& node, Scope& scope) {
  if (proto.output_size() == 0) return node_error(node, "has no outputs");
  // The plain attributes (Scan's axes ...) through the usual conversion; graphs are read here.
  onnx::NodeProto plain;
  plain.set_name(proto.name());
  plain.set_op_type(proto.op_type());
  for (const auto& a : proto.attribute())
    if (a.type() != onnx::AttributeProto::GRAPH && !(a.type() == onnx::AttributeProto::UNDEFINED && a.has_g()))
      *plain.add_attribute() = a;
  AOTC_RETURN_IF_ERROR(convert_attributes(plain, base_dir_, node));
  if (node.op_type == "If") return import_if(proto, node, scope);
  if (node.op_type == "Loop") return import_loop(proto, node, scope);
  return import_scan(proto, node, scope);
}

Status Importer::import_if(const onnx::NodeProto& proto, Node& node, Scope& scope) {
  const onnx::GraphProto* then_branch = graph_attribute(proto, "then_branch");
  const onnx::GraphProto* else_branch = graph_attribute(proto, "else_branch");
  if (!then_branch || !else_branch) return node_error(node, "needs the graph attributes then_branch and else_branch");
  if (!node.attrs.empty()) return node_error(node, "has attributes other than then_branch and else_branch");
  if (node.inputs.size() != 1 || node.inputs[0] == kNoValue)
    return node_error(node, "expects 1 input (the condition), got " + std::to_string(proto.input_size()));
  const Value& cond = graph_.value(node.inputs[0]);
  if (!cond.is_constant())
    return node_error(node, "condition " + quoted(proto.input(0)) +
                                " is not known at compile time; aotc compiles If only when its condition folds to a constant");
  if (cond.numel() != 1)
    return node_error(node, "condition " + quoted(proto.input(0)) + " has shape " + shape_str(cond.shape) +
                                "; it must have one element");
  const bool taken = truth(cond);
  const onnx::GraphProto& branch = taken ? *then_branch : *else_branch;
  const std::string which = taken ? "then_branch" : "else_branch";
  if (branch.input_size() != 0) return node_error(node, which + " has inputs; an If branch takes none");
  if (branch.output_size() != proto.output_size())
    return node_error(node, which + " has " + std::to_string(branch.output_size()) + " outputs, the node " +
                                std::to_string(proto.output_size()));
  Scope inner;
  inner.parent = &scope;
  inner.prefix = copy_prefix(proto, scope, taken ? "then" : "else");
  const size_t first_new = graph_.values.size();
  AOTC_RETURN_IF_ERROR(import_subgraph_nodes(branch, inner, node, which));
  std::vector<ValueId> results;
  for (const auto& out : branch.output()) {
    const ValueId v = inner.find(out.name());
    if (v == kNoValue) return node_error(node, which + " output " + quoted(out.name()) + " is not produced by any node");
    results.push_back(v);
  }
  return define_results(proto, node, scope, results, first_new);
}

// The per-iteration values `parts` stacked along a new axis `axis` (Unsqueeze each, Concat), in
// reverse order when `reverse`. Values of the unrolled node's own.
Expected<ValueId> Importer::stack_parts(const Node& owner, std::vector<ValueId> parts, int64_t axis,
                                        bool reverse, const std::string& base) {
  if (reverse) std::reverse(parts.begin(), parts.end());
  std::vector<ValueId> rows;
  for (ValueId p : parts) {
    Node u;
    u.name = owner.name;
    u.op_type = "Unsqueeze";
    // Numbered names: fresh_name's search stays one step per part.
    const std::string row = base + "_row" + std::to_string(rows.size());
    const ValueId axes = graph_.add_constant(fresh_name(row + "_axes"), Tensor::from_int64s({1}, {axis}));
    u.inputs = {p, axes};
    u.outputs = {graph_.add_value(fresh_name(row))};
    rows.push_back(u.outputs[0]);
    AOTC_RETURN_IF_ERROR(add_node(std::move(u)));
  }
  if (rows.size() == 1) return rows[0];
  Node cat;
  cat.name = owner.name;
  cat.op_type = "Concat";
  cat.attrs.emplace("axis", Attribute::of_int(axis));
  cat.inputs = rows;
  cat.outputs = {graph_.add_value(fresh_name(base))};
  const ValueId id = cat.outputs[0];
  AOTC_RETURN_IF_ERROR(add_node(std::move(cat)));
  return id;
}

Status Importer::import_loop(const onnx::NodeProto& proto, Node& node, Scope& scope) {
  const onnx::GraphProto* body = graph_attribute(proto, "body");
  if (!body) return node_error(node, "needs the graph attribute body");
  if (!node.attrs.empty()) return node_error(node, "has attributes other than body");
  if (proto.input_size() < 2) return node_error(node, "expects at least 2 inputs (M, cond), got " + std::to_string(proto.input_size()));
  const size_t carried_count = node.inputs.size() - 2;
  if (static_cast<size_t>(proto.output_size()) < carried_count)
    return node_error(node, "has " + std::to_string(carried_count) + " loop-carried inputs but only " +
                                std::to_string(proto.output_size()) + " outputs");
  const size_t scan_count = static_cast<size_t>(proto.output_size()) - carried_count;
  if (static_cast<size_t>(body->input_size()) != 2 + carried_count ||
      static_cast<size_t>(body->output_size()) != 1 + carried_count + scan_count)
    return node_error(node, "body has " + std::to_string(body->input_size()) + " inputs and " +
                                std::to_string(body->output_size()) + " outputs; the node's inputs and outputs ask for " +
                                std::to_string(2 + carried_count) + " and " + std::to_string(1 + carried_count + scan_count));
  for (size_t j = 0; j < carried_count; ++j)
    if (node.inputs[2 + j] == kNoValue) return node_error(node, "loop-carried input " + std::to_string(2 + j) + " is empty");
  const ValueId m = node.inputs[0], c = node.inputs[1];
  if (m == kNoValue && c == kNoValue)
    return node_error(node, "has neither a trip count nor a condition: it never ends");
  if (m != kNoValue && (!graph_.value(m).is_constant() || graph_.value(m).numel() != 1))
    return node_error(node, "trip count " + quoted(proto.input(0)) +
                                " is not known at compile time; aotc compiles Loop only with a constant trip count "
                                "(or a condition that folds to a constant in every iteration)");
  if (c != kNoValue && (!graph_.value(c).is_constant() || graph_.value(c).numel() != 1))
    return node_error(node, "condition " + quoted(proto.input(1)) +
                                " is not known at compile time; aotc compiles Loop only when it ends at a compile-time iteration");
  const int64_t trip = m == kNoValue ? INT64_MAX : graph_.value(m).constant->get_int(0);
  const int64_t max_iterations = options_.limits.max_loop_iterations;
  // With a condition the loop may end sooner: then the iteration cap is checked as it unrolls.
  if (c == kNoValue && trip > max_iterations)
    return node_error(node, "trip count " + std::to_string(trip) + " is over the limit of " +
                                std::to_string(max_iterations) + " unrolled iterations (docs/reliability.md, Limits)");
  if (trip <= max_iterations) AOTC_RETURN_IF_ERROR(charge_unrolled(node, body->node_size(), std::max<int64_t>(trip, 0)));

  std::vector<ValueId> carried(node.inputs.begin() + 2, node.inputs.end());
  std::vector<std::vector<ValueId>> scans(scan_count);
  bool go_on = c == kNoValue || truth(graph_.value(c));
  const size_t first_new = graph_.values.size();
  int64_t i = 0;
  for (; i < trip && go_on; ++i) {
    if (i == max_iterations)
      return node_error(node, "runs more than " + std::to_string(max_iterations) +
                                  " iterations, the limit of unrolled iterations (docs/reliability.md, Limits)");
    Scope it;
    it.parent = &scope;
    it.prefix = copy_prefix(proto, scope, "iter" + std::to_string(i));
    const std::string& iter_name = body->input(0).name();
    const std::string& cond_name = body->input(1).name();
    define(it, iter_name, graph_.add_constant(fresh_name(it.prefix + iter_name), Tensor::scalar_int64(i)));
    define(it, cond_name, graph_.add_constant(fresh_name(it.prefix + cond_name), bool_scalar(true)));
    for (size_t j = 0; j < carried_count; ++j) define(it, body->input(static_cast<int>(2 + j)).name(), carried[j]);
    AOTC_RETURN_IF_ERROR(import_subgraph_nodes(*body, it, node, "body"));
    std::vector<ValueId> outs;
    for (const auto& out : body->output()) {
      const ValueId v = it.find(out.name());
      if (v == kNoValue) return node_error(node, "body output " + quoted(out.name()) + " is not produced by any node");
      outs.push_back(v);
    }
    // Without a cond input the body's condition output is ignored (a for loop; Operators.md).
    if (c != kNoValue) {
      const Value& cond_out = graph_.value(outs[0]);
      if (!cond_out.is_constant() || cond_out.numel() != 1)
        return node_error(node, "the body's condition output " + quoted(body->output(0).name()) +
                                    " is not known at compile time (the loop ends on data); aotc unrolls Loop only "
                                    "when its end is known at compile time");
      go_on = truth(cond_out);
    }
    for (size_t j = 0; j < carried_count; ++j) carried[j] = outs[1 + j];
    for (size_t k = 0; k < scan_count; ++k) scans[k].push_back(outs[1 + carried_count + k]);
  }
  std::vector<ValueId> results = carried;
  for (size_t k = 0; k < scan_count; ++k) {
    if (scans[k].empty())
      return node_error(node, "runs no iteration; the shape of its scan output " + quoted(proto.output(static_cast<int>(carried_count + k))) +
                                  " is unknown");
    Expected<ValueId> stacked = stack_parts(node, scans[k], 0, false,
                                            copy_prefix(proto, scope, "scan" + std::to_string(k)) + "stacked");
    if (!stacked) return stacked.status();
    results.push_back(*stacked);
  }
  return define_results(proto, node, scope, results, first_new);
}

Status Importer::import_scan(const onnx::NodeProto& proto, Node& node, Scope& scope) {
  if (graph_.opset < 9)
    return node_error(node, "Scan before opset 9 (batched, with a sequence_lens input) is not supported; aotc "
                            "compiles the opset-9 form");
  const onnx::GraphProto* body = graph_attribute(proto, "body");
  if (!body) return node_error(node, "needs the graph attribute body");
  if (!node.has_attr("num_scan_inputs")) return node_error(node, "needs the attribute num_scan_inputs");
  for (const auto& kv : node.attrs)
    if (kv.first != "num_scan_inputs" && kv.first != "scan_input_axes" && kv.first != "scan_input_directions" &&
        kv.first != "scan_output_axes" && kv.first != "scan_output_directions")
      return node_error(node, "unknown attribute '" + escape_for_message(kv.first, 60) + "'");
  const int64_t scan_inputs = node.attr_int("num_scan_inputs", 0);
  if (scan_inputs < 1 || scan_inputs > static_cast<int64_t>(node.inputs.size()))
    return node_error(node, "num_scan_inputs is " + std::to_string(scan_inputs) + "; the node has " +
                                std::to_string(node.inputs.size()) + " inputs");
  const size_t m_in = static_cast<size_t>(scan_inputs);
  const size_t n_state = node.inputs.size() - m_in;
  if (static_cast<size_t>(proto.output_size()) < n_state)
    return node_error(node, "has " + std::to_string(n_state) + " state inputs but only " +
                                std::to_string(proto.output_size()) + " outputs");
  const size_t k_out = static_cast<size_t>(proto.output_size()) - n_state;
  if (static_cast<size_t>(body->input_size()) != n_state + m_in ||
      static_cast<size_t>(body->output_size()) != n_state + k_out)
    return node_error(node, "body has " + std::to_string(body->input_size()) + " inputs and " +
                                std::to_string(body->output_size()) + " outputs; the node's inputs and outputs ask for " +
                                std::to_string(n_state + m_in) + " and " + std::to_string(n_state + k_out));
  for (ValueId v : node.inputs)
    if (v == kNoValue) return node_error(node, "an input is empty");
  auto list = [&](const char* key, size_t n) -> Expected<std::vector<int64_t>> {
    std::vector<int64_t> v = node.attr_ints(key, std::vector<int64_t>(n, 0));
    if (v.size() != n)
      return node_error(node, std::string(key) + " has " + std::to_string(v.size()) + " entries; expected " + std::to_string(n));
    return v;
  };
  auto in_axes = list("scan_input_axes", m_in), in_dirs = list("scan_input_directions", m_in);
  auto out_axes = list("scan_output_axes", k_out), out_dirs = list("scan_output_directions", k_out);
  for (auto* e : {&in_axes, &in_dirs, &out_axes, &out_dirs})
    if (!*e) return e->status();
  for (auto* d : {&*in_dirs, &*out_dirs})
    for (int64_t x : *d)
      if (x != 0 && x != 1) return node_error(node, "a direction is " + std::to_string(x) + "; it must be 0 or 1");
  int64_t length = -1;
  for (size_t j = 0; j < m_in; ++j) {
    const Value& x = graph_.value(node.inputs[n_state + j]);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    int64_t& a = (*in_axes)[j];
    if (a < -rank || a >= rank)
      return node_error(node, "scan_input_axes[" + std::to_string(j) + "] is " + std::to_string(a) +
                                  " for an input of rank " + std::to_string(rank));
    if (a < 0) a += rank;
    const int64_t len = x.shape[static_cast<size_t>(a)];
    if (length >= 0 && len != length)
      return node_error(node, "scan inputs have sequence lengths " + std::to_string(length) + " and " + std::to_string(len));
    length = len;
  }
  if (length == 0) return node_error(node, "sequence length is 0; the shapes of its scan outputs are unknown");
  if (length > options_.limits.max_loop_iterations)
    return node_error(node, "sequence length " + std::to_string(length) + " is over the limit of " +
                                std::to_string(options_.limits.max_loop_iterations) +
                                " unrolled iterations (docs/reliability.md, Limits)");
  AOTC_RETURN_IF_ERROR(charge_unrolled(node, body->node_size(), length));

  std::vector<ValueId> state(node.inputs.begin(), node.inputs.begin() + static_cast<long>(n_state));
  std::vector<std::vector<ValueId>> scans(k_out);
  const size_t first_new = graph_.values.size();
  for (int64_t t = 0; t < length; ++t) {
    Scope it;
    it.parent = &scope;
    it.prefix = copy_prefix(proto, scope, "iter" + std::to_string(t));
    for (size_t j = 0; j < n_state; ++j) define(it, body->input(static_cast<int>(j)).name(), state[j]);
    for (size_t j = 0; j < m_in; ++j) {
      const std::string& name = body->input(static_cast<int>(n_state + j)).name();
      Node g;
      g.name = node.name;
      g.op_type = "Gather";
      g.attrs.emplace("axis", Attribute::of_int((*in_axes)[j]));
      const int64_t index = (*in_dirs)[j] ? length - 1 - t : t;
      g.inputs = {node.inputs[n_state + j],
                  graph_.add_constant(fresh_name(it.prefix + name + "_index"), Tensor::scalar_int64(index))};
      g.outputs = {graph_.add_value(fresh_name(it.prefix + name))};
      define(it, name, g.outputs[0]);
      AOTC_RETURN_IF_ERROR(add_node(std::move(g)));
    }
    AOTC_RETURN_IF_ERROR(import_subgraph_nodes(*body, it, node, "body"));
    for (size_t o = 0; o < n_state + k_out; ++o) {
      const ValueId v = it.find(body->output(static_cast<int>(o)).name());
      if (v == kNoValue)
        return node_error(node, "body output " + quoted(body->output(static_cast<int>(o)).name()) + " is not produced by any node");
      if (o < n_state) state[o] = v;
      else scans[o - n_state].push_back(v);
    }
  }
  std::vector<ValueId> results = state;
  for (size_t k = 0; k < k_out; ++k) {
    const int64_t rank = static_cast<int64_t>(graph_.value(scans[k][0]).shape.size()) + 1;
    int64_t a = (*out_axes)[k];
    if (a < -rank || a >= rank)
      return node_error(node, "scan_output_axes[" + std::to_string(k) + "] is " + std::to_string(a) +
                                  " for an output of rank " + std::to_string(rank));
    if (a < 0) a += rank;
    Expected<ValueId> stacked = stack_parts(node, scans[k], a, (*out_dirs)[k] != 0,
                                            copy_prefix(proto, scope, "scan" + std::to_string(k)) + "stacked");
    if (!stacked) return stacked.status();
    results.push_back(*stacked);
  }
  return define_results(proto, node, scope, results, first_new);
}

}  // namespace aotc
