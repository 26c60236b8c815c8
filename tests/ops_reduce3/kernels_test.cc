// Every template of this area, lowered from representative nodes (dtypes, shapes with 1 and
// primes, both kernel modes), is (1) rendered and compiled with nvcc for sm_90, (2) run on the
// CPU through the CUDA emulation shim of tests/ops_compute and compared with the CPU reference,
// and (3) with a GPU, run there the same way (outputs poisoned first). Without nvcc / a GPU
// those parts skip with the reason.
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
  int64_t opset = 18;
  int outputs = 1;
};

Tensor i64(std::vector<int64_t> v) { return Tensor::from_int64s({static_cast<int64_t>(v.size())}, v); }
Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }
Attribute one(int64_t v) { return Attribute::of_int(v); }
OneNode& set_op(OneNode& n, const char* op) {
  n.node.op_type = op;
  return n;
}

std::vector<Case> cases() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, f64 = DType::kFloat64;
  std::vector<Case> c;
  auto add = [&](std::string label, std::function<void(OneNode&)> f, int64_t opset = 18, int outputs = 1) {
    c.push_back({std::move(label), std::move(f), opset, outputs});
  };
  add("ReduceSum f32 middle axis", [=](OneNode& n) { set_op(n, "ReduceSum").input(f32, {3, 5, 7}).constant(i64({1})); });
  add("ReduceMean f32 rows 130 (block)", [=](OneNode& n) { set_op(n, "ReduceMean").input(f32, {4, 130}).constant(i64({-1})); });
  add("ReduceMax f16 outer+inner (block)", [=](OneNode& n) { set_op(n, "ReduceMax").input(f16, {2, 3, 67}).constant(i64({0, 2})); });
  add("ReduceMin int32 all no keepdims", [=](OneNode& n) { set_op(n, "ReduceMin").input(DType::kInt32, {5, 4}).attr("keepdims", one(0)); });
  add("ReduceMax bool rows", [=](OneNode& n) { set_op(n, "ReduceMax").input(DType::kBool, {5, 9}).constant(i64({1})); }, 20);
  add("ReduceMin bool all (block)", [=](OneNode& n) { set_op(n, "ReduceMin").input(DType::kBool, {3, 70}).attr("keepdims", one(0)); }, 20);
  add("ReduceProd f64 axis 0", [=](OneNode& n) { set_op(n, "ReduceProd").input(f64, {3, 4}).constant(i64({0})); });
  add("ReduceL1 int64 last", [=](OneNode& n) { set_op(n, "ReduceL1").input(DType::kInt64, {3, 4, 5}).constant(i64({2})); });
  add("ReduceL2 f32 rows 70 (block)", [=](OneNode& n) { set_op(n, "ReduceL2").input(f32, {6, 70}).constant(i64({1})); });
  add("ReduceLogSum f32 opset 13 attr", [=](OneNode& n) { set_op(n, "ReduceLogSum").input(f32, {2, 3, 4}).attr("axes", ints({1, 2})); }, 13);
  add("ReduceLogSumExp f32 rows 100 (block)", [=](OneNode& n) { set_op(n, "ReduceLogSumExp").input(f32, {3, 100}).constant(i64({1})); });
  add("ReduceLogSumExp f16 axis 0", [=](OneNode& n) { set_op(n, "ReduceLogSumExp").input(f16, {5, 3}).constant(i64({0})); });
  add("ReduceSumSquare uint32 axis 0", [=](OneNode& n) { set_op(n, "ReduceSumSquare").input(DType::kUInt32, {7, 3}).constant(i64({0})); });
  add("ReduceSum noop empty axes", [=](OneNode& n) {
    set_op(n, "ReduceSum").input(f32, {2, 3}).constant(Tensor(DType::kInt64, {0})).attr("noop_with_empty_axes", one(1));
  });
  add("ReduceSumSquare noop (squares)", [=](OneNode& n) { set_op(n, "ReduceSumSquare").input(f32, {4}).attr("noop_with_empty_axes", one(1)); });
  add("ArgMax f32 axis 1", [=](OneNode& n) { set_op(n, "ArgMax").input(f32, {3, 5, 4}).attr("axis", one(1)); });
  add("ArgMin int64 last no keepdims", [=](OneNode& n) {
    set_op(n, "ArgMin").input(DType::kInt64, {7}).attr("keepdims", one(0)).attr("select_last_index", one(1));
  });
  add("ArgMin uint8 ties last", [=](OneNode& n) { set_op(n, "ArgMin").input(DType::kUInt8, {4, 30}).attr("axis", one(1)).attr("select_last_index", one(1)); });
  add("ArgMax int8 ties first", [=](OneNode& n) { set_op(n, "ArgMax").input(DType::kInt8, {30, 3}).attr("axis", one(0)); });
  add("LogSoftmax f32 rows 300", [=](OneNode& n) { set_op(n, "LogSoftmax").input(f32, {3, 300}); });
  add("LogSoftmax f32 columns", [=](OneNode& n) { set_op(n, "LogSoftmax").input(f32, {2, 5, 3}).attr("axis", one(1)); });
  add("LogSoftmax f16", [=](OneNode& n) { set_op(n, "LogSoftmax").input(f16, {4, 7}); });
  add("LogSoftmax opset 11 trailing", [=](OneNode& n) { set_op(n, "LogSoftmax").input(f64, {2, 3, 4}); }, 11);
  add("LayerNorm f32 with stats", [=](OneNode& n) {
    set_op(n, "LayerNormalization").input(f32, {3, 5, 64}).input(f32, {64}).input(f32, {64});
  }, 17, 3);
  add("LayerNorm f16 axis 1 no bias", [=](OneNode& n) {
    set_op(n, "LayerNormalization").input(f16, {4, 3, 101}).input(f16, {3, 101}).attr("axis", one(1)).attr("epsilon", Attribute::of_float(1e-3f));
  }, 17);
  add("LayerNorm f16 768 with bias and stats (warp per row)", [=](OneNode& n) {
    set_op(n, "LayerNormalization").input(f16, {5, 7, 768}).input(f16, {768}).input(f16, {768});
  }, 17, 3);
  add("LayerNorm f16 1016 no bias (warp per row, partial lanes)", [=](OneNode& n) {
    set_op(n, "LayerNormalization").input(f16, {3, 1016}).input(f16, {1016});
  }, 17);
  add("LayerNorm f16 64 (warp per row, idle lanes)", [=](OneNode& n) {
    set_op(n, "LayerNormalization").input(f16, {9, 64}).input(f16, {64}).input(f16, {64});
  }, 17);
  add("LayerNorm f32 broadcast scale", [=](OneNode& n) {
    set_op(n, "LayerNormalization").input(f32, {2, 3, 4}).input(f32, {1, 4}).input(f32, {4}).attr("axis", one(1));
  }, 17, 2);
  add("InstanceNorm f32", [=](OneNode& n) { set_op(n, "InstanceNormalization").input(f32, {2, 3, 5, 7}).input(f32, {3}).input(f32, {3}); });
  add("InstanceNorm f16 67 channels", [=](OneNode& n) { set_op(n, "InstanceNormalization").input(f16, {1, 67, 3}).input(f16, {67}).input(f16, {67}); });
  add("LpNormalization f32 p2 axis 1", [=](OneNode& n) { set_op(n, "LpNormalization").input(f32, {3, 7, 5}).attr("axis", one(1)); }, 22);
  add("LpNormalization f16 p1 last axis", [=](OneNode& n) { set_op(n, "LpNormalization").input(f16, {4, 13}).attr("p", one(1)); }, 22);
  add("GroupNorm f32 2 groups", [=](OneNode& n) {
    set_op(n, "GroupNormalization").input(f32, {2, 6, 5, 3}).input(f32, {6}).input(f32, {6}).attr("num_groups", one(2));
  }, 21);
  add("GroupNorm f16 3 groups 1-D", [=](OneNode& n) {
    set_op(n, "GroupNormalization").input(f16, {1, 9, 7}).input(f16, {9}).input(f16, {9}).attr("num_groups", one(3));
  }, 21);
  add("Einsum bij,bjk->bik (matmul)", [=](OneNode& n) {
    set_op(n, "Einsum").input(f32, {3, 2, 5}).input(f32, {3, 5, 4}).attr("equation", Attribute::of_string("bij,bjk->bik"));
  });
  add("Einsum bhid,bhjd->bhij (matmul, trans b)", [=](OneNode& n) {
    set_op(n, "Einsum").input(f32, {2, 3, 5, 4}).input(f32, {2, 3, 7, 4}).attr("equation", Attribute::of_string("bhid,bhjd->bhij"));
  });
  add("Einsum transpose", [=](OneNode& n) { set_op(n, "Einsum").input(f32, {3, 4}).attr("equation", Attribute::of_string("ij->ji")); });
  add("Einsum batch diagonal", [=](OneNode& n) { set_op(n, "Einsum").input(f64, {3, 5, 5}).attr("equation", Attribute::of_string("...ii ->...i")); });
  add("Einsum inner product implicit", [=](OneNode& n) { set_op(n, "Einsum").input(f64, {5}).input(f64, {5}).attr("equation", Attribute::of_string("i,i")); });
  add("Einsum broadcast batch (kernel)", [=](OneNode& n) {
    set_op(n, "Einsum").input(f32, {1, 2, 3}).input(f32, {4, 3, 2}).attr("equation", Attribute::of_string("...ij,...jk->...ik"));
  });
  add("Einsum sum int32", [=](OneNode& n) { set_op(n, "Einsum").input(DType::kInt32, {3, 4}).attr("equation", Attribute::of_string("ij->i")); });
  add("ConvTranspose f32 stride pads outpad bias", [=](OneNode& n) {
    set_op(n, "ConvTranspose").input(f32, {1, 3, 4, 5}).input(f32, {3, 2, 3, 3}).input(f32, {2})
        .attr("strides", ints({2, 2})).attr("pads", ints({1, 0, 1, 2})).attr("output_padding", ints({1, 1}));
  });
  add("ConvTranspose f32 group 2 dilation", [=](OneNode& n) {
    set_op(n, "ConvTranspose").input(f32, {2, 4, 3, 3}).input(f32, {4, 3, 2, 2}).attr("group", one(2)).attr("dilations", ints({2, 1}));
  });
  add("ConvTranspose f16 1-D SAME_LOWER", [=](OneNode& n) {
    set_op(n, "ConvTranspose").input(f16, {1, 2, 7}).input(f16, {2, 3, 4}).attr("strides", ints({3})).attr("auto_pad", Attribute::of_string("SAME_LOWER"));
  });
  add("ConvTranspose f64 3-D output_shape", [=](OneNode& n) {
    set_op(n, "ConvTranspose").input(f64, {1, 1, 2, 3, 2}).input(f64, {1, 2, 2, 2, 2}).attr("output_shape", ints({4, 5, 5})).attr("strides", ints({2, 2, 2}));
  });
  auto resize = [](OneNode& n, DType t, Shape in, const char* mode, const char* coord) -> OneNode& {
    set_op(n, "Resize").input(t, std::move(in)).attr("mode", Attribute::of_string(mode));
    n.attr("coordinate_transformation_mode", Attribute::of_string(coord));
    return n;
  };
  auto f32s = [](std::vector<float> v) { return Tensor::from_floats({static_cast<int64_t>(v.size())}, v); };
  add("Resize nearest f32 half_pixel scales", [=](OneNode& n) {
    resize(n, f32, {1, 2, 3, 4}, "nearest", "half_pixel").absent().constant(f32s({1, 1, 2, 1.5f}));
  });
  add("Resize linear f32 align_corners sizes", [=](OneNode& n) {
    resize(n, f32, {1, 1, 4, 5}, "linear", "align_corners").absent().absent().constant(i64({1, 1, 7, 3}));
  });
  add("Resize linear f32 not_smaller sizes", [=](OneNode& n) {
    resize(n, f32, {1, 1, 4, 5}, "linear", "half_pixel").absent().absent().constant(i64({1, 1, 7, 3}))
        .attr("keep_aspect_ratio_policy", Attribute::of_string("not_smaller"));
  }, 18);
  add("Resize cubic f32 exclude_outside", [=](OneNode& n) {
    resize(n, f32, {1, 1, 5, 4}, "cubic", "half_pixel").absent().constant(f32s({1, 1, 0.6f, 1.75f}))
        .attr("exclude_outside", one(1)).attr("cubic_coeff_a", Attribute::of_float(-0.5f));
  });
  add("Resize tf_crop_and_resize extrapolation", [=](OneNode& n) {
    resize(n, f32, {1, 1, 4, 4}, "linear", "tf_crop_and_resize").constant(f32s({0, 0, 0.4f, -0.3f, 1, 1, 0.9f, 0.8f}))
        .absent().constant(i64({1, 1, 3, 5})).attr("extrapolation_value", Attribute::of_float(10.0f));
  });
  add("Resize nearest uint8 asymmetric ceil", [=](OneNode& n) {
    resize(n, DType::kUInt8, {2, 3, 5}, "nearest", "asymmetric").absent().absent().constant(i64({2, 7, 3}))
        .attr("nearest_mode", Attribute::of_string("ceil"));
  });
  add("Resize opset 10 nearest f16", [=](OneNode& n) {
    set_op(n, "Resize").input(f16, {1, 3, 2, 3}).constant(f32s({1, 1, 2, 3}));
  }, 10);
  add("Resize linear f16 pytorch_half_pixel", [=](OneNode& n) {
    resize(n, f16, {1, 2, 5, 1}, "linear", "pytorch_half_pixel").absent().absent().constant(i64({1, 2, 3, 1}));
  });
  add("Resize linear f64 half_pixel_symmetric axes", [=](OneNode& n) {
    resize(n, f64, {2, 3, 7}, "linear", "half_pixel_symmetric").absent().constant(f32s({0.7f})).attr("axes", ints({-1}));
  }, 19);
  return c;
}

