// Every template of this area, instantiated through the ops' own lowerings for a list of cases
// (sizes 1, primes, non-multiples of the tiles, groups, depthwise, fp16/fp64, int8 pools):
//  - RenderedKernelsCompile: all instances rendered into one file and compiled by nvcc for sm_90
//    (skipped without nvcc);
//  - MatchReferenceOnGpu: each lowering run on the GPU (matmul steps emulated on the CPU from
//    their MatmulStep) and compared with the CPU reference (skipped without a GPU).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <unistd.h>

#include "ir/op_registry.h"
#include "ir/ops/epilogue.h"
#include "ir/ops/op_helpers.h"
#include "tests/ops_compute/kernel_harness.h"
#include "tests/ops_compute/test_util.h"

namespace aotc {
namespace {

using testing_util::one_node;
using testing_util::OneNode;
using testing_util::random_tensor;

struct Case {
  std::string label;
  std::function<OneNode()> build;
};

Attributes conv_attrs(std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> dil, int64_t group) {
  return {{"strides", Attribute::of_ints(strides)}, {"pads", Attribute::of_ints(pads)},
          {"dilations", Attribute::of_ints(dil)}, {"group", Attribute::of_int(group)}};
}

OneNode with_activation(OneNode g, const std::string& op) {
  Node act;
  act.op_type = op;
  store_activation(g.node(), act);
  return g;
}

Attributes pool(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p, int ceil = 0) {
  return {{"kernel_shape", Attribute::of_ints(k)}, {"strides", Attribute::of_ints(s)}, {"pads", Attribute::of_ints(p)},
          {"ceil_mode", Attribute::of_int(ceil)}};
}

std::vector<Case> cases() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, f64 = DType::kFloat64;
  std::vector<Case> c;
  auto add = [&c](std::string label, std::function<OneNode()> f) { c.push_back({std::move(label), std::move(f)}); };
  add("conv asym pads strides dilations", [] {
    return one_node("Conv", {{"x", {1, 3, 7, 11}}, {"w", {5, 3, 3, 2}}, {"b", {5}}}, conv_attrs({2, 3}, {1, 0, 2, 1}, {1, 2}, 1));
  });
  add("conv grouped wide tile", [] {
    return one_node("Conv", {{"x", {2, 6, 9, 5}}, {"w", {40, 3, 3, 3}}, {"b", {40}}}, conv_attrs({1, 2}, {2, 0, 2, 0}, {2, 1}, 2));
  });
  add("conv 1x1 stride 1", [] { return one_node("Conv", {{"x", {2, 64, 7, 7}}, {"w", {72, 64, 1, 1}}}, {}); });
  add("concat channels last (NHWC slabs, 16-byte accesses; 2-byte variant)", [] {
    return one_node("Concat", {{"a", {2, 3, 5, 16}}, {"b", {2, 3, 5, 8}}}, {{"axis", Attribute::of_int(3)}}, 1, DType::kFloat16);
  });
  add("subsample concat (NHWC, the second input at step 2 and 3 with ragged edges; 2-byte variant)", [] {
    return one_node("SubsampleConcat", {{"a", {2, 4, 3, 16}}, {"b", {2, 7, 5, 8}}, {"c", {2, 10, 9, 24}}},
                    {{"steps", Attribute::of_ints({1, 2, 3})}}, 1, DType::kFloat16, "aotc");
  });
  add("batch norm channels last (NHWC, the parameter index is the last dim)", [] {
    return one_node("BatchNormalization", {{"x", {2, 5, 3, 24}}, {"s", {24}}, {"b", {24}}, {"m", {24}}, {"v", {24}}},
                    {{"channels_last", Attribute::of_int(1)}}, 1, DType::kFloat16);
  });
  add("conv deep K 37 channels", [] {
    return one_node("Conv", {{"x", {1, 37, 5, 3}}, {"w", {67, 37, 3, 3}}, {"b", {67}}}, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
  });
  add("conv large tile (M 131, N 2*130*130)", [] {
    return one_node("Conv", {{"x", {2, 8, 130, 130}}, {"w", {131, 8, 3, 3}}, {"b", {131}}}, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
  });
  add("conv all ones", [] { return one_node("Conv", {{"x", {1, 1, 1, 1}}, {"w", {1, 1, 1, 1}}}, {}); });
  add("conv depthwise multiplier 2", [] {
    return one_node("Conv", {{"x", {1, 8, 13, 13}}, {"w", {16, 1, 3, 3}}, {"b", {16}}}, conv_attrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 8));
  });
  add("conv 1-D", [] { return one_node("Conv", {{"x", {2, 2, 10}}, {"w", {3, 2, 3}}}, conv_attrs({2}, {2, 1}, {2}, 1)); });
  add("conv 3-D", [] {
    return one_node("Conv", {{"x", {1, 2, 4, 5, 3}}, {"w", {2, 2, 2, 3, 2}}, {"b", {2}}},
                    conv_attrs({1, 2, 1}, {1, 1, 0, 0, 1, 1}, {1, 1, 1}, 1));
  });
  add("fused conv residual relu", [] {
    return with_activation(one_node("FusedConv", {{"x", {1, 4, 5, 6}}, {"w", {3, 4, 3, 3}}, {"b", {3}}, {"r", {1, 3, 5, 6}}},
                                    conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), 1, DType::kFloat32, "aotc"),
                           "Relu");
  });
  add("fused depthwise residual sigmoid", [] {
    return with_activation(one_node("FusedConv", {{"x", {2, 3, 6, 5}}, {"w", {3, 1, 3, 3}}, {"", {}}, {"r", {2, 3, 6, 5}}},
                                    conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 3), 1, DType::kFloat32, "aotc"),
                           "Sigmoid");
  });
  add("conv fp16", [f16] {
    return one_node("Conv", {{"x", {2, 5, 6, 7}}, {"w", {9, 5, 3, 3}}, {"b", {9}}}, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), 1, f16);
  });
  add("conv fp64", [f64] {
    return one_node("Conv", {{"x", {1, 3, 6, 7}}, {"w", {4, 3, 2, 2}}}, conv_attrs({1, 1}, {0, 0, 1, 1}, {1, 1}, 1), 1, f64);
  });
  add("maxpool ceil pads indices", [] {
    auto a = pool({3, 2}, {2, 2}, {1, 0, 0, 1}, 1);
    return one_node("MaxPool", {{"x", {2, 3, 13, 5}}}, a, 2);
  });
  add("maxpool column-major indices dilations", [] {
    auto a = pool({3, 2}, {1, 2}, {1, 0, 1, 0});
    a["storage_order"] = Attribute::of_int(1);
    a["dilations"] = Attribute::of_ints({2, 2});
    return one_node("MaxPool", {{"x", {1, 2, 9, 6}}}, a, 2);
  });
  add("maxpool int8", [] { return one_node("MaxPool", {{"x", {1, 3, 5, 5}}}, pool({2, 2}, {2, 2}, {0, 0, 1, 1}), 1, DType::kInt8); });
  add("maxpool uint8 3-D", [] {
    return one_node("MaxPool", {{"x", {1, 2, 4, 5, 3}}}, pool({2, 2, 2}, {1, 2, 1}, {0, 0, 0, 0, 0, 0}), 1, DType::kUInt8);
  });
  add("avgpool include pad ceil", [] {
    auto a = pool({3, 2}, {2, 2}, {0, 1, 0, 1}, 1);
    a["count_include_pad"] = Attribute::of_int(1);
    return one_node("AveragePool", {{"x", {2, 3, 13, 5}}}, a);
  });
  add("avgpool 1-D fp16", [f16] { return one_node("AveragePool", {{"x", {1, 3, 11}}}, pool({3}, {2}, {1, 1}), 1, f16); });
  add("lppool p3 dilations ceil", [] {
    auto a = pool({3, 2}, {2, 1}, {1, 0, 1, 1}, 1);
    a["p"] = Attribute::of_int(3);
    a["dilations"] = Attribute::of_ints({1, 2});
    return one_node("LpPool", {{"x", {2, 3, 11, 7}}}, a);
  });
  add("lppool 1-D fp16 p1", [f16] {
    auto a = pool({3}, {2}, {1, 1});
    a["p"] = Attribute::of_int(1);
    return one_node("LpPool", {{"x", {1, 3, 11}}}, a, 1, f16);
  });
  add("global avgpool", [] { return one_node("GlobalAveragePool", {{"x", {2, 3, 7, 7}}}, {}); });
  add("global maxpool long", [] { return one_node("GlobalMaxPool", {{"x", {1, 2, 1001}}}, {}); });
  add("global avgpool fp16", [f16] { return one_node("GlobalAveragePool", {{"x", {1, 5, 3, 3}}}, {}, 1, f16); });
  add("batchnorm fp32", [] {
    return one_node("BatchNormalization", {{"x", {2, 3, 5, 7}}, {"s", {3}}, {"b", {3}}, {"m", {3}}, {"v", {3}}}, {});
  });
  add("batchnorm fp16 rank 2", [f16] {
    return one_node("BatchNormalization", {{"x", {4, 5}}, {"s", {5}}, {"b", {5}}, {"m", {5}}, {"v", {5}}}, {}, 1, f16);
  });
  add("gemm column C beta", [] {
    return one_node("Gemm", {{"a", {7, 5}}, {"b", {5, 3}}, {"c", {7, 1}}}, {{"beta", Attribute::of_float(0.5f)}});
  });
  add("fused gemm scalar C residual sigmoid", [] {
    return with_activation(one_node("FusedGemm", {{"a", {4, 6}}, {"b", {3, 6}}, {"c", {1}}, {"r", {1, 3}}},
                                    {{"transB", Attribute::of_int(1)}}, 1, DType::kFloat32, "aotc"),
                           "Sigmoid");
  });
  add("fused gemm bias relu", [] {
    return with_activation(one_node("FusedGemm", {{"a", {6, 4}}, {"b", {6, 3}}, {"c", {3}}},
                                    {{"transA", Attribute::of_int(1)}, {"alpha", Attribute::of_float(0.5f)}}, 1, DType::kFloat32, "aotc"),
                           "Relu");
  });
  add("matmul broadcast batch", [] { return one_node("MatMul", {{"a", {2, 1, 5, 3}}, {"b", {1, 3, 3, 17}}}, {}); });
  add("matmul broadcast batch fp16", [f16] { return one_node("MatMul", {{"a", {3, 1, 20, 19}}, {"b", {2, 19, 4}}}, {}, 1, f16); });
  add("matmul fp64 2-D", [f64] { return one_node("MatMul", {{"a", {7, 19}}, {"b", {19, 5}}}, {}, 1, f64); });
  add("matmul fp64 vector x batched", [f64] { return one_node("MatMul", {{"a", {19}}, {"b", {3, 19, 5}}}, {}, 1, f64); });
  add("matmul strided batch", [f32] { return one_node("MatMul", {{"a", {4, 5, 3}}, {"b", {4, 3, 2}}}, {}, 1, f32); });
  return c;
}

