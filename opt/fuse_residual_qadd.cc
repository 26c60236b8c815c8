// fuse_residual_qadd: an int8 network's residual Add (aotc.QLinearAdd) whose one operand is the
// requantized output of an int8 tensor-core convolution (a channels_last aotc.QLinearConv with its
// epilogue words, read by nothing else) becomes part of that convolution's epilogue: the
// convolution's kernel requantizes its sum as before (the first rounding, to the convolution's
// int8 value), then adds the other operand exactly as aotc.QLinearAdd does and rounds again (the
// second rounding), so the result is bit for bit the unfused graph's. ResNet-50 int8 at batch 32
// ran 16 such Adds as separate kernels (~260 us on an H200, docs/perf_notes.md v48).
// As data on the convolution: inputs 10-14 = the residual r (the Add's other operand, one shape
// with the output), r's scale and zero point, the Add's y_scale and y_zero_point; attributes
// add_qmin / add_qmax = the Add's clamp (a fused Relu); its output becomes the Add's output
// (ir/ops/integer_matmul.cc: reference and lowering). The fused node takes the Add's place in the
// node order (after the residual's producer). Both int8 tensor-core kernels implement it (the Sm80
// one for r of the output's type): the pass asks the convolution's lowering and keeps the fusion
// only where it takes it - by default (Int8FuseResidual::kGemm, --int8-fuse-residual auto) only
// where it takes it as the persistent GEMM (hole AS_GEMM = 1: its producer warp loads r while the
// consumers compute; on the convolution kernels the fused Adds measured slower, ir/target.h);
// --int8-fuse-residual on: wherever a kernel takes it; off: never.
// Must not fire: an operand read by another node or a graph output, an Add output that is a
// graph output or lives in another value's rows, scales that are not constants, a lowering that
// refuses (r of another type than the output on the Sm80 kernel).
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "opt/passes.h"

namespace aotc {
namespace {

constexpr size_t kWordsInput = 9;      // channels_last aotc.QLinearConv's epilogue words
constexpr size_t kResidualInput = 10;  // then r, r_scale, r_zero_point, y_scale, y_zero_point

bool as_gemm(const KernelStep& k) {
  for (const auto& [name, value] : k.holes)
    if (name == "AS_GEMM") return value == "1";
  return false;
}

bool constant_or_absent(const Graph& graph, ValueId v) { return v == kNoValue || graph.value(v).is_constant(); }

bool fusable_conv(const Graph& graph, const Node& c) {
  return c.op_type == "QLinearConv" && c.domain == "aotc" && channels_last(c) && c.input(kWordsInput) != kNoValue &&
         c.input(6) != kNoValue && c.inputs.size() <= kResidualInput && c.outputs.size() == 1 &&
         !graph.is_graph_output(c.outputs[0]) && graph.value(c.outputs[0]).stored_in == kNoValue;
}

}  // namespace

Expected<bool> fuse_residual_qadd(Graph& graph) {
  const OpRegistry& registry = default_registry();
  const OpDef* conv_def = registry.find("QLinearConv", "aotc");
  const Int8FuseResidual mode = graph.target.int8_fuse_residual;
  if (!conv_def || !conv_def->lower || mode == Int8FuseResidual::kOff) return false;
  bool changed = false;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& add = graph.nodes[i];
    if (add.op_type != "QLinearAdd" || add.domain != "aotc" || add.outputs.size() != 1) continue;
    if (add.input(6) == kNoValue) continue;  // the dequantizing form (float result): no int8 epilogue for it
    const ValueId out = add.outputs[0];
    if (out == kNoValue || graph.is_graph_output(out) || graph.value(out).stored_in != kNoValue) continue;
    bool scalars = true;
    for (size_t s : {1, 2, 4, 5, 6, 7}) scalars = scalars && constant_or_absent(graph, add.input(s));
    if (!scalars) continue;
    const std::vector<int> producers = graph.producers();
    const std::vector<std::vector<int>> consumers = graph.consumers();
    for (size_t side : {size_t{0}, size_t{3}}) {
      const ValueId t = add.input(side), r = add.input(side == 0 ? 3 : 0);
      if (t == kNoValue || r == kNoValue || t == r || graph.sole_reader(consumers, t) != static_cast<int>(i)) continue;
      const int p = producers[static_cast<size_t>(t)];
      if (p < 0 || !fusable_conv(graph, graph.nodes[static_cast<size_t>(p)])) continue;
      // The fused node, at the Add's place; kept only if the convolution's lowering takes it.
      Node fused = graph.nodes[static_cast<size_t>(p)];
      fused.inputs.resize(kResidualInput, kNoValue);
      const size_t rs = side == 0 ? 4 : 1, rz = side == 0 ? 5 : 2;
      fused.inputs.insert(fused.inputs.end(), {r, add.input(rs), add.input(rz), add.input(6), add.input(7)});
      const auto [lo, hi] = quantized_clamp(add, graph.value(out).dtype, true);
      fused.attrs["add_qmin"] = Attribute::of_int(lo);
      fused.attrs["add_qmax"] = Attribute::of_int(hi);
      fused.outputs = {out};
      auto lowered = conv_def->lower(fused, graph);
      if (!lowered || lowered->steps.size() != 1 || lowered->steps[0].kernel.args.size() < 4 ||
          lowered->steps[0].kernel.args[3] != r)
        continue;
      if (mode == Int8FuseResidual::kGemm && !as_gemm(lowered->steps[0].kernel)) continue;
      graph.nodes[i] = std::move(fused);
      graph.nodes.erase(graph.nodes.begin() + p);
      --i;  // the fused node moved up one place with the erase
      changed = true;
      break;
    }
  }
  return changed;
}

}  // namespace aotc
