// The conformance view of the comparison (tools/conformance/compare.h over tools/compare.h; the
// rule itself is tested in tests/tools/compare_per_element_test.cc): verdict, count, and a message
// naming the first mismatch with its multi-index and the tolerance used.
#include <gtest/gtest.h>

#include "tools/conformance/compare.h"

namespace aotc::conformance {
namespace {

TEST(ConformanceCompare, ReportsFirstMismatchWithMultiIndexAndCount) {
  Tensor want = Tensor::from_floats({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor got = Tensor::from_floats({2, 3}, {0, 1, 2, 3, 7, 9});
  CompareResult r = compare_tensors(got, want);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 2);
  EXPECT_NE(r.message.find("index 4 (1,1): got 7, expected 4"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("atol"), std::string::npos) << r.message;
  EXPECT_TRUE(compare_tensors(want, want).ok);
  EXPECT_TRUE(compare_tensors(want, want).message.empty());
}

TEST(ConformanceCompare, DtypeMismatchIsAFailureWithReason) {
  CompareResult r = compare_tensors(Tensor::from_floats({2}, {1, 2}), Tensor::from_int64s({2}, {1, 2}));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("dtype float"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace aotc::conformance