Expected<Lowering> lower(OneNode& g) {
  Status s = infer_shapes(g.graph);
  if (!s.is_ok()) return s;
  return default_registry().find(g.node().op_type, g.node().domain)->lower(g.node(), g.graph);
}

TEST(GpuKernels, RenderedKernelsCompile) {
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no nvcc: render check skipped";
  std::string source;
  int index = 0;
  for (const Case& c : cases()) {
    OneNode g = c.build();
    auto l = lower(g);
    ASSERT_TRUE(l.is_ok()) << c.label << ": " << l.status().message();
    for (const LoweredStep& s : l->steps) {
      if (s.kind != LoweredStep::Kind::kKernel) continue;
      auto text = testing_util::render_kernel(s.kernel, "k" + std::to_string(index++));
      ASSERT_TRUE(text.is_ok()) << c.label << ": " << text.status().message();
      source += "// case: " + c.label + "\n" + *text + "\n";
    }
  }
  char dir[] = "/tmp/aotc_render_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  Status s = testing_util::nvcc_compile(source, "sm_90", false, std::string(dir) + "/all.o");
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (s.is_ok()) std::filesystem::remove_all(dir);  // kept on failure, for a look at the source
}

TEST(GpuKernels, MatchReferenceOnGpu) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no CUDA GPU toolchain: nvcc missing";
  uint32_t seed = 100;
  for (const Case& c : cases()) {
    OneNode g = c.build();
    auto l = lower(g);
    ASSERT_TRUE(l.is_ok()) << c.label << ": " << l.status().message();
    std::vector<Tensor> inputs;
    std::map<ValueId, Tensor> values;
    for (ValueId id : g.graph.inputs) {
      const Value& v = g.graph.value(id);
      // Variances must be positive; everything else in [-1, 1] (int types: the full range).
      bool variance = g.node().op_type == "BatchNormalization" && v.name == "v";
      Tensor t = dtype_is_float(v.dtype) ? random_tensor(v.dtype, v.shape, seed++, variance ? 0.1 : -1, variance ? 2 : 1)
                                         : random_tensor(v.dtype, v.shape, seed++, v.dtype == DType::kInt8 ? -128 : 0,
                                                        v.dtype == DType::kInt8 ? 127 : 255);
      inputs.push_back(t);
      values[id] = t;
    }
    auto want = evaluate_graph(g.graph, inputs);
    ASSERT_TRUE(want.is_ok()) << c.label << ": " << want.status().message();
    for (ValueId id : g.node().outputs) {
      Tensor poisoned(g.graph.value(id).dtype, g.graph.value(id).shape);
      std::memset(poisoned.raw(), 0xFF, static_cast<size_t>(poisoned.byte_size()));
      values[id] = poisoned;
    }
    Status s = gpu->run(*l, values);
    ASSERT_TRUE(s.is_ok()) << c.label << ": " << s.message();
    for (size_t i = 0; i < g.node().outputs.size(); ++i)
      EXPECT_TRUE(testing_util::tensors_close(values[g.node().outputs[i]], want.value()[i])) << c.label << " output " << i;
  }
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

