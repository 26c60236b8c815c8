// Index arithmetic shared by the broadcasting and permuting kernels: an output of shape `dims`
// read through per-operand element strides (0 = broadcast). collapse_layout drops size-1 dims and
// merges dims that are contiguous for every operand, so templates index with the fewest
// compile-time divisions and equal-shape cases reduce to rank 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace aotc {

struct StridedLayout {
  Shape dims;                                 // output dims, row-major, rank >= 1 after collapse
  std::vector<std::vector<int64_t>> strides;  // per operand, one element stride per dim
};

// Strides of `in` read under broadcasting to `out` (numpy rules; `in` right-aligned, size-1
// dims get stride 0). The shapes must already be known to broadcast.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Drop size-1 dims and merge neighbours contiguous in every operand. Always returns rank >= 1
// (a single [1] dim with zero strides for a one-element output).
StridedLayout collapse_layout(StridedLayout layout);

// "int" when every index (numel and all offsets) fits in 31 bits, else "long long": 32-bit
// division by compile-time constants is much cheaper on the GPU.
std::string index_type_for(int64_t max_index);

// An unsigned C type of the dtype's width, for kernels that move elements as raw bits
// (Concat, Transpose): one template instance serves every dtype of that width.
std::string bits_c_type(DType t);

}  // namespace aotc
