// Every template of this area, lowered from representative nodes (dtypes, shapes with 1 and
// primes), is (1) rendered and compiled with nvcc for sm_90, (2) run on the CPU through the CUDA
// emulation shim of tests/ops_compute and compared with the CPU reference, and (3) with a GPU,
// run there the same way (outputs poisoned first). Without nvcc / a GPU those parts skip.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "tests/ops_basic/ops_test_util.h"
#include "tests/ops_compute/kernel_harness.h"

namespace aotc {
namespace {

using test::OneNode;

struct Case {
  std::string label;
  std::function<void(OneNode&)> build;
  int64_t opset = 17;
  // Integer inputs get values in [0, int_hi) (indices, lengths); -1 means the case sets them.
  int64_t int_hi = 4;
};

Attribute one(int64_t v) { return Attribute::of_int(v); }
Attribute str(const char* s) { return Attribute::of_string(s); }
OneNode& set_op(OneNode& n, const char* op) {
  n.node.op_type = op;
  return n;
}

std::vector<Case> cases() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, f64 = DType::kFloat64;
  std::vector<Case> c;
  auto add = [&](std::string label, std::function<void(OneNode&)> f, int64_t opset = 17, int64_t int_hi = 4) {
    c.push_back({std::move(label), std::move(f), opset, int_hi});
  };
  add("Det f32 3x3 batch 5", [=](OneNode& n) { set_op(n, "Det").input(f32, {5, 3, 3}); });
  add("Det f64 single 7x7", [=](OneNode& n) { set_op(n, "Det").input(f64, {7, 7}); });
  add("ReverseSequence f32 time-major", [=](OneNode& n) { set_op(n, "ReverseSequence").input(f32, {5, 3, 7}).input(DType::kInt64, {3}); }, 17, 6);
  add("ReverseSequence int8 batch-major", [=](OneNode& n) {
    set_op(n, "ReverseSequence").input(DType::kInt8, {3, 5}).input(DType::kInt64, {3}).attr("batch_axis", one(0)).attr("time_axis", one(1));
  }, 17, 6);
  add("LRN f32 size 3", [=](OneNode& n) { set_op(n, "LRN").input(f32, {2, 5, 3, 7}).attr("size", one(3)); });
  add("LRN f16 size 4", [=](OneNode& n) { set_op(n, "LRN").input(f16, {1, 7, 5}).attr("size", one(4)).attr("alpha", Attribute::of_float(0.01f)); });
  add("MVN f32 default axes", [=](OneNode& n) { set_op(n, "MeanVarianceNormalization").input(f32, {2, 3, 5, 7}); });
  add("MVN f64 last axis", [=](OneNode& n) { set_op(n, "MeanVarianceNormalization").input(f64, {3, 11}).attr("axes", Attribute::of_ints({-1})); });
  add("MaxUnpool f32 distinct indices", [=](OneNode& n) {
    set_op(n, "MaxUnpool").input(f32, {1, 2, 2, 2}).constant(Tensor::from_int64s({1, 2, 2, 2}, {0, 5, 10, 15, 16, 21, 26, 31}))
        .attr("kernel_shape", Attribute::of_ints({2, 2})).attr("strides", Attribute::of_ints({2, 2}));
  });
  add("MaxUnpool f16 output_shape pads and crops", [=](OneNode& n) {
    set_op(n, "MaxUnpool").input(f16, {1, 1, 2, 3}).constant(Tensor::from_int64s({1, 1, 2, 3}, {0, 3, 5, 6, 10, 11}))
        .constant(Tensor::from_int64s({4}, {1, 1, 5, 4})).attr("kernel_shape", Attribute::of_ints({2, 2}))
        .attr("strides", Attribute::of_ints({2, 2}));
  });
  add("DFT f32 real axis 1", [=](OneNode& n) { set_op(n, "DFT").input(f32, {2, 13, 1}); });
  add("DFT f32 complex inverse axis 2", [=](OneNode& n) { set_op(n, "DFT").input(f32, {2, 3, 9, 2}).attr("axis", one(2)).attr("inverse", one(1)); });
  add("DFT f64 onesided padded", [=](OneNode& n) {
    set_op(n, "DFT").input(f64, {3, 5, 1}).constant(Tensor::scalar_int64(8)).attr("onesided", one(1));
  });
  add("DFT f32 irfft (inverse onesided)", [=](OneNode& n) {
    set_op(n, "DFT").input(f32, {2, 7, 3, 2}).attr("axis", one(1)).attr("inverse", one(1)).attr("onesided", one(1));
  });
  add("DFT f64 irfft odd length 9", [=](OneNode& n) {
    set_op(n, "DFT").input(f64, {3, 6, 2}).constant(Tensor::scalar_int64(9)).attr("inverse", one(1)).attr("onesided", one(1));
  });
  add("STFT f32 window", [=](OneNode& n) { set_op(n, "STFT").input(f32, {2, 31, 1}).constant(Tensor::scalar_int64(5)).input(f32, {8}); });
  add("STFT f32 complex two-sided", [=](OneNode& n) {
    set_op(n, "STFT").input(f32, {1, 17, 2}).constant(Tensor::scalar_int64(4)).absent().constant(Tensor::scalar_int64(6)).attr("onesided", one(0));
  });
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* pad : {"zeros", "border", "reflection"})
      for (int align : {0, 1})
        add(std::string("GridSample ") + mode + " " + pad + " align " + std::to_string(align), [=](OneNode& n) {
          set_op(n, "GridSample").input(f32, {2, 3, 5, 7}).input(f32, {2, 4, 3, 2}).attr("mode", str(mode))
              .attr("padding_mode", str(pad)).attr("align_corners", one(align));
        }, 16);
  add("AffineGrid f32 2-D", [=](OneNode& n) {
    set_op(n, "AffineGrid").input(f32, {2, 2, 3}).constant(Tensor::from_int64s({4}, {2, 3, 5, 7}));
  }, 20);
  add("AffineGrid f16 3-D align_corners", [=](OneNode& n) {
    set_op(n, "AffineGrid").input(f16, {1, 3, 4}).constant(Tensor::from_int64s({5}, {1, 1, 3, 1, 4})).attr("align_corners", one(1));
  }, 20);
  add("Col2Im f32 2-D strides pads dilations", [=](OneNode& n) {
    set_op(n, "Col2Im").input(f32, {2, 3 * 6, 12}).constant(Tensor::from_int64s({2}, {7, 5})).constant(Tensor::from_int64s({2}, {2, 3}))
        .attr("strides", Attribute::of_ints({2, 1})).attr("dilations", Attribute::of_ints({2, 1})).attr("pads", Attribute::of_ints({1, 0, 0, 1}));
  }, 18);
  add("Col2Im f16 3-D", [=](OneNode& n) {
    set_op(n, "Col2Im").input(f16, {1, 2 * 8, 24}).constant(Tensor::from_int64s({3}, {3, 4, 5})).constant(Tensor::from_int64s({3}, {2, 2, 2}));
  }, 18);
  add("GridSample f16 bilinear", [=](OneNode& n) { set_op(n, "GridSample").input(f16, {1, 2, 4, 3}).input(f16, {1, 5, 2, 2}); }, 16);
  add("RoiAlign avg half_pixel adaptive grid", [=](OneNode& n) {
    set_op(n, "RoiAlign").input(f32, {2, 3, 11, 7}).constant(Tensor::from_floats({3, 4}, {0, 0, 6, 10, 1.5f, 2, 5, 4, -1, 3, 9, 12}))
        .constant(Tensor::from_int64s({3}, {0, 1, 1})).attr("output_height", one(3)).attr("output_width", one(2));
  }, 16);
  add("RoiAlign max output_half_pixel ratio 2", [=](OneNode& n) {
    set_op(n, "RoiAlign").input(f32, {1, 2, 9, 9}).constant(Tensor::from_floats({2, 4}, {0, 0, 8, 8, 2, 3, 7, 5}))
        .constant(Tensor::from_int64s({2}, {0, 0})).attr("mode", str("max")).attr("sampling_ratio", one(2))
        .attr("spatial_scale", Attribute::of_float(0.5f));
  }, 10);
  return c;
}

