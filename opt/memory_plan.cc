// The arena planner (TFLite Micro's GreedyMemoryPlanner, simplified) and plan_memory(), which
// turns a Graph into planner buffers: one per intermediate value (views alias their root and
// extend its lifetime instead) and one per node scratch buffer. See memory_plan.h.
#include "opt/memory_plan.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <sstream>

#include "ir/op_registry.h"

namespace aotc {

namespace {

int64_t align_up(int64_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

bool lifetimes_intersect(int a_first, int a_last, int b_first, int b_last) {
  return a_first <= b_last && b_first <= a_last;
}

}  // namespace

int MemoryPlanner::add_buffer(int64_t size, int first_use, int last_use, std::string label) {
  buffers_.push_back(Buffer{size, first_use, last_use, std::move(label)});
  return static_cast<int>(buffers_.size() - 1);
}

Status MemoryPlanner::plan_greedy_by_size() {
  for (const Buffer& b : buffers_)
    if (b.size < 0 || b.first_use > b.last_use)
      return Status::error("memory plan: buffer '" + escape_for_message(b.label) + "' has size " +
                           std::to_string(b.size) + " and lifetime [" + std::to_string(b.first_use) + "," +
                           std::to_string(b.last_use) + "]");
  // Greedy first fit in one order of the buffers; the arena it gives.
  auto place = [&](const std::vector<int>& order) {
    std::vector<int> placed;
    for (int idx : order) {
      Buffer& cur = buffers_[static_cast<size_t>(idx)];
      const int64_t size = align_up(cur.size);
      // Placed buffers live at the same time as `cur`, by offset: take the first gap that fits.
      std::vector<const Buffer*> live;
      for (int p : placed) {
        const Buffer& o = buffers_[static_cast<size_t>(p)];
        if (align_up(o.size) > 0 && lifetimes_intersect(cur.first_use, cur.last_use, o.first_use, o.last_use))
          live.push_back(&o);
      }
      std::sort(live.begin(), live.end(), [](const Buffer* a, const Buffer* b) { return a->offset < b->offset; });
      int64_t candidate = 0;
      for (const Buffer* o : live) {
        if (candidate + size <= o->offset) break;
        candidate = std::max(candidate, o->offset + align_up(o->size));
      }
      cur.offset = candidate;
      placed.push_back(idx);
    }
    return arena_bytes();
  };
  // Orders tried (stable sorts: ties keep insertion order, so plans are deterministic): largest
  // first (TFLite Micro's), largest size x lifetime first, earliest first use first. The first
  // order's plan is kept unless another gives a strictly smaller arena (ResNet-50 batch 1 after
  // merge_projection_shortcut: 1.09x the lower bound by size, within 2% with another order).
  auto by = [&](auto key) {
    std::vector<int> order(buffers_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return key(buffers_[static_cast<size_t>(a)]) > key(buffers_[static_cast<size_t>(b)]);
    });
    return order;
  };
  const std::vector<std::vector<int>> orders = {
      by([](const Buffer& b) { return align_up(b.size); }),
      by([](const Buffer& b) { return align_up(b.size) * (b.last_use - b.first_use + 1); }),
      by([](const Buffer& b) { return -static_cast<int64_t>(b.first_use); }),
  };
  if (buffers_.size() > kLargePlanBuffers) return place_by_first_use();
  int64_t best = -1;
  std::vector<int64_t> best_offsets;
  for (const std::vector<int>& order : orders) {
    const int64_t arena = place(order);
    if (best >= 0 && arena >= best) continue;
    best = arena;
    best_offsets.clear();
    for (const Buffer& b : buffers_) best_offsets.push_back(b.offset);
  }
  for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i].offset = best_offsets[i];
  return Status::ok();
}

