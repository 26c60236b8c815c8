// The strided view algebra of fuse_copy_chains (opt/strided_view.h), with strides computed by
// hand: permutes, reshapes that merge and split dims (contiguous or not), selects, slices, and
// the reshapes that must fail.
#include <gtest/gtest.h>

#include "opt/strided_view.h"

namespace aotc {
namespace {

using Ints = std::vector<int64_t>;

TEST(StridedView, ContiguousDropsSizeOneDims) {
  StridedView v = contiguous_view({2, 1, 3});
  EXPECT_EQ(v.dims, (Ints{2, 3}));
  EXPECT_EQ(v.strides, (Ints{3, 1}));
  EXPECT_EQ(v.spans, (std::vector<size_t>{1, 0, 1}));
  EXPECT_TRUE(view_is_identity(v, 6));
}

TEST(StridedView, PermuteMovesRuns) {
  StridedView v = contiguous_view({2, 3, 4});
  view_permute(v, {2, 0, 1});
  EXPECT_EQ(v.dims, (Ints{4, 2, 3}));
  EXPECT_EQ(v.strides, (Ints{1, 12, 4}));
  EXPECT_FALSE(view_is_identity(v, 24));
  view_permute(v, {1, 2, 0});  // the inverse
  EXPECT_TRUE(view_is_identity(v, 24));
}

TEST(StridedView, ReshapeOfContiguousAlwaysWorks) {
  StridedView v = contiguous_view({6, 4});
  ASSERT_TRUE(view_reshape(v, {2, 1, 3, 4}));
  EXPECT_EQ(v.dims, (Ints{2, 3, 4}));
  EXPECT_EQ(v.strides, (Ints{12, 4, 1}));
  EXPECT_EQ(v.spans, (std::vector<size_t>{1, 0, 1, 1}));
}

TEST(StridedView, FlattenOfATransposeKeepsTwoPieces) {
  // x [2, 3] transposed is [3, 2] with strides (1, 3); flattened to [6] it is no single stride but
  // still a gather over (3: 1) (2: 3): elements 0, 3, 1, 4, 2, 5.
  StridedView v = contiguous_view({2, 3});
  view_permute(v, {1, 0});
  ASSERT_TRUE(view_reshape(v, {6}));
  EXPECT_EQ(v.dims, (Ints{3, 2}));
  EXPECT_EQ(v.strides, (Ints{1, 3}));
  EXPECT_EQ(v.spans, (std::vector<size_t>{2}));
  // ... and splitting it back along the same boundary gives the transpose again.
  ASSERT_TRUE(view_reshape(v, {3, 2}));
  EXPECT_EQ(v.spans, (std::vector<size_t>{1, 1}));
}

TEST(StridedView, ReshapeThatCutsAPieceUnevenlyFails) {
  // [2, 3] transposed to [3, 2] (strides 1, 3) cannot be read as [2, 3]: the new inner dim 3
  // would take the piece of size 2 and half of the next.
  StridedView v = contiguous_view({2, 3});
  view_permute(v, {1, 0});
  StridedView before = v;
  EXPECT_FALSE(view_reshape(v, {2, 3}));
  EXPECT_EQ(v.dims, before.dims);
  EXPECT_EQ(v.strides, before.strides);
}

TEST(StridedView, MultiheadAttentionQueryComposesToOneGather) {
  // torch MultiheadAttention (S=5, B=2, E=8, H=2, D=4): proj [S, B, 3E] -> [S, B, 3, E] ->
  // transpose to [3, S, B, E] -> q = [0] -> [S, B*H, D] -> transpose(0, 1) -> [B, H, S, D].
  const int64_t S = 5, B = 2, E = 8, H = 2, D = 4;
  StridedView v = contiguous_view({S, B, 3 * E});
  ASSERT_TRUE(view_reshape(v, {S, B, 3, E}));
  view_permute(v, {2, 0, 1, 3});
  view_select(v, 0, 1);  // k
  EXPECT_EQ(v.base, E);
  ASSERT_TRUE(view_reshape(v, {S, B * H, D}));
  EXPECT_EQ(v.spans, (std::vector<size_t>{1, 2, 1}));  // B*H is two pieces: (B: 3E) (H: D)
  view_permute(v, {1, 0, 2});
  ASSERT_TRUE(view_reshape(v, {B, H, S, D}));
  EXPECT_EQ(v.dims, (Ints{B, H, S, D}));
  EXPECT_EQ(v.strides, (Ints{3 * E, D, B * 3 * E, 1}));
  EXPECT_EQ(v.spans, (std::vector<size_t>{1, 1, 1, 1}));
  EXPECT_EQ(v.base, E);
}

TEST(StridedView, SelectOfAMultiPieceDimDecomposesTheIndex) {
  StridedView v = contiguous_view({2, 3});
  view_permute(v, {1, 0});
  ASSERT_TRUE(view_reshape(v, {6}));       // pieces (3: 1) (2: 3)
  view_select(v, 0, 5);                    // element 5 of 0,3,1,4,2,5: offset 5 = 2*1 + 1*3
  EXPECT_EQ(v.base, 5);
  EXPECT_TRUE(v.dims.empty());
}

TEST(StridedView, SliceStepsAndReverses) {
  StridedView v = contiguous_view({4, 10});
  ASSERT_TRUE(view_slice(v, 1, 10, 1, 3, 3));   // columns 1, 4, 7
  EXPECT_EQ(v.dims, (Ints{4, 3}));
  EXPECT_EQ(v.strides, (Ints{10, 3}));
  EXPECT_EQ(v.base, 1);
  ASSERT_TRUE(view_slice(v, 0, 4, 3, -1, 4));   // rows reversed
  EXPECT_EQ(v.strides, (Ints{-10, 3}));
  EXPECT_EQ(v.base, 31);
  ASSERT_TRUE(view_slice(v, 0, 4, 2, 1, 1));    // one row: the piece disappears
  EXPECT_EQ(v.dims, (Ints{3}));
  EXPECT_EQ(v.spans, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(v.base, 31 - 20);
}

TEST(StridedView, ProperSliceOfAMultiPieceDimFails) {
  StridedView v = contiguous_view({2, 3});
  view_permute(v, {1, 0});
  ASSERT_TRUE(view_reshape(v, {6}));
  EXPECT_TRUE(view_slice(v, 0, 6, 0, 1, 6));   // the whole dim: nothing to do
  EXPECT_FALSE(view_slice(v, 0, 6, 1, 1, 4));
}

TEST(StridedView, IdentityNeedsOffsetZeroAndEveryElement) {
  StridedView v = contiguous_view({4, 3});
  ASSERT_TRUE(view_slice(v, 0, 4, 0, 1, 2));  // the first half: contiguous, but not everything
  EXPECT_FALSE(view_is_identity(v, 12));
  EXPECT_TRUE(view_is_identity(v, 6));
  StridedView one = contiguous_view({1, 1});
  EXPECT_TRUE(view_is_identity(one, 1));
  EXPECT_EQ(gather_view(one).dims, Ints{});
}

}  // namespace
}  // namespace aotc