Tensor random_input(const Value& v, uint32_t seed, int64_t int_hi) {
  Tensor t(v.dtype, v.shape);
  std::vector<double> vals = test::lcg_values(t.numel(), dtype_is_float(v.dtype) ? -2 : 0, dtype_is_float(v.dtype) ? 2 : static_cast<double>(int_hi), seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype_is_float(v.dtype)) t.set(i, vals[static_cast<size_t>(i)]);
    else t.set_int(i, static_cast<int64_t>(std::floor(vals[static_cast<size_t>(i)])));
  }
  return t;
}

struct Built {
  std::string label;
  std::unique_ptr<OneNode> node;
  Lowering lowering;
  int64_t int_hi;
};

std::vector<Built> build_all() {
  std::vector<Built> out;
  for (const Case& c : cases()) {
    auto n = std::make_unique<OneNode>("", c.opset);
    c.build(*n);
    Status s = n->build(1);
    EXPECT_TRUE(s.is_ok()) << c.label << ": " << s.message();
    if (!s.is_ok()) continue;
    const OpDef* def = default_registry().find(n->built().op_type);
    auto l = def->lower(n->built(), n->graph);
    EXPECT_TRUE(l.is_ok()) << c.label << ": " << l.status().message();
    if (!l.is_ok()) continue;
    out.push_back({c.label, std::move(n), *l, c.int_hi});
  }
  return out;
}

