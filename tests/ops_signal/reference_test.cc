// CPU references of the signal/vision ops against values worked out by hand or from closed
// forms (never our own output pasted back), plus refusals that must name the node and reason.
#include <cmath>

#include "tests/ops_basic/ops_test_util.h"

namespace aotc {
namespace {

using test::OneNode;
using test::make_tensor;
constexpr double kPi = 3.14159265358979323846;

Tensor i64s(Shape s, std::vector<int64_t> v) { return Tensor::from_int64s(std::move(s), std::move(v)); }

Tensor run1(OneNode& n, const std::vector<Tensor>& inputs, int outputs = 1) {
  Status s = n.build(outputs);
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s.is_ok()) return Tensor();
  auto out = n.run(inputs);
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return out.is_ok() ? (*out)[0] : Tensor();
}

TEST(SignalReference, HannPeriodicAndSymmetric) {
  OneNode n("HannWindow");
  n.constant(Tensor::scalar_int64(4));
  // periodic N=4: 0.5 - 0.5 cos(2 pi i / 4) = 0, 0.5, 1, 0.5
  EXPECT_TENSOR_NEAR(run1(n, {}), make_tensor(DType::kFloat32, {4}, {0, 0.5, 1, 0.5}));
  OneNode s("HannWindow");
  s.constant(Tensor::scalar_int64(3)).attr("periodic", Attribute::of_int(0));
  EXPECT_TENSOR_NEAR(run1(s, {}), make_tensor(DType::kFloat32, {3}, {0, 1, 0}));
}

TEST(SignalReference, HammingAndBlackmanEndpoints) {
  OneNode h("HammingWindow");
  h.constant(Tensor::scalar_int64(2)).attr("output_datatype", Attribute::of_int(11));
  // i=0: 25/46 - 21/46 = 4/46; i=1 (periodic, M=2): 25/46 + 21/46 = 1
  EXPECT_TENSOR_NEAR(run1(h, {}), make_tensor(DType::kFloat64, {2}, {4.0 / 46.0, 1.0}));
  OneNode b("BlackmanWindow");
  b.constant(Tensor::scalar_int64(3)).attr("periodic", Attribute::of_int(0));
  // symmetric M=2: i=0: 0.42-0.5+0.08 = 0; i=1: 0.42+0.5+0.08 = 1; i=2: 0
  EXPECT_TENSOR_NEAR(run1(b, {}), make_tensor(DType::kFloat32, {3}, {0, 1, 0}));
}

TEST(SignalReference, WindowRefusesRuntimeSizeAndIntOutput) {
  OneNode n("HannWindow");
  n.input(DType::kInt64, {});
  Status s = n.build();
  EXPECT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "HannWindow")) << s.message();
  OneNode i("HannWindow");
  i.constant(Tensor::scalar_int64(3)).attr("output_datatype", Attribute::of_int(7));
  EXPECT_TRUE(test::contains(i.build().message(), "output_datatype")) << i.build().message();
}

TEST(SignalReference, DftOfImpulseAndCosine) {
  // DFT of a unit impulse is all ones; of cos(2 pi t / 8) is 4 at bins 1 and 7.
  OneNode n("DFT");
  n.input(DType::kFloat32, {2, 8, 1});
  std::vector<double> x(16, 0.0);
  x[0] = 1.0;
  for (int t = 0; t < 8; ++t) x[8 + t] = std::cos(2 * kPi * t / 8);
  Tensor y = run1(n, {make_tensor(DType::kFloat32, {2, 8, 1}, x)});
  std::vector<double> want(32, 0.0);
  for (int k = 0; k < 8; ++k) want[k * 2] = 1.0;
  want[16 + 2] = 4.0;
  want[16 + 14] = 4.0;
  EXPECT_TENSOR_NEAR(y, make_tensor(DType::kFloat32, {2, 8, 2}, want));
}

