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

// If every input of `node` is constant, or the op is shape-only (OpTraits::shape_only) and its
// input shapes are known, evaluates it and stores each output in its Value::constant. Nodes with
// no inputs (random generators) never fold. Returns true when folded; the caller drops the node.
// `importing`: the frontend's call while it builds the graph (ops with
// OpTraits::fold_in_pipeline_only wait for the fold_constants pass).
Expected<bool> try_fold_node(const Node& node, Graph& graph,
                             const OpRegistry& registry = default_registry(), bool importing = false);

}  // namespace aotc
