// Trilu: keeps the upper (upper=1, default) or lower triangle of the last two dims, shifted by
// the diagonal offset k (optional int64 scalar input 1, default 0; must be a constant: it is
// compiled into the kernel), and zeroes the rest. Any dtype.
#include <algorithm>
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

Status trilu_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& x = input_value(graph, node, 0);
  if (x.dtype == DType::kString || x.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + ", which aotc does not store");
  if (x.shape.size() < 2) return node_error(node, "input 0 must have rank >= 2, it has " + std::to_string(x.shape.size()));
  int64_t upper = node.attr_int("upper", 1);
  if (upper != 0 && upper != 1) return node_error(node, "upper must be 0 or 1");
  if (node.input(1) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
    if (input_value(graph, node, 1).numel() != 1) return node_error(node, "k must be a scalar");
    Expected<const Tensor*> k = expect_constant(node, graph, 1, "the diagonal offset is compiled into the kernel");
    if (!k) return k.status();
  }
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

bool keep(int64_t r, int64_t c, int64_t k, bool upper) { return upper ? c - r >= k : c - r <= k; }

Status trilu_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  const int64_t k = inputs.size() > 1 && inputs[1] ? inputs[1]->get_int(0) : 0;
  const bool upper = node.attr_int("upper", 1) != 0;
  const int64_t rows = x.shape()[x.shape().size() - 2], cols = x.shape().back();
  const int64_t elem = dtype_size(x.dtype());
  for (int64_t i = 0; i < x.numel(); ++i)
    if (keep((i / cols) % rows, i % cols, k, upper))
      std::memcpy(y.raw() + i * elem, x.raw() + i * elem, static_cast<size_t>(elem));  // others stay zero
  return Status::ok();
}

Expected<Lowering> trilu_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering l;
  if (x.numel() == 0) return l;
  int64_t k = 0;
  if (node.input(1) != kNoValue) {
    const Value& kv = graph.value(node.inputs[1]);
    if (!kv.constant) return node_error(node, "k must be a constant");
    k = kv.constant->get_int(0);
  }
  // Clamp k into a range that decides every element the same way, so the literal stays small.
  const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  k = std::max<int64_t>(-rows - 1, std::min<int64_t>(k, cols + 1));
  KernelStep ks;
  ks.template_name = "trilu";
  ks.holes = {{"T", bits_c_type(x.dtype)},
              {"I", index_type_for(x.numel())},
              {"rows", int_literal(rows)},
              {"cols", int_literal(cols)},
              {"k", int_literal(k)},
              {"upper", node.attr_int("upper", 1) ? "true" : "false"},
              {"numel", int_literal(x.numel())},
              {"comment", std::string("Trilu ") + (node.attr_int("upper", 1) ? "upper" : "lower") + " k=" +
                              std::to_string(k) + " " + shape_str(x.shape) + " " + dtype_name(x.dtype)}};
  ks.args = {node.inputs[0], node.outputs[0]};
  ks.block = Dim3{256, 1, 1};
  ks.grid = grid_for(x.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, ks, {}});
  return l;
}

}  // namespace

void register_trilu_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Trilu";
  def.infer = trilu_infer;
  def.reference = trilu_reference;
  def.lower = trilu_lower;
  registry.add(def);
}

}  // namespace aotc
