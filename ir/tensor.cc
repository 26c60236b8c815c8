// Host tensor storage and element conversion helpers.
#include <limits>
#include "ir/tensor.h"

#include <cassert>
#include <cmath>

#include "ir/small_dtypes.h"

namespace aotc {

int64_t shape_numel(const Shape& shape) {
  // A zero dim first: the product of the other dims of an empty tensor may overflow int64 (a model
  // may claim [2^62, 4, 0]; checked_numel accepts it as empty), and forming it is undefined.
  for (int64_t d : shape)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

std::vector<int64_t> shape_strides(const Shape& shape) {
  // Saturating: an empty tensor may declare other dims whose product overflows (e.g. [0, 2^62, 3]);
  // no element is addressed then, and the arithmetic stays defined.
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) {
    int64_t s = 0;
    if (__builtin_mul_overflow(strides[static_cast<size_t>(i) + 1], shape[static_cast<size_t>(i) + 1], &s))
      s = std::numeric_limits<int64_t>::max();
    strides[static_cast<size_t>(i)] = s;
  }
  return strides;
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return static_cast<uint16_t>(sign | 0x7e00);  // NaN
  if (abs >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // overflow -> inf
  if (abs < 0x38800000) {  // subnormal or zero in half
    // value = abs_float; half subnormal unit is 2^-24.
    float af;
    std::memcpy(&af, &abs, 4);
    float scaled = af * 16777216.0f;  // 2^24
    uint32_t m = static_cast<uint32_t>(std::nearbyint(scaled));
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t exp = ((abs >> 23) - 112) << 10;
  uint32_t mant = (abs >> 13) & 0x3ff;
  uint32_t rest = abs & 0x1fff;
  uint32_t h = exp | mant;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // round to nearest even
  return static_cast<uint16_t>(sign | h);
}

float bfloat16_to_float(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)),
      bytes_(static_cast<size_t>(shape_numel(shape_) * dtype_size(dtype)), 0) {}

double Tensor::get(int64_t i) const {
  switch (dtype_) {
    case DType::kFloat32: return data<float>()[i];
    case DType::kFloat64: return data<double>()[i];
    case DType::kFloat16: return half_to_float(data<uint16_t>()[i]);
    case DType::kBFloat16: return bfloat16_to_float(data<uint16_t>()[i]);
    case DType::kUInt8: return data<uint8_t>()[i];
    case DType::kInt8: return data<int8_t>()[i];
    case DType::kUInt16: return data<uint16_t>()[i];
    case DType::kInt16: return data<int16_t>()[i];
    case DType::kInt32: return data<int32_t>()[i];
    case DType::kInt64: return static_cast<double>(data<int64_t>()[i]);
    case DType::kUInt32: return data<uint32_t>()[i];
    case DType::kUInt64: return static_cast<double>(data<uint64_t>()[i]);
    case DType::kBool: return data<uint8_t>()[i] ? 1.0 : 0.0;
    case DType::kInt4: case DType::kInt2: return data<int8_t>()[i];
    case DType::kUInt4: case DType::kUInt2: return data<uint8_t>()[i];
    case DType::kFloat8E4M3FN: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ: case DType::kFloat8E8M0: case DType::kFloat4E2M1:
      return small_float_decode(dtype_, data<uint8_t>()[i]);
    default: assert(false && "Tensor::get on a dtype without numbers"); return 0;
  }
}

void Tensor::set(int64_t i, double v) {
  switch (dtype_) {
    case DType::kFloat32: data<float>()[i] = static_cast<float>(v); break;
    case DType::kFloat64: data<double>()[i] = v; break;
    case DType::kFloat16: data<uint16_t>()[i] = float_to_half(static_cast<float>(v)); break;
    case DType::kBFloat16: data<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(v)); break;
    case DType::kUInt8: data<uint8_t>()[i] = store_float_as_int<uint8_t>(v); break;
    case DType::kInt8: data<int8_t>()[i] = store_float_as_int<int8_t>(v); break;
    case DType::kUInt16: data<uint16_t>()[i] = store_float_as_int<uint16_t>(v); break;
    case DType::kInt16: data<int16_t>()[i] = store_float_as_int<int16_t>(v); break;
    case DType::kInt32: data<int32_t>()[i] = store_float_as_int<int32_t>(v); break;
    case DType::kInt64: data<int64_t>()[i] = store_float_as_int<int64_t>(v); break;
    case DType::kUInt32: data<uint32_t>()[i] = store_float_as_int<uint32_t>(v); break;
    case DType::kUInt64: data<uint64_t>()[i] = store_float_as_int<uint64_t>(v); break;
    case DType::kBool: data<uint8_t>()[i] = v != 0.0 ? 1 : 0; break;
    case DType::kInt4: case DType::kInt2: case DType::kUInt4: case DType::kUInt2: {
      // Truncation toward zero (NaN -> 0), then the low bits: the ONNX integer conversion rule.
      data<uint8_t>()[i] = static_cast<uint8_t>(small_int_wrap(dtype_, store_float_as_int<int64_t>(v)));
      break;
    }
    case DType::kFloat8E4M3FN: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ: case DType::kFloat8E8M0: case DType::kFloat4E2M1:
      data<uint8_t>()[i] = small_float_encode(dtype_, v);  // Cast's defaults: saturate, round up
      break;
    default: assert(false && "Tensor::set on a dtype without numbers");
  }
}

int64_t Tensor::get_int(int64_t i) const {
  switch (dtype_) {
    case DType::kInt64: return data<int64_t>()[i];
    case DType::kUInt64: return static_cast<int64_t>(data<uint64_t>()[i]);
    default: return static_cast<int64_t>(get(i));
  }
}

void Tensor::set_int(int64_t i, int64_t v) {
  switch (dtype_) {
    case DType::kInt64: data<int64_t>()[i] = v; break;
    case DType::kUInt64: data<uint64_t>()[i] = static_cast<uint64_t>(v); break;
    default: set(i, static_cast<double>(v));
  }
}

Tensor Tensor::reshaped(Shape shape) const {
  assert(shape_numel(shape) == numel());
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::from_floats(Shape shape, const std::vector<float>& values) {
  Tensor t(DType::kFloat32, std::move(shape));
  assert(static_cast<int64_t>(values.size()) == t.numel());
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * 4);
  return t;
}

Tensor Tensor::from_int64s(Shape shape, const std::vector<int64_t>& values) {
  Tensor t(DType::kInt64, std::move(shape));
  assert(static_cast<int64_t>(values.size()) == t.numel());
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * 8);
  return t;
}

std::vector<int64_t> Tensor::to_int64s() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[i] = get_int(i);
  return v;
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<double> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[i] = get(i);
  return v;
}

Tensor convert_tensor(const Tensor& t, DType to) {
  Tensor out(to, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out.set(i, t.get(i));
  return out;
}

}  // namespace aotc
