// merge_projection_shortcut: a pointwise channels_last convolution whose residual input is another
// pointwise convolution (ResNet's first bottleneck block: conv3(h) + downsample(x), both 1x1 /
// stride 1, BN folded) becomes one convolution over the channel concatenation of both inputs:
//   relu(W3 h + b3 + (Wd x + bd))  ->  relu([W3 | Wd] [h ; x] + (b3 + bd))
// with [h ; x] = Concat(h, x, axis = channels) and the filters concatenated along C at compile time.
// Bytes per output pixel (16-bit, Ch / Cx input channels, K outputs): before, the projection reads
// Cx and writes K, the conv reads Ch + K (the residual) and writes K: Ch + Cx + 3K; after, the
// concat reads Ch + Cx and writes them, the conv reads Ch + Cx and writes K: 3 (Ch + Cx) + K. So
// the pass fires only where K > Ch + Cx (ResNet-50 layer 1: 256 > 64 + 64, 896 -> 640 bytes x2 a
// pixel). The residual no longer passes through the storage type (the projection's output was
// rounded before the add; now both products accumulate in fp32), and b3 + bd is rounded once.
// merge_strided_projection does the same for a stride-s projection (ResNet's downsample in layers
// 2-4, x on the 2x finer grid): the conv reads aotc.SubsampleConcat(h, x at step s), which copies
// only the pixels the projection reads. Bytes per output pixel: Ch + Cx + 3K before, 3 (Ch + Cx) +
// K after, as above (ResNet-50 layer 2: 1920 -> 1664), and one GEMM instead of a CUTLASS
// implicit GEMM (the strided projection) plus a GEMM; it fires only where the merged GEMM has at
// least one 128 x 128 tile per SM (batch 32 here) or, below that (batch 1, launch-bound), where
// h comes from a convolution that can write it into the Concat's rows, so that the copy of x's
// pixels replaces the projection's GEMM launch instead of adding one (docs/perf_notes.md v45).
// Must not fire: a projection with an activation, a pool or any other attribute, unequal strides
// (or any stride in merge_projection_shortcut), a pad, dilation, group or window other than 1, a
// second reader or a graph output, different pixel grids or dtypes, non-constant filters or
// biases, 8-bit types, or K <= Ch + Cx; nor where auxiliary streams are on and the projection's
// output is small enough for side_branches to run it beside conv1 / conv2 (batch 1), which takes
// it off the critical path altogether.
#include <cstring>
#include <set>

#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_nhwc.h"
#include "ir/ops/epilogue.h"
#include "opt/passes.h"

