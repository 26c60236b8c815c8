// Compile-time evaluation of one node through its CPU reference. Used while importing (so shape
// subgraphs such as Shape -> Gather -> Concat -> Reshape become constants before the ops that need
// them are inferred) and by opt/fold_constants for what later passes expose.
#pragma once

#include <cstdint>

#include "ir/graph.h"
#include "ir/op_registry.h"

namespace aotc {

// Largest total output size a node may fold to (the weight blob holds it); a larger one is left
// to run on the GPU. The sum over all folds is capped by Graph::max_folded_bytes_total (2 GiB):
// beyond it folding is an error.
constexpr int64_t kMaxFoldedBytes = 64LL << 20;
// A node whose constant inputs are kExpandingFoldRatio times smaller than its output, and whose
// output is over kMaxExpandingFoldBytes, runs on the GPU instead of folding (it has a kernel).
constexpr int64_t kMaxExpandingFoldBytes = 1LL << 20;
constexpr int64_t kExpandingFoldRatio = 16;

// The work of one fold, estimated before the CPU reference runs (estimate_fold_work, in
// multiply-adds or element visits). A node over kMaxFoldWork is not folded: it runs on the GPU
// like any other node (a node without a GPU lowering is an error instead). Once the graph's folds
// have done Graph::max_fold_work_total (2^31), only folds of at most kSmallFoldWork go on: the
// shape arithmetic later nodes need as constants. Bounds folding time, which the output size does
// not: a MatMul of two 1024x1024 constants has a 4 MiB output and 2^30 multiply-adds.
constexpr int64_t kMaxFoldWork = int64_t{1} << 27;
constexpr int64_t kSmallFoldWork = int64_t{1} << 16;

// Element visits of `node`'s reference (inputs + outputs), or its multiply-adds where these grow
// with a reduction or window (MatMul, Gemm, Conv, ConvTranspose, Einsum, Attention, RNNs, DFT,
// Det, pools, LRN, RoiAlign); saturates at INT64_MAX. Shapes must be inferred.
int64_t estimate_fold_work(const Node& node, const Graph& graph);

// If every input of `node` is constant, or the op is shape-only (OpTraits::shape_only) and its
// input shapes are known, evaluates it and stores each output in its Value::constant. Nodes with
// no inputs (random generators) never fold. Returns true when folded; the caller drops the node.
// `importing`: the frontend's call while it builds the graph (ops with
// OpTraits::fold_in_pipeline_only wait for the fold_constants pass).
Expected<bool> try_fold_node(const Node& node, Graph& graph,
                             const OpRegistry& registry = default_registry(), bool importing = false);

}  // namespace aotc
