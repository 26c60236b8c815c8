// Encode/decode of the sub-16-bit ONNX types (see small_dtypes.h). The float formats follow the
// ONNX Cast tables (docs of Cast-19+): round to nearest even on the exact value, then the
// saturate / non-saturate overflow rules; float8e8m0 follows onnx.numpy_helper.to_float8e8m0
// (it rounds the float32 bit pattern: up, down, or "nearest" with ties up).
#include "ir/small_dtypes.h"

#include <cassert>
#include <cmath>
#include <cstring>

namespace aotc {
namespace {

enum class NanCode { kNone, kAllOnes, kIeee, kNegativeZero };

struct FloatFormat {
  int exp_bits, man_bits, bias;
  bool has_inf;
  NanCode nan;
};

FloatFormat float_format(DType t) {
  switch (t) {
    case DType::kFloat8E4M3FN: return {4, 3, 7, false, NanCode::kAllOnes};
    case DType::kFloat8E4M3FNUZ: return {4, 3, 8, false, NanCode::kNegativeZero};
    case DType::kFloat8E5M2: return {5, 2, 15, true, NanCode::kIeee};
    case DType::kFloat8E5M2FNUZ: return {5, 2, 16, false, NanCode::kNegativeZero};
    case DType::kFloat4E2M1: return {2, 1, 1, false, NanCode::kNone};
    default: assert(false && "not a small float with sign/exponent/mantissa"); return {0, 0, 0, false, NanCode::kNone};
  }
}

// Round half to even, independent of the floating-point environment.
double round_half_even(double x) {
  double f = std::floor(x);
  double d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return std::fmod(f, 2.0) == 0 ? f : f + 1;
}

uint8_t nan_code(const FloatFormat& f, bool negative) {
  const uint8_t sign = negative ? static_cast<uint8_t>(1u << (f.exp_bits + f.man_bits)) : 0;
  switch (f.nan) {
    case NanCode::kAllOnes: return static_cast<uint8_t>(sign | ((1u << (f.exp_bits + f.man_bits)) - 1));
    case NanCode::kIeee:  // quiet NaN: exponent all ones, top mantissa bit
      return static_cast<uint8_t>(sign | (((1u << f.exp_bits) - 1) << f.man_bits) | (1u << (f.man_bits - 1)));
    case NanCode::kNegativeZero: return 0x80;
    case NanCode::kNone: return 0;
  }
  return 0;
}

// Bits of a finite non-negative value that is exactly representable (after rounding).
uint8_t encode_exact(const FloatFormat& f, double r) {
  const double min_normal = std::ldexp(1.0, 1 - f.bias);
  if (r == 0) return 0;
  if (r < min_normal) return static_cast<uint8_t>(r / std::ldexp(1.0, 1 - f.bias - f.man_bits));
  int e;
  std::frexp(r, &e);  // r = m * 2^e, m in [0.5, 1)
  const int exp_field = e - 1 + f.bias;
  const double man = (r / std::ldexp(1.0, e - 1) - 1.0) * std::ldexp(1.0, f.man_bits);
  return static_cast<uint8_t>((exp_field << f.man_bits) | static_cast<int>(man));
}

uint8_t encode_e8m0(float v, bool saturate, E8M0Rounding rounding) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  uint32_t exponent = (bits >> 23) & 0xff;
  if (exponent == 0xff) return 0xff;  // NaN and Inf keep the all-ones exponent (NaN)
  bool round_up = false;
  if (rounding == E8M0Rounding::kUp) {
    round_up = (bits & 0x7fffff) != 0;
  } else if (rounding == E8M0Rounding::kNearest) {
    const bool g = bits & 0x400000, r = bits & 0x200000, s = bits & 0x1fffff, lsb = exponent > 0;
    round_up = g && (r || s || lsb);
  }
  if (round_up && saturate && exponent == 0xfe) round_up = false;
  return static_cast<uint8_t>(exponent + (round_up ? 1 : 0));
}

}  // namespace

bool dtype_is_small_float(DType t) {
  switch (t) {
    case DType::kFloat8E4M3FN: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ: case DType::kFloat8E8M0: case DType::kFloat4E2M1:
      return true;
    default:
      return false;
  }
}

bool dtype_is_small_int(DType t) {
  return t == DType::kInt4 || t == DType::kUInt4 || t == DType::kInt2 || t == DType::kUInt2;
}

bool dtype_is_small(DType t) { return dtype_is_small_float(t) || dtype_is_small_int(t); }

int64_t dtype_storage_bits(DType t) {
  switch (t) {
    case DType::kInt4: case DType::kUInt4: case DType::kFloat4E2M1: return 4;
    case DType::kInt2: case DType::kUInt2: return 2;
    default: return 8 * dtype_size(t);
  }
}

