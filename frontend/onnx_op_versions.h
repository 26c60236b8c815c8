// When each default-domain ONNX operator first appeared (data from the pinned onnx release).
#pragma once

#include <cstdint>
#include <string>

namespace aotc {

// The first opset of the default domain that defines `op_type`; 0 for a name ONNX does not define.
int64_t onnx_op_first_opset(const std::string& op_type);

}  // namespace aotc
