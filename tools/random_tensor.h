// Seeded random input tensors for aotc-run and tests: never all zeros, so a kernel that ignores its
// input cannot pass. Floats uniform in [-1, 1); integers in [1, 4]; bools random.
#pragma once

#include <cstdint>

#include "ir/tensor.h"

namespace aotc {

// `stream` separates the inputs of one run (the input index), so each gets its own sequence.
Tensor random_tensor(DType dtype, const Shape& shape, uint64_t seed, uint64_t stream);

}  // namespace aotc
