// Channels-last convolutions lowered to GEMMs (ir/ops/conv_nhwc.cc), fp32 and 16-bit: the 1x1
// stride-1 cuBLASLt step, and im2col (templates/im2col_nhwc.cu.in, 16-byte LANES: 4 fp32 or 8
// fp16 channels per thread) + cuBLASLt step, run on the CPU emulation (the im2col kernel through
// tests/ops_compute/cuda_emulation.h, the matmul step from its MatmulStep description) against
// the channels_last reference, with outputs and scratch poisoned; the fp32 CUTLASS SIMT lowering's
// holes (compiled in tests/codegen/cutlass_conv_test.cc); the im2col kernels compiled by nvcc.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <map>

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
using testing_util::tensors_close;

const char* const kEmulatedCommon = R"(
template <class To, class From> inline To aotc_cast(From v) { return static_cast<To>(v); }
)";

// A channels_last Conv (or FusedConv with residual and/or an activation): X [n, h, w, c],
// W [k, kh, kw, c] (KRSC), output dims computed as window.h does (floor).
OneNode nhwc_conv(DType t, int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t kh, int64_t kw,
                  std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> dil, bool bias,
                  bool residual, const std::string& act) {
  const int64_t oh = (h + pads[0] + pads[2] - ((kh - 1) * dil[0] + 1)) / strides[0] + 1;
  const int64_t ow = (w + pads[1] + pads[3] - ((kw - 1) * dil[1] + 1)) / strides[1] + 1;
  const bool fused = residual || !act.empty();
  std::vector<std::pair<std::string, Shape>> ins = {{"x", {n, h, w, c}}, {"w", {k, kh, kw, c}}, {bias ? "b" : "", {k}}};
  if (fused) ins.push_back({residual ? "r" : "", {n, oh, ow, k}});
  Attributes attrs = {{"strides", Attribute::of_ints(strides)}, {"pads", Attribute::of_ints(pads)},
                      {"dilations", Attribute::of_ints(dil)}, {"group", Attribute::of_int(1)},
                      {"channels_last", Attribute::of_int(1)}};
  OneNode g = one_node(fused ? "FusedConv" : "Conv", ins, attrs, 1, t, fused ? "aotc" : "");
  if (!act.empty()) {
    Node a;
    a.op_type = act;
    if (act == "LeakyRelu") a.attrs["alpha"] = Attribute::of_float(0.1f);
    store_activation(g.node(), a);
  }
  g.graph.target = target_from_archs({"sm_90"});
  return g;
}

Expected<Lowering> lower(OneNode& g) {
  AOTC_RETURN_IF_ERROR(infer_shapes(g.graph));
  const OpDef* def = default_registry().find(g.node().op_type, g.node().domain);
  if (!def) return Status::error("no op " + g.node().op_type);
  return def->lower(g.node(), g.graph);
}

// How a case lowers: one matmul over the input rows, im2col kernel + matmul, or one strided
// batched matmul over the input in place (a strided 1x1 convolution).
enum class Path { kRows, kIm2col, kStridedRows };

struct GemmCase {
  std::string label;
  std::function<OneNode()> build;
  Path path;
};

