// Slice, Split, Squeeze/Unsqueeze, Shape/Size, ConstantOfShape, Expand, Tile: shape inference,
// opset forms (attributes moved to constant inputs), refusals, and references checked against
// values computed independently here (index formulas written out per case, or numpy results).
#include "tests/ops_basic/ops_test_util.h"

namespace aotc {
namespace {

using test::OneNode;

Tensor i64(std::vector<int64_t> v) { return Tensor::from_int64s({static_cast<int64_t>(v.size())}, v); }

// x[i] = i + 0.5 (float32), of the given shape.
Tensor iota(Shape s, DType t = DType::kFloat32) {
  Tensor x(t, s);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, dtype_is_float(t) ? i + 0.5 : static_cast<double>(i));
  return x;
}

std::vector<double> run1(OneNode& n, const std::vector<Tensor>& in, size_t out = 0) {
  auto r = n.run(in);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return r.is_ok() ? (*r)[out].to_doubles() : std::vector<double>{};
}

TEST(Slice, NegativeStepsClampAndIntMax) {
  OneNode n("Slice");
  n.input(DType::kFloat32, {7, 9}).constant(i64({5, 1})).constant(i64({0, 8})).constant(i64({0, 1})).constant(i64({-2, 3}));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.out().shape, (Shape{3, 3}));
  std::vector<double> want;
  for (int r : {5, 3, 1})
    for (int c : {1, 4, 7}) want.push_back(r * 9 + c + 0.5);
  EXPECT_EQ(run1(n, {iota({7, 9})}), want);

  OneNode m("Slice");  // start past the end clamps, INT64_MAX end means "to the end", negative axis
  m.input(DType::kInt32, {4, 6}).constant(i64({-4})).constant(i64({INT64_MAX})).constant(i64({-1}));
  ASSERT_TRUE(m.build().is_ok());
  EXPECT_EQ(m.out().shape, (Shape{4, 4}));
  std::vector<double> w2;
  for (int r = 0; r < 4; ++r)
    for (int c = 2; c < 6; ++c) w2.push_back(r * 6 + c);
  EXPECT_EQ(run1(m, {iota({4, 6}, DType::kInt32)}), w2);

  OneNode rev("Slice");  // full reversal: start INT64_MAX clamps to dim-1, end INT64_MIN to -1
  rev.input(DType::kInt64, {5}).constant(i64({INT64_MAX})).constant(i64({INT64_MIN})).constant(i64({0})).constant(i64({-1}));
  ASSERT_TRUE(rev.build().is_ok());
  EXPECT_EQ(run1(rev, {iota({5}, DType::kInt64)}), (std::vector<double>{4, 3, 2, 1, 0}));

  OneNode empty("Slice");
  empty.input(DType::kFloat32, {20, 10}).constant(i64({1000})).constant(i64({1000})).constant(i64({1}));
  ASSERT_TRUE(empty.build().is_ok());
  EXPECT_EQ(empty.out().shape, (Shape{20, 0}));
}

TEST(Slice, LegacyAttributesAndRefusals) {
  OneNode n("Slice", 1);
  n.input(DType::kFloat32, {3, 4}).attr("starts", Attribute::of_ints({1})).attr("ends", Attribute::of_ints({3}))
      .attr("axes", Attribute::of_ints({1}));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.built().inputs.size(), 4u);
  EXPECT_FALSE(n.built().has_attr("starts"));
  EXPECT_EQ(n.out().shape, (Shape{3, 2}));

  OneNode rt("Slice");
  rt.input(DType::kFloat32, {3}).input(DType::kInt64, {1}).constant(i64({2}));
  Status s = rt.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "must be a constant")) << s.message();

  OneNode zero("Slice");
  zero.input(DType::kFloat32, {3}).constant(i64({0})).constant(i64({2})).constant(i64({0})).constant(i64({0}));
  s = zero.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "step 0 is 0")) << s.message();

  OneNode twice("Slice");
  twice.input(DType::kFloat32, {3, 3}).constant(i64({0, 0})).constant(i64({2, 2})).constant(i64({1, -1}));
  EXPECT_FALSE(twice.build().is_ok());
}