TEST(SignalReference, DftInverseOnesidedAndLength) {
  // Inverse DFT of X[k] = 1 (all bins) is an impulse at 0.
  OneNode n("DFT");
  n.input(DType::kFloat32, {1, 4, 2}).attr("inverse", Attribute::of_int(1));
  Tensor y = run1(n, {make_tensor(DType::kFloat32, {1, 4, 2}, {1, 0, 1, 0, 1, 0, 1, 0})});
  EXPECT_TENSOR_NEAR(y, make_tensor(DType::kFloat32, {1, 4, 2}, {1, 0, 0, 0, 0, 0, 0, 0}));
  // onesided, dft_length 6 zero-pads [1, 1, 1]: X[k] = sum_{t<3} e^{-2 pi i k t / 6}; k=0: 3,
  // k=3: 1 - 1 + 1 = 1, 4 bins (6 / 2 + 1).
  OneNode o("DFT");
  o.input(DType::kFloat32, {1, 3, 1}).constant(Tensor::scalar_int64(6)).attr("onesided", Attribute::of_int(1));
  Tensor z = run1(o, {make_tensor(DType::kFloat32, {1, 3, 1}, {1, 1, 1})});
  ASSERT_EQ(z.shape(), (Shape{1, 4, 2}));
  EXPECT_NEAR(z.get(0), 3.0, 1e-6);
  EXPECT_NEAR(z.get(6), 1.0, 1e-6);
  EXPECT_NEAR(z.get(7), 0.0, 1e-6);
  EXPECT_NEAR(z.get(2), 1.0, 1e-6);   // k=1: 1 + e^{-i pi/3} + e^{-2i pi/3}: real 1 + 0.5 - 0.5
  EXPECT_NEAR(z.get(3), -std::sqrt(3.0), 1e-6);
}

TEST(SignalReference, DftInverseOnesidedIsIrfft) {
  // numpy.fft.irfft([3+0.5j, 1-2j, -0.5+1j, 2+0.25j], n=6): the default length 2 * (4 - 1) = 6;
  // the imaginary parts of bins 0 and 3 (= n / 2) do not count.
  OneNode n("DFT");
  n.input(DType::kFloat64, {1, 4, 2}).attr("inverse", Attribute::of_int(1)).attr("onesided", Attribute::of_int(1));
  Tensor y = run1(n, {make_tensor(DType::kFloat64, {1, 4, 2}, {3, 0.5, 1, -2, -0.5, 1, 2, 0.25})});
  EXPECT_TENSOR_NEAR(y, make_tensor(DType::kFloat64, {1, 6, 1},
                                    {1.0, 0.7053418012614794, 1.6160254037844386, -0.3333333333333333,
                                     -0.11602540378443867, 0.1279915320718538}));
  // dft_length 5 (odd) reads bins 0..2 only.
  OneNode o("DFT");
  o.input(DType::kFloat64, {1, 4, 2}).constant(Tensor::scalar_int64(5)).attr("inverse", Attribute::of_int(1))
      .attr("onesided", Attribute::of_int(1));
  Tensor z = run1(o, {make_tensor(DType::kFloat64, {1, 4, 2}, {3, 0.5, 1, -2, -0.5, 1, 2, 0.25})});
  EXPECT_TENSOR_NEAR(z, make_tensor(DType::kFloat64, {1, 5, 1},
                                    {0.8, 1.411141308744102, 1.0652406117270716, -0.6360610049770085,
                                     0.3596790845058349}));
  OneNode r("DFT");
  r.input(DType::kFloat32, {1, 4, 1}).attr("inverse", Attribute::of_int(1)).attr("onesided", Attribute::of_int(1));
  EXPECT_TRUE(test::contains(r.build().message(), "complex one-sided spectrum")) << r.build().message();
}

TEST(SignalReference, Dft20AxisInputAndDefault) {
  // Opset 20: the axis is input 2 (here 0, over the rows of [2, 3, 1]); a constant becomes the
  // attribute at import. numpy.fft.fft(x, axis=0) of [[1, 2, 0.5], [0, -1, 3]].
  OneNode n("DFT", 20);
  n.input(DType::kFloat32, {2, 3, 1}).absent().constant(Tensor::scalar_int64(0));
  Tensor y = run1(n, {make_tensor(DType::kFloat32, {2, 3, 1}, {1, 2, 0.5, 0, -1, 3})});
  EXPECT_TENSOR_NEAR(y, make_tensor(DType::kFloat32, {2, 3, 2}, {1, 0, 1, 0, 3.5, 0, 1, 0, 3, 0, -2.5, 0}));
  // No axis input: -2, the signal dim of [1, 4, 1].
  OneNode d("DFT", 20);
  d.input(DType::kFloat32, {1, 4, 1});
  Tensor e = run1(d, {make_tensor(DType::kFloat32, {1, 4, 1}, {1, 0, 0, 0})});
  EXPECT_TENSOR_NEAR(e, make_tensor(DType::kFloat32, {1, 4, 2}, {1, 0, 1, 0, 1, 0, 1, 0}));
  // A run-time axis is refused in one line.
  OneNode rt("DFT", 20);
  rt.input(DType::kFloat32, {1, 4, 1}).absent().input(DType::kInt64, {});
  const std::string msg = rt.build().message();
  EXPECT_TRUE(test::contains(msg, "axis (input 2) is not known at compile time")) << msg;
  EXPECT_TRUE(test::contains(msg, "(DFT)")) << msg;
}

