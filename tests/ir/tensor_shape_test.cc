// Element counts of shapes a model may claim: an empty tensor whose other dims overflow int64 when
// multiplied (found by the external_data fuzz harness under UBSan) counts 0 elements without
// forming that product; the sanitizer pass of CI runs this test too.
#include <gtest/gtest.h>

#include "ir/tensor.h"

namespace aotc {
namespace {

TEST(ShapeNumel, AZeroDimAfterOverflowingDimsIsEmpty) {
  EXPECT_EQ(shape_numel({int64_t{1} << 62, 4, 0}), 0);
  EXPECT_EQ(shape_numel({7319696511808619807, 2, 0, 3}), 0);
  EXPECT_EQ(Tensor(DType::kFloat32, {int64_t{1} << 62, 4, 0}).byte_size(), 0);
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
  EXPECT_EQ(shape_numel({}), 1);
}

}  // namespace
}  // namespace aotc
