// Element counts of shapes a model may claim: an empty tensor whose other dims overflow int64 when
// multiplied (found by the external_data fuzz harness under UBSan) counts 0 elements without
// forming that product; the sanitizer pass of CI runs this test too.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

// Tensor::set of a double into an integer tensor (store_float_as_int): inside the int64 range
// truncation and then the low bits (as before: integer results travel as doubles), NaN -> 0,
// beyond the int64 range the type's limits; never an undefined conversion. Fuzz finds
// (model_mutator, UBSan, 2026-11-27): Pad-2's float `value` of inf / NaN / -FLT_MAX padding int32
// and int64 tensors.
TEST(TensorSet, FloatIntoIntegerTypesIsDefined) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor i32(DType::kInt32, {4});
  i32.set(0, inf); i32.set(1, -inf); i32.set(2, std::nan("")); i32.set(3, -2.75);
  EXPECT_EQ(i32.data<int32_t>()[0], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(i32.data<int32_t>()[1], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(i32.data<int32_t>()[2], 0);
  EXPECT_EQ(i32.data<int32_t>()[3], -2);
  Tensor i64(DType::kInt64, {2});
  i64.set(0, -3.4028234663852886e38); i64.set(1, 1e19);
  EXPECT_EQ(i64.data<int64_t>()[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(i64.data<int64_t>()[1], std::numeric_limits<int64_t>::max());
  Tensor u8(DType::kUInt8, {3});
  u8.set(0, 300.0); u8.set(1, -1.0); u8.set(2, 7.9);
  EXPECT_EQ(u8.data<uint8_t>()[0], 44);  // 300 mod 256
  EXPECT_EQ(u8.data<uint8_t>()[1], 255);
  EXPECT_EQ(u8.data<uint8_t>()[2], 7);
  Tensor u64(DType::kUInt64, {3});
  u64.set(0, 1.5e19); u64.set(1, 4e19); u64.set(2, -1.0);
  EXPECT_EQ(u64.data<uint64_t>()[0], 15000000000000000000ull);
  EXPECT_EQ(u64.data<uint64_t>()[1], std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(u64.data<uint64_t>()[2], std::numeric_limits<uint64_t>::max());  // -1 as its bits
  Tensor i4(DType::kInt4, {1});
  i4.set(0, std::nan(""));
  EXPECT_EQ(i4.get(0), 0.0);
}

}  // namespace
}  // namespace aotc