TEST(SignalReference, StftFramesOfConstantSignal) {
  // A constant signal of 1s: every frame's DFT is frame_length at bin 0, zero elsewhere.
  OneNode n("STFT");
  n.input(DType::kFloat32, {1, 10, 1}).constant(Tensor::scalar_int64(3)).absent().constant(Tensor::scalar_int64(4));
  Tensor y = run1(n, {make_tensor(DType::kFloat32, {1, 10, 1}, std::vector<double>(10, 1.0))});
  ASSERT_EQ(y.shape(), (Shape{1, 3, 3, 2}));  // frames 1 + (10 - 4) / 3 = 3; bins 4 / 2 + 1 = 3
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(y.get(i), i % 6 == 0 ? 4.0 : 0.0, 1e-6) << i;
}

// AffineGrid-20: identity theta gives the normalised coordinates themselves; a translation adds.
// 2 x 3 grid, align_corners 0: x = -1 + (2i + 1) / 3 = -2/3, 0, 2/3; y = -1/2, 1/2.
TEST(SignalReference, AffineGridIdentityAndTranslation) {
  OneNode n("AffineGrid", 20);
  n.input(DType::kFloat32, {1, 2, 3}).constant(i64s({4}, {1, 1, 2, 3}));
  Tensor g = run1(n, {Tensor::from_floats({1, 2, 3}, {1, 0, 0.5f, 0, 1, 0})});  // x' = x + 0.5
  ASSERT_EQ(g.shape(), (Shape{1, 2, 3, 2}));
  const double want[12] = {-2.0 / 3 + 0.5, -0.5, 0.5, -0.5, 2.0 / 3 + 0.5, -0.5,
                           -2.0 / 3 + 0.5, 0.5,  0.5, 0.5,  2.0 / 3 + 0.5, 0.5};
  for (int64_t i = 0; i < 12; ++i) EXPECT_NEAR(g.get(i), want[i], 1e-6) << i;
  // 3-D, align_corners 1: D = 1 gives z = -1; H = W = 2 give -1 and 1. theta swaps x and z.
  OneNode d3("AffineGrid", 20);
  d3.input(DType::kFloat32, {1, 3, 4}).constant(i64s({5}, {1, 1, 1, 2, 2})).attr("align_corners", Attribute::of_int(1));
  Tensor h = run1(d3, {Tensor::from_floats({1, 3, 4}, {0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0})});
  ASSERT_EQ(h.shape(), (Shape{1, 1, 2, 2, 3}));
  const double want3[12] = {-1, -1, -1, -1, -1, 1, -1, 1, -1, -1, 1, 1};
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(h.get(i), want3[i]) << i;
  OneNode bad("AffineGrid", 20);
  bad.input(DType::kFloat32, {2, 2, 3}).constant(i64s({4}, {1, 1, 2, 3}));
  Status s = bad.build();
  EXPECT_NE(s.message().find("size's N 1 differs from theta's 2"), std::string::npos) << s.message();
}