TEST(Split, SizesFromInputAttributeAndNumOutputs) {
  OneNode n("Split");
  n.input(DType::kFloat32, {2, 6}).constant(i64({1, 0, 5})).attr("axis", Attribute::of_int(-1));
  ASSERT_TRUE(n.build(3).is_ok());
  EXPECT_EQ(n.out(0).shape, (Shape{2, 1}));
  EXPECT_EQ(n.out(1).shape, (Shape{2, 0}));
  EXPECT_EQ(n.out(2).shape, (Shape{2, 5}));
  auto r = n.run({iota({2, 6})});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ((*r)[0].to_doubles(), (std::vector<double>{0.5, 6.5}));
  EXPECT_EQ((*r)[2].to_doubles(), (std::vector<double>{1.5, 2.5, 3.5, 4.5, 5.5, 7.5, 8.5, 9.5, 10.5, 11.5}));

  OneNode legacy("Split", 11);
  legacy.input(DType::kInt64, {5}).attr("split", Attribute::of_ints({2, 3}));
  ASSERT_TRUE(legacy.build(2).is_ok());
  EXPECT_EQ(legacy.built().inputs.size(), 2u);
  EXPECT_EQ(legacy.out(1).shape, (Shape{3}));

  OneNode equal("Split");
  equal.input(DType::kUInt8, {6, 2});
  ASSERT_TRUE(equal.build(3).is_ok());
  EXPECT_EQ(equal.out(2).shape, (Shape{2, 2}));

  OneNode uneven("Split");
  uneven.input(DType::kUInt8, {7});
  EXPECT_FALSE(uneven.build(3).is_ok());

  OneNode num("Split", 18);  // ceil(10 / 3) = 4: parts 4, 4, 2
  num.input(DType::kFloat32, {10}).attr("num_outputs", Attribute::of_int(3));
  ASSERT_TRUE(num.build(3).is_ok());
  EXPECT_EQ(num.out(0).shape, (Shape{4}));
  EXPECT_EQ(num.out(2).shape, (Shape{2}));

  OneNode bad("Split");
  bad.input(DType::kFloat32, {10}).constant(i64({3, 3}));
  Status s = bad.build(2);
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "add up to 6")) << s.message();
}

TEST(SqueezeUnsqueeze, ShapesViewsAndLegacyAxes) {
  EXPECT_TRUE(default_registry().find("Squeeze")->traits.is_view);
  EXPECT_TRUE(default_registry().find("Unsqueeze")->traits.is_view);
  OneNode all("Squeeze");
  all.input(DType::kFloat32, {1, 3, 1, 2});
  ASSERT_TRUE(all.build().is_ok());
  EXPECT_EQ(all.out().shape, (Shape{3, 2}));
  OneNode some("Squeeze");
  some.input(DType::kFloat32, {1, 3, 1, 2}).constant(i64({-2}));
  ASSERT_TRUE(some.build().is_ok());
  EXPECT_EQ(some.out().shape, (Shape{1, 3, 2}));
  auto l = default_registry().find("Squeeze")->lower(some.built(), some.graph);
  ASSERT_TRUE(l.is_ok());
  EXPECT_TRUE(l->is_view);
  OneNode bad("Squeeze");
  bad.input(DType::kFloat32, {1, 3}).constant(i64({1}));
  Status s = bad.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "cannot squeeze axis 1 of size 3")) << s.message();
  OneNode legacy("Squeeze", 11);
  legacy.input(DType::kBool, {2, 1}).attr("axes", Attribute::of_ints({1}));
  ASSERT_TRUE(legacy.build().is_ok());
  EXPECT_EQ(legacy.out().shape, (Shape{2}));

  OneNode un("Unsqueeze");  // unsorted and negative axes address the output rank
  un.input(DType::kInt8, {3, 4}).constant(i64({-1, 0}));
  ASSERT_TRUE(un.build().is_ok());
  EXPECT_EQ(un.out().shape, (Shape{1, 3, 4, 1}));
  OneNode un2("Unsqueeze", 11);
  un2.input(DType::kInt8, {3, 4}).attr("axes", Attribute::of_ints({2, 0}));
  ASSERT_TRUE(un2.build().is_ok());
  EXPECT_EQ(un2.out().shape, (Shape{1, 3, 1, 4}));
  Tensor x = iota({3, 4}, DType::kInt8);
  EXPECT_EQ(run1(un2, {x}), x.to_doubles());
  OneNode dup("Unsqueeze");
  dup.input(DType::kInt8, {3}).constant(i64({0, -3}));  // both name output axis 0
  EXPECT_FALSE(dup.build().is_ok());
}