Tensor random_input(const Value& v, uint32_t seed) {
  Tensor t(v.dtype, v.shape);
  const bool is_unsigned = dtype_is_integer(v.dtype) && !dtype_is_signed(v.dtype);
  double lo = v.dtype == DType::kUInt8 || v.dtype == DType::kInt8 ? (is_unsigned ? 0 : -4) : is_unsigned ? 0 : -50;
  double hi = v.dtype == DType::kUInt8 || v.dtype == DType::kInt8 ? 4 : 50;
  if (v.dtype == DType::kBool) lo = 0, hi = 1.05;  // mostly false: some rows all false, some not
  std::vector<double> vals = test::lcg_values(t.numel(), dtype_is_float(v.dtype) ? -2 : lo, dtype_is_float(v.dtype) ? 2 : hi, seed);
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
};

std::vector<Built> build_all() {
  std::vector<Built> out;
  for (const Case& c : cases()) {
    auto n = std::make_unique<OneNode>("", c.opset);
    c.build(*n);
    Status s = n->build(c.outputs);
    EXPECT_TRUE(s.is_ok()) << c.label << ": " << s.message();
    if (!s.is_ok()) continue;
    const OpDef* def = default_registry().find(n->built().op_type);
    auto l = def->lower(n->built(), n->graph);
    EXPECT_TRUE(l.is_ok()) << c.label << ": " << l.status().message();
    if (!l.is_ok()) continue;
    out.push_back({c.label, std::move(n), *l});
  }
  return out;
}

