// RotaryEmbedding (opset 23): rotates the first rotary_embedding_dim (default: head_size) elements
// of every head vector by the angle of its token's position: pairs (x1, x2) -> (c*x1 - s*x2,
// s*x1 + c*x2), pairs taken as halves (x[i], x[i + rd/2]) or, interleaved, (x[2i], x[2i+1]); the
// rest is copied. X is (B, H, S, D), or (B, S, H*D) with num_heads. cos/sin are (max_pos, rd/2)
// indexed by position_ids (B, S), or (B, S, rd/2) without them. Kernel: rotary_embedding.cu.in.
#include <algorithm>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kRotaryTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};

// The problem in (batch, seq, head, dim) terms, with X's strides for each of them.
struct RotaryDims {
  int64_t batch = 0, seq = 0, heads = 0, head_size = 0, rotary_dim = 0;
  int64_t stride_b = 0, stride_s = 0, stride_h = 0;
  bool interleaved = false, has_positions = false;
  int64_t max_positions = 0;  // rows of the caches when indexed by position_ids
};

Expected<RotaryDims> rotary_dims(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  RotaryDims d;
  d.interleaved = node.attr_int("interleaved", 0) != 0;
  const int64_t num_heads = node.attr_int("num_heads", 0);
  if (x.shape.size() == 4) {
    d.batch = x.shape[0];
    d.heads = x.shape[1];
    d.seq = x.shape[2];
    d.head_size = x.shape[3];
    if (num_heads != 0 && num_heads != d.heads)
      return node_error(node, "num_heads " + std::to_string(num_heads) + " differs from X's dim 1 (" +
                                  std::to_string(d.heads) + ")");
    // An empty input may have other dims whose product overflows int64: refused, not formed
    // (a fuzz find, UBSan).
    if (__builtin_mul_overflow(d.seq, d.head_size, &d.stride_h) ||
        __builtin_mul_overflow(d.heads, d.stride_h, &d.stride_b))
      return node_error(node, "input 0 " + shape_str(x.shape) + ": its dims multiply past int64");
    d.stride_s = d.head_size;
  } else if (x.shape.size() == 3) {
    if (num_heads <= 0) return node_error(node, "a 3-D input needs the num_heads attribute (> 0)");
    if (x.shape[2] % num_heads != 0)
      return node_error(node, "hidden size " + std::to_string(x.shape[2]) + " is not a multiple of num_heads " +
                                  std::to_string(num_heads));
    d.batch = x.shape[0];
    d.seq = x.shape[1];
    d.heads = num_heads;
    d.head_size = x.shape[2] / num_heads;
    if (__builtin_mul_overflow(d.seq, x.shape[2], &d.stride_b))
      return node_error(node, "input 0 " + shape_str(x.shape) + ": its dims multiply past int64");
    d.stride_s = x.shape[2];
    d.stride_h = d.head_size;
  } else {
    return node_error(node, "input 0 must have rank 3 or 4, got " + std::to_string(x.shape.size()));
  }
  d.rotary_dim = node.attr_int("rotary_embedding_dim", 0);
  if (d.rotary_dim == 0) d.rotary_dim = d.head_size;
  if (d.rotary_dim < 0 || d.rotary_dim > d.head_size || d.rotary_dim % 2 != 0)
    return node_error(node, "rotary_embedding_dim " + std::to_string(d.rotary_dim) +
                                " must be even and at most the head size " + std::to_string(d.head_size));
  d.has_positions = node.input(3) != kNoValue;
  const Shape want_tail = {d.rotary_dim / 2};
  for (size_t i : {1, 2}) {
    const Shape& c = input_value(graph, node, i).shape;
    if (d.has_positions) {
      if (c.size() != 2 || c[1] != d.rotary_dim / 2)
        return node_error(node, "input " + std::to_string(i) + " of shape " + shape_str(c) +
                                    " must be (max_position_id_plus_1, " + std::to_string(d.rotary_dim / 2) + ")");
      if (i == 2 && c != input_value(graph, node, 1).shape)
        return node_error(node, "sin_cache shape " + shape_str(c) + " differs from cos_cache's");
      d.max_positions = c[0];
    } else if (c != Shape{d.batch, d.seq, d.rotary_dim / 2}) {
      return node_error(node, "input " + std::to_string(i) + " of shape " + shape_str(c) + " must be (" +
                                  std::to_string(d.batch) + ", " + std::to_string(d.seq) + ", " +
                                  std::to_string(d.rotary_dim / 2) + ") without position_ids");
    }
  }
  if (d.has_positions) {
    const Shape& p = input_value(graph, node, 3).shape;
    if (p != Shape{d.batch, d.seq})
      return node_error(node, "position_ids of shape " + shape_str(p) + " must be (" + std::to_string(d.batch) + ", " +
                                  std::to_string(d.seq) + ")");
    if (d.max_positions == 0 && d.batch * d.seq > 0) return node_error(node, "the caches have no rows");
  }
  return d;
}