// Axes lists of any length (a fuzz find: tens of thousands of Unsqueeze axes held the import for
// seconds while duplicates were searched pairwise; now a mask, linear): every listed axis lands,
// a duplicate far down the list is still found, and Squeeze of the result undoes it.
TEST(SqueezeUnsqueeze, LongAxisListsAreReadOnceAndDuplicatesStillFound) {
  const int64_t kAxes = 100000;
  std::vector<int64_t> axes(static_cast<size_t>(kAxes));
  for (int64_t i = 0; i < kAxes; ++i) axes[static_cast<size_t>(i)] = i + 1;  // every axis but 0
  OneNode un("Unsqueeze");
  un.input(DType::kFloat32, {5}).constant(i64(axes));
  ASSERT_TRUE(un.build().is_ok());
  ASSERT_EQ(un.out().shape.size(), static_cast<size_t>(kAxes + 1));
  EXPECT_EQ(un.out().shape[0], 5);
  EXPECT_EQ(std::count(un.out().shape.begin(), un.out().shape.end(), 1), kAxes);
  axes.back() = -kAxes - 1;  // names output axis 0 ... and axis 1 is listed first: not a duplicate
  OneNode first("Unsqueeze");
  first.input(DType::kFloat32, {5}).constant(i64(axes));
  ASSERT_TRUE(first.build().is_ok());
  EXPECT_EQ(first.out().shape[static_cast<size_t>(kAxes)], 5);  // the input's dim went last
  axes.back() = 1;  // the first entry again
  OneNode dup("Unsqueeze");
  dup.input(DType::kFloat32, {5}).constant(i64(axes));
  Status s = dup.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "axis 1 is listed twice")) << s.message();
  std::vector<int64_t> ones(static_cast<size_t>(kAxes));
  for (int64_t i = 0; i < kAxes; ++i) ones[static_cast<size_t>(i)] = i + 1;
  Shape wide(static_cast<size_t>(kAxes + 1), 1);
  wide[0] = 5;
  OneNode sq("Squeeze");
  sq.input(DType::kFloat32, wide).constant(i64(ones));
  ASSERT_TRUE(sq.build().is_ok());
  EXPECT_EQ(sq.out().shape, (Shape{5}));
}

TEST(ShapeSize, StartEndAndShapeOnlyTrait) {
  EXPECT_TRUE(default_registry().find("Shape")->traits.shape_only);
  EXPECT_TRUE(default_registry().find("Size")->traits.shape_only);
  struct Case {
    int64_t start, end;
    bool has_start, has_end;
    std::vector<double> want;
  } cases[] = {{0, 0, false, false, {2, 3, 5, 7}}, {1, 0, true, false, {3, 5, 7}}, {0, -1, false, true, {2, 3, 5}},
               {-10, 10, true, true, {2, 3, 5, 7}}, {1, 2, true, true, {3}}, {3, 1, true, true, {}}};
  for (const Case& c : cases) {
    OneNode n("Shape");
    n.input(DType::kFloat32, {2, 3, 5, 7});
    if (c.has_start) n.attr("start", Attribute::of_int(c.start));
    if (c.has_end) n.attr("end", Attribute::of_int(c.end));
    ASSERT_TRUE(n.build().is_ok());
    EXPECT_EQ(n.out().dtype, DType::kInt64);
    EXPECT_EQ(run1(n, {Tensor(DType::kFloat32, {2, 3, 5, 7})}), c.want) << c.start << " " << c.end;
  }
  OneNode size("Size");
  size.input(DType::kFloat16, {2, 3, 5});
  ASSERT_TRUE(size.build().is_ok());
  EXPECT_EQ(size.out().shape, Shape{});
  EXPECT_EQ(run1(size, {Tensor(DType::kFloat16, {2, 3, 5})}), (std::vector<double>{30}));
}

