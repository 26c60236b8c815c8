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
  // Storage types narrower than 16 bits (ir/small_dtypes.h): one byte per element on the host,
  // packed in TensorProto; the CPU reference computes with them, the GPU refuses them.
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
};

// Bytes per element of host storage (1 for the packed 4-bit / 2-bit types, see small_dtypes.h);
// 0 for kUndefined and kString.
int64_t dtype_size(DType t);
// ONNX spelling: "float", "float16", "int64", ...
std::string dtype_name(DType t);
// The C/CUDA type used in generated code: "float", "__half", "long long", "bool", ...
std::string dtype_c_type(DType t);
// True for a dtype value that aotc knows (any ONNX number above, except undefined).
bool dtype_is_known(int32_t onnx_type);
bool dtype_is_float(DType t);    // f16, bf16, f32, f64 (not the small floats of small_dtypes.h)
bool dtype_is_integer(DType t);  // signed or unsigned integers of 8 bits or more, not bool
bool dtype_is_signed(DType t);

}  // namespace aotc
