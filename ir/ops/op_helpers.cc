// Shared op checks (see op_helpers.h).
#include "ir/ops/op_helpers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace aotc {

const Shape* optional_input_shape(const Graph& graph, const Node& node, size_t index) {
  return node.input(index) == kNoValue ? nullptr : &graph.value(node.inputs[index]).shape;
}

std::vector<const Shape*> optional_input_shapes(const Graph& graph, const Node& node, size_t count) {
  std::vector<const Shape*> shapes(count);
  for (size_t i = 0; i < count; ++i) shapes[i] = optional_input_shape(graph, node, i);
  return shapes;
}

Status expect_storable(const Node& node, const Graph& graph, size_t index, const std::string& name) {
  const DType t = input_value(graph, node, index).dtype;
  if (t == DType::kString || t == DType::kUndefined || dtype_size(t) == 0)
    return node_error(node, (name.empty() ? "input " + std::to_string(index) : name) + " has dtype " + dtype_name(t) +
                                ", which aotc does not store");
  return Status::ok();
}

Status expect_inputs(const Node& node, int min_count, int max_count) {
  int n = node.num_present_inputs();
  if (n < min_count || n > max_count) {
    std::string range = min_count == max_count ? std::to_string(min_count)
                                               : std::to_string(min_count) + " to " + std::to_string(max_count);
    return node_error(node, "expects " + range + " inputs, got " + std::to_string(n));
  }
  for (int i = 0; i < min_count; ++i)
    if (node.inputs[static_cast<size_t>(i)] == kNoValue)
      return node_error(node, "required input " + std::to_string(i) + " is missing");
  return Status::ok();
}

Status expect_dtype(const Node& node, const Graph& graph, size_t index, const std::vector<DType>& allowed) {
  ValueId id = node.input(index);
  if (id == kNoValue) return node_error(node, "input " + std::to_string(index) + " is missing");
  DType t = graph.value(id).dtype;
  for (DType a : allowed)
    if (a == t) return Status::ok();
  std::string list;
  for (DType a : allowed) list += (list.empty() ? "" : ", ") + dtype_name(a);
  return node_error(node, "input " + std::to_string(index) + " has dtype " + dtype_name(t) +
                              ", supported: " + list);
}

Status expect_rank(const Node& node, const Graph& graph, size_t index, int64_t rank) {
  ValueId id = node.input(index);
  if (id == kNoValue) return node_error(node, "input " + std::to_string(index) + " is missing");
  int64_t r = static_cast<int64_t>(graph.value(id).shape.size());
  if (r != rank)
    return node_error(node, "input " + std::to_string(index) + " has rank " + std::to_string(r) +
                                ", expected " + std::to_string(rank));
  return Status::ok();
}

Expected<const Tensor*> expect_constant(const Node& node, const Graph& graph, size_t index,
                                        const std::string& why) {
  ValueId id = node.input(index);
  if (id == kNoValue) return node_error(node, "input " + std::to_string(index) + " is missing");
  const Value& v = graph.value(id);
  if (!v.constant)
    return node_error(node, "input " + std::to_string(index) + " must be a constant (" + why + ")");
  return v.constant.get();
}

bool trailing_broadcast(const Shape& s, const Shape& norm) {
  size_t lead = 0;
  while (lead < s.size() && s[lead] == 1) ++lead;
  Shape rest(s.begin() + static_cast<std::ptrdiff_t>(lead), s.end());
  return rest.size() <= norm.size() && std::equal(rest.begin(), rest.end(), norm.end() - static_cast<std::ptrdiff_t>(rest.size()));
}

Expected<int64_t> normalize_axis(const Node& node, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return node_error(node, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return a;
}

void set_output(Graph& graph, const Node& node, size_t index, DType dtype, Shape shape) {
  // An optional output the model did not ask for (kNoValue) has nothing to describe.
  if (index >= node.outputs.size() || node.outputs[index] == kNoValue) return;
  Value& v = graph.value(node.outputs[index]);
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.shape_known = true;
}

std::optional<double> constant_scalar(const Graph& graph, const Node& node, size_t i, double absent) {
  if (node.input(i) == kNoValue) return absent;
  const Value& v = graph.value(node.inputs[i]);
  if (!v.is_constant() || v.numel() != 1) return std::nullopt;
  return v.constant->get(0);
}

bool fixed_address(const Graph& graph, ValueId id) {
  for (int hops = 0; id != kNoValue && hops < 64; ++hops) {
    if (graph.is_graph_input(id) || graph.is_graph_output(id)) return false;
    id = graph.value(id).alias_of;
  }
  return id == kNoValue;
}

std::string cutlass_element(DType t) {
  return t == DType::kBFloat16 ? "cutlass::bfloat16_t" : t == DType::kFloat16 ? "cutlass::half_t" : "float";
}

const Value& input_value(const Graph& graph, const Node& node, size_t index) {
  return graph.value(node.inputs[index]);
}

const Value& output_value(const Graph& graph, const Node& node, size_t index) {
  return graph.value(node.outputs[index]);
}

Expected<Shape> broadcast_shapes(const Node& node, const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else
      return node_error(node, "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
  }
  return out;
}

std::string int_literal(int64_t v) {
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  return std::to_string(v) + "LL";
}

std::string float_literal(float v) {
  if (std::isnan(v)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%af", static_cast<double>(v));  // hex float: exact
  return buf;
}

std::string dims_literal(const std::vector<int64_t>& dims) {
  std::string s = "{";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + int_literal(dims[i]);
  return s + "}";
}

std::pair<int64_t, int64_t> quantized_clamp(const Node& node, DType y, bool fused_activation) {
  const int64_t lo = y == DType::kInt8 ? -128 : 0, hi = y == DType::kInt8 ? 127 : 255;
  if (!fused_activation) return {lo, hi};
  return {std::max(lo, node.attr_int("qmin", lo)), std::min(hi, node.attr_int("qmax", hi))};
}

}  // namespace aotc
