// The sub-16-bit storage types (ir/small_dtypes.h): encode against the onnx reference (expected
// bytes written by onnx.numpy_helper.saturate_cast / ml_dtypes astype / to_float8e8m0 in onnx
// 1.23.2 with ml_dtypes 0.6.0, not by aotc), decode of every code, packing, Tensor::get/set.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ir/small_dtypes.h"
#include "ir/tensor.h"

namespace aotc {
namespace {

const std::vector<float> kInputs = {
    0.0f, -0.0f, 1.0f, -1.5f, 0.1f, 3.14159f, 448.0f, 460.0f, 470.0f, 500.0f, -1000.0f, 240.0f, 250.0f, 57344.0f,
    61440.0f, 1e6f, 0.001953125f, 0.0009765625f, 0.00146484375f, 7.62939453125e-06f, 1.9073486328125e-05f, 0.25f,
    0.75f, 5.0f, 6.5f, INFINITY, -INFINITY};

struct Expected8 {
  DType type;
  std::vector<uint8_t> saturated, not_saturated;
};

TEST(SmallDtypes, EncodeMatchesOnnxReference) {
  const std::vector<Expected8> cases = {
      {DType::kFloat8E4M3FN,
       {0x00, 0x80, 0x38, 0xBC, 0x1D, 0x45, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x77, 0x78, 0x7E, 0x7E, 0x7E, 0x01, 0x00, 0x01,
        0x00, 0x00, 0x28, 0x34, 0x4A, 0x4D, 0x7E, 0xFE},
       {0x00, 0x80, 0x38, 0xBC, 0x1D, 0x45, 0x7E, 0x7E, 0x7F, 0x7F, 0xFF, 0x77, 0x78, 0x7F, 0x7F, 0x7F, 0x01, 0x00, 0x01,
        0x00, 0x00, 0x28, 0x34, 0x4A, 0x4D, 0x7F, 0xFF}},
      {DType::kFloat8E4M3FNUZ,
       {0x00, 0x00, 0x40, 0xC4, 0x25, 0x4D, 0x7F, 0x7F, 0x7F, 0x7F, 0xFF, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x02, 0x01, 0x02,
        0x00, 0x00, 0x30, 0x3C, 0x52, 0x55, 0x7F, 0xFF},
       {0x00, 0x00, 0x40, 0xC4, 0x25, 0x4D, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7F, 0x80, 0x80, 0x80, 0x80, 0x02, 0x01, 0x02,
        0x00, 0x00, 0x30, 0x3C, 0x52, 0x55, 0x80, 0x80}},
      {DType::kFloat8E5M2,
       {0x00, 0x80, 0x3C, 0xBE, 0x2E, 0x42, 0x5F, 0x5F, 0x5F, 0x60, 0xE4, 0x5C, 0x5C, 0x7B, 0x7B, 0x7B, 0x18, 0x14, 0x16,
        0x00, 0x01, 0x34, 0x3A, 0x45, 0x46, 0x7B, 0xFB},
       {0x00, 0x80, 0x3C, 0xBE, 0x2E, 0x42, 0x5F, 0x5F, 0x5F, 0x60, 0xE4, 0x5C, 0x5C, 0x7B, 0x7C, 0x7C, 0x18, 0x14, 0x16,
        0x00, 0x01, 0x34, 0x3A, 0x45, 0x46, 0x7C, 0xFC}},
      {DType::kFloat8E5M2FNUZ,
       {0x00, 0x00, 0x40, 0xC2, 0x32, 0x46, 0x63, 0x63, 0x63, 0x64, 0xE8, 0x60, 0x60, 0x7F, 0x7F, 0x7F, 0x1C, 0x18, 0x1A,
        0x01, 0x02, 0x38, 0x3E, 0x49, 0x4A, 0x7F, 0xFF},
       {0x00, 0x00, 0x40, 0xC2, 0x32, 0x46, 0x63, 0x63, 0x63, 0x64, 0xE8, 0x60, 0x60, 0x7F, 0x80, 0x80, 0x1C, 0x18, 0x1A,
        0x01, 0x02, 0x38, 0x3E, 0x49, 0x4A, 0x80, 0x80}},
      // float4e2m1 has no Inf/NaN: `saturate` makes no difference.
      {DType::kFloat4E2M1,
       {0x00, 0x08, 0x02, 0x0B, 0x00, 0x05, 0x07, 0x07, 0x07, 0x07, 0x0F, 0x07, 0x07, 0x07, 0x07, 0x07, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x02, 0x06, 0x07, 0x07, 0x0F},
       {0x00, 0x08, 0x02, 0x0B, 0x00, 0x05, 0x07, 0x07, 0x07, 0x07, 0x0F, 0x07, 0x07, 0x07, 0x07, 0x07, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x02, 0x06, 0x07, 0x07, 0x0F}},
  };
  for (const Expected8& c : cases) {
    for (size_t i = 0; i < kInputs.size(); ++i) {
      EXPECT_EQ(small_float_encode(c.type, kInputs[i], true), c.saturated[i])
          << dtype_name(c.type) << " saturate, input " << kInputs[i];
      EXPECT_EQ(small_float_encode(c.type, kInputs[i], false), c.not_saturated[i])
          << dtype_name(c.type) << " no saturate, input " << kInputs[i];
    }
  }
}

TEST(SmallDtypes, NaNEncodesToEachTypesNaN) {
  EXPECT_EQ(small_float_encode(DType::kFloat8E4M3FN, NAN), 0x7F);
  EXPECT_EQ(small_float_encode(DType::kFloat8E4M3FN, -NAN), 0xFF);
  EXPECT_EQ(small_float_encode(DType::kFloat8E4M3FNUZ, -NAN, false), 0x80);
  EXPECT_TRUE(std::isnan(small_float_decode(DType::kFloat8E5M2, small_float_encode(DType::kFloat8E5M2, NAN))));
  EXPECT_EQ(small_float_encode(DType::kFloat8E5M2FNUZ, NAN), 0x80);
  EXPECT_EQ(small_float_encode(DType::kFloat8E8M0, NAN), 0xFF);
  EXPECT_EQ(small_float_decode(DType::kFloat4E2M1, small_float_encode(DType::kFloat4E2M1, NAN)), 0.0);
}

TEST(SmallDtypes, E8M0RoundingModesMatchOnnxReference) {
  const std::vector<float> x = {0.0f, 0.124f, 0.25f, 0.75f, 1.1f, 3.0f, 1.5f, 1.5f * std::ldexp(1.0f, 127), INFINITY,
                                NAN, 1e-40f};
  struct Mode {
    E8M0Rounding rounding;
    bool saturate;
    std::vector<uint8_t> want;
  };
  const std::vector<Mode> modes = {
      {E8M0Rounding::kUp, true, {0x00, 0x7C, 0x7D, 0x7F, 0x80, 0x81, 0x80, 0xFE, 0xFF, 0xFF, 0x01}},
      {E8M0Rounding::kUp, false, {0x00, 0x7C, 0x7D, 0x7F, 0x80, 0x81, 0x80, 0xFF, 0xFF, 0xFF, 0x01}},
      {E8M0Rounding::kDown, true, {0x00, 0x7B, 0x7D, 0x7E, 0x7F, 0x80, 0x7F, 0xFE, 0xFF, 0xFF, 0x00}},
      {E8M0Rounding::kDown, false, {0x00, 0x7B, 0x7D, 0x7E, 0x7F, 0x80, 0x7F, 0xFE, 0xFF, 0xFF, 0x00}},
      {E8M0Rounding::kNearest, true, {0x00, 0x7C, 0x7D, 0x7F, 0x7F, 0x81, 0x80, 0xFE, 0xFF, 0xFF, 0x00}},
      {E8M0Rounding::kNearest, false, {0x00, 0x7C, 0x7D, 0x7F, 0x7F, 0x81, 0x80, 0xFF, 0xFF, 0xFF, 0x00}},
  };
  for (const Mode& m : modes)
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(small_float_encode(DType::kFloat8E8M0, x[i], m.saturate, m.rounding), m.want[i])
          << "mode " << static_cast<int>(m.rounding) << " saturate " << m.saturate << " input " << x[i];
}

// Decoding every code: counts of NaN / Inf and the sum of the finite magnitudes (ml_dtypes).
TEST(SmallDtypes, DecodeEveryCode) {
  struct Table {
    DType type;
    int nans, infs;
    double finite_abs_sum;
  };
  const std::vector<Table> tables = {{DType::kFloat8E4M3FN, 2, 0, 10815.75},
                                     {DType::kFloat8E4M3FNUZ, 1, 0, 5887.875},
                                     {DType::kFloat8E5M2, 6, 2, 720895.9995117188},
                                     {DType::kFloat8E5M2FNUZ, 1, 0, 720895.9997558594},
                                     {DType::kFloat8E8M0, 1, 0, 3.402823669209385e+38}};
  for (const Table& t : tables) {
    int nans = 0, infs = 0;
    double sum = 0;
    for (int code = 0; code < 256; ++code) {
      const double v = small_float_decode(t.type, static_cast<uint8_t>(code));
      if (std::isnan(v)) ++nans;
      else if (std::isinf(v)) ++infs;
      else sum += std::fabs(v);
      // Every finite code survives an encode: the round trip is exact (negative zero of the fnuz
      // types does not exist, 0x80 is their NaN).
      if (std::isfinite(v) && !(t.type == DType::kFloat8E8M0 && code == 0)) {
        EXPECT_EQ(small_float_decode(t.type, small_float_encode(t.type, v, false, E8M0Rounding::kNearest)), v)
            << dtype_name(t.type) << " code " << code;
      }
    }
    EXPECT_EQ(nans, t.nans) << dtype_name(t.type);
    EXPECT_EQ(infs, t.infs) << dtype_name(t.type);
    EXPECT_DOUBLE_EQ(sum, t.finite_abs_sum) << dtype_name(t.type);
  }
  const std::vector<double> e2m1 = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  for (int code = 0; code < 16; ++code)
    EXPECT_EQ(small_float_decode(DType::kFloat4E2M1, static_cast<uint8_t>(code)), e2m1[static_cast<size_t>(code)]);
  EXPECT_EQ(small_float_max(DType::kFloat8E4M3FN), small_float_decode(DType::kFloat8E4M3FN, 0x7E));
  EXPECT_EQ(small_float_max(DType::kFloat8E5M2), small_float_decode(DType::kFloat8E5M2, 0x7B));
}

TEST(SmallDtypes, IntegerWrapAndRanges) {
  EXPECT_EQ(small_int_wrap(DType::kInt4, 8), -8);
  EXPECT_EQ(small_int_wrap(DType::kInt4, -9), 7);
  EXPECT_EQ(small_int_wrap(DType::kUInt4, -1), 15);
  EXPECT_EQ(small_int_wrap(DType::kUInt4, 100), 4);
  EXPECT_EQ(small_int_wrap(DType::kInt2, 2), -2);
  EXPECT_EQ(small_int_wrap(DType::kUInt2, -3), 1);
  EXPECT_EQ(small_int_min(DType::kInt2), -2);
  EXPECT_EQ(small_int_max(DType::kUInt4), 15);
}

// onnx.numpy_helper._pack_4bitx2 / _pack_2bitx4: low bits first, the last byte zero-padded.
TEST(SmallDtypes, PackingMatchesOnnx) {
  const std::vector<uint8_t> int4 = {static_cast<uint8_t>(-8), 7, static_cast<uint8_t>(-1)};
  EXPECT_EQ(pack_small(DType::kInt4, int4.data(), 3), (std::vector<uint8_t>{0x78, 0x0F}));
  const std::vector<uint8_t> uint2 = {1, 2, 3, 0, 3};
  EXPECT_EQ(pack_small(DType::kUInt2, uint2.data(), 5), (std::vector<uint8_t>{0x39, 0x03}));
  EXPECT_EQ(packed_small_bytes(DType::kInt2, 5), 2);
  EXPECT_EQ(packed_small_bytes(DType::kFloat4E2M1, 5), 3);
  EXPECT_EQ(packed_small_bytes(DType::kFloat8E5M2, 5), 5);
  std::vector<uint8_t> back(3);
  unpack_small(DType::kInt4, std::vector<uint8_t>{0x78, 0x0F}.data(), 3, back.data());
  EXPECT_EQ(back, int4);  // sign-extended: -8 and -1 come back as bytes 0xF8 and 0xFF
  std::vector<uint8_t> back2(5);
  unpack_small(DType::kInt2, std::vector<uint8_t>{0x39, 0x03}.data(), 5, back2.data());
  EXPECT_EQ(back2, (std::vector<uint8_t>{1, static_cast<uint8_t>(-2), static_cast<uint8_t>(-1), 0, static_cast<uint8_t>(-1)}));
}

TEST(SmallDtypes, TensorGetSetAndNames) {
  Tensor t(DType::kInt4, {3});
  EXPECT_EQ(t.byte_size(), 3);
  t.set(0, -3.7);  // truncation toward zero
  t.set(1, 9.0);   // wraps to -7
  t.set_int(2, -8);
  EXPECT_EQ(t.get(0), -3);
  EXPECT_EQ(t.get(1), -7);
  EXPECT_EQ(t.get_int(2), -8);
  Tensor f(DType::kFloat8E4M3FN, {2});
  f.set(0, 1000.0);  // Cast's default: saturate
  f.set(1, -0.1);
  EXPECT_EQ(f.get(0), 448.0);
  EXPECT_EQ(f.get(1), -0.1015625);
  EXPECT_EQ(dtype_name(DType::kFloat8E5M2FNUZ), "float8e5m2fnuz");
  EXPECT_EQ(dtype_storage_bits(DType::kUInt2), 2);
  EXPECT_TRUE(dtype_is_known(26));
  EXPECT_FALSE(dtype_is_known(27));  // float6e2m3: not supported
  EXPECT_FALSE(dtype_is_float(DType::kFloat8E4M3FN));
  EXPECT_FALSE(dtype_is_integer(DType::kInt4));
}

}  // namespace
}  // namespace aotc
