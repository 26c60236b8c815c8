// BitCast-26: the input's bits reinterpreted as the `to` type of the same bit width (same shape).
// On the GPU a view (no kernel; codegen copies only where the output is a graph output); on the
// CPU the bytes are copied. Sub-16-bit types (ir/small_dtypes.h) are stored one per byte, so a
// 4-/2-bit pattern is re-read from the low bits (int4 <-> uint4 <-> float4e2m1); they stay CPU-only.
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/small_dtypes.h"

namespace aotc {
namespace {

Status bit_cast_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  if (!node.has_attr("to")) return node_error(node, "missing attribute 'to'");
  const int64_t to = node.attr_int("to", 0);
  const Value& x = input_value(graph, node, 0);
  if (x.dtype == DType::kString || dtype_size(x.dtype) == 0)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + ", which aotc does not store");
  if (!dtype_is_known(static_cast<int32_t>(to)) || to == static_cast<int64_t>(DType::kString))
    return node_error(node, "target type " + std::to_string(to) + " is not supported");
  const DType t = static_cast<DType>(to);
  if (dtype_storage_bits(t) != dtype_storage_bits(x.dtype))
    return node_error(node, "target " + dtype_name(t) + " has " + std::to_string(dtype_storage_bits(t)) +
                                " bits, the input's " + dtype_name(x.dtype) + " has " +
                                std::to_string(dtype_storage_bits(x.dtype)));
  set_output(graph, node, 0, t, x.shape);
  return Status::ok();
}

Status bit_cast_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  if (x.byte_size() != y.byte_size()) return node_error(node, "output does not match the input's bytes");
  const int64_t bits = dtype_storage_bits(y.dtype());
  if (bits >= 8) {
    if (x.byte_size() > 0) std::memcpy(y.raw(), x.raw(), static_cast<size_t>(x.byte_size()));
    return Status::ok();
  }
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const uint8_t pattern = x.raw()[i] & mask;
    y.raw()[i] = dtype_is_small_int(y.dtype()) ? static_cast<uint8_t>(small_int_wrap(y.dtype(), pattern)) : pattern;
  }
  return Status::ok();
}

Expected<Lowering> bit_cast_lower(const Node&, const Graph&) {
  Lowering l;
  l.is_view = true;  // same bytes, another dtype (the small types were refused before lowering)
  return l;
}

}  // namespace

void register_bit_cast_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "BitCast";
  def.infer = bit_cast_infer;
  def.reference = bit_cast_reference;
  def.lower = bit_cast_lower;
  registry.add(def);
}

}  // namespace aotc
