// The importer behind load_onnx_model / check_onnx_model (frontend/onnx_loader.cc), shared with
// frontend/onnx_control_flow.cc, which inlines If / Loop / Scan subgraphs at import time: names
// live in Scopes (a subgraph's own names, then the enclosing graphs'), and every value or node a
// subgraph creates gets a name prefixed with its control-flow node's, so nothing collides.
// Private to frontend/.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

#include "frontend/onnx_loader.h"
#include "ir/graph.h"
#include "ir/status.h"

namespace aotc {

// 'name', escaped for a one-line message.
std::string quoted(const std::string& name);

// The count and name caps of ImportLimits, on one (sub)graph's protobuf.
Status check_limits(const onnx::GraphProto& g, const ImportLimits& limits);

// The names visible while importing one graph: its own (inputs, initializers, node outputs), then
// those of the graphs around it (outer-scope references). The model's graph is the outermost.
struct Scope {
  const Scope* parent = nullptr;
  std::string prefix;  // "" for the model's graph; "<node>/then/", "<node>/iter3/", ... inside
  std::unordered_map<std::string, ValueId> names;

  ValueId find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      auto it = s->names.find(name);
      if (it != s->names.end()) return it->second;
    }
    return kNoValue;
  }
  bool is_model_graph() const { return parent == nullptr; }
};

class Importer {
 public:
  Importer(const ImportOptions& options, bool keep_going, std::string base_dir)
      : options_(options), keep_going_(keep_going), base_dir_(std::move(base_dir)) {}

  // Strict mode: the first problem. Check mode: ok unless the model cannot be walked at all;
  // the problems are in problems().
  // Takes the model mutable only to free each initializer's bytes once copied into the graph.
  Status run(onnx::ModelProto& model);
  Graph& graph() { return graph_; }
  std::vector<Status>& problems() { return problems_; }

 private:
  // Records a problem; returns true when the walk should go on.
  bool record(Status s) {
    problems_.push_back(std::move(s));
    return keep_going_;
  }
  Status import_opset(const onnx::ModelProto& model);
  Status import_initializer(const onnx::TensorProto& proto, Scope& scope);
  Status import_input(const onnx::ValueInfoProto& info);
  Expected<Shape> input_shape(const onnx::ValueInfoProto& info, DType dtype);
  Status import_node(const onnx::NodeProto& proto, Scope& scope);
  Status import_output(const onnx::ValueInfoProto& info);
  void mark_outputs_unknown(const onnx::NodeProto& proto);
  ValueId define(Scope& scope, const std::string& name, ValueId id) { return scope.names[name] = id; }
  // Model names win over names an op's import() invented: rename an invented value that
  // happens to carry `name`, so every value name stays unique.
  void claim_name(const std::string& name);
  // A value name for `base` that no value has yet (base, base_1, ...), recorded as invented so
  // that a model name defined later still wins. For values created inside subgraphs.
  std::string fresh_name(const std::string& base);
  // The value for node output `out` in `scope`: named `out` in the model's graph, prefixed and
  // made unique inside a subgraph.
  ValueId new_output_value(Scope& scope, const std::string& out);
  // Infers and folds a node the importer made itself (canonical form) and keeps it unless folded.
  Status add_node(Node node);

  // frontend/onnx_control_flow.cc: If / Loop / Scan, inlined (node has its name, op and inputs).
  Status import_control_flow(const onnx::NodeProto& proto, Node& node, Scope& scope);
  Status import_if(const onnx::NodeProto& proto, Node& node, Scope& scope);
  Status import_loop(const onnx::NodeProto& proto, Node& node, Scope& scope);
  Status import_scan(const onnx::NodeProto& proto, Node& node, Scope& scope);
  // Imports `body`'s initializers and nodes into `scope` (its inputs already bound there).
  Status import_subgraph_nodes(const onnx::GraphProto& body, Scope& scope, const Node& owner,
                               const std::string& what);
  // Outputs of `proto` named after the values computed for them (`results[k]` for output k).
  Status define_results(const onnx::NodeProto& proto, const Node& node, Scope& scope,
                        const std::vector<ValueId>& results, size_t first_new_value);
  // The per-iteration values stacked along a new axis (Unsqueeze + Concat); `base` names them.
  Expected<ValueId> stack_parts(const Node& owner, std::vector<ValueId> parts, int64_t axis, bool reverse,
                                const std::string& base);
  // Whether `iterations` copies of a `body_nodes`-node body fit ImportLimits::max_unrolled_nodes.
  Status charge_unrolled(const Node& node, int64_t body_nodes, int64_t iterations);

  const ImportOptions& options_;
  const bool keep_going_;
  const std::string base_dir_;
  Graph graph_;
  std::vector<Status> problems_;
  Scope top_;
  std::unordered_set<std::string> unknown_;  // check mode: names whose producer failed
  std::unordered_map<std::string, ValueId> invented_;  // values added by OpDef::import / subgraphs
  int64_t unrolled_nodes_ = 0;  // nodes imported from subgraphs so far (all copies)
};

}  // namespace aotc
