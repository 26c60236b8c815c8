// Reads an ONNX model file into the IR. Checks the protobuf, resolves initializers (raw or typed
// fields, external data confined to the model's folder), turns Constant nodes into constants,
// fixes symbolic input dims, imports each node through its op's OpDef::import and infers shapes.
// Any problem ends in one Status naming the node, op and reason.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace aotc {

// Caps on what a model may ask of the compiler (docs/reliability.md "Limits"). Checked on the
// protobuf before anything is imported, so a hostile model costs no more than reading it. Each is an
// error naming the count or the name; tests lower them to check "at" and "beyond".
struct ImportLimits {
  int64_t max_nodes = 1000000;           // nodes of the graph
  int64_t max_values = 4000000;          // initializers + graph inputs + node outputs
  int64_t max_graph_inputs = 4096;       // runtime inputs: each is a parameter of the generated C
  int64_t max_graph_outputs = 4096;      // (50,000 made a C file the host compiler did not finish)
  int64_t max_node_inputs = 4096;        // inputs of one node (a Concat / Sum of many)
  int64_t max_node_outputs = 4096;       // outputs of one node (a Split into many)
  size_t max_name_bytes = 4096;          // any name: node, value, op type, domain, attribute, graph
  int64_t max_folded_bytes = int64_t{2} << 30;  // constants made by folding, in total (Graph::)
  int64_t max_fold_work = int64_t{1} << 31;     // work of the folds, in total (Graph::max_fold_work_total)
  // Compile-time control flow (frontend/onnx_control_flow.cc): iterations of one unrolled Loop or
  // Scan, and nodes imported from subgraphs in all (every copy of a body, every inlined branch).
  int64_t max_loop_iterations = 4096;
  int64_t max_unrolled_nodes = 100000;
};

struct ImportOptions {
  ImportLimits limits;
  // Shapes for named inputs ("--input-shape name:1x3x224x224"); override the model's dims.
  std::map<std::string, Shape> input_shapes;
  // Value for a symbolic (dim_param / unknown) FIRST dim of an input not named above.
  int64_t default_batch = 1;
  // Inputs whose values are fixed at compile time (e.g. the shape input of Reshape in the ONNX
  // node tests): they become constants, not runtime inputs. Dtype and any static dims must match.
  std::map<std::string, Tensor> constant_inputs;
};

Expected<Graph> load_onnx_model(const std::string& path, const ImportOptions& options = {});

// Like load_onnx_model, but keeps going past unsupported ops and invalid nodes and returns every
// problem found (one Status per node), for `aotc check`. Empty result = the model imports.
std::vector<Status> check_onnx_model(const std::string& path, const ImportOptions& options = {});

// The same two from a serialized ModelProto in memory (the fuzz harnesses, tests/fuzz/): no file
// is read except external data, which must resolve inside `base_dir` (empty refuses it).
Expected<Graph> load_onnx_model_from_memory(const void* data, size_t size, const std::string& base_dir,
                                            const ImportOptions& options = {});
std::vector<Status> check_onnx_model_from_memory(const void* data, size_t size, const std::string& base_dir,
                                                 const ImportOptions& options = {});

}  // namespace aotc
