// The ONNX storage types narrower than 16 bits: float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e8m0),
// float4e2m1 and the packed integers int4/uint4/int2/uint2. Their encode/decode lives here ONCE;
// Tensor::get/set, the TensorProto reader/writer, Cast and Q/DequantizeLinear all call it.
// Host storage is one byte per element (packed integers sign- or zero-extended, floats as their bit
// pattern); TensorProto packing (two 4-bit / four 2-bit elements per byte, low bits first) happens
// only at the proto boundary (pack_small / unpack_small).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace aotc {

// Rounding of float8e8m0 (the Cast/CastLike `round_mode` attribute).
enum class E8M0Rounding { kUp, kDown, kNearest };

// True for the float8 / float4 types and the 4-bit / 2-bit integers.
bool dtype_is_small(DType t);
bool dtype_is_small_float(DType t);  // float8 *, float4e2m1
bool dtype_is_small_int(DType t);    // int4, uint4, int2, uint2
// Bits per element in TensorProto storage: 4 or 2 for packed types, else 8 * dtype_size.
int64_t dtype_storage_bits(DType t);

// The value of one stored small-float byte (exact in double; NaN/Inf where the type has them).
double small_float_decode(DType t, uint8_t bits);
// float -> small float, round to nearest even (float8e8m0: `rounding`), with the ONNX Cast table:
// saturate -> +-Inf and values rounding beyond the largest finite clamp to +-max; otherwise they
// become NaN (e4m3fn, the fnuz types) or +-Inf (e5m2). float4e2m1 always saturates; it has no NaN,
// so NaN becomes 0. float8e8m0 rounds the float32 value (a double input is converted to float32
// first, as the ONNX reference does); the others round `v` itself, once.
uint8_t small_float_encode(DType t, double v, bool saturate = true,
                           E8M0Rounding rounding = E8M0Rounding::kUp);
// The largest finite value of a small float type.
double small_float_max(DType t);

// Integer range of int4 / uint4 / int2 / uint2.
int64_t small_int_min(DType t);
int64_t small_int_max(DType t);
// Keeps the low bits of v (two's complement), sign-extended for int4/int2: the ONNX rule for an
// out-of-range integer conversion ("discard higher bits and reinterpret").
int64_t small_int_wrap(DType t, int64_t v);

// One-byte-per-element host storage <-> TensorProto bytes (packed for 4-bit / 2-bit types, low
// bits first, the last byte zero-padded; float8 bytes as they are).
std::vector<uint8_t> pack_small(DType t, const uint8_t* elems, int64_t numel);
// Unpacks `bytes` (which must hold packed_small_bytes(t, numel) bytes) into numel elements.
void unpack_small(DType t, const uint8_t* bytes, int64_t numel, uint8_t* elems);
int64_t packed_small_bytes(DType t, int64_t numel);

}  // namespace aotc
