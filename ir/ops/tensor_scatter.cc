// TensorScatter-24: a KV-cache update. present_cache is past_cache with, for every prefix
// (the dims before `axis`, the first of them the batch) and s < sequence_length, position
// write_indices[batch] + s along `axis` (modulo max_sequence_length in "circular" mode) replaced by
// update[..., s, ...]. Computed per output element: position c of the axis takes update's
// s = c - w (linear) or (c - w) mod max (circular) when 0 <= s < sequence_length, else past's
// value. The spec leaves linear writes past the cache's end undefined (numpy raises or wraps);
// here they are dropped, on the CPU and the GPU alike.
#include <cstring>
#include <string>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

struct Dims {
  int64_t axis = 0, outer = 1, per_batch = 1, max_len = 0, seq_len = 0, inner = 1;
  bool circular = false;
};

Expected<Dims> dims_of(const Node& node, const Shape& past, const Shape& update, const Shape* indices) {
  const std::string mode = node.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular")
    return node_error(node, "mode '" + escape_for_message(mode, 40) + "' is not linear or circular");
  const int64_t rank = static_cast<int64_t>(past.size());
  auto axis = normalize_axis(node, node.attr_int("axis", -2), rank);
  if (!axis) return axis.status();
  if (*axis == 0) return node_error(node, "axis 0 is the batch axis; the sequence axis must come after it");
  if (update.size() != past.size())
    return node_error(node, "update " + shape_str(update) + " must have past_cache's rank (" + shape_str(past) + ")");
  Dims d;
  d.axis = *axis;
  d.circular = mode == "circular";
  for (int64_t i = 0; i < rank; ++i) {
    const size_t u = static_cast<size_t>(i);
    if (i == d.axis ? update[u] > past[u] : update[u] != past[u])
      return node_error(node, "update " + shape_str(update) + " does not fit past_cache " + shape_str(past) +
                                  " (equal dims, and at most max_sequence_length along axis " + std::to_string(d.axis) + ")");
    if (i < d.axis) d.outer *= past[u];
    if (i > 0 && i < d.axis) d.per_batch *= past[u];
    if (i > d.axis) d.inner *= past[u];
  }
  d.max_len = past[static_cast<size_t>(d.axis)];
  d.seq_len = update[static_cast<size_t>(d.axis)];
  if (indices && (indices->size() != 1 || (*indices)[0] != past[0]))
    return node_error(node, "write_indices must be [" + std::to_string(past[0]) + "], got " + shape_str(*indices));
  return d;
}

Status tensor_scatter_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& past = input_value(graph, node, 0);
  AOTC_RETURN_IF_ERROR(expect_storable(node, graph, 0, "past_cache"));
  if (input_value(graph, node, 1).dtype != past.dtype)
    return node_error(node, "update must have past_cache's dtype " + dtype_name(past.dtype));
  const Shape* indices = nullptr;
  if (node.input(2) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {DType::kInt64}));
    indices = &graph.value(node.inputs[2]).shape;
  }
  if (past.shape.empty()) return node_error(node, "past_cache must have a batch axis and a sequence axis");
  auto d = dims_of(node, past.shape, input_value(graph, node, 1).shape, indices);
  if (!d) return d.status();
  set_output(graph, node, 0, past.dtype, past.shape);
  return Status::ok();
}

Status tensor_scatter_reference(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Tensor &past = *in[0], &update = *in[1];
  const Tensor* indices = in.size() > 2 ? in[2] : nullptr;
  Shape index_shape = indices ? indices->shape() : Shape{};
  auto d = dims_of(node, past.shape(), update.shape(), indices ? &index_shape : nullptr);
  if (!d) return d.status();
  const int64_t elem = dtype_size(past.dtype());
  for (int64_t i = 0; i < past.numel(); ++i) {
    const int64_t c = (i / d->inner) % d->max_len, prefix = i / (d->inner * d->max_len);
    const int64_t w = indices ? indices->get_int(prefix / d->per_batch) : 0;
    int64_t s;
    if (d->circular) {
      const int64_t wm = ((w % d->max_len) + d->max_len) % d->max_len;
      s = (c - wm + d->max_len) % d->max_len;
    } else {
      s = w < -d->seq_len || w > c ? -1 : c - w;  // no overflow for any w
    }
    const uint8_t* src = s >= 0 && s < d->seq_len
                             ? update.raw() + ((prefix * d->seq_len + s) * d->inner + i % d->inner) * elem
                             : past.raw() + i * elem;
    std::memcpy(out[0].raw() + i * elem, src, static_cast<size_t>(elem));
  }
  return Status::ok();
}

Expected<Lowering> tensor_scatter_lower(const Node& node, const Graph& graph) {
  const Value& past = input_value(graph, node, 0);
  const Shape* indices = node.input(2) != kNoValue ? &graph.value(node.inputs[2]).shape : nullptr;
  auto d = dims_of(node, past.shape, input_value(graph, node, 1).shape, indices);
  if (!d) return d.status();
  Lowering low;
  const int64_t n = shape_numel(past.shape);
  if (n == 0) return low;
  KernelStep k;
  k.template_name = "tensor_scatter";
  k.holes = {{"comment", "TensorScatter " + std::string(d->circular ? "circular" : "linear") + " into " +
                             shape_str(past.shape) + " " + dtype_name(past.dtype) + " along axis " + std::to_string(d->axis)},
             {"T", dtype_c_type(past.dtype)},
             {"N", int_literal(n)},
             {"INNER", int_literal(d->inner)},
             {"MAX_LEN", int_literal(d->max_len)},
             {"SEQ_LEN", int_literal(d->seq_len)},
             {"PER_BATCH", int_literal(d->per_batch)},
             {"CIRCULAR", d->circular ? "true" : "false"},
             {"HAS_INDICES", indices ? "true" : "false"}};
  k.args = {node.inputs[0], node.inputs[1], indices ? node.inputs[2] : kNullArg, node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(n, 256);
  low.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return low;
}

}  // namespace

void register_tensor_scatter_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "TensorScatter";
  def.infer = tensor_scatter_infer;
  def.reference = tensor_scatter_reference;
  def.lower = tensor_scatter_lower;
  registry.add(def);
}

}  // namespace aotc