// First fit in order of first use, as a sweep over the steps: buffers whose lifetime ended return
// their bytes to a free list of gaps (merged with free neighbours), so each placement looks at the
// gaps, not at every buffer placed before. For plans too large for the orders above (those scan
// every placed buffer per placement: O(n^2), 34 s for the 106,497 buffers of a 4096-step Scan
// unrolled, in a release build).
Status MemoryPlanner::place_by_first_use() {
  std::vector<int> order(buffers_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return buffers_[static_cast<size_t>(a)].first_use < buffers_[static_cast<size_t>(b)].first_use;
  });
  std::map<int64_t, int64_t> gaps;  // offset -> size of free space below `top`
  int64_t top = 0;                  // everything from here up is free
  using Ending = std::pair<int, int>;  // (last_use, buffer)
  std::priority_queue<Ending, std::vector<Ending>, std::greater<Ending>> live;
  auto release = [&](const Buffer& b) {
    int64_t off = b.offset, size = align_up(b.size);
    if (size == 0) return;
    auto next = gaps.lower_bound(off);
    if (next != gaps.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        off = prev->first;
        size += prev->second;
        gaps.erase(prev);
      }
    }
    next = gaps.lower_bound(off);
    if (next != gaps.end() && off + size == next->first) {
      size += next->second;
      gaps.erase(next);
    }
    if (off + size == top) {
      top = off;  // the free space ends at the top: lower the top instead
    } else {
      gaps[off] = size;
    }
  };
  for (int idx : order) {
    Buffer& cur = buffers_[static_cast<size_t>(idx)];
    while (!live.empty() && live.top().first < cur.first_use) {
      release(buffers_[static_cast<size_t>(live.top().second)]);
      live.pop();
    }
    const int64_t size = align_up(cur.size);
    cur.offset = -1;
    for (auto g = gaps.begin(); g != gaps.end() && size > 0; ++g)
      if (g->second >= size) {
        cur.offset = g->first;
        const int64_t rest = g->second - size, at = g->first + size;
        gaps.erase(g);
        if (rest > 0) gaps[at] = rest;
        break;
      }
    if (cur.offset < 0) {
      cur.offset = top;
      top += size;
    }
    live.push({cur.last_use, idx});
  }
  return Status::ok();
}

Status MemoryPlanner::plan_linear() {
  int64_t next = 0;
  for (Buffer& b : buffers_) {
    if (b.size < 0) return Status::error("memory plan: buffer '" + escape_for_message(b.label) + "' has a negative size");
    b.offset = next;
    next += align_up(b.size);
  }
  return Status::ok();
}

int64_t MemoryPlanner::arena_bytes() const {
  int64_t end = 0;
  for (const Buffer& b : buffers_)
    if (b.offset >= 0) end = std::max(end, b.offset + align_up(b.size));
  return align_up(end);
}

int64_t MemoryPlanner::lower_bound() const {
  // The largest sum of live sizes over the steps: +size where a lifetime starts, -size after it ends.
  std::map<int, int64_t> delta;
  for (const Buffer& b : buffers_) {
    delta[b.first_use] += align_up(b.size);
    delta[b.last_use + 1] -= align_up(b.size);
  }
  int64_t best = 0, live = 0;
  for (const auto& [step, d] : delta) {
    live += d;
    best = std::max(best, live);
  }
  return best;
}

int64_t MemoryPlanner::offset(int buffer) const { return buffers_[static_cast<size_t>(buffer)].offset; }

void MemoryPlanner::set_offset(int buffer, int64_t offset) { buffers_[static_cast<size_t>(buffer)].offset = offset; }

Status MemoryPlanner::check_no_overlap() const {
  for (const Buffer& a : buffers_)
    if (a.offset < 0 || a.offset % kArenaAlignment != 0)
      return Status::error("memory plan: buffer '" + escape_for_message(a.label) + "' has offset " +
                           std::to_string(a.offset) + " (unplaced or unaligned)");
  // A sweep in order of first use: the buffers live at a step, by offset; a buffer that starts
  // overlaps a live one exactly when it overlaps its neighbour below or above in that order (the
  // live ones are disjoint, or the sweep stopped earlier). O(n log n).
  std::vector<size_t> order;
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (buffers_[i].size > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers_[a].first_use < buffers_[b].first_use; });
  using Live = std::multimap<int64_t, size_t>;  // offset -> buffer
  Live live;
  auto later = [&](const Live::iterator& x, const Live::iterator& y) {
    return buffers_[x->second].last_use > buffers_[y->second].last_use;
  };
  std::priority_queue<Live::iterator, std::vector<Live::iterator>, decltype(later)> ending(later);
  auto overlap = [&](const Buffer& a, const Buffer& b) {
    return Status::error("memory plan: buffers '" + escape_for_message(a.label) + "' [" + std::to_string(a.offset) +
                         ", +" + std::to_string(a.size) + ") and '" + escape_for_message(b.label) + "' [" +
                         std::to_string(b.offset) + ", +" + std::to_string(b.size) + ") are live together at step " +
                         std::to_string(std::max(a.first_use, b.first_use)) + " and overlap");
  };
  for (size_t i : order) {
    const Buffer& a = buffers_[i];
    while (!ending.empty() && buffers_[ending.top()->second].last_use < a.first_use) {
      live.erase(ending.top());
      ending.pop();
    }
    auto above = live.lower_bound(a.offset);
    if (above != live.end() && buffers_[above->second].offset < a.offset + a.size)
      return overlap(a, buffers_[above->second]);
    if (above != live.begin()) {
      const Buffer& below = buffers_[std::prev(above)->second];
      if (below.offset + below.size > a.offset) return overlap(a, below);
    }
    ending.push(live.emplace(a.offset, i));
  }
  return Status::ok();
}

