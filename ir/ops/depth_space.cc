// DepthToSpace and SpaceToDepth (DCR and CRD modes) on NCHW tensors with `blocksize` b: each is
// a reshape to 6-D, a transpose and a reshape back, i.e. one strided gather whose strides are
// the 6-D input strides permuted. Any dtype.
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_gather.h"

namespace aotc {
namespace {

// The transpose of `in6` (row-major 6-D view of the input) by `perm`, as a gather view.
GatherView permuted_view(const Shape& in6, const std::vector<size_t>& perm) {
  std::vector<int64_t> s = shape_strides(in6);
  GatherView v;
  for (size_t p : perm) {
    v.dims.push_back(in6[p]);
    v.strides.push_back(s[p]);
  }
  return v;
}

bool is_crd(const Node& node) { return node.attr_string("mode", "DCR") == "CRD"; }

GatherView depth_to_space_view(const Node& node, const Shape& x) {
  const int64_t b = node.attr_int("blocksize", 0), n = x[0], c = x[1] / (b * b), h = x[2], w = x[3];
  if (is_crd(node)) return permuted_view({n, c, b, b, h, w}, {0, 1, 4, 2, 5, 3});
  return permuted_view({n, b, b, c, h, w}, {0, 3, 4, 1, 5, 2});
}

// DCR (default): output channel (by * b + bx) * C + c; CRD (SpaceToDepth-28's mode): c * b * b +
// by * b + bx.
GatherView space_to_depth_view(const Node& node, const Shape& x) {
  const int64_t b = node.attr_int("blocksize", 0), n = x[0], c = x[1], h = x[2] / b, w = x[3] / b;
  if (is_crd(node)) return permuted_view({n, c, h, b, w, b}, {0, 1, 3, 5, 2, 4});
  return permuted_view({n, c, h, b, w, b}, {0, 3, 5, 1, 2, 4});
}

Status common_checks(const Node& node, const Graph& graph, int64_t* b) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& x = input_value(graph, node, 0);
  if (x.dtype == DType::kString || x.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + ", which aotc does not store");
  AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 0, 4));
  if (!node.has_attr("blocksize")) return node_error(node, "attribute 'blocksize' is required");
  *b = node.attr_int("blocksize", 0);
  if (*b < 1) return node_error(node, "blocksize must be >= 1");
  return Status::ok();
}

Status depth_to_space_infer(Node& node, Graph& graph) {
  int64_t b;
  AOTC_RETURN_IF_ERROR(common_checks(node, graph, &b));
  std::string mode = node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return node_error(node, "mode must be DCR or CRD");
  const Shape& x = input_value(graph, node, 0).shape;
  // A model's blocksize is any int64: blocksize^2 and the output dims checked for overflow (a fuzz
  // find: blocksize 2^40 overflowed b * b).
  int64_t bb = 0, oh = 0, ow = 0;
  if (__builtin_mul_overflow(b, b, &bb) || x[1] % bb != 0)
    return node_error(node, "channels " + std::to_string(x[1]) + " are not a multiple of blocksize^2 (blocksize " +
                                std::to_string(b) + ")");
  if (__builtin_mul_overflow(x[2], b, &oh) || __builtin_mul_overflow(x[3], b, &ow))
    return node_error(node, "the output's height or width overflows int64 (blocksize " + std::to_string(b) + ")");
  set_output(graph, node, 0, input_value(graph, node, 0).dtype, {x[0], x[1] / bb, oh, ow});
  return Status::ok();
}

Status space_to_depth_infer(Node& node, Graph& graph) {
  int64_t b;
  AOTC_RETURN_IF_ERROR(common_checks(node, graph, &b));
  std::string mode = node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return node_error(node, "mode must be DCR or CRD");
  const Shape& x = input_value(graph, node, 0).shape;
  if (x[2] % b != 0 || x[3] % b != 0)
    return node_error(node, "height and width (" + std::to_string(x[2]) + ", " + std::to_string(x[3]) +
                                ") must be multiples of blocksize " + std::to_string(b));
  int64_t oc = 0;
  if (__builtin_mul_overflow(x[1], b, &oc) || __builtin_mul_overflow(oc, b, &oc))
    return node_error(node, "the output's channels overflow int64 (blocksize " + std::to_string(b) + ")");
  set_output(graph, node, 0, input_value(graph, node, 0).dtype, {x[0], oc, x[2] / b, x[3] / b});
  return Status::ok();
}

template <GatherView (*ViewOf)(const Node&, const Shape&)>
Status reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  strided_gather_reference(*inputs[0], outputs[0], ViewOf(node, inputs[0]->shape()));
  return Status::ok();
}

template <GatherView (*ViewOf)(const Node&, const Shape&)>
Expected<Lowering> lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  KernelStep k = strided_gather_step(node.inputs[0], node.outputs[0], x.dtype, x.numel(), ViewOf(node, x.shape),
                                     node.op_type + " blocksize " + std::to_string(node.attr_int("blocksize", 0)) + " " +
                                         shape_str(x.shape) + " -> " + shape_str(y.shape) + " " + dtype_name(x.dtype));
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_depth_space_ops(OpRegistry& registry) {
  OpDef d2s;
  d2s.op_type = "DepthToSpace";
  d2s.infer = depth_to_space_infer;
  d2s.reference = reference<depth_to_space_view>;
  d2s.lower = lower<depth_to_space_view>;
  registry.add(d2s);
  OpDef s2d;
  s2d.op_type = "SpaceToDepth";
  s2d.infer = space_to_depth_infer;
  s2d.reference = reference<space_to_depth_view>;
  s2d.lower = lower<space_to_depth_view>;
  registry.add(s2d);
}

}  // namespace aotc
