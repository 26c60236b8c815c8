// fuse_dequantize_add: DequantizeLinear(a) + DequantizeLinear(b) [-> Relu] whose result stays
// float - an int8 network's last residual Add, which feeds its float head (ResNet-50's
// layer4.2 Add before the global pool: its two DequantizeLinear, Add and Relu ran as four kernels
// of 8.8-9 us each on an H200 at batch 32, docs/perf_notes.md v53) - becomes one dequantizing
// aotc.QLinearAdd (ir/ops/qlinear_add.cc: no y_scale, attributes `to` and `relu`) that reads the
// two int8 tensors once and writes the float result: the same rounding steps as the unfused
// kernels (each operand rounded to the result's type, then the sum), so the same values.
// After precision and fold_quantize_casts (the DequantizeLinear outputs carry their final float
// type) and before layout_nhwc, which moves the elementwise node with its NHWC operands.
// Must not fire: a per-axis or non-constant scale or zero point, operands of another shape than
// the result (broadcasting), a DequantizeLinear output read by anything else or a graph output,
// DequantizeLinear results of another type than the Add's. A Relu is taken only when the Add's
// result is read by it alone.
#include <algorithm>
#include <functional>

#include "ir/op_registry.h"
#include "ir/shape_inference.h"
#include "ir/ops/op_helpers.h"
#include "opt/passes.h"

namespace aotc {
namespace {

bool plain(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

bool one_constant(const Graph& graph, ValueId v) {
  return v != kNoValue && graph.value(v).is_constant() && graph.value(v).numel() == 1;
}

// The DequantizeLinear producing `v` when it qualifies (per tensor, constant float32 scale and
// zero point or none, an 8-bit input of `shape`, an output of `dtype` read by node `reader` alone).
const Node* usable_dq(const Graph& graph, const std::vector<int>& producers,
                      const std::vector<std::vector<int>>& consumers, ValueId v, int reader, const Shape& shape,
                      DType dtype) {
  if (v == kNoValue || graph.is_graph_output(v) || graph.sole_reader(consumers, v) != reader) return nullptr;
  const int p = producers[static_cast<size_t>(v)];
  if (p < 0) return nullptr;
  const Node& dq = graph.nodes[static_cast<size_t>(p)];
  if (!plain(dq, "DequantizeLinear") || dq.outputs.size() != 1 || dq.inputs.size() < 2) return nullptr;
  const Value& x = graph.value(dq.inputs[0]);
  if ((x.dtype != DType::kInt8 && x.dtype != DType::kUInt8) || x.shape != shape) return nullptr;
  if (graph.value(v).dtype != dtype) return nullptr;
  if (!one_constant(graph, dq.inputs[1]) || graph.value(dq.inputs[1]).dtype != DType::kFloat32) return nullptr;
  if (dq.input(2) != kNoValue && !one_constant(graph, dq.input(2))) return nullptr;
  return &dq;
}

}  // namespace

Expected<bool> fuse_dequantize_add(Graph& graph) {
  const OpRegistry& registry = default_registry();
  bool changed = false;
  // Computed once, and again only after a fusion: per Add they made the pass quadratic (a fuzzed
  // model of many Adds took over 10 s here, tests/fuzz).
  std::vector<int> producers = graph.producers();
  std::vector<std::vector<int>> consumers = graph.consumers();
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& add = graph.nodes[i];
    if (!plain(add, "Add") || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
    const Value& sum = graph.value(add.outputs[0]);
    if (sum.dtype != DType::kFloat32 && sum.dtype != DType::kFloat16 && sum.dtype != DType::kBFloat16) continue;
    if (add.inputs[0] == add.inputs[1]) continue;
    const int at = static_cast<int>(i);
    const Node* da = usable_dq(graph, producers, consumers, add.inputs[0], at, sum.shape, sum.dtype);
    const Node* db = usable_dq(graph, producers, consumers, add.inputs[1], at, sum.shape, sum.dtype);
    if (!da || !db) continue;
    // A Relu that alone reads the sum comes along.
    int relu = -1;
    if (!graph.is_graph_output(add.outputs[0])) {
      const int r = graph.sole_reader(consumers, add.outputs[0]);
      if (r >= 0 && plain(graph.nodes[static_cast<size_t>(r)], "Relu") && graph.nodes[static_cast<size_t>(r)].outputs.size() == 1)
        relu = r;
    }
    Node f;
    f.name = graph.unique_name(add.name.empty() ? "dequantize_add" : add.name);
    f.op_type = "QLinearAdd";
    f.domain = "aotc";
    f.inputs = {da->inputs[0], da->inputs[1], da->input(2), db->inputs[0], db->inputs[1], db->input(2)};
    f.outputs = {relu >= 0 ? graph.nodes[static_cast<size_t>(relu)].outputs[0] : add.outputs[0]};
    f.attrs["to"] = Attribute::of_int(static_cast<int64_t>(sum.dtype));
    f.attrs["relu"] = Attribute::of_int(relu >= 0 ? 1 : 0);
    const Value before = graph.value(f.outputs[0]);
    Status st = infer_node(f, graph, registry);
    const bool same = st.is_ok() && graph.value(f.outputs[0]).shape == before.shape &&
                      graph.value(f.outputs[0]).dtype == before.dtype;
    graph.value(f.outputs[0]) = before;  // the value keeps its other traits (layout) either way
    if (!same) continue;
    // The fused node at the last node's place (the Relu's, else the Add's); the others go.
    const int pa = producers[static_cast<size_t>(add.inputs[0])], pb = producers[static_cast<size_t>(add.inputs[1])];
    const size_t place = relu >= 0 ? static_cast<size_t>(relu) : i;
    graph.nodes[place] = std::move(f);
    std::vector<int> gone = {pa, pb};
    if (relu >= 0) gone.push_back(at);
    std::sort(gone.begin(), gone.end(), std::greater<int>());
    for (int g : gone) graph.nodes.erase(graph.nodes.begin() + g);
    i = 0;  // indices moved: look again from the start (node 0 reads no producer; a match or two a model)
    producers = graph.producers();
    consumers = graph.consumers();
    changed = true;
  }
  return changed;
}

}  // namespace aotc