int64_t hole_int(const KernelStep& k, const std::string& key) {
  for (const auto& kv : k.holes)
    if (kv.first == key) return std::stoll(kv.second);
  return -1;
}

void set_hole(KernelStep& k, const std::string& key, int64_t v) {
  for (auto& kv : k.holes)
    if (kv.first == key) kv.second = int_literal(v);
}

// The lowering as chosen, plus, for implicit-GEMM convs, the same step with every tile
// configuration the lowering can pick (so each is exercised on small shapes too).
std::vector<std::pair<std::string, Lowering>> variants(const std::string& label, const Lowering& l) {
  std::vector<std::pair<std::string, Lowering>> out = {{label, l}};
  // A Concat's slabs of whole 16-byte vectors lower with 16-byte accesses (ir/ops/concat.cc); the
  // 2-byte form on the same slabs too.
  if (!l.steps.empty() && l.steps[0].kernel.template_name == "concat_slab") {
    Lowering v = l;
    for (LoweredStep& st : v.steps) {
      KernelStep& k = st.kernel;
      if (hole_int(k, "VEC") == 1) return out;
      set_hole(k, "VEC", 1);
      for (auto& kv : k.holes)
        if (kv.first == "V") kv.second = "unsigned short";
      k.grid = Dim3{(hole_int(k, "numel") + 255) / 256, 1, 1};
    }
    out.push_back({label + " VEC 1", v});
    return out;
  }
  if (l.steps.size() != 1 || l.steps[0].kernel.template_name != "conv_implicit_gemm") return out;
  const KernelStep& k = l.steps[0].kernel;
  const int64_t gemm_n = hole_int(k, "N") * hole_int(k, "OD") * hole_int(k, "OH") * hole_int(k, "OW");
  const int64_t m = hole_int(k, "K") / hole_int(k, "G");
  const int64_t tiles[][4] = {{64, 64, 4, 4}, {16, 128, 1, 8}, {128, 128, 8, 8}};
  for (const auto& t : tiles) {
    if (t[0] == hole_int(k, "BM") && t[1] == hole_int(k, "BN")) continue;
    Lowering v = l;
    KernelStep& vk = v.steps[0].kernel;
    set_hole(vk, "BM", t[0]);
    set_hole(vk, "BN", t[1]);
    set_hole(vk, "TM", t[2]);
    set_hole(vk, "TN", t[3]);
    vk.block = Dim3{(t[0] / t[2]) * (t[1] / t[3]), 1, 1};
    vk.grid = Dim3{(gemm_n + t[1] - 1) / t[1], (m + t[0] - 1) / t[0], hole_int(k, "G")};
    out.push_back({label + " tile " + std::to_string(t[0]) + "x" + std::to_string(t[1]), v});
  }
  return out;
}

