// Strided views of a chain's source, as opt/fuse_copy_chains.cc composes them: each data-movement
// op maps the view its input is read through to the view of its output, so a whole chain becomes
// one gather (ir/ops/strided_gather.h) from the chain's source.
//
// The view keeps "atoms": dims of size > 1 with their element strides, in row-major order, and for
// each logical dim of the current value the number of consecutive atoms it spans. A logical dim
// spanning several atoms is what a reshape makes when it merges dims that are not contiguous with
// each other (torch's MultiheadAttention: [S, B, E] of a strided q viewed as [S, B*H, D]): no single
// stride, yet still a gather over the atoms, and a later reshape may split it again ([B, H, S, D]).
// A reshape fails only when a new dim boundary cuts an atom at a size that does not divide it.
#pragma once

#include <cstddef>
#include <vector>

#include "ir/ops/strided_gather.h"

namespace aotc {

struct StridedView {
  std::vector<int64_t> dims, strides;  // the atoms (every dim > 1)
  std::vector<size_t> spans;           // per logical dim: how many atoms (0 for a dim of size 1)
  int64_t base = 0;                    // element offset of the first element
};

// The view of a whole contiguous (row-major) tensor of `shape` (no empty tensors).
StridedView contiguous_view(const Shape& shape);

// Transpose: output dim i is logical dim perm[i].
void view_permute(StridedView& v, const std::vector<int64_t>& perm);

// Reshape (row-major order kept) to `shape`, of the same non-zero size; false (view unchanged)
// when a boundary of the new shape cuts an atom unevenly.
bool view_reshape(StridedView& v, const Shape& shape);

// Takes entry `index` (in range) of logical dim `axis`, which disappears.
void view_select(StridedView& v, size_t axis, int64_t index);

// Keeps `count` > 0 entries of logical dim `axis` (of size `size`) from `start` in steps of `step`
// (may be negative). False (view unchanged) for a proper slice of a dim spanning several atoms.
bool view_slice(StridedView& v, size_t axis, int64_t size, int64_t start, int64_t step, int64_t count);

// The gather the view describes: the atoms in row-major order.
GatherView gather_view(const StridedView& v);

// True when the view reads all `source_numel` elements of its source in row-major order from
// offset 0: the copy would be a reshape (a view, no kernel).
bool view_is_identity(const StridedView& v, int64_t source_numel);

}  // namespace aotc
