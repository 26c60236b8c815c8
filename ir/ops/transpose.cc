// Transpose: out[i_0..i_r] = in[i at perm]; perm defaults to reversed dims; any rank and dtype.
// The lowering collapses dims that stay adjacent (NCHW->NHWC becomes a batched [C, HW] swap);
// a batched swap of the last two dims uses a shared-memory tiled kernel, anything else a gather
// through compile-time strides.
#include <algorithm>
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

std::vector<int64_t> perm_of(const Node& node, int64_t rank) {
  if (node.has_attr("perm")) return node.attr_ints("perm");
  std::vector<int64_t> p(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) p[static_cast<size_t>(i)] = rank - 1 - i;
  return p;
}

Status transpose_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& x = input_value(graph, node, 0);
  if (x.dtype == DType::kString || x.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + ", which aotc does not store");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> perm = perm_of(node, rank);
  if (static_cast<int64_t>(perm.size()) != rank)
    return node_error(node, "perm has " + std::to_string(perm.size()) + " entries for an input of rank " +
                                std::to_string(rank));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  Shape out(static_cast<size_t>(rank));
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t p = perm[i];
    // ONNX's checker forbids negative perm entries; we refuse rather than guess.
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)])
      return node_error(node, "perm is not a permutation of 0.." + std::to_string(rank - 1) +
                                  " (entry " + std::to_string(i) + " is " + std::to_string(p) + ")");
    seen[static_cast<size_t>(p)] = true;
    out[i] = x.shape[static_cast<size_t>(p)];
  }
  set_output(graph, node, 0, x.dtype, out);
  return Status::ok();
}

// Input element strides seen from each output dim.
std::vector<int64_t> permuted_strides(const Shape& in_shape, const std::vector<int64_t>& perm) {
  std::vector<int64_t> in_strides = shape_strides(in_shape);
  std::vector<int64_t> s(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) s[i] = in_strides[static_cast<size_t>(perm[i])];
  return s;
}

Status transpose_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                           std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  std::vector<int64_t> perm = perm_of(node, x.rank());
  std::vector<int64_t> src_strides = permuted_strides(x.shape(), perm);
  std::vector<int64_t> out_strides = shape_strides(y.shape());
  size_t elem = static_cast<size_t>(dtype_size(y.dtype()));
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < out_strides.size(); ++d)
      src += (i / out_strides[d]) % y.shape()[d] * src_strides[d];
    std::memcpy(y.raw() + i * static_cast<int64_t>(elem), x.raw() + src * static_cast<int64_t>(elem), elem);
  }
  return Status::ok();
}

Expected<Lowering> transpose_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  std::vector<int64_t> perm = perm_of(node, static_cast<int64_t>(x.shape.size()));
  StridedLayout layout = collapse_layout(StridedLayout{y.shape, {permuted_strides(x.shape, perm)}});
  const Shape& d = layout.dims;
  const std::vector<int64_t>& st = layout.strides[0];
  size_t r = d.size();
  KernelStep k;
  std::string comment = "Transpose " + shape_str(x.shape) + " -> " + shape_str(y.shape) + " " + dtype_name(y.dtype);
  // Output [batch, A, B] reading input [batch, B, A]: the output's second-last dim walks the
  // input contiguously and the last dim jumps by A.
  bool swap_last_two = r >= 2 && r <= 3 && st[r - 2] == 1 && st[r - 1] == d[r - 2] &&
                       (r == 2 || st[0] == d[1] * d[2]) && (d[r - 1] + 31) / 32 <= 65535;
  if (swap_last_two) {
    int64_t batch = r == 3 ? d[0] : 1, rows = d[r - 1], cols = d[r - 2];
    k.template_name = "transpose_tiled";
    k.holes = {{"T", bits_c_type(y.dtype)}, {"batch", int_literal(batch)}, {"rows", int_literal(rows)},
               {"cols", int_literal(cols)}, {"comment", comment}};
    k.block = Dim3{32, 8, 1};
    k.grid = Dim3{(cols + 31) / 32, (rows + 31) / 32, std::min<int64_t>(batch, 65535)};
  } else {
    k.template_name = "transpose";
    k.holes = {{"T", bits_c_type(y.dtype)},
               {"I", index_type_for(y.numel())},
               {"rank", std::to_string(r)},
               {"dims", dims_literal(d)},
               {"in_strides", dims_literal(st)},
               {"numel", int_literal(y.numel())},
               {"comment", comment}};
    k.block = Dim3{256, 1, 1};
    k.grid = grid_for(y.numel(), 256);
  }
  k.args = {node.inputs[0], node.outputs[0]};
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_transpose_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Transpose";
  def.infer = transpose_infer;
  def.reference = transpose_reference;
  def.lower = transpose_lower;
  registry.add(def);
}

}  // namespace aotc
