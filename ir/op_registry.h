// The op registry: one OpDef per op type, registered explicitly (ir/ops/all_ops.cc lists every
// op family's register function; no static-initializer magic). An OpDef bundles, for one op:
// import-time normalisation, shape inference, the CPU reference, and the lowering to templates.
// Passes ask traits (OpTraits), never op names.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/lowering.h"
#include "ir/status.h"

namespace aotc {

struct OpTraits {
  bool elementwise = false;          // out[i] depends only on inputs at i (after broadcasting;
                                     // QuantizeLinear / DequantizeLinear: with a scalar scale)
  bool is_view = false;              // output 0 is input 0's bytes under a new shape
  bool epilogue_activation = false;  // unary op a conv/gemm epilogue may absorb (scalar_expr set)
  // ... but only a convolution's that does not run as a GEMM (not a 1x1 stride-1 one, not a Gemm):
  // cuBLASLt's epilogues lack it, and the GEMM would leave cuBLASLt for a slower kernel (Swish:
  // EfficientNet's 1x1 expansions, docs/perf_notes.md v64).
  bool epilogue_not_on_gemm = false;
  bool commutative = false;          // binary op with f(a, b) == f(b, a)
  bool shape_only = false;           // output depends only on input shapes (Shape, Size)
  bool data_dependent_shape = false; // output shape depends on input values (NonZero, Unique)
  // Not folded while importing, only by the fold_constants pass: DequantizeLinear of a constant
  // int8 weight must reach opt/fuse_qdq as integers (the quantized kernel reads them).
  bool fold_in_pipeline_only = false;
  // The lowering handles the sub-16-bit types (ir/small_dtypes.h; one byte per element on the GPU,
  // templates/small_dtypes.cuh): Cast, CastLike, QuantizeLinear, DequantizeLinear. codegen refuses
  // those types at every other op.
  bool gpu_small_dtypes = false;
};

struct OpDef {
  std::string op_type;
  std::string domain;  // "" = ONNX default domain, "aotc" = internal fused ops
  OpTraits traits;

  // Optional. Runs once in the frontend right after the node is created from ONNX, before shape
  // inference: resolve opset differences into the canonical form (attribute -> input or back,
  // defaults filled in, legacy semantics rewritten). `opset` is the model's default-domain opset.
  Status (*import)(Node& node, Graph& graph, int64_t opset) = nullptr;

  // Required. Check inputs (count, dtypes, ranks, constant-ness where required) and set every
  // output Value's dtype, shape and shape_known. Inputs' shapes are known when this runs.
  Status (*infer)(Node& node, Graph& graph) = nullptr;

  // Required. The CPU reference: numerical truth for tests and constant folding. `inputs` has one
  // entry per node input (nullptr for absent ones); `outputs` are already allocated with the
  // dtypes and shapes that infer() set, zero-filled; the function fills them.
  Status (*reference)(const Node& node, const std::vector<const Tensor*>& inputs,
                      std::vector<Tensor>& outputs) = nullptr;

  // Required for ops that can run on the GPU. Shapes are known; weights are constants in `graph`.
  Expected<Lowering> (*lower)(const Node& node, const Graph& graph) = nullptr;

  // Optional, for unary elementwise ops: the CUDA C++ expression computing one output element
  // from the element expression `x` (of the node's dtype). Used by the op's own lowering and by
  // epilogue/elementwise fusion, e.g. Relu -> "(x > 0.f ? x : 0.f)".
  std::string (*scalar_expr)(const Node& node, const Graph& graph, const std::string& x) = nullptr;
};

class OpRegistry {
 public:
  // Adds an op; a second registration of the same (domain, op_type) is a programming error.
  void add(OpDef def);
  const OpDef* find(const std::string& op_type, const std::string& domain = "") const;
  std::vector<const OpDef*> all() const;

 private:
  std::map<std::pair<std::string, std::string>, OpDef> defs_;
};

// The registry with every op aotc supports (built on first use by register_all_ops).
const OpRegistry& default_registry();

// A node whose output is its data input's bytes under another shape (OpTraits::is_view: Reshape,
// Flatten, Identity, Squeeze, Unsqueeze), for passes that look through such views.
inline bool is_view_node(const Node& n) {
  const OpDef* def = default_registry().find(n.op_type, n.domain);
  return def && def->traits.is_view && !n.inputs.empty() && n.inputs[0] != kNoValue;
}

// The one place that lists every op family (ir/ops/all_ops.cc).
void register_all_ops(OpRegistry& registry);

}  // namespace aotc
