// Host tensors: a dtype, a static shape and the bytes. Used for initializers, folded constants,
// the CPU reference evaluator and test data. Storage is row-major (C order), like ONNX.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dtype.h"

namespace aotc {

using Shape = std::vector<int64_t>;

// Product of dims (1 for a scalar, 0 if any dim is 0).
int64_t shape_numel(const Shape& shape);
// "1x3x224x224"; "scalar" for rank 0.
std::string shape_str(const Shape& shape);
// Row-major strides in elements.
std::vector<int64_t> shape_strides(const Shape& shape);

// IEEE half <-> float conversions (round to nearest even), for host-side f16 data.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);

// Float -> integer type I: truncation toward zero, NaN -> 0, out-of-range values saturate (what
// the GPU's cvt.rzi.sat does). ONNX leaves out-of-range conversions undefined; this rule is defined
// (no C++ UB) and every host conversion of a float to an integer goes through it.
template <class I, class F>
I saturating_float_to_int(F v) {
  if (v != v) return 0;
  if (v <= static_cast<F>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (v >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

// A double stored into integer type I by Tensor::set: truncation toward zero to int64 and then the
// low bits (wrapping, as the integer ops' results travel), NaN -> 0, values beyond the int64
// range saturate at I's limits; uint64 keeps [2^63, 2^64) exactly. Defined for every double (a
// cast of one outside the target's range is undefined in C++: fuzz finds, Pad-2's float value
// inf / NaN / -FLT_MAX on integer tensors).
template <class I>
I store_float_as_int(double v) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (v != v) return 0;
  if constexpr (std::is_same_v<I, uint64_t>) {
    if (v >= 2 * kTwo63) return std::numeric_limits<uint64_t>::max();
    if (v >= 0) return static_cast<uint64_t>(v);
  }
  if (v >= kTwo63) return std::numeric_limits<I>::max();
  if (v < -kTwo63) return std::numeric_limits<I>::lowest();
  return static_cast<I>(static_cast<int64_t>(v));
}

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor of the given type and shape.
  Tensor(DType dtype, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  int64_t byte_size() const { return static_cast<int64_t>(bytes_.size()); }

  template <class T> T* data() { return reinterpret_cast<T*>(bytes_.data()); }
  template <class T> const T* data() const { return reinterpret_cast<const T*>(bytes_.data()); }
  uint8_t* raw() { return bytes_.data(); }
  const uint8_t* raw() const { return bytes_.data(); }

  // Element access through double / int64, for generic reference code and tests. Floats of any
  // width convert exactly to double; int64 values beyond 2^53 need get_int.
  double get(int64_t flat_index) const;
  void set(int64_t flat_index, double value);
  int64_t get_int(int64_t flat_index) const;
  void set_int(int64_t flat_index, int64_t value);

  // Same bytes, new shape (numel must match).
  Tensor reshaped(Shape shape) const;

  // Convenience constructors.
  static Tensor from_floats(Shape shape, const std::vector<float>& values);
  static Tensor from_int64s(Shape shape, const std::vector<int64_t>& values);
  static Tensor scalar_float(float v) { return from_floats({}, {v}); }
  static Tensor scalar_int64(int64_t v) { return from_int64s({}, {v}); }

  // All elements as int64 (for shape-like tensors) / as double.
  std::vector<int64_t> to_int64s() const;
  std::vector<double> to_doubles() const;

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  std::vector<uint8_t> bytes_;
};

// `t`'s elements in another dtype through double (Tensor::get / set): exact widening of floats,
// round to nearest even when narrowing to 16 bits (the precision pass, aotc-run's --io-dtype I/O).
Tensor convert_tensor(const Tensor& t, DType to);

}  // namespace aotc
