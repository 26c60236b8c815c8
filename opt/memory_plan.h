// The memory plan: every intermediate tensor gets a byte offset in ONE arena, sized by liveness.
// Follows TFLite Micro's planner: buffers with (size, first_use, last_use), placed greedily by
// decreasing size at the lowest offset that does not overlap a simultaneously live buffer; a linear
// (no reuse) baseline and the liveness lower bound (largest total of simultaneously live buffers)
// are reported beside it, and an overlap checker validates the result.
// plan_memory() applies the plan to a Graph: views (OpTraits::is_view) become aliases
// (Value::alias_of) and take no space; graph inputs, outputs and constants are not in the arena
// (inputs/outputs live in caller buffers, constants in the weight blob); each node's scratch
// (Lowering::scratch_bytes) is a buffer live for that node alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace aotc {

constexpr int64_t kArenaAlignment = 256;

class MemoryPlanner {
 public:
  // Returns the buffer's index. first_use/last_use are inclusive step indices.
  int add_buffer(int64_t size, int first_use, int last_use, std::string label = "");
  // Fills offsets: first fit, largest first (or another order where smaller); plans of more than
  // kLargePlanBuffers buffers are placed in order of first use by a sweep (place_by_first_use).
  Status plan_greedy_by_size();
  static constexpr size_t kLargePlanBuffers = 4096;
  Status plan_linear();           // every buffer after the previous one (baseline)
  int64_t arena_bytes() const;    // end of the highest buffer, aligned
  int64_t lower_bound() const;    // max over steps of the sum of live (aligned) sizes
  int64_t offset(int buffer) const;
  // Places a buffer by hand (tests of check_no_overlap, externally computed plans).
  void set_offset(int buffer, int64_t offset);
  int num_buffers() const { return static_cast<int>(buffers_.size()); }
  Status check_no_overlap() const;  // two buffers live at the same step never share bytes
  std::string to_string() const;   // one line per buffer: label, size, [first,last], offset

 private:
  Status place_by_first_use();
  struct Buffer {
    int64_t size;
    int first_use, last_use;
    std::string label;
    int64_t offset = -1;
  };
  std::vector<Buffer> buffers_;
};

struct MemoryPlan {
  int64_t arena_bytes = 0;        // greedy-by-size result
  int64_t linear_bytes = 0;       // baseline without reuse
  int64_t lower_bound = 0;        // liveness lower bound
  std::vector<int64_t> scratch_offset;  // per node index: arena offset of its scratch, or -1
  std::string text;               // printable plan
};

// Sets Value::arena_offset / alias_of for every value and returns the summary. Needs the lowering
// of each node (for views and scratch sizes), so it runs last, after all rewriting passes.
Expected<MemoryPlan> plan_memory(Graph& graph);

}  // namespace aotc
