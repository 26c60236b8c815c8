// What the conformance runner needs to know about one ONNX node test before running it, read
// straight from the ModelProto (independent of our frontend, which may refuse the model): the op
// types, the op under test, the inference-set exclusion, and which inputs must become constants
// because a static-shape compiler needs their values (Reshape's shape, Slice's starts, ...).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace aotc::conformance {

struct ModelInfo {
  std::vector<std::string> op_types;     // distinct, sorted, incl. nested graphs; "domain.Op" off default
  std::vector<std::string> input_names;  // graph inputs that are not initializers (= input_K.pb order)
  std::vector<std::string> output_names; // graph outputs (= output_K.pb order)
  std::vector<bool> input_static;        // the declared input shape is fully static
  std::vector<int> input_elem_types;     // declared onnx::TensorProto elem types (0: not a tensor)
  std::vector<int> output_elem_types;
  std::string exclusion;                 // "" = in the inference set, else "category: detail"
  // Inputs (by index into input_names) read only at positions whose values decide output shapes
  // (kShapeInputSlots in model_info.cc) or only for their dtype (kDtypeOnlyInputSlots), or not
  // read at all: always bound as constants.
  std::vector<int> constant_inputs;
  // Inputs read only at positions that replaced an attribute (Clip's min/max, ...; see
  // kAttributeInputSlots): bound as constants only when the import refuses them at run time.
  std::vector<int> attribute_inputs;
  bool expanded = false;                 // a *_expanded test (the function body of an op)
};

// Parses `model_path` (model.onnx). Errors only when the file is not a readable ModelProto.
Expected<ModelInfo> read_model_info(const std::string& model_path);

// The op a test exercises: the single op of a one-op model, else the longest op type (from
// `known_ops`, compared lower-case without underscores) that prefixes the test name, else the
// model's ops joined with '+'.
std::string primary_op(const std::string& test_name, const ModelInfo& info,
                       const std::set<std::string>& known_ops);

// onnx 1.12's node test data stores bfloat16 tensors as uint16 (data_type 4) while the model
// declares bfloat16: when `declared_elem_type` is BFLOAT16 and `t` is uint16, returns the same
// bits as a bfloat16 tensor; otherwise `t` unchanged (docs/conformance.md).
Tensor as_declared_bfloat16(Tensor t, int declared_elem_type);

// Writes a copy of the model in which the listed inputs are initializers holding the test's
// values (TensorProto files, in the same order as `inputs`); a uint16 file for an input declared
// bfloat16 becomes a bfloat16 initializer (as as_declared_bfloat16).
Status write_model_with_constants(const std::string& model_path, const std::vector<std::string>& inputs,
                                  const std::vector<std::string>& tensor_files,
                                  const std::string& out_path);

}  // namespace aotc::conformance