TEST(GpuKernels, EmulatedOnCpuMatchReference) {
  struct Run { std::string label; OneNode graph; Lowering lowering; };
  std::vector<Run> runs;
  for (const Case& c : cases()) {
    OneNode g = c.build();
    auto l = lower(g);
    ASSERT_TRUE(l.is_ok()) << c.label << ": " << l.status().message();
    if (g.graph.value(g.node().outputs[0]).numel() > 100000) continue;  // too slow with one OS thread per CUDA thread
    for (auto& v : variants(c.label, *l)) runs.push_back({v.first, g, v.second});
  }
  std::string source;
  for (size_t r = 0; r < runs.size(); ++r)
    for (size_t i = 0; i < runs[r].lowering.steps.size(); ++i) {
      if (runs[r].lowering.steps[i].kind != LoweredStep::Kind::kKernel) continue;
      auto text = testing_util::render_kernel(runs[r].lowering.steps[i].kernel, "c" + std::to_string(r) + "_k" + std::to_string(i));
      ASSERT_TRUE(text.is_ok()) << runs[r].label << ": " << text.status().message();
      source += *text + "\n";
    }
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, source);
  uint32_t seed = 300;
  for (size_t r = 0; r < runs.size(); ++r) {
    OneNode& g = runs[r].graph;
    std::vector<Tensor> inputs;
    std::map<ValueId, Tensor> values;
    for (ValueId id : g.graph.inputs) {
      const Value& v = g.graph.value(id);
      bool variance = g.node().op_type == "BatchNormalization" && v.name == "v";
      Tensor t = dtype_is_float(v.dtype) ? random_tensor(v.dtype, v.shape, seed++, variance ? 0.1 : -1, variance ? 2 : 1)
                                         : random_tensor(v.dtype, v.shape, seed++, v.dtype == DType::kInt8 ? -128 : 0,
                                                         v.dtype == DType::kInt8 ? 127 : 255);
      inputs.push_back(t);
      values[id] = t;
    }
    auto want = evaluate_graph(g.graph, inputs);
    ASSERT_TRUE(want.is_ok()) << runs[r].label << ": " << want.status().message();
    for (ValueId id : g.node().outputs) {
      Tensor poisoned(g.graph.value(id).dtype, g.graph.value(id).shape);
      std::memset(poisoned.raw(), 0xFF, static_cast<size_t>(poisoned.byte_size()));
      values[id] = poisoned;
    }
    Status s = testing_util::run_on_cpu(*handle, "c" + std::to_string(r) + "_", runs[r].lowering, values);
    ASSERT_TRUE(s.is_ok()) << runs[r].label << ": " << s.message();
    for (size_t i = 0; i < g.node().outputs.size(); ++i)
      EXPECT_TRUE(testing_util::tensors_close(values[g.node().outputs[i]], want.value()[i])) << runs[r].label << " output " << i;
  }
}

}  // namespace
}  // namespace aotc