double small_float_decode(DType t, uint8_t bits) {
  if (t == DType::kFloat8E8M0) return bits == 0xff ? NAN : std::ldexp(1.0, static_cast<int>(bits) - 127);
  const FloatFormat f = float_format(t);
  const int width = f.exp_bits + f.man_bits;
  bits &= static_cast<uint8_t>((1u << (width + 1)) - 1);
  if (f.nan == NanCode::kNegativeZero && bits == 0x80) return NAN;
  const bool negative = (bits >> width) & 1;
  const int exp_field = (bits >> f.man_bits) & ((1 << f.exp_bits) - 1);
  const int man = bits & ((1 << f.man_bits) - 1);
  const int exp_max = (1 << f.exp_bits) - 1;
  double v;
  if (f.nan == NanCode::kAllOnes && exp_field == exp_max && man == (1 << f.man_bits) - 1) {
    v = NAN;
  } else if (f.nan == NanCode::kIeee && exp_field == exp_max) {
    v = man ? NAN : INFINITY;
  } else if (exp_field == 0) {
    v = std::ldexp(static_cast<double>(man), 1 - f.bias - f.man_bits);
  } else {
    v = std::ldexp(static_cast<double>(man + (1 << f.man_bits)), exp_field - f.bias - f.man_bits);
  }
  return negative ? -v : v;
}

double small_float_max(DType t) {
  switch (t) {
    case DType::kFloat8E4M3FN: return 448.0;
    case DType::kFloat8E4M3FNUZ: return 240.0;
    case DType::kFloat8E5M2: return 57344.0;
    case DType::kFloat8E5M2FNUZ: return 57344.0;
    case DType::kFloat4E2M1: return 6.0;
    case DType::kFloat8E8M0: return std::ldexp(1.0, 127);
    default: return 0;
  }
}

uint8_t small_float_encode(DType t, double value, bool saturate, E8M0Rounding rounding) {
  if (t == DType::kFloat8E8M0) return encode_e8m0(static_cast<float>(value), saturate, rounding);
  const FloatFormat f = float_format(t);
  if (f.nan == NanCode::kNone) saturate = true;  // float4e2m1: no Inf/NaN to overflow into
  const double v = value;
  const bool negative = std::signbit(v);
  if (std::isnan(v)) return nan_code(f, negative);
  const uint8_t sign = negative ? static_cast<uint8_t>(1u << (f.exp_bits + f.man_bits)) : 0;
  const double max = small_float_max(t);
  const double a = std::fabs(v);
  double r = a;
  if (!std::isinf(a)) {
    const double min_normal = std::ldexp(1.0, 1 - f.bias);
    int e = 0;
    if (a >= min_normal) std::frexp(a, &e);
    const double quantum = a < min_normal ? std::ldexp(1.0, 1 - f.bias - f.man_bits) : std::ldexp(1.0, e - 1 - f.man_bits);
    r = round_half_even(a / quantum) * quantum;
  }
  if (r > max) {
    if (saturate) return static_cast<uint8_t>(sign | encode_exact(f, max));
    if (f.has_inf) return static_cast<uint8_t>(sign | (((1u << f.exp_bits) - 1) << f.man_bits));
    return nan_code(f, negative);
  }
  if (r == 0 && f.nan == NanCode::kNegativeZero) return 0;  // fnuz: no negative zero
  return static_cast<uint8_t>(sign | encode_exact(f, r));
}

int64_t small_int_min(DType t) {
  switch (t) {
    case DType::kInt4: return -8;
    case DType::kInt2: return -2;
    default: return 0;
  }
}

int64_t small_int_max(DType t) {
  switch (t) {
    case DType::kInt4: return 7;
    case DType::kUInt4: return 15;
    case DType::kInt2: return 1;
    case DType::kUInt2: return 3;
    default: return 0;
  }
}

int64_t small_int_wrap(DType t, int64_t v) {
  const int bits = static_cast<int>(dtype_storage_bits(t));
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  const int64_t u = static_cast<int64_t>(static_cast<uint64_t>(v) & mask);
  if (small_int_min(t) < 0 && (u >> (bits - 1)) != 0) return u - (int64_t{1} << bits);
  return u;
}

int64_t packed_small_bytes(DType t, int64_t numel) {
  const int64_t per_byte = 8 / dtype_storage_bits(t);
  return (numel + per_byte - 1) / per_byte;
}

std::vector<uint8_t> pack_small(DType t, const uint8_t* elems, int64_t numel) {
  const int64_t bits = dtype_storage_bits(t);
  if (bits == 8) return std::vector<uint8_t>(elems, elems + numel);
  const int64_t per_byte = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  std::vector<uint8_t> out(static_cast<size_t>(packed_small_bytes(t, numel)), 0);
  for (int64_t i = 0; i < numel; ++i)
    out[static_cast<size_t>(i / per_byte)] |= static_cast<uint8_t>((elems[i] & mask) << (bits * (i % per_byte)));
  return out;
}

void unpack_small(DType t, const uint8_t* bytes, int64_t numel, uint8_t* elems) {
  const int64_t bits = dtype_storage_bits(t);
  if (bits == 8) {
    if (numel) std::memcpy(elems, bytes, static_cast<size_t>(numel));
    return;
  }
  const int64_t per_byte = 8 / bits;
  const unsigned mask = (1u << bits) - 1;
  for (int64_t i = 0; i < numel; ++i) {
    const unsigned u = (bytes[i / per_byte] >> (bits * (i % per_byte))) & mask;
    elems[i] = dtype_is_small_int(t) ? static_cast<uint8_t>(small_int_wrap(t, u)) : static_cast<uint8_t>(u);
  }
}

}  // namespace aotc
