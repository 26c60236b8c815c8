// Element types of tensors. The numeric values equal ONNX TensorProto.DataType so the frontend
// maps them directly; names follow ONNX ("float", "int64") in dumps and errors.
#pragma once

#include <cstdint>
#include <string>

namespace aotc {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,  // imported only so that we can refuse it clearly
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

// Bytes per element; 0 for kUndefined and kString.
int64_t dtype_size(DType t);
// ONNX spelling: "float", "float16", "int64", ...
std::string dtype_name(DType t);
// The C/CUDA type used in generated code: "float", "__half", "long long", "bool", ...
std::string dtype_c_type(DType t);
// True for a dtype value that aotc knows (any ONNX number above, except undefined).
bool dtype_is_known(int32_t onnx_type);
bool dtype_is_float(DType t);    // f16, bf16, f32, f64
bool dtype_is_integer(DType t);  // signed or unsigned integers, not bool
bool dtype_is_signed(DType t);

}  // namespace aotc
