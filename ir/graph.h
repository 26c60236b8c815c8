// The IR: a Graph of Values (dtype, static shape, optional constant data) and Nodes (op, inputs,
// outputs, attributes) kept in topological order. Values are addressed by ValueId (an index into
// Graph::values) and never deleted; a value no node or graph output refers to is simply dead.
// Passes edit `nodes` directly and call verify() (ir/verifier.h) in tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/status.h"
#include "ir/target.h"
#include "ir/tensor.h"

namespace aotc {

using ValueId = int32_t;
constexpr ValueId kNoValue = -1;  // an absent optional input ("" in ONNX)

struct Value {
  std::string name;               // the ONNX name; unique in the graph
  DType dtype = DType::kUndefined;
  Shape shape;                    // static; valid once shape_known
  bool shape_known = false;
  std::shared_ptr<const Tensor> constant;  // non-null for initializers and folded constants

  // Physical layout, when not packed row-major: the value has no buffer of its own, its rows (the
  // vectors of its last dim) lie inside `stored_in`'s rows from element stored_at on (a Concat
  // input written in place by its producer: opt/concat_in_place.cc; the producer's lowering must
  // write rows Graph::row_stride apart, Lowering::strided_output).
  ValueId stored_in = kNoValue;
  int64_t stored_at = 0;

  // Set by the memory plan (opt/memory_plan): where the bytes live at run time.
  int64_t arena_offset = -1;      // byte offset in the arena; -1 when not in the arena
  ValueId alias_of = kNoValue;    // a view: same bytes as this other value (reshape-like ops)

  bool is_constant() const { return constant != nullptr; }
  int64_t numel() const { return shape_numel(shape); }
  int64_t byte_size() const { return numel() * dtype_size(dtype); }
};

struct Node {
  std::string name;       // the ONNX node name (may be empty or contain anything: escape it)
  std::string op_type;    // "Conv", or an aotc-internal op such as "FusedConv"
  std::string domain;     // "" for the ONNX default domain, "aotc" for internal ops
  std::vector<ValueId> inputs;   // kNoValue for an absent optional input
  std::vector<ValueId> outputs;
  Attributes attrs;

  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  float attr_float(const std::string& key, float fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& key, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(const std::string& key, std::vector<float> fallback = {}) const;
  // Number of inputs that are present (trailing kNoValue entries are not counted).
  int num_present_inputs() const;
  // The input at `index`, or kNoValue when absent or out of range.
  ValueId input(size_t index) const { return index < inputs.size() ? inputs[index] : kNoValue; }
  // "Conv", or "aotc.FusedConv" for an op of another domain (reports and tools name ops so).
  std::string qualified_op() const { return domain.empty() ? op_type : domain + "." + op_type; }
};

class Graph {
 public:
  std::string name;
  int64_t opset = 0;              // version of the default ONNX domain the model imports
  Target target;                  // what lowering chooses implementations for (ir/target.h)
  std::vector<Value> values;
  std::vector<Node> nodes;        // topological order
  std::vector<ValueId> inputs;    // runtime inputs (not initializers)
  std::vector<ValueId> outputs;
  // Concurrency, set by the last pass (opt/side_branches.cc) and read by the memory plan and
  // codegen: empty (every node on the main lane), or one entry per node: -1 for the main lane,
  // else the index of the later main-lane node that waits for this side-lane node (the join).
  // A side node starts after every node before it; any pass that moves nodes clears it.
  std::vector<int> side_join;
  // Constant folding's running total and its cap (ir/constant_folding.h): every folded output
  // stays in memory, so a model of many large foldable nodes is refused instead of exhausting it.
  int64_t folded_bytes = 0;
  int64_t max_folded_bytes_total = int64_t{2} << 30;
  // The same for the work of the folds (estimate_fold_work): a total past which only small folds
  // go on, so that folding time is bounded however many expensive foldable nodes a model has.
  int64_t fold_work = 0;
  int64_t max_fold_work_total = int64_t{1} << 31;

  ValueId add_value(std::string name, DType dtype = DType::kUndefined, Shape shape = {},
                    bool shape_known = false);
  ValueId add_constant(std::string name, Tensor data);
  // A fresh value name that no existing value uses, derived from `base`.
  std::string unique_name(const std::string& base) const;
  // Find a value by name; kNoValue if absent. O(n): for importers and tests, not hot loops.
  ValueId find_value(const std::string& name) const;

  Value& value(ValueId id) { return values[static_cast<size_t>(id)]; }
  const Value& value(ValueId id) const { return values[static_cast<size_t>(id)]; }

  // Index of the node producing each value (-1 for graph inputs, constants and dead values).
  std::vector<int> producers() const;
  // For each value, the indices of the nodes reading it.
  std::vector<std::vector<int>> consumers() const;
  // The node that alone reads `v` (`consumers` from consumers()), or -1 when v is absent, a graph
  // output, or read by no node or by several.
  int sole_reader(const std::vector<std::vector<int>>& consumers, ValueId v) const;
  // Removes the nodes whose index is marked in `drop` (one flag per node), keeping the order of
  // the rest.
  void remove_nodes(const std::vector<bool>& drop);
  bool is_graph_output(ValueId id) const;
  bool is_graph_input(ValueId id) const;
  // Elements from the start of one row of `id` (the vector of its last dim) to the next when it
  // is stored in another value's rows (Value::stored_in): that value's last dim; 0 = packed.
  int64_t row_stride(ValueId id) const;
};

// Builds the one-line error for a problem with a node:
//   node 'conv1' (Conv): input 1 has rank 3, expected 4
// The node name is escaped (non-printable bytes as \xNN, quotes and backslashes escaped, length
// capped), so a hostile name cannot break the line or the terminal.
Status node_error(const Node& node, const std::string& reason);
// Escape arbitrary text from a model for a one-line message.
std::string escape_for_message(const std::string& text, size_t max_len = 120);

}  // namespace aotc