// Col2Im-18 (PyTorch's fold): a 1-D image of 5 with blocks of 2 (stride 1, 4 blocks); pixel p sums
// row 0 at block p and row 1 at block p - 1: [1, 2+10, 3+20, 4+30, 40].
TEST(SignalReference, Col2ImSumsOverlappingBlocks) {
  OneNode n("Col2Im", 18);
  n.input(DType::kFloat32, {1, 2, 4}).constant(i64s({1}, {5})).constant(i64s({1}, {2}));
  Tensor y = run1(n, {Tensor::from_floats({1, 2, 4}, {1, 2, 3, 4, 10, 20, 30, 40})});
  ASSERT_EQ(y.shape(), (Shape{1, 1, 5}));
  const double want[5] = {1, 12, 23, 34, 40};
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(y.get(i), want[i]) << i;
  // 2-D, stride 2, pads 1 on each side: image 3x3, block 2x2 -> blocks (3 + 2 - 1 - 1) / 2 + 1 = 2
  // per axis; every pixel is covered exactly once, so a column of ones folds back to ones.
  OneNode s("Col2Im", 18);
  s.input(DType::kFloat32, {1, 4, 4}).constant(i64s({2}, {3, 3})).constant(i64s({2}, {2, 2}))
      .attr("strides", Attribute::of_ints({2, 2})).attr("pads", Attribute::of_ints({1, 1, 1, 1}));
  Tensor ones(DType::kFloat32, {1, 4, 4});
  for (int64_t i = 0; i < 16; ++i) ones.set(i, 1);
  Tensor z = run1(s, {ones});
  ASSERT_EQ(z.shape(), (Shape{1, 1, 3, 3}));
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(z.get(i), 1.0) << i;
  OneNode bad("Col2Im", 18);
  bad.input(DType::kFloat32, {1, 2, 3}).constant(i64s({1}, {5})).constant(i64s({1}, {2}));
  Status st = bad.build();
  EXPECT_NE(st.message().find("is not the number of sliding blocks, 4"), std::string::npos) << st.message();
}

TEST(SignalReference, DetKnownMatrices) {
  OneNode n("Det");
  n.input(DType::kFloat32, {3, 2, 2});
  // [[1,2],[3,4]] -> -2; [[0,1],[1,0]] -> -1 (needs a pivot); [[2,0],[0,3]] -> 6
  Tensor y = run1(n, {make_tensor(DType::kFloat32, {3, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0, 2, 0, 0, 3})});
  EXPECT_TENSOR_NEAR(y, make_tensor(DType::kFloat32, {3}, {-2, -1, 6}));
  OneNode s("Det");
  s.input(DType::kFloat64, {3, 3});
  // singular (row 3 = row 1 + row 2) -> 0
  Tensor z = run1(s, {make_tensor(DType::kFloat64, {3, 3}, {1, 2, 3, 4, 5, 6, 5, 7, 9})});
  EXPECT_NEAR(z.get(0), 0.0, 1e-9);
}

TEST(SignalReference, ReverseSequenceBothLayouts) {
  OneNode n("ReverseSequence");
  n.input(DType::kInt32, {3, 2}).input(DType::kInt64, {2});  // time-major: [time=3, batch=2]
  Tensor y = run1(n, {make_tensor(DType::kInt32, {3, 2}, {0, 10, 1, 11, 2, 12}), i64s({2}, {3, 2})});
  // batch 0 reverses 3 steps: 2,1,0; batch 1 reverses 2 steps: 11,10,12
  EXPECT_TENSOR_NEAR(y, make_tensor(DType::kInt32, {3, 2}, {2, 11, 1, 10, 0, 12}));
  OneNode b("ReverseSequence");
  b.input(DType::kFloat32, {2, 3}).input(DType::kInt64, {2}).attr("batch_axis", Attribute::of_int(0)).attr("time_axis", Attribute::of_int(1));
  Tensor z = run1(b, {make_tensor(DType::kFloat32, {2, 3}, {0, 1, 2, 3, 4, 5}), i64s({2}, {1, 3})});
  EXPECT_TENSOR_NEAR(z, make_tensor(DType::kFloat32, {2, 3}, {0, 1, 2, 5, 4, 3}));
}

