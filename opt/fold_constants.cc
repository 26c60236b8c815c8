// Constant folding through the CPU reference: a node whose inputs are all constants is evaluated
// at compile time and its outputs become constants (the weight blob holds them). Shape-only ops
// (OpTraits::shape_only: Shape, Size) fold as soon as their input's shape is known, which is what
// makes shape subgraphs (Shape -> Gather -> Concat -> Reshape) vanish. The per-node work is
// ir/constant_folding (the frontend folds the same way while importing).
#include <vector>

#include "ir/constant_folding.h"
#include "opt/passes.h"

namespace aotc {

Expected<bool> fold_constants(Graph& graph) {
  bool changed = false;
  std::vector<Node> kept;
  kept.reserve(graph.nodes.size());
  for (Node& node : graph.nodes) {
    Expected<bool> folded = try_fold_node(node, graph);
    if (!folded) return node_error(node, folded.status().message());
    if (*folded) {
      changed = true;
      continue;
    }
    kept.push_back(std::move(node));
  }
  graph.nodes = std::move(kept);
  return changed;
}

}  // namespace aotc