TEST(ConstantOfShape, ValueDtypeAndDefault) {
  OneNode n("ConstantOfShape");
  n.constant(i64({2, 3}));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.out().dtype, DType::kFloat32);
  EXPECT_EQ(run1(n, {}), std::vector<double>(6, 0.0));
  OneNode v("ConstantOfShape");
  v.constant(i64({4})).attr("value", Attribute::of_tensor(Tensor::from_int64s({1}, {-7})));
  ASSERT_TRUE(v.build().is_ok());
  EXPECT_EQ(v.out().dtype, DType::kInt64);
  EXPECT_EQ(run1(v, {}), std::vector<double>(4, -7.0));
  OneNode zero("ConstantOfShape");
  zero.constant(i64({0}));
  ASSERT_TRUE(zero.build().is_ok());
  EXPECT_EQ(zero.out().shape, (Shape{0}));
  OneNode rt("ConstantOfShape");
  rt.input(DType::kInt64, {2});
  EXPECT_FALSE(rt.build().is_ok());
}

TEST(Expand, BidirectionalBroadcast) {
  OneNode n("Expand");
  n.input(DType::kFloat32, {3, 1}).constant(i64({2, 1, 4}));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.out().shape, (Shape{2, 3, 4}));
  std::vector<double> want;
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) want.push_back(r + 0.5);
  EXPECT_EQ(run1(n, {iota({3, 1})}), want);
  OneNode bad("Expand");
  bad.input(DType::kFloat32, {3}).constant(i64({4}));
  EXPECT_FALSE(bad.build().is_ok());
}

// An Expand to a shape of tens of thousands of dims, nearly all 1 (a fuzz find: folded at import,
// the reference walked every dim for every element, 14 s): the same values as the plain case, the
// index arithmetic over the dims that matter only.
TEST(Expand, ManySizeOneDimsGiveThePlainResult) {
  const size_t kRank = 60000;
  std::vector<int64_t> target(kRank, 1);
  target[0] = 5;  // [5, 1, ..., 1, 16, 1, 4] from x [16, 1, 1]
  target[kRank - 3] = 16;
  target[kRank - 1] = 4;
  OneNode n("Expand");
  n.input(DType::kFloat32, {16, 1, 1}).constant(i64(target));
  ASSERT_TRUE(n.build().is_ok());
  ASSERT_EQ(n.out().shape.size(), kRank);
  std::vector<double> got = run1(n, {iota({16, 1, 1})});
  OneNode plain("Expand");
  plain.input(DType::kFloat32, {16, 1, 1}).constant(i64({5, 16, 1, 4}));
  ASSERT_TRUE(plain.build().is_ok());
  EXPECT_EQ(got, run1(plain, {iota({16, 1, 1})}));
}

TEST(Tile, RepeatsEveryDim) {
  OneNode n("Tile");
  n.input(DType::kInt32, {2, 3}).constant(i64({2, 3}));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.out().shape, (Shape{4, 9}));
  std::vector<double> want;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 9; ++c) want.push_back((r % 2) * 3 + c % 3);
  EXPECT_EQ(run1(n, {iota({2, 3}, DType::kInt32)}), want);
  OneNode zero("Tile");
  zero.input(DType::kInt32, {2, 3}).constant(i64({0, 1}));
  ASSERT_TRUE(zero.build().is_ok());
  EXPECT_EQ(zero.out().shape, (Shape{0, 3}));
  OneNode bad("Tile");
  bad.input(DType::kInt32, {2, 3}).constant(i64({2}));
  EXPECT_FALSE(bad.build().is_ok());
}

}  // namespace
}  // namespace aotc
