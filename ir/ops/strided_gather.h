// One copy pattern behind Slice, Split, Tile, Expand, DepthToSpace, SpaceToDepth and
// aotc.StridedCopy: the output, walked in row-major order over `dims`, reads the input at
// base + sum_d coord_d * strides[d] (strides in elements; negative for reversed slices, 0 for
// broadcast). Shared so that the reference and the GPU template of all of them agree by
// construction on the index arithmetic.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/lowering.h"
#include "ir/tensor.h"

namespace aotc {

struct GatherView {
  Shape dims;                    // output dims (their product is the output's numel)
  std::vector<int64_t> strides;  // input element stride per output dim
  int64_t base = 0;              // input element offset of output element 0
};

// Fills `y` (numel == product of view.dims, same dtype as x) from `x`.
void strided_gather_reference(const Tensor& x, Tensor& y, const GatherView& view);

// y *= scale element by element, in the compute type of a float dtype (float for the 16-bit
// types, rounded once on the store): what the Mul kernel computes for x * s with a scalar constant
// s whose value is `scale`. False for a non-float dtype.
bool scale_reference(Tensor& y, double scale);

// The kernel step (templates/strided_gather.cu.in) doing the same on the GPU; `in_numel` bounds
// the input offsets, for the index type. With `scale` (float dtypes only; a value exact in
// float) each element is also multiplied by it as scale_reference does.
KernelStep strided_gather_step(ValueId in, ValueId out, DType dtype, int64_t in_numel,
                               const GatherView& view, const std::string& comment,
                               std::optional<float> scale = std::nullopt,
                               DType out_dtype = DType::kUndefined);

}  // namespace aotc