Status rotary_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, 4));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kRotaryTypes));
  const Value& x = input_value(graph, node, 0);
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {x.dtype}));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {x.dtype}));
  if (node.input(3) != kNoValue) AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 3, {DType::kInt64}));
  Expected<RotaryDims> d = rotary_dims(node, graph);
  if (!d) return d.status();
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

Status rotary_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  // Shapes were checked by infer; recompute the dims from the tensors through a scratch graph-free path.
  const Tensor& x = *inputs[0];
  const Tensor& cos = *inputs[1];
  const Tensor& sin = *inputs[2];
  const Tensor* pos = inputs.size() > 3 ? inputs[3] : nullptr;
  Tensor& y = outputs[0];
  const bool interleaved = node.attr_int("interleaved", 0) != 0;
  int64_t batch, seq, heads, head_size, sb, ss, sh;
  if (x.rank() == 4) {
    batch = x.shape()[0], heads = x.shape()[1], seq = x.shape()[2], head_size = x.shape()[3];
    sb = heads * seq * head_size, sh = seq * head_size, ss = head_size;
  } else {
    heads = node.attr_int("num_heads", 0);
    batch = x.shape()[0], seq = x.shape()[1], head_size = x.shape()[2] / heads;
    sb = seq * x.shape()[2], ss = x.shape()[2], sh = head_size;
  }
  int64_t rd = node.attr_int("rotary_embedding_dim", 0);
  if (rd == 0) rd = head_size;
  const int64_t half = rd / 2;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s) {
      int64_t row = b * seq + s;  // cache row without position_ids
      if (pos) {
        row = pos->get_int(b * seq + s);
        if (row < 0 || row >= cos.shape()[0])
          return node_error(node, "position id " + std::to_string(row) + " is outside the caches' " +
                                      std::to_string(cos.shape()[0]) + " rows");
      }
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = b * sb + s * ss + h * sh;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
          const double c = cos.get(row * half + i), sn = sin.get(row * half + i);
          const double x1 = x.get(base + i1), x2 = x.get(base + i2);
          y.set(base + i1, c * x1 - sn * x2);
          y.set(base + i2, sn * x1 + c * x2);
        }
        for (int64_t i = rd; i < head_size; ++i) y.set(base + i, x.get(base + i));
      }
    }
  return Status::ok();
}

Expected<Lowering> rotary_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Expected<RotaryDims> d = rotary_dims(node, graph);
  if (!d) return d.status();
  Lowering l;
  if (x.numel() == 0) return l;
  // One thread per (batch, seq, head, j) with j < head_size - rotary_dim / 2: j < rd/2 rotates a
  // pair, the rest copies one element.
  const int64_t per_head = d->head_size - d->rotary_dim / 2;
  const int64_t items = d->batch * d->seq * d->heads * per_head;
  KernelStep k;
  k.template_name = "rotary_embedding";
  k.holes = {{"comment", "RotaryEmbedding " + shape_str(x.shape) + " rotary dim " + std::to_string(d->rotary_dim) +
                             (d->interleaved ? " interleaved " : " halves ") + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)},
             {"CT", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"ITEMS", int_literal(items)},
             {"SEQ", int_literal(d->seq)},
             {"HEADS", int_literal(d->heads)},
             {"HALF", int_literal(d->rotary_dim / 2)},
             {"PER_HEAD", int_literal(per_head)},
             {"STRIDE_B", int_literal(d->stride_b)},
             {"STRIDE_S", int_literal(d->stride_s)},
             {"STRIDE_H", int_literal(d->stride_h)},
             {"INTERLEAVED", d->interleaved ? "true" : "false"},
             {"HAS_POSITIONS", d->has_positions ? "true" : "false"},
             {"MAX_POSITIONS", int_literal(std::max<int64_t>(d->max_positions, 1))}};
  k.args = {node.inputs[0], node.inputs[1], node.inputs[2], d->has_positions ? node.inputs[3] : kNullArg,
            node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(items, 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_rotary_embedding_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "RotaryEmbedding";
  def.infer = rotary_infer;
  def.reference = rotary_reference;
  def.lower = rotary_lower;
  registry.add(def);
}

}  // namespace aotc
