// Node-level conversion from ONNX protobuf to the IR, used by the loader: attributes (kinds the IR
// stores; sparse tensors refused; graphs refused here: If/Loop/Scan read theirs in onnx_control_flow.cc) and the value of a Constant node, which the
// loader turns into a constant Value instead of a node.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "ir/graph.h"
#include "ir/status.h"

namespace aotc {

// Fills node.attrs from proto's attributes. Errors name the node (node.name/op_type must be set).
// `base_dir` is the model's folder, for tensor attributes with external data.
Status convert_attributes(const onnx::NodeProto& proto, const std::string& base_dir, Node& node);

// The tensor a Constant node produces, from its already converted attributes (exactly one of
// value, value_float, value_floats, value_int, value_ints; strings and sparse refused).
Expected<Tensor> constant_node_value(const Node& node);

}  // namespace aotc
