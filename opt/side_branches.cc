// side_branches: nodes that may run beside other work (TensorRT's auxiliary streams). A node i
// whose inputs are all ready after node f (its last producer) and whose outputs are first read by
// node j can run concurrently with every other node between f and j. At batch 1 most kernels leave
// the GPU largely idle, so such a node (ResNet's downsample convolution, beside conv1 and conv2 of
// its block) costs nothing on the critical path when it runs on a second stream.
//
// The pass moves each chosen node to just after f and records its join j in Graph::side_join; the
// memory plan keeps everything the node reads, writes or scratches allocated until j, codegen puts
// its steps on lane 1 (the library's auxiliary stream, forked before the node and joined before
// j), and the runtime captures that fork / join into the CUDA graph. Plain launches still run the
// table in order, which the move keeps topological.
//
// Chosen: a node that launches GPU work (not a view), whose outputs are all read by later nodes
// and none is a graph output, hold at most target.aux_stream_max_bytes (its outputs then stay
// allocated over the concurrent region; small outputs are also what under-fills the GPU), and
// beside which 1 to 8 other nodes between f and j launch work. Regions [f + 1, j] never overlap,
// so one auxiliary stream suffices; the candidates with the most work beside them are taken
// first. Nothing when target.aux_streams is 0.
#include <algorithm>
#include <iterator>
#include <map>

#include "ir/op_registry.h"
#include "opt/passes.h"

namespace aotc {
namespace {

// True when the node lowers to at least one GPU step (a view or a node without steps is false).
bool launches_work(const Graph& graph, const Node& node, const OpRegistry& registry) {
  const OpDef* def = registry.find(node.op_type, node.domain);
  if (!def || !def->lower || def->traits.is_view) return false;
  Expected<Lowering> low = def->lower(node, graph);
  return low && !low->is_view && !low->steps.empty();
}

struct Candidate {
  int node = -1, fork = -1, join = -1;  // fork: last producer (-1: none); join: first reader
  int beside = 0;                       // working nodes strictly between fork and join, but node
};

constexpr int kMaxBeside = 8;

}  // namespace

Expected<bool> side_branches(Graph& graph) {
  graph.side_join.clear();
  const int n = static_cast<int>(graph.nodes.size());
  if (graph.target.aux_streams < 1 || n < 3) return false;
  const OpRegistry& registry = default_registry();
  std::vector<bool> work(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) work[static_cast<size_t>(i)] = launches_work(graph, graph.nodes[static_cast<size_t>(i)], registry);
  // Prefix counts of working nodes, for "another node between f and j launches work".
  std::vector<int> prefix(static_cast<size_t>(n) + 1, 0);
  for (int i = 0; i < n; ++i) prefix[static_cast<size_t>(i) + 1] = prefix[static_cast<size_t>(i)] + (work[static_cast<size_t>(i)] ? 1 : 0);

  const std::vector<int> producers = graph.producers();
  const std::vector<std::vector<int>> consumers = graph.consumers();
  std::vector<Candidate> candidates;
  for (int i = 0; i < n; ++i) {
    const Node& node = graph.nodes[static_cast<size_t>(i)];
    if (!work[static_cast<size_t>(i)]) continue;
    Candidate c;
    c.node = i;
    for (ValueId in : node.inputs)
      if (in != kNoValue) c.fork = std::max(c.fork, producers[static_cast<size_t>(in)]);
    int64_t bytes = 0;
    bool ok = !node.outputs.empty();
    c.join = n;
    for (ValueId out : node.outputs) {
      if (out == kNoValue) continue;
      const std::vector<int>& readers = consumers[static_cast<size_t>(out)];
      if (graph.is_graph_output(out) || readers.empty()) ok = false;
      for (int r : readers) c.join = std::min(c.join, r);
      bytes += graph.value(out).byte_size();
    }
    if (!ok || c.join >= n || bytes > graph.target.aux_stream_max_bytes) continue;
    // Other working nodes strictly between fork and join: at least one, and few enough that the
    // node's buffers are not held across a long stretch of the graph (nor block other regions).
    c.beside = prefix[static_cast<size_t>(c.join)] - prefix[static_cast<size_t>(c.fork) + 1] - 1;
    if (c.beside < 1 || c.beside > kMaxBeside) continue;
    candidates.push_back(c);
  }
  if (candidates.empty()) return false;

  // Most concurrency first (the working nodes beside, then the narrower region), keeping those
  // whose [fork + 1, join] overlaps no kept region (a map of kept regions by start).
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.beside != b.beside) return a.beside > b.beside;
    return a.join - a.fork < b.join - b.fork;
  });
  std::map<int, int> regions;  // start -> end, disjoint
  std::vector<Candidate> kept;
  for (const Candidate& c : candidates) {
    const int start = c.fork + 1, end = c.join;
    auto it = regions.upper_bound(end);
    if (it != regions.begin() && std::prev(it)->second >= start) continue;
    regions.emplace(start, end);
    kept.push_back(c);
  }

  // The new order: each kept node right after its fork (regions are disjoint, so the moves are
  // independent), then the joins renumbered.
  std::vector<int> moved_to_after(static_cast<size_t>(n) + 1, -2);  // fork + 1 -> node placed there
  std::vector<bool> is_side(static_cast<size_t>(n), false);
  for (const Candidate& c : kept) {
    moved_to_after[static_cast<size_t>(c.fork + 1)] = c.node;
    is_side[static_cast<size_t>(c.node)] = true;
  }
  std::vector<int> order;
  order.reserve(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    if (moved_to_after[static_cast<size_t>(p)] >= 0) order.push_back(moved_to_after[static_cast<size_t>(p)]);
    if (!is_side[static_cast<size_t>(p)]) order.push_back(p);
  }
  std::vector<int> new_index(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) new_index[static_cast<size_t>(order[static_cast<size_t>(p)])] = p;
  std::vector<Node> nodes;
  nodes.reserve(static_cast<size_t>(n));
  for (int old : order) nodes.push_back(std::move(graph.nodes[static_cast<size_t>(old)]));
  graph.nodes = std::move(nodes);
  graph.side_join.assign(static_cast<size_t>(n), -1);
  for (const Candidate& c : kept)
    graph.side_join[static_cast<size_t>(new_index[static_cast<size_t>(c.node)])] = new_index[static_cast<size_t>(c.join)];
  return true;
}

}  // namespace aotc