namespace aotc {
namespace {

bool float_type(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

// The KRSC filter [K, 1, 1, C] of a pointwise conv, or null.
const Value* pointwise_filter(const Graph& g, const Node& n, DType dtype) {
  const Value& w = g.value(n.input(1));
  if (!w.is_constant() || w.dtype != dtype || w.shape.size() != 4 || w.shape[1] != 1 || w.shape[2] != 1) return nullptr;
  return &w;
}

// The bias [K] (a constant of the conv's dtype) or, when absent, a null pointer with ok = true.
bool bias_of(const Graph& g, const Node& n, int64_t k, DType dtype, const Value** out) {
  *out = nullptr;
  if (n.inputs.size() < 3 || n.input(2) == kNoValue) return true;
  const Value& b = g.value(n.input(2));
  if (!b.is_constant() || b.dtype != dtype || b.shape != Shape{k}) return false;
  *out = &b;
  return true;
}

// `strided`: merge only stride > 1 projections (merge_strided_projection), else only stride 1.
Expected<bool> merge_shortcuts(Graph& graph, bool strided) {
  const std::vector<std::vector<int>> consumers = graph.consumers();
  const std::vector<int> producers = graph.producers();
  std::vector<bool> drop(graph.nodes.size(), false);
  std::vector<std::pair<size_t, Node>> concats;  // inserted before the node at that index
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& c = graph.nodes[i];
    if (drop[i] || !plain_pointwise_conv(c, true) || c.op_type != "FusedConv") continue;
    const ValueId r = c.input(kConvResidualInput);
    if (r == kNoValue || graph.is_graph_output(r) || consumers[static_cast<size_t>(r)].size() != 1) continue;
    const int pi = producers[static_cast<size_t>(r)];
    if (pi < 0 || drop[static_cast<size_t>(pi)]) continue;
    const Node& p = graph.nodes[static_cast<size_t>(pi)];
    int64_t step = 1;
    if (!plain_pointwise_conv(p, false, strided, &step) || (step > 1) != strided ||
        (p.inputs.size() > kConvResidualInput && p.input(kConvResidualInput) != kNoValue))
      continue;
    const Value& h = graph.value(c.input(0));
    const Value& x = graph.value(p.input(0));
    const DType dt = h.dtype;
    if (!float_type(dt) || x.dtype != dt || graph.value(r).dtype != dt || h.shape.size() != 4 || x.shape.size() != 4) continue;
    // One pixel grid: the projection's output pixels are x's at (p * step, q * step).
    if (h.shape[0] != x.shape[0] || h.shape[1] != (x.shape[1] + step - 1) / step ||
        h.shape[2] != (x.shape[2] + step - 1) / step)
      continue;
    const Value* w3 = pointwise_filter(graph, c, dt);
    const Value* wd = pointwise_filter(graph, p, dt);
    if (!w3 || !wd || w3->shape[0] != wd->shape[0]) continue;
    const int64_t k = w3->shape[0], ch = h.shape[3], cx = x.shape[3];
    if (w3->shape[3] != ch || wd->shape[3] != cx || k <= ch + cx) continue;
    const Value *b3 = nullptr, *bd = nullptr;
    if (!bias_of(graph, c, k, dt, &b3) || !bias_of(graph, p, k, dt, &bd)) continue;
    // With auxiliary streams a small projection runs beside conv1 / conv2 instead
    // (opt/side_branches.cc, the same size rule): merged, its Concat would sit on the critical path.
    if (graph.target.aux_streams > 0 && graph.value(r).byte_size() <= graph.target.aux_stream_max_bytes) continue;
    // A strided projection's input is not read whole: x's pixels at the stride are copied. Where
    // the merged GEMM fills the GPU (output pixels x channels >= one 128 x 128 tile per SM) the
    // bytes saved pay for that copy; in a smaller one (batch 1) the copy kernel replaces the
    // projection's own launch-bound GEMM when h's producer, a convolution, writes h straight into
    // the Concat's rows (concat_in_place), and adds a launch otherwise: merged only then.
    if (step > 1 && h.shape[0] * h.shape[1] * h.shape[2] * k < int64_t{graph.target.sm_count} * 128 * 128) {
      const int hp = producers[static_cast<size_t>(c.input(0))];
      if (hp < 0 || !is_conv_node(graph.nodes[static_cast<size_t>(hp)]) ||
          graph.nodes[static_cast<size_t>(hp)].attr_int("group", 1) != 1 || consumers[static_cast<size_t>(c.input(0))].size() != 1)
        continue;
    }
    // Copied now: the graph.add_* calls below may move graph.values under h, x, w3, wd, b3, bd.
    const Shape h_shape = h.shape;

    // [W3 | Wd] along C, b3 + bd (summed in double, rounded once to the storage type).
    const size_t es = static_cast<size_t>(dtype_size(dt));
    Tensor w(dt, Shape{k, 1, 1, ch + cx});
    for (int64_t o = 0; o < k; ++o) {
      std::memcpy(w.raw() + static_cast<size_t>(o * (ch + cx)) * es, w3->constant->raw() + static_cast<size_t>(o * ch) * es,
                  static_cast<size_t>(ch) * es);
      std::memcpy(w.raw() + static_cast<size_t>(o * (ch + cx) + ch) * es, wd->constant->raw() + static_cast<size_t>(o * cx) * es,
                  static_cast<size_t>(cx) * es);
    }
    ValueId bias = kNoValue;
    if (b3 || bd) {
      Tensor b(dt, Shape{k});
      for (int64_t o = 0; o < k; ++o) b.set(o, (b3 ? b3->constant->get(o) : 0.0) + (bd ? bd->constant->get(o) : 0.0));
      bias = graph.add_constant(graph.unique_name(c.name + "_merged_bias"), std::move(b));
    }
    const ValueId wid = graph.add_constant(graph.unique_name(c.name + "_merged_w"), std::move(w));

    Node cat;
    cat.name = graph.unique_name(c.name + "_shortcut_concat");
    cat.inputs = {c.input(0), p.input(0)};
    if (step == 1) {
      cat.op_type = "Concat";
      cat.attrs["axis"] = Attribute::of_int(3);  // NHWC channels
    } else {
      cat.op_type = "SubsampleConcat";  // x read at the projection's stride (ir/ops/concat.cc)
      cat.domain = "aotc";
      cat.attrs["steps"] = Attribute::of_ints({1, step});
    }
    cat.outputs = {graph.add_value(graph.unique_name(cat.name), dt, {h_shape[0], h_shape[1], h_shape[2], ch + cx}, true)};
    const ValueId hx = cat.outputs[0];
    AOTC_RETURN_IF_ERROR(default_registry().find(cat.op_type, cat.domain)->infer(cat, graph));

    Node& conv = graph.nodes[i];  // (graph.add_* above did not touch the node list)
    conv.inputs[0] = hx;
    conv.inputs[1] = wid;
    conv.inputs[2] = bias;
    conv.inputs[kConvResidualInput] = kNoValue;
    conv.attrs["kernel_shape"] = Attribute::of_ints({1, 1});
    AOTC_RETURN_IF_ERROR(default_registry().find(conv.op_type, conv.domain)->infer(conv, graph));
    drop[static_cast<size_t>(pi)] = true;
    concats.emplace_back(i, std::move(cat));
  }
  if (concats.empty()) return false;
  // Rebuild the node list: each Concat right before its conv (h and x are produced earlier), the
  // projections dropped.
  std::vector<Node> nodes;
  nodes.reserve(graph.nodes.size() + concats.size());
  size_t next = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (next < concats.size() && concats[next].first == i) nodes.push_back(std::move(concats[next++].second));
    if (!drop[i]) nodes.push_back(std::move(graph.nodes[i]));
  }
  graph.nodes = std::move(nodes);
  return true;
}

}  // namespace

Expected<bool> merge_projection_shortcut(Graph& graph) { return merge_shortcuts(graph, false); }

Expected<bool> merge_strided_projection(Graph& graph) { return merge_shortcuts(graph, true); }

}  // namespace aotc
