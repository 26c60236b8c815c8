// Element-type properties, kept in one switch per property so adding a dtype is one line each.
#include "ir/dtype.h"

namespace aotc {

int64_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: return 4;
    case DType::kUInt8: return 1;
    case DType::kInt8: return 1;
    case DType::kUInt16: return 2;
    case DType::kInt16: return 2;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBool: return 1;
    case DType::kFloat16: return 2;
    case DType::kFloat64: return 8;
    case DType::kUInt32: return 4;
    case DType::kUInt64: return 8;
    case DType::kBFloat16: return 2;
    case DType::kFloat8E4M3FN: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ: case DType::kFloat8E8M0: case DType::kFloat4E2M1:
    case DType::kUInt4: case DType::kInt4: case DType::kUInt2: case DType::kInt2: return 1;
    case DType::kString:
    case DType::kUndefined: return 0;
  }
  return 0;
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float";
    case DType::kUInt8: return "uint8";
    case DType::kInt8: return "int8";
    case DType::kUInt16: return "uint16";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kString: return "string";
    case DType::kBool: return "bool";
    case DType::kFloat16: return "float16";
    case DType::kFloat64: return "double";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat8E4M3FN: return "float8e4m3fn";
    case DType::kFloat8E4M3FNUZ: return "float8e4m3fnuz";
    case DType::kFloat8E5M2: return "float8e5m2";
    case DType::kFloat8E5M2FNUZ: return "float8e5m2fnuz";
    case DType::kFloat8E8M0: return "float8e8m0";
    case DType::kFloat4E2M1: return "float4e2m1";
    case DType::kUInt4: return "uint4";
    case DType::kInt4: return "int4";
    case DType::kUInt2: return "uint2";
    case DType::kInt2: return "int2";
    case DType::kUndefined: return "undefined";
  }
  return "undefined";
}

std::string dtype_c_type(DType t) {
  switch (t) {
    case DType::kFloat32: return "float";
    case DType::kUInt8: return "unsigned char";
    case DType::kInt8: return "signed char";
    case DType::kUInt16: return "unsigned short";
    case DType::kInt16: return "short";
    case DType::kInt32: return "int";
    case DType::kInt64: return "long long";
    case DType::kBool: return "bool";
    case DType::kFloat16: return "__half";
    case DType::kFloat64: return "double";
    case DType::kUInt32: return "unsigned int";
    case DType::kUInt64: return "unsigned long long";
    case DType::kBFloat16: return "__nv_bfloat16";
    // The small types have no GPU storage in aotc (codegen refuses them); their host byte.
    case DType::kFloat8E4M3FN: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ: case DType::kFloat8E8M0: case DType::kFloat4E2M1:
    case DType::kUInt4: case DType::kUInt2: return "unsigned char";
    case DType::kInt4: case DType::kInt2: return "signed char";
    case DType::kString:
    case DType::kUndefined: return "void";
  }
  return "void";
}

bool dtype_is_known(int32_t v) {
  switch (v) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10: case 11:
    case 12: case 13: case 16: case 17: case 18: case 19: case 20: case 21: case 22: case 23:
    case 24: case 25: case 26:
      return true;
    default:
      return false;
  }
}

bool dtype_is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kFloat64 || t == DType::kBFloat16;
}

bool dtype_is_integer(DType t) {
  switch (t) {
    case DType::kUInt8: case DType::kInt8: case DType::kUInt16: case DType::kInt16:
    case DType::kInt32: case DType::kInt64: case DType::kUInt32: case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

bool dtype_is_signed(DType t) {
  return t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kInt64 ||
         dtype_is_float(t);
}

}  // namespace aotc
