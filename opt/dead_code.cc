// Dead-code removal: a node is kept only if one of its outputs reaches a graph output. Walks the
// nodes backwards once (they are in topological order), so chains of dead nodes go in one run.
#include <vector>

#include "opt/passes.h"

namespace aotc {

Expected<bool> dead_code(Graph& graph) {
  std::vector<char> live(graph.values.size(), 0);
  for (ValueId id : graph.outputs) live[static_cast<size_t>(id)] = 1;
  std::vector<char> keep(graph.nodes.size(), 0);
  for (size_t n = graph.nodes.size(); n-- > 0;) {
    const Node& node = graph.nodes[n];
    for (ValueId out : node.outputs)
      if (out != kNoValue && live[static_cast<size_t>(out)]) keep[n] = 1;
    if (!keep[n]) continue;
    for (ValueId in : node.inputs)
      if (in != kNoValue) live[static_cast<size_t>(in)] = 1;
  }
  std::vector<Node> kept;
  kept.reserve(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    if (keep[n]) kept.push_back(std::move(graph.nodes[n]));
  bool changed = kept.size() != graph.nodes.size();
  graph.nodes = std::move(kept);
  return changed;
}

}  // namespace aotc
