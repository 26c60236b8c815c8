// Seeded random tensors (see random_tensor.h). std::mt19937_64 is specified bit-exactly by the C++
// standard, so a seed gives the same inputs with any compiler; the value mapping is done by hand
// (the std distributions are not specified bit-exactly).
#include "tools/random_tensor.h"

#include <random>

namespace aotc {

Tensor random_tensor(DType dtype, const Shape& shape, uint64_t seed, uint64_t stream) {
  Tensor t(dtype, shape);
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + stream * 0xD1B54A32D192ED03ULL + 1);
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint64_t bits = rng();
    if (dtype_is_float(dtype)) {
      // 24 random bits -> a multiple of 2^-23 in [-1, 1): exact in every float format we use
      // except f16/bf16, where set() rounds to nearest.
      double u = static_cast<double>(bits >> 40) / static_cast<double>(1 << 23) - 1.0;
      t.set(i, u);
    } else if (dtype == DType::kBool) {
      t.set_int(i, static_cast<int64_t>(bits >> 63));
    } else {
      t.set_int(i, 1 + static_cast<int64_t>(bits >> 62));
    }
  }
  return t;
}

}  // namespace aotc