TEST(SignalReference, LrnClosedForm) {
  // size 3 over 3 channels of value 2 at one pixel: channel 0 sums channels 0..1 (8),
  // channel 1 sums 0..2 (12); y = 2 / (1 + 0.3 / 3 * sum)^0.5
  OneNode n("LRN");
  n.input(DType::kFloat32, {1, 3, 1, 1}).attr("size", Attribute::of_int(3)).attr("alpha", Attribute::of_float(0.3f))
      .attr("beta", Attribute::of_float(0.5f));
  Tensor y = run1(n, {make_tensor(DType::kFloat32, {1, 3, 1, 1}, {2, 2, 2})});
  const double a = 0.3f / 3.0;
  EXPECT_TENSOR_NEAR(y, make_tensor(DType::kFloat32, {1, 3, 1, 1},
                                    {2 / std::sqrt(1 + a * 8), 2 / std::sqrt(1 + a * 12), 2 / std::sqrt(1 + a * 8)}));
  OneNode m("LRN");
  m.input(DType::kFloat32, {1, 3, 1, 1});
  EXPECT_TRUE(test::contains(m.build().message(), "size")) << m.build().message();
}

TEST(SignalReference, MvnOfTwoValues) {
  // Over axis 1 only: [1, 3] -> mean 2, std 1 -> [-1, 1]
  OneNode n("MeanVarianceNormalization");
  n.input(DType::kFloat32, {2, 2}).attr("axes", Attribute::of_ints({1}));
  Tensor y = run1(n, {make_tensor(DType::kFloat32, {2, 2}, {1, 3, 5, 5})});
  EXPECT_TENSOR_NEAR(y, make_tensor(DType::kFloat32, {2, 2}, {-1, 1, 0, 0}));
}

TEST(SignalReference, MaxUnpoolScattersAndPads) {
  OneNode n("MaxUnpool");
  n.input(DType::kFloat32, {1, 1, 2, 2}).input(DType::kInt64, {1, 1, 2, 2}).constant(i64s({4}, {1, 1, 5, 5}))
      .attr("kernel_shape", Attribute::of_ints({2, 2})).attr("strides", Attribute::of_ints({2, 2}));
  // Indices are flat in the inferred 4x4 ((2 - 1) * 2 + 2): 0, 6, 9, 15 are (0,0), (1,2), (2,1),
  // (3,3), which sit at 0, 7, 11, 18 of the 5x5 output (the 4x4 block at the origin, as the ONNX
  // node test data place it).
  Tensor y = run1(n, {make_tensor(DType::kFloat32, {1, 1, 2, 2}, {1, 2, 3, 4}), i64s({1, 1, 2, 2}, {0, 6, 9, 15})});
  std::vector<double> want(25, 0.0);
  want[0] = 1; want[7] = 2; want[11] = 3; want[18] = 4;
  EXPECT_TENSOR_NEAR(y, make_tensor(DType::kFloat32, {1, 1, 5, 5}, want));
  OneNode d("MaxUnpool");
  d.input(DType::kFloat32, {1, 1, 2, 2}).input(DType::kInt64, {1, 1, 2, 2}).attr("kernel_shape", Attribute::of_ints({2, 2}))
      .attr("strides", Attribute::of_ints({2, 2}));
  ASSERT_TRUE(d.build().is_ok());
  EXPECT_EQ(d.out().shape, (Shape{1, 1, 4, 4}));  // (2 - 1) * 2 + 2
  // A kernel_shape of INT64_MAX: the inferred dim is computed without overflow and refused (a fuzz
  // find, UBSan).
  OneNode big("MaxUnpool");
  big.input(DType::kFloat32, {1, 1, 2, 2}).input(DType::kInt64, {1, 1, 2, 2})
      .attr("kernel_shape", Attribute::of_ints({INT64_MAX, 2}));
  Status s = big.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("is not a valid shape"), std::string::npos) << s.message();
}