// Runs every case through `runner` and compares each output with the CPU reference.
void check_all(std::vector<Built>& built, const std::function<Status(size_t, const Lowering&, std::map<ValueId, Tensor>&)>& runner) {
  uint32_t seed = 7;
  for (size_t r = 0; r < built.size(); ++r) {
    OneNode& g = *built[r].node;
    std::vector<Tensor> inputs;
    std::map<ValueId, Tensor> values;
    for (ValueId id : g.graph.inputs) {
      Tensor t = random_input(g.graph.value(id), seed++);
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

TEST(Reduce3Kernels, AllTemplatesCompileWithNvcc) {
  std::vector<Built> built = build_all();
  std::set<std::string> used;
  std::string source = read_text(std::string(AOTC_SOURCE_DIR) + "/templates/common.cuh") + "\n" + kernel_source(built, &used);
  for (const char* t : {"reduce", "arg_reduce", "log_softmax", "norm_rows", "einsum", "conv_transpose", "resize"})
    EXPECT_TRUE(used.count(t)) << "template not exercised: " << t;
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no nvcc: rendered, not compiled";
  Status s = testing_util::nvcc_compile(source, "sm_90", false, "/tmp/aotc_ops_reduce3_" + std::to_string(getpid()) + ".o");
  EXPECT_TRUE(s.is_ok()) << s.message();
  std::remove(("/tmp/aotc_ops_reduce3_" + std::to_string(getpid()) + ".o").c_str());
}

TEST(Reduce3Kernels, EmulatedOnCpuMatchReference) {
  std::vector<Built> built = build_all();
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, kernel_source(built, nullptr));
  check_all(built, [&](size_t r, const Lowering& l, std::map<ValueId, Tensor>& values) {
    return testing_util::run_on_cpu(*handle, "c" + std::to_string(r) + "_", l, values);
  });
}

TEST(Reduce3Kernels, GpuMatchesReference) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  std::vector<Built> built = build_all();
  check_all(built, [&](size_t, const Lowering& l, std::map<ValueId, Tensor>& values) { return gpu->run(l, values); });
}

}  // namespace
}  // namespace aotc