void check_all(std::vector<Built>& built, const std::function<Status(size_t, const Lowering&, std::map<ValueId, Tensor>&)>& runner) {
  uint32_t seed = 11;
  for (size_t r = 0; r < built.size(); ++r) {
    OneNode& g = *built[r].node;
    std::vector<Tensor> inputs;
    std::map<ValueId, Tensor> values;
    for (ValueId id : g.graph.inputs) {
      Tensor t = random_input(g.graph.value(id), seed++, built[r].int_hi);
      inputs.push_back(t);
      values[id] = t;
    }
    for (const Value& v : g.graph.values)
      if (v.constant) values[g.graph.find_value(v.name)] = *v.constant;
    auto want = g.run(inputs);
    ASSERT_TRUE(want.is_ok()) << built[r].label << ": " << want.status().message();
    for (ValueId id : g.built().outputs) {
      Tensor poisoned(g.graph.value(id).dtype, g.graph.value(id).shape);
      std::memset(poisoned.raw(), 0xFF, static_cast<size_t>(poisoned.byte_size()));
      values[id] = poisoned;
    }
    Status s = runner(r, built[r].lowering, values);
    ASSERT_TRUE(s.is_ok()) << built[r].label << ": " << s.message();
    for (size_t i = 0; i < g.built().outputs.size(); ++i) {
      std::string mismatch = test::compare_tensors(values[g.built().outputs[i]], (*want)[i]);
      EXPECT_TRUE(mismatch.empty()) << built[r].label << " output " << i << ": " << mismatch;
    }
  }
}

std::string kernel_source(const std::vector<Built>& built, std::set<std::string>* templates) {
  std::string source;
  for (size_t r = 0; r < built.size(); ++r)
    for (size_t i = 0; i < built[r].lowering.steps.size(); ++i) {
      const LoweredStep& step = built[r].lowering.steps[i];
      if (step.kind != LoweredStep::Kind::kKernel) continue;
      auto text = testing_util::render_kernel(step.kernel, "c" + std::to_string(r) + "_k" + std::to_string(i));
      EXPECT_TRUE(text.is_ok()) << built[r].label << ": " << text.status().message();
      if (text.is_ok()) source += *text + "\n";
      if (templates) templates->insert(step.kernel.template_name);
    }
  return source;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// What templates/common.cuh gives device code, for the host emulation (which has no CUDA headers).
const char* const kEmulatedCommon = R"(
template <class To, class From> inline To aotc_cast(From v) { return static_cast<To>(v); }
inline long long aotc_thread_index() { return blockIdx.x * (long long)blockDim.x + threadIdx.x; }
inline long long aotc_grid_stride() { return (long long)gridDim.x * blockDim.x; }
inline void sincospi(double x, double* s, double* c) { *s = sin(M_PI * x); *c = cos(M_PI * x); }
)";

TEST(SignalKernels, AllTemplatesCompileWithNvcc) {
  std::vector<Built> built = build_all();
  std::set<std::string> used;
  std::string source = read_text(std::string(AOTC_SOURCE_DIR) + "/templates/common.cuh") + "\n" + kernel_source(built, &used);
  for (const char* t : {"det", "reverse_sequence", "lrn", "mean_variance_norm", "max_unpool", "dft", "grid_sample", "roi_align"})
    EXPECT_TRUE(used.count(t)) << "template not exercised: " << t;
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no nvcc: rendered, not compiled";
  const std::string obj = "/tmp/aotc_ops_signal_" + std::to_string(getpid()) + ".o";
  Status s = testing_util::nvcc_compile(source, "sm_90", false, obj);
  EXPECT_TRUE(s.is_ok()) << s.message();
  std::remove(obj.c_str());
}

TEST(SignalKernels, EmulatedOnCpuMatchReference) {
  std::vector<Built> built = build_all();
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, std::string(kEmulatedCommon) + kernel_source(built, nullptr));
  check_all(built, [&](size_t r, const Lowering& l, std::map<ValueId, Tensor>& values) {
    return testing_util::run_on_cpu(*handle, "c" + std::to_string(r) + "_", l, values);
  });
}

TEST(SignalKernels, GpuMatchesReference) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  std::vector<Built> built = build_all();
  check_all(built, [&](size_t, const Lowering& l, std::map<ValueId, Tensor>& values) { return gpu->run(l, values); });
}

}  // namespace
}  // namespace aotc