TEST(SignalReference, UpsampleBecomesResizeNearest) {
  OneNode n("Upsample", 7);
  n.input(DType::kFloat32, {1, 1, 2, 2}).attr("scales", Attribute::of_floats({1, 1, 2, 1.5f}));
  Tensor y = run1(n, {make_tensor(DType::kFloat32, {1, 1, 2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(n.built().op_type, "Resize");
  // rows floor(i / 2), cols floor(j / 1.5) for j < 3
  EXPECT_TENSOR_NEAR(y, make_tensor(DType::kFloat32, {1, 1, 4, 3}, {1, 1, 2, 1, 1, 2, 3, 3, 4, 3, 3, 4}));
}

TEST(SignalReference, GridSampleIdentityGridAndPadding) {
  // align_corners=1 with grid points at the pixel centres (-1, 0, 1) reproduces the input.
  OneNode n("GridSample");
  n.input(DType::kFloat32, {1, 1, 3, 3}).input(DType::kFloat32, {1, 3, 3, 2}).attr("align_corners", Attribute::of_int(1));
  std::vector<double> grid;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) { grid.push_back(j - 1.0); grid.push_back(i - 1.0); }
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  Tensor y = run1(n, {make_tensor(DType::kFloat32, {1, 1, 3, 3}, x), make_tensor(DType::kFloat32, {1, 3, 3, 2}, grid)});
  EXPECT_TENSOR_NEAR(y, make_tensor(DType::kFloat32, {1, 1, 3, 3}, x));
  // Halfway between pixels 1 and 2 of row 0: (1 + 2) / 2; far outside with zeros padding: 0;
  // with border padding: the corner value.
  for (const char* pad : {"zeros", "border"}) {
    OneNode m("GridSample");
    m.input(DType::kFloat32, {1, 1, 3, 3}).input(DType::kFloat32, {1, 1, 2, 2}).attr("align_corners", Attribute::of_int(1))
        .attr("padding_mode", Attribute::of_string(pad));
    Tensor z = run1(m, {make_tensor(DType::kFloat32, {1, 1, 3, 3}, x), make_tensor(DType::kFloat32, {1, 1, 2, 2}, {-0.5, -1, 5, 5})});
    EXPECT_TENSOR_NEAR(z, make_tensor(DType::kFloat32, {1, 1, 1, 2}, {1.5, std::string(pad) == "zeros" ? 0.0 : 9.0}));
  }
  // Volumetric (GridSample-20): the centre of a 2x2x2 volume with align_corners is the mean of its
  // 8 voxels (trilinear weights 1/8); the corner (x, y, z) = (1, -1, -1) is voxel (d, h, w) = (0, 0, 1).
  OneNode v("GridSample", 20);
  v.input(DType::kFloat32, {1, 1, 2, 2, 2}).input(DType::kFloat32, {1, 1, 1, 2, 3}).attr("align_corners", Attribute::of_int(1));
  Tensor vz = run1(v, {make_tensor(DType::kFloat32, {1, 1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}),
                       make_tensor(DType::kFloat32, {1, 1, 1, 2, 3}, {0, 0, 0, 1, -1, -1})});
  EXPECT_TENSOR_NEAR(vz, make_tensor(DType::kFloat32, {1, 1, 1, 1, 2}, {3.5, 1}));
  OneNode cubic("GridSample", 20);
  cubic.input(DType::kFloat32, {1, 1, 2, 2, 2}).input(DType::kFloat32, {1, 1, 1, 1, 3}).attr("mode", Attribute::of_string("cubic"));
  EXPECT_TRUE(test::contains(cubic.build().message(), "4-D input only")) << cubic.build().message();
}

TEST(SignalReference, RoiAlignOfConstantImage) {
  // Every bilinear sample of a constant image inside it is that constant: avg = max = 7.
  for (const char* mode : {"avg", "max"}) {
    OneNode n("RoiAlign", 16);
    n.input(DType::kFloat32, {1, 2, 6, 6}).input(DType::kFloat32, {2, 4}).input(DType::kInt64, {2})
        .attr("mode", Attribute::of_string(mode)).attr("output_height", Attribute::of_int(2)).attr("output_width", Attribute::of_int(3))
        .attr("sampling_ratio", Attribute::of_int(2));
    Tensor y = run1(n, {make_tensor(DType::kFloat32, {1, 2, 6, 6}, std::vector<double>(72, 7.0)),
                        make_tensor(DType::kFloat32, {2, 4}, {1, 1, 4, 4, 0.5, 2, 5, 3.5}), i64s({2}, {0, 0})});
    std::vector<double> want(24, 7.0);
    if (std::string(mode) == "max") {
      // max takes the largest single weighted corner term w * 7 (weights < 1), so only check bounds.
      for (int64_t i = 0; i < y.numel(); ++i) EXPECT_LE(y.get(i), 7.0 + 1e-6);
    } else {
      EXPECT_TENSOR_NEAR(y, make_tensor(DType::kFloat32, {2, 2, 2, 3}, want));
    }
  }
}

}  // namespace
}  // namespace aotc