std::string MemoryPlanner::to_string() const {
  std::ostringstream os;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const Buffer& b = buffers_[i];
    os << "  buffer " << i << " " << escape_for_message(b.label, 80) << ": " << b.size << " bytes, steps ["
       << b.first_use << "," << b.last_use << "], offset " << b.offset << "\n";
  }
  return os.str();
}

Expected<MemoryPlan> plan_memory(Graph& graph) {
  const OpRegistry& registry = default_registry();
  const int num_nodes = static_cast<int>(graph.nodes.size());
  const std::vector<int> producers = graph.producers();
  std::vector<int> last_use(graph.values.size(), -1);
  for (int n = 0; n < num_nodes; ++n)
    for (ValueId in : graph.nodes[static_cast<size_t>(n)].inputs)
      if (in != kNoValue) last_use[static_cast<size_t>(in)] = n;

  for (Value& v : graph.values) {
    v.arena_offset = -1;
    v.alias_of = kNoValue;
  }
  // Lowerings: views and scratch sizes.
  std::vector<int64_t> scratch(static_cast<size_t>(num_nodes), 0);
  for (int n = 0; n < num_nodes; ++n) {
    const Node& node = graph.nodes[static_cast<size_t>(n)];
    const OpDef* def = registry.find(node.op_type, node.domain);
    if (!def) return node_error(node, "unsupported op");
    if (!def->lower) return node_error(node, "has no GPU lowering");
    Expected<Lowering> low = def->lower(node, graph);
    if (!low) return low.status();
    scratch[static_cast<size_t>(n)] = low->scratch_bytes;
    // A view whose output is a graph output is not a view: that output lives in the caller's
    // buffer, so codegen copies the bytes there instead.
    bool view = (def->traits.is_view || low->is_view) && !node.inputs.empty() && node.input(0) != kNoValue &&
                !node.outputs.empty() && node.outputs[0] != kNoValue && !graph.is_graph_output(node.outputs[0]);
    if (!view) continue;
    ValueId root = node.inputs[0];
    while (graph.value(root).alias_of != kNoValue) root = graph.value(root).alias_of;
    graph.value(node.outputs[0]).alias_of = root;
  }
  // A root lives until the last use of any of its views.
  for (size_t id = 0; id < graph.values.size(); ++id) {
    ValueId root = graph.values[id].alias_of;
    if (root != kNoValue)
      last_use[static_cast<size_t>(root)] = std::max(last_use[static_cast<size_t>(root)], last_use[id]);
  }
  // A value stored in another's rows (Value::stored_in, opt/concat_in_place.cc) has no buffer:
  // its host, an arena value, is live from the earliest of their producers to the later of their
  // last uses. `storage_root` follows views and hosts to the value that owns the bytes.
  auto storage_root = [&graph](ValueId id) {
    for (size_t hops = 0; hops <= graph.values.size(); ++hops) {
      const Value& v = graph.value(id);
      if (v.alias_of != kNoValue) id = v.alias_of;
      else if (v.stored_in != kNoValue) id = v.stored_in;
      else break;
    }
    return id;
  };
  std::vector<int> first_use(producers.begin(), producers.end());
  for (size_t id = 0; id < graph.values.size(); ++id) {
    const Value& v = graph.values[id];
    if (v.stored_in == kNoValue) continue;
    const ValueId host = storage_root(static_cast<ValueId>(id));
    if (v.alias_of != kNoValue || host == static_cast<ValueId>(id) || producers[id] < 0 ||
        producers[static_cast<size_t>(host)] < 0 || graph.is_graph_output(host) || graph.is_graph_input(host) ||
        graph.value(host).is_constant() || graph.is_graph_output(static_cast<ValueId>(id)))
      return Status::error("memory plan: value '" + escape_for_message(v.name) +
                           "' is stored in another value's rows, which must be an arena value written by a node");
    const size_t h = static_cast<size_t>(host);
    first_use[h] = std::min(first_use[h], producers[id]);
    last_use[h] = std::max(last_use[h], last_use[id]);
  }

  // A side-lane node (Graph::side_join) runs beside the main-lane nodes up to its join: what it
  // reads and writes stays allocated until the join, so no main-lane value there shares its bytes.
  const bool sides = graph.side_join.size() == graph.nodes.size();
  if (!graph.side_join.empty() && !sides)
    return Status::error("side_join has " + std::to_string(graph.side_join.size()) + " entries for " +
                         std::to_string(graph.nodes.size()) + " nodes");
  for (int n = 0; sides && n < num_nodes; ++n) {
    const int join = graph.side_join[static_cast<size_t>(n)];
    if (join < 0) continue;
    const Node& node = graph.nodes[static_cast<size_t>(n)];
    for (const std::vector<ValueId>* ids : {&node.inputs, &node.outputs})
      for (ValueId id : *ids) {
        if (id == kNoValue) continue;
        const ValueId root = storage_root(id);
        last_use[static_cast<size_t>(root)] = std::max(last_use[static_cast<size_t>(root)], join);
      }
  }

  MemoryPlanner planner;
  std::vector<std::pair<ValueId, int>> value_buffers;
  for (size_t id = 0; id < graph.values.size(); ++id) {
    const Value& v = graph.values[id];
    const ValueId vid = static_cast<ValueId>(id);
    int producer = producers[id];
    if (producer < 0 || v.is_constant() || v.alias_of != kNoValue || v.stored_in != kNoValue ||
        graph.is_graph_input(vid) || graph.is_graph_output(vid))
      continue;
    const int first = first_use[id];
    int last = std::max(producer, last_use[id]);  // an unread output still gets written
    value_buffers.push_back({vid, planner.add_buffer(v.byte_size(), first, last, "%" + v.name)});
  }
  std::vector<std::pair<int, int>> scratch_buffers;
  for (int n = 0; n < num_nodes; ++n)
    if (scratch[static_cast<size_t>(n)] > 0)
      scratch_buffers.push_back({n, planner.add_buffer(scratch[static_cast<size_t>(n)], n,
                                                       sides ? std::max(n, graph.side_join[static_cast<size_t>(n)]) : n,
                                                       "scratch of node " + std::to_string(n) + " '" +
                                                           graph.nodes[static_cast<size_t>(n)].name + "'")});

  MemoryPlan plan;
  AOTC_RETURN_IF_ERROR(planner.plan_linear());
  plan.linear_bytes = planner.arena_bytes();
  AOTC_RETURN_IF_ERROR(planner.plan_greedy_by_size());
  AOTC_RETURN_IF_ERROR(planner.check_no_overlap());
  plan.arena_bytes = planner.arena_bytes();
  plan.lower_bound = planner.lower_bound();
  for (const auto& vb : value_buffers) graph.value(vb.first).arena_offset = planner.offset(vb.second);
  // Values stored in a host's rows sit at the host's offset plus their column's bytes (the hosts
  // are planned values, placed above); views inside the arena share their root's offset; views of
  // inputs/constants keep -1.
  for (size_t id = 0; id < graph.values.size(); ++id) {
    Value& v = graph.values[id];
    if (v.stored_in == kNoValue) continue;
    const Value& host = graph.value(v.stored_in);
    if (host.arena_offset < 0 || host.alias_of != kNoValue || host.stored_in != kNoValue)
      return Status::error("memory plan: value '" + escape_for_message(v.name) + "' is stored in '" +
                           escape_for_message(host.name) + "', which has no buffer of its own");
    v.arena_offset = host.arena_offset + v.stored_at * dtype_size(v.dtype);
  }
  for (Value& v : graph.values)
    if (v.alias_of != kNoValue) v.arena_offset = graph.value(v.alias_of).arena_offset;
  plan.scratch_offset.assign(static_cast<size_t>(num_nodes), -1);
  for (const auto& sb : scratch_buffers) plan.scratch_offset[static_cast<size_t>(sb.first)] = planner.offset(sb.second);

  std::ostringstream os;
  os << "arena " << plan.arena_bytes << " bytes (lower bound " << plan.lower_bound << ", linear "
     << plan.linear_bytes << "), " << value_buffers.size() << " tensors, " << scratch_buffers.size()
     << " scratch buffers\n"
     << planner.to_string();
  for (size_t id = 0; id < graph.values.size(); ++id) {
    const Value& v = graph.values[id];
    if (v.stored_in != kNoValue)
      os << "  %" << escape_for_message(v.name, 80) << " in the rows of %" << escape_for_message(graph.value(v.stored_in).name, 80)
         << " from column " << v.stored_at << " (row stride " << graph.row_stride(static_cast<ValueId>(id)) << ")\n";
  }
  for (const Value& v : graph.values)
    if (v.alias_of != kNoValue)
      os << "  view %" << escape_for_message(v.name, 80) << " = %" << escape_for_message(graph.value(v.alias_of).name, 80)
         << "\n";
  plan.text = os.str();
  return plan;
}

}  // namespace aotc
