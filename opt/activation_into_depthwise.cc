// activation_into_depthwise: an activation that stayed a kernel of its own (nothing before it
// absorbed it: EfficientNet's SiLU after a 1x1 expansion, which runs on cuBLASLt without it, v64)
// and that only a channels_last depthwise convolution reads becomes that convolution's input
// activation (attribute input_activation, ir/ops/epilogue.h). The depthwise kernels apply it to
// every input element inside the image as they stage it and round it to the storage type, as the
// activation's kernel stored it, so the result is the unfused graph's; the zero padding stays
// zero (it pads the activated tensor). One pass over the expanded tensor (the largest of the
// block) and one launch fewer per block.
// Only where the depthwise runs on the tile kernel with a grid of at least
// kInputActivationMinBlocksPerSm blocks an SM. Measured (H200, docs/perf_notes.md v65):
// EfficientNet-B0 batch 32 1.41 -> 1.22 ms with every SiLU moved, but batch 1 0.365 -> 0.400 ms
// (V2-S 0.965 -> 1.002): there the tile rule sizes the grid to two blocks an SM, one wave whose
// blocks now wait on the activation while staging, and a launch saved is worth less. Every
// batch-32 depthwise of those networks has 4.4 or more blocks an SM; between the two batches
// the threshold is not measured.
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_nhwc.h"
#include "ir/ops/epilogue.h"
#include "opt/passes.h"

namespace aotc {

namespace {
constexpr int64_t kInputActivationMinBlocksPerSm = 4;

// Whether the depthwise conv `dw`, reading its input through `act`, lowers to the tile kernel with
// enough blocks (the lowering answers: its grid, the same before and after the fusion).
bool tile_grid_is_large(const Graph& graph, const Node& dw) {
  const OpDef* def = default_registry().find(dw.op_type, dw.domain);
  if (!def || !def->lower) return false;
  Expected<Lowering> l = def->lower(dw, graph);
  if (!l || l->steps.size() != 1 || l->steps[0].kind != LoweredStep::Kind::kKernel) return false;
  const KernelStep& k = l->steps[0].kernel;
  if (k.template_name != "conv_depthwise_nhwc_tile") return false;
  return k.grid.x * k.grid.y * k.grid.z >= kInputActivationMinBlocksPerSm * int64_t{graph.target.sm_count};
}
}  // namespace

Expected<bool> activation_into_depthwise(Graph& graph) {
  const std::vector<std::vector<int>> consumers = graph.consumers();
  const std::vector<int> producers = graph.producers();
  std::vector<bool> drop(graph.nodes.size(), false);
  bool changed = false;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& act = graph.nodes[i];
    if (act.outputs.size() != 1 || !epilogue_may_absorb(graph, act, /*anchor_is_gemm=*/false) ||
        act.inputs[0] == kNoValue)
      continue;
    const Value& in = graph.value(act.inputs[0]);
    const Value& out = graph.value(act.outputs[0]);
    if (in.dtype != out.dtype || in.shape != out.shape || in.shape.size() != 4 ||
        !(out.dtype == DType::kFloat32 || out.dtype == DType::kFloat16 || out.dtype == DType::kBFloat16))
      continue;
    // The activation's input must be a computed tensor (a graph input or constant keeps its own
    // kernel: nothing to save, and a constant would have been folded).
    if (producers[static_cast<size_t>(act.inputs[0])] < 0) continue;
    const int reader = graph.sole_reader(consumers, act.outputs[0]);
    if (reader < 0) continue;
    Node& dw = graph.nodes[static_cast<size_t>(reader)];
    if (!is_conv_node(dw) || !channels_last(dw) || dw.inputs.empty() || dw.inputs[0] != act.outputs[0] ||
        dw.has_attr("input_max") || has_input_activation(dw) || has_pool(dw))
      continue;
    bool read_twice = false;  // the same value as the residual too
    for (size_t k = 1; k < dw.inputs.size(); ++k) read_twice = read_twice || dw.inputs[k] == act.outputs[0];
    const int64_t channels = out.shape[3];
    const Shape& w = graph.value(dw.input(1)).shape;  // KRSC [C, R, S, 1] for depthwise
    if (read_twice || dw.attr_int("group", 1) != channels || w.size() != 4 || w[0] != channels || w[3] != 1 ||
        !tile_grid_is_large(graph, dw))
      continue;
    Node a = act;
    a.inputs.clear();
    a.outputs.clear();
    store_input_activation(dw, a);
    if (dw.op_type == "Conv") {  // the ONNX op has no such attribute: the fused form carries it
      dw.op_type = "FusedConv";
      dw.domain = "aotc";
    }
    dw.inputs[0] = act.inputs[0];
    drop[i] = true;
    changed = true;
  }
  if (changed) graph.remove_nodes(drop);
  return changed;
}

}  // namespace aotc
