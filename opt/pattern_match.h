// What the op-by-op pattern passes (fuse_gelu, fuse_rms_norm) share: walking a chain of nodes
// whose intermediates each have one reader, reading scalar constants, and putting each fused node
// where the last node of its match was.
#pragma once

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace aotc {

class ChainMatcher {
 public:
  explicit ChainMatcher(Graph& g) : g_(g), producers_(g.producers()), consumers_(g.consumers()) {}

 protected:
  const Node& node(int i) const { return g_.nodes[static_cast<size_t>(i)]; }
  // `v` is read by exactly one node and is not a graph output.
  bool private_value(ValueId v) const {
    return v != kNoValue && !g_.is_graph_output(v) && consumers_[static_cast<size_t>(v)].size() == 1;
  }
  // The producer of `v` when v is private; recorded in `nodes`. -1 otherwise.
  int single_producer(ValueId v, std::set<int>* nodes) const {
    if (!private_value(v)) return -1;
    const int p = producers_[static_cast<size_t>(v)];
    if (p < 0) return -1;
    nodes->insert(p);
    return p;
  }
  // The one reader of `v` when v is private; -1 otherwise.
  int single_consumer(ValueId v) const {
    if (!private_value(v)) return -1;
    return consumers_[static_cast<size_t>(v)][0];
  }
  // A constant of one element (any numeric dtype), in *out.
  bool scalar_value(ValueId v, double* out) const {
    if (v == kNoValue) return false;
    const Value& val = g_.value(v);
    if (!val.is_constant() || val.constant->numel() != 1) return false;
    *out = val.constant->get(0);
    return true;
  }
  // A scalar constant within `rel` (relative) of `want`.
  bool scalar_is(ValueId v, double want, double rel = 0) const {
    double got = 0;
    return scalar_value(v, &got) && std::fabs(got - want) <= rel * std::fabs(want);
  }

  Graph& g_;
  std::vector<int> producers_;
  std::vector<std::vector<int>> consumers_;
};

// The graph's nodes with each replacement (node index, new node) at that index and the `removed`
// indices dropped (a replacement's index may be among them).
inline void replace_matched_nodes(Graph& graph, const std::set<int>& removed, std::vector<std::pair<int, Node>> replacements) {
  std::sort(replacements.begin(), replacements.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Node> nodes;
  nodes.reserve(graph.nodes.size());
  size_t r = 0;
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    if (r < replacements.size() && replacements[r].first == i) {
      nodes.push_back(std::move(replacements[r++].second));
      continue;
    }
    if (!removed.count(i)) nodes.push_back(std::move(graph.nodes[static_cast<size_t>(i)]));
  }
  graph.nodes = std::move(nodes);
}

}  // namespace aotc