std::vector<GemmCase> gemm_cases() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16;
  // fp32 takes im2col only for K = R*S*C >= kSimtIm2colMinK (1024): the fp32 cases have wide C.
  return {
      // H (5 + 2 - 3) / 1 + 1 = 5, W 4; K = 9 * 128 = 1152: 32 fp32 vectors of 4 channels per tap.
      {"fp32 C128 K12 3x3 p1 bias", [=] { return nhwc_conv(f32, 1, 128, 5, 4, 12, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, ""); }, Path::kIm2col},
      // H (11 + 1 + 2 - 5) / 2 + 1 = 5, W (9 + 0 + 1 - 3) / 2 + 1 = 4: taps past every edge; K 1044.
      {"fp32 C116 K20 3x3 s2 dil(2,1) asym pads residual relu", [=] {
         return nhwc_conv(f32, 2, 116, 11, 9, 20, 3, 3, {2, 2}, {1, 0, 2, 1}, {2, 1}, true, true, "Relu");
       }, Path::kIm2col},
      // 1x1 stride 2 (ResNet's layer4 downsample shape class): one batched GEMM per output row
      // reading the input in place; batch 1 with H = 3 != P * SH = 4 (the last row is not read).
      {"fp32 C1024 K8 1x1 s2 residual", [=] { return nhwc_conv(f32, 1, 1024, 3, 5, 8, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, false, true, ""); }, Path::kStridedRows},
      // Two images, H = 6 = P * SH: the batches step from image to image; strides (2, 3).
      {"fp16 C16 K24 1x1 s(2,3) n2 bias relu residual", [=] {
         return nhwc_conv(f16, 2, 16, 6, 8, 24, 1, 1, {2, 3}, {0, 0, 0, 0}, {1, 1}, true, true, "Relu");
       }, Path::kStridedRows},
      // Two images with H = 7 != P * SH = 8: no uniform batch stride -> im2col.
      {"fp16 C16 K24 1x1 s2 n2 odd H", [=] { return nhwc_conv(f16, 2, 16, 7, 8, 24, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false, ""); }, Path::kIm2col},
      // --conv-strided-pointwise im2col: the same convolution as im2col + GEMM.
      {"fp16 C16 K24 1x1 s2 im2col forced", [=] {
         OneNode g = nhwc_conv(f16, 1, 16, 6, 8, 24, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false, "");
         g.graph.target.conv_strided_pointwise_gemm = false;
         return g;
       }, Path::kIm2col},
      {"fp16 C8 K16 3x3 p1 bias relu", [=] { return nhwc_conv(f16, 2, 8, 5, 6, 16, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu"); }, Path::kIm2col},
      // 1x1 stride 1: one GEMM over the NHWC rows (M = 2*5*7 = 70, K 20 -> 12).
      {"fp32 C20 K12 1x1 bias residual relu", [=] {
         return nhwc_conv(f32, 2, 20, 5, 7, 12, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, true, true, "Relu");
       }, Path::kRows},
      {"fp32 C4 K4 1x1 on 1x1", [=] { return nhwc_conv(f32, 1, 4, 1, 1, 4, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, false, false, ""); }, Path::kRows},
  };
}

TEST(ConvNhwcGemm, Im2colAndPointwiseEmulatedMatchReference) {
  const std::vector<GemmCase> cases = gemm_cases();
  std::vector<OneNode> graphs;
  std::vector<Lowering> lowerings;
  std::string source = kEmulatedCommon;
  for (size_t r = 0; r < cases.size(); ++r) {
    SCOPED_TRACE(cases[r].label);
    graphs.push_back(cases[r].build());
    auto l = lower(graphs.back());
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    const bool im2col = cases[r].path == Path::kIm2col;
    ASSERT_EQ(l->steps.size(), im2col ? 2u : 1u);
    const MatmulStep& mm = l->steps.back().matmul;
    ASSERT_EQ(l->steps.back().kind, LoweredStep::Kind::kMatmul);
    EXPECT_EQ(mm.dtype, graphs.back().graph.value(graphs.back().node().inputs[0]).dtype);
    EXPECT_TRUE(mm.trans_b);
    if (im2col) {
      ASSERT_EQ(l->steps[0].kind, LoweredStep::Kind::kKernel);
      EXPECT_EQ(l->steps[0].kernel.template_name, "im2col_nhwc");
      EXPECT_EQ(mm.a, kScratchArg);
      EXPECT_EQ(l->scratch_bytes, mm.m * mm.k * dtype_size(mm.dtype));
      auto text = testing_util::render_kernel(l->steps[0].kernel, "c" + std::to_string(r) + "_k0");
      ASSERT_TRUE(text.is_ok()) << text.status().message();
      source += *text + "\n";
    } else {
      EXPECT_EQ(mm.a, graphs.back().node().inputs[0]);
      EXPECT_EQ(l->scratch_bytes, 0);
      EXPECT_EQ(mm.batch > 1, cases[r].path == Path::kStridedRows);
      if (cases[r].path == Path::kStridedRows) {
        EXPECT_EQ(mm.stride_b, 0) << "one filter for every batch";
      }
    }
    lowerings.push_back(*l);
  }
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, source);
  for (size_t r = 0; r < cases.size(); ++r) {
    SCOPED_TRACE(cases[r].label);
    const Graph& g = graphs[r].graph;
    std::map<ValueId, Tensor> values;
    std::vector<Tensor> inputs;
    uint32_t seed = 7000 + 10 * static_cast<uint32_t>(r);
    for (ValueId id : g.inputs) {
      inputs.push_back(random_tensor(g.value(id).dtype, g.value(id).shape, seed++));
      values[id] = inputs.back();
    }
    const ValueId out = graphs[r].node().outputs[0];
    Tensor poisoned(g.value(out).dtype, g.value(out).shape);
    std::memset(poisoned.raw(), 0xFF, static_cast<size_t>(poisoned.byte_size()));
    values[out] = poisoned;
    Status s = testing_util::run_on_cpu(*handle, "c" + std::to_string(r) + "_", lowerings[r], values);
    ASSERT_TRUE(s.is_ok()) << s.message();
    auto want = evaluate_graph(g, inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().message();
    EXPECT_TRUE(tensors_close(values[out], want.value()[0]));
  }
}

// fp32 convolutions that fill the GPU, whose activation cuBLASLt cannot apply, or whose K loop is
// short, lower to the CUTLASS implicit GEMM with the SIMT main loop (FFMA, 4-byte accesses, fp32 storage) and a SIMT
// configuration from the table; 16-bit ones keep the tensor-core holes. Must not take the SIMT
// path: a 16-bit convolution.
TEST(ConvNhwcGemm, Fp32FullGridConvolutionLowersToCutlassSimt) {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16;
  struct Case {
    std::string label;
    OneNode g;
    bool simt;
  };
  std::vector<Case> cases;
  // M = 4*56*56 = 12544, N = 64: 98 tiles of 128x64 -> half a wave is filled.
  cases.push_back({"fp32 bs4 56x56 64->64 3x3", nhwc_conv(f32, 4, 64, 56, 56, 64, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, true, "Relu"), true});
  cases.push_back({"fp32 small LeakyRelu", nhwc_conv(f32, 1, 8, 5, 5, 12, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "LeakyRelu"), true});
  // Under-filled but a short K loop (K 36 < kSimtIm2colMinK): CUTLASS, not im2col.
  cases.push_back({"fp32 small short K", nhwc_conv(f32, 1, 4, 7, 5, 12, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu"), true});
  // 16-bit: 196 tiles of 128x64 fill the GPU -> tensor cores.
  cases.push_back({"fp16 bs8 56x56 64->64 3x3", nhwc_conv(f16, 8, 64, 56, 56, 64, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, true, "Relu"), false});
  for (Case& c : cases) {
    SCOPED_TRACE(c.label);
    auto l = lower(c.g);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    ASSERT_EQ(l->steps.size(), 1u);
    const KernelStep& k = l->steps[0].kernel;
    EXPECT_EQ(k.template_name, "cutlass_conv2d_fprop");
    EXPECT_TRUE(k.library_params);
    std::map<std::string, std::string> holes(k.holes.begin(), k.holes.end());
    EXPECT_EQ(holes["OP_CLASS"], c.simt ? "cutlass::arch::OpClassSimt" : "cutlass::arch::OpClassTensorOp");
    EXPECT_EQ(holes["INSTRUCTION"], c.simt ? "1, 1, 1" : "16, 8, 16");
    EXPECT_EQ(holes["ELEMENT"], c.simt ? "float" : "cutlass::half_t");
    EXPECT_EQ(holes["ALIGN_A"], int_literal(c.simt ? 1 : 8));
    EXPECT_EQ(holes["ALIGN_C"], int_literal(c.simt ? 1 : 8));
    EXPECT_NE(holes["comment"].find(c.simt ? "config simt" : "config tc"), std::string::npos) << holes["comment"];
    if (c.simt) {
      EXPECT_EQ(holes["TB_K"], int_literal(8));
    }
  }
}

// ---- The cluster split-K kernel (templates/conv_cluster_splitk_nhwc.cu.in; its numbers are
// checked on the GPU by GpuConvFp16.ClusterSplitK*, the rule is ir/ops/conv_configs.h's).

std::map<std::string, std::string> holes_of(const KernelStep& k) { return {k.holes.begin(), k.holes.end()}; }

// ResNet-50's batch-1 3x3 layers on the default target (sm_90, 132 SMs): the configuration of
// each is the fastest measured on the H200 or within 4% of it (docs/perf_notes.md v25).
TEST(ConvClusterSplitK, PicksTheMeasuredConfigurationsForResNet50Batch1) {
  const DType f16 = DType::kFloat16;
  struct Case {
    std::string label;
    OneNode g;
    int64_t bn, split;
    Dim3 grid;
  };
  std::vector<Case> cases;
  auto max_split = [](OneNode g, int n) {
    g.graph.target.conv_cluster_max_split = n;
    return g;
  };
  cases.push_back({"layer1 56x56x64", nhwc_conv(f16, 1, 64, 56, 56, 64, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu"), 32, 1, {1, 2, 49}});
  cases.push_back({"layer2.0 56->28 x128 s2", nhwc_conv(f16, 1, 128, 56, 56, 128, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu"), 64, 3, {3, 2, 13}});
  cases.push_back({"layer2 28x28x128", nhwc_conv(f16, 1, 128, 28, 28, 128, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu"), 64, 3, {3, 2, 13}});
  cases.push_back({"layer3 14x14x256", nhwc_conv(f16, 1, 256, 14, 14, 256, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu"), 64, 6, {6, 4, 4}});
  cases.push_back({"layer4 7x7x512", nhwc_conv(f16, 1, 512, 7, 7, 512, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu"), 32, 6, {6, 16, 1}});
  // --conv-cluster-max-split: layer 4's 72 K steps in 9 (8 slices, 128 CTAs at BN 32) or 6 (12
  // slices, sm_90's non-portable cluster size, 96 CTAs at BN 64: 16 x 12 would pass 132 SMs);
  // layer 3's 36 steps have no divisor in 7..12 that fits, so its choice stays.
  const OneNode l4 = nhwc_conv(f16, 1, 512, 7, 7, 512, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu");
  cases.push_back({"layer4 split <= 8", max_split(l4, 8), 32, 8, {8, 16, 1}});
  cases.push_back({"layer4 split <= 12", max_split(l4, 12), 64, 12, {12, 8, 1}});
  cases.push_back({"layer4 split <= 16", max_split(l4, 16), 64, 12, {12, 8, 1}});
  cases.push_back({"layer3 split <= 16", max_split(nhwc_conv(f16, 1, 256, 14, 14, 256, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu"), 16), 64, 6, {6, 4, 4}});
  for (Case& c : cases) {
    SCOPED_TRACE(c.label);
    auto l = lower(c.g);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    ASSERT_EQ(l->steps.size(), 1u);
    ASSERT_EQ(l->steps[0].kind, LoweredStep::Kind::kKernel);
    const KernelStep& k = l->steps[0].kernel;
    EXPECT_EQ(k.template_name, "conv_cluster_splitk_nhwc");
    EXPECT_EQ(l->scratch_bytes, 0);
    auto h = holes_of(k);
    EXPECT_EQ(h["BN"], int_literal(c.bn));
    EXPECT_EQ(h["SPLIT"], int_literal(c.split));
    EXPECT_EQ(h["BK"], int_literal(64));
    EXPECT_EQ(h["STAGES"], int_literal(3));
    EXPECT_EQ(h["KG"], int_literal(2));
    EXPECT_EQ(k.grid.x, c.grid.x);
    EXPECT_EQ(k.grid.y, c.grid.y);
    EXPECT_EQ(k.grid.z, c.grid.z);
    EXPECT_EQ(k.block.x, 256);
    // 3 stages of (64 + BN) rows x 72 halves; larger than the two fp32 tiles.
    EXPECT_EQ(k.shared_bytes, 3 * (64 + c.bn) * 72 * 2);
    EXPECT_EQ(h["SMEM_BYTES"], int_literal(k.shared_bytes));
    ASSERT_EQ(k.args.size(), 7u);  // x, w, bias, res, y, and no Concat slab: null, null
    EXPECT_EQ(k.args[5], kNullArg);
    EXPECT_EQ(k.args[6], kNullArg);
    EXPECT_EQ(h["SLAB"], "false");
    EXPECT_EQ(k.cluster_size, c.split);  // over 8: the runtime allows the non-portable size
  }
}

// Where it must not fire: a target list with Jetson's sm_87 (no clusters), a batch that fills the
// GPU (CUTLASS), channels not a multiple of 64, output channels not a multiple of 32, fp32,
// --conv-cluster off, and a 3x3 whose every configuration would need more CTAs than SMs.
TEST(ConvClusterSplitK, MustNotFire) {
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  auto path = [&](OneNode g) -> std::string {
    auto l = lower(g);
    if (!l.is_ok()) return "error: " + l.status().message();
    return l->steps.size() == 2 ? "im2col" : l->steps[0].kind == LoweredStep::Kind::kMatmul ? "matmul" : l->steps[0].kernel.template_name;
  };
  auto layer3 = [&](DType t) { return nhwc_conv(t, 1, 256, 14, 14, 256, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu"); };
  OneNode jetson = layer3(f16);
  jetson.graph.target.sms = {90, 87};
  EXPECT_EQ(path(jetson), "im2col");
  OneNode off = layer3(f16);
  off.graph.target.conv_cluster_splitk = false;
  EXPECT_EQ(path(off), "im2col");
  EXPECT_EQ(path(layer3(f32)), "im2col");
  EXPECT_EQ(path(nhwc_conv(f16, 32, 64, 56, 56, 64, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu")),
            "cutlass_conv2d_fprop");
  EXPECT_EQ(path(nhwc_conv(f16, 1, 32, 14, 14, 64, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu")), "im2col");
  EXPECT_EQ(path(nhwc_conv(f16, 1, 64, 14, 14, 48, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu")), "im2col");
  // M = 4480 (70 row tiles) x 128 channels: 140 CTAs at BN 64, 280 at BN 32, more than 132 SMs
  // even without a split, while CUTLASS's own tiles (35 of 128 x 128) leave SMs idle: im2col.
  OneNode wide = nhwc_conv(f16, 1, 64, 70, 64, 128, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu");
  EXPECT_EQ(path(wide), "im2col");
  // The positive control: the same layer on the default target takes it.
  EXPECT_EQ(path(layer3(f16)), "conv_cluster_splitk_nhwc");
}

// Renders and compiles for sm_90 (the only architecture it is picked for): fp16 with residual,
// Clip, no bias, BN 32 / 64, bf16, and a 1x7 window.
TEST(ConvClusterSplitK, KernelsCompileWithNvcc) {
  std::vector<OneNode> graphs;
  graphs.push_back(nhwc_conv(DType::kFloat16, 1, 256, 14, 14, 256, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, true, "Relu"));
  graphs.push_back(nhwc_conv(DType::kFloat16, 1, 128, 15, 13, 96, 3, 3, {2, 2}, {1, 2, 0, 1}, {1, 2}, false, false, "Clip"));
  graphs.push_back(nhwc_conv(DType::kBFloat16, 1, 512, 7, 7, 512, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu"));
  graphs.push_back(nhwc_conv(DType::kFloat16, 1, 64, 9, 11, 64, 1, 7, {1, 1}, {0, 3, 0, 3}, {1, 1}, true, false, "Relu"));
  graphs.push_back(nhwc_conv(DType::kFloat16, 1, 512, 7, 7, 512, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, true, "Relu"));
  graphs.back().graph.target.conv_cluster_max_split = 12;  // a 12-CTA (non-portable) cluster
  // Four warp groups (--conv-cluster-warp-groups 4: 512 threads, one 16-wide K slice a group),
  // with BN 64 (layer 3) and BN 32 (layer 4: a B tile of fewer rows than a pass of threads loads).
  for (int64_t c : {256, 512}) {
    graphs.push_back(nhwc_conv(DType::kFloat16, 1, c, c == 256 ? 14 : 7, c == 256 ? 14 : 7, c, 3, 3, {1, 1},
                               {1, 1, 1, 1}, {1, 1}, true, true, "Relu"));
    graphs.back().graph.target.conv_cluster_warp_groups = 4;
  }
  std::string source;
  for (size_t i = 0; i < graphs.size(); ++i) {
    auto l = lower(graphs[i]);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    ASSERT_EQ(l->steps[0].kernel.template_name, "conv_cluster_splitk_nhwc") << i;
    if (graphs[i].graph.target.conv_cluster_warp_groups == 4) {
      auto h = holes_of(l->steps[0].kernel);
      EXPECT_EQ(h["KG"], int_literal(4)) << i;
      EXPECT_EQ(l->steps[0].kernel.block.x, 512) << i;
      // Four fp32 64 x (BN + 4) tiles outgrow the 3-stage pipeline.
      const int64_t bn = h["BN"] == int_literal(32) ? 32 : 64;
      EXPECT_EQ(l->steps[0].kernel.shared_bytes, std::max<int64_t>(3 * (64 + bn) * 72 * 2, 4 * 64 * (bn + 4) * 4)) << i;
    }
    auto text = testing_util::render_kernel(l->steps[0].kernel, "cluster_" + std::to_string(i));
    ASSERT_TRUE(text.is_ok()) << text.status().message();
    EXPECT_NE(text->find("__cluster_dims__("), std::string::npos);
    source += *text + "\n";
  }
  {
    // The first one with a Concat slab copied besides (opt/slab_into_producer: the holes its
    // lowering renders, tests/opt/slab_into_producer_test.cc): x [1, 28, 28, 256] at step 2 into
    // columns 256.. of [1, 14, 14, 768].
    auto l = lower(graphs[0]);
    ASSERT_TRUE(l.is_ok());
    KernelStep k = l->steps[0].kernel;
    const std::map<std::string, std::string> slab = {
        {"SLAB", "true"},      {"SLAB_IN_H", "28"},       {"SLAB_IN_W", "28"},     {"SLAB_C", "256"},
        {"SLAB_STEP", "2"},    {"SLAB_OUT_H", "14"},      {"SLAB_OUT_W", "14"},    {"SLAB_OUT_INNER", "768"},
        {"SLAB_OFFSET", "256"}};
    int set = 0;
    for (auto& [h, v] : k.holes)
      if (slab.count(h)) v = slab.at(h), ++set;
    EXPECT_EQ(set, 9) << "the lowering renders every slab hole";
    auto text = testing_util::render_kernel(k, "cluster_slab");
    ASSERT_TRUE(text.is_ok()) << text.status().message();
    EXPECT_NE(text->find("slab_copy<"), std::string::npos);
    source += *text + "\n";
  }
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no nvcc: cluster kernels rendered, not compiled";
  char dir[] = "/tmp/aotc_cluster_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  Status s = testing_util::nvcc_compile(source, "sm_90", false, std::string(dir) + "/cluster.o");
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (s.is_ok()) std::filesystem::remove_all(dir);
}

// Every im2col variant compiles (sm_90 and Jetson's sm_87): fp32, fp16, bf16, 32- and 64-bit indices.
TEST(ConvNhwcGemm, Im2colKernelsCompileWithNvcc) {
  std::string source;
  int r = 0;
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    OneNode g = nhwc_conv(t, 1, 128, 7, 5, 16, 3, 3, {2, 1}, {1, 1, 1, 1}, {1, 2}, true, false, "Relu");
    auto l = lower(g);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    ASSERT_EQ(l->steps[0].kernel.template_name, "im2col_nhwc") << dtype_name(t);
    for (const char* idx : {"int", "long long"}) {
      KernelStep k = l->steps[0].kernel;
      for (auto& [hole, value] : k.holes)
        if (hole == "IDX") value = idx;
      auto text = testing_util::render_kernel(k, "im2col_" + std::to_string(r++));
      ASSERT_TRUE(text.is_ok()) << text.status().message();
      source += *text + "\n";
    }
  }
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no nvcc: im2col kernels rendered, not compiled";
  char dir[] = "/tmp/aotc_im2col_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  bool ok = true;
  for (const char* arch : {"sm_90", "sm_87"}) {
    Status s = testing_util::nvcc_compile(source, arch, false, std::string(dir) + "/im2col_" + arch + ".o");
    EXPECT_TRUE(s.is_ok()) << arch << ": " << s.message();
    ok = ok && s.is_ok();
  }
  if (ok) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace aotc
