// Typed element access for reference kernels: one visitor over the numeric dtypes, so an op's
// reference is written once as a template over (storage type, compute type) instead of through
// Tensor::get/set in double, which loses int64 precision and has no defined integer overflow.
#pragma once

#include <cstdint>

#include "ir/tensor.h"

namespace aotc {

// Storage S in the tensor, arithmetic in C (float for the 16-bit float types).
template <class S, class C>
struct ElemType {
  using Storage = S;
  using Compute = C;
  static C load(const Tensor& t, int64_t i) { return static_cast<C>(t.data<S>()[i]); }
  static void store(Tensor& t, int64_t i, C v) { t.data<S>()[i] = static_cast<S>(v); }
};

struct HalfElem {
  using Storage = uint16_t;
  using Compute = float;
  static float load(const Tensor& t, int64_t i) { return half_to_float(t.data<uint16_t>()[i]); }
  static void store(Tensor& t, int64_t i, float v) { t.data<uint16_t>()[i] = float_to_half(v); }
};

struct BFloat16Elem {
  using Storage = uint16_t;
  using Compute = float;
  static float load(const Tensor& t, int64_t i) { return bfloat16_to_float(t.data<uint16_t>()[i]); }
  static void store(Tensor& t, int64_t i, float v) { t.data<uint16_t>()[i] = float_to_bfloat16(v); }
};

// Calls f(ElemType-like tag) for a numeric dtype (floats and integers, not bool) and returns
// true; returns false without calling f for any other dtype.
template <class F>
bool visit_numeric(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: f(ElemType<float, float>{}); return true;
    case DType::kFloat64: f(ElemType<double, double>{}); return true;
    case DType::kFloat16: f(HalfElem{}); return true;
    case DType::kBFloat16: f(BFloat16Elem{}); return true;
    case DType::kInt8: f(ElemType<int8_t, int8_t>{}); return true;
    case DType::kInt16: f(ElemType<int16_t, int16_t>{}); return true;
    case DType::kInt32: f(ElemType<int32_t, int32_t>{}); return true;
    case DType::kInt64: f(ElemType<int64_t, int64_t>{}); return true;
    case DType::kUInt8: f(ElemType<uint8_t, uint8_t>{}); return true;
    case DType::kUInt16: f(ElemType<uint16_t, uint16_t>{}); return true;
    case DType::kUInt32: f(ElemType<uint32_t, uint32_t>{}); return true;
    case DType::kUInt64: f(ElemType<uint64_t, uint64_t>{}); return true;
    default: return false;
  }
}

}  // namespace aotc
