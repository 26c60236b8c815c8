// The lowering of a channels_last Conv / aotc.FusedConv (NHWC X, Y and residual; KRSC W; set by
// opt/layout_nhwc) to its NHWC implementations, tried in order, each with its applicability check
// from ir/ops/conv_configs.h (TVM-style strategies): a 1x1 stride-1 convolution -> one cuBLASLt
// GEMM over the NHWC rows; a convolution whose implicit-GEMM tiles would leave SMs idle -> im2col
// into scratch + cuBLASLt GEMM, or, when it is a strided 1x1 one, a strided batched cuBLASLt GEMM
// reading its input in place; otherwise the CUTLASS implicit GEMM (tensor cores for 16-bit,
// SIMT FFMA for fp32; templates/cutlass_conv2d_fprop.cu.in); depthwise -> the NHWC depthwise
// kernels. fp32 stays IEEE fp32 everywhere (cuBLASLt CUBLAS_COMPUTE_32F, FFMA): no TF32.
#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/conv_nhwc.h"
#include "ir/ops/epilogue.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/window.h"

namespace aotc {
namespace {

constexpr int64_t kDepthwisePixelsPerThread = 4;
constexpr int64_t kVectorBytes = 16;  // the vectorised NHWC kernels move 16 bytes per access

// "int" when every index of the kernel stays below 2^31 (the margin covers loop bounds that
// overshoot by one step), else "long long".
std::string index_type(int64_t largest) { return largest < (int64_t{1} << 31) - (int64_t{1} << 20) ? "int" : "long long"; }

// What every strategy reads about the node.
struct NhwcConv {
  const Node& node;
  const Graph& graph;
  const ConvShape& cs;
  const Value& x;
  bool has_bias, has_res, relu_or_none;
  std::string comment;
  int64_t gemm_m, gemm_k;  // implicit GEMM: M = N*P*Q, K = R*S*C (N = output channels)
  int64_t y_ld = 0;        // elements between output pixels: the output's Graph::row_stride, else K
};

// A convolution as one cuBLASLt GEMM over NHWC rows: D[M, K] = A[M, KK] x W[K, KK]^T, W the KRSC
// filter rows, with the node's bias and ReLU in the epilogue and its residual as C (beta 1).
// `a` is the input itself (1x1) or the im2col matrix in scratch.
LoweredStep conv_gemm_step(const NhwcConv& c, ValueId a, int64_t m, int64_t kk) {
  const Node& node = c.node;
  const int64_t k = c.cs.cout;
  MatmulStep mm;
  mm.dtype = c.x.dtype;
  mm.a = a;
  mm.b = node.inputs[1];
  mm.d = node.outputs[0];
  mm.m = m;
  mm.n = k;
  mm.k = kk;
  mm.trans_b = true;
  mm.lda = kk;
  mm.ldb = kk;
  mm.ldc = k;  // the residual: packed
  mm.ldd = c.y_ld;
  if (c.has_res) {
    mm.c = node.inputs[kConvResidualInput];
    mm.beta = 1.0f;
  }
  if (c.has_bias) mm.bias = node.inputs[2];
  const bool relu = has_activation(node);
  mm.epilogue = c.has_bias ? (relu ? MatmulStep::Epilogue::kBiasRelu : MatmulStep::Epilogue::kBias)
                           : (relu ? MatmulStep::Epilogue::kRelu : MatmulStep::Epilogue::kNone);
  LoweredStep s;
  s.kind = LoweredStep::Kind::kMatmul;
  s.matmul = mm;
  return s;
}

// The 2-D window geometry holes the NHWC depthwise and im2col templates share.
std::vector<std::pair<std::string, std::string>> window_2d_holes(const ConvShape& cs) {
  const WindowGeometry& g = cs.geo;
  return {{"N", int_literal(cs.batch)}, {"C", int_literal(cs.cin)},
          {"H", int_literal(g.in[0])}, {"W", int_literal(g.in[1])},
          {"KH", int_literal(g.kernel[0])}, {"KW", int_literal(g.kernel[1])},
          {"OH", int_literal(g.out[0])}, {"OW", int_literal(g.out[1])},
          {"SH", int_literal(g.strides[0])}, {"SW", int_literal(g.strides[1])},
          {"PH", int_literal(g.pad_begin[0])}, {"PW", int_literal(g.pad_begin[1])},
          {"DH", int_literal(g.dilations[0])}, {"DW", int_literal(g.dilations[1])}};
}

// 16-byte vectors an im2col thread moves per iteration (loads first, then stores).
constexpr int64_t kIm2colUnroll = 4;

// im2col into this node's scratch, then Y[M, K] = A[M, R*S*C] x W[K, R*S*C]^T (conv_gemm_step).
// One thread copies LANES channels (16 bytes: 8 16-bit or 4 fp32 values).
Lowering lower_im2col_gemm(const NhwcConv& c) {
  const int64_t lanes = kVectorBytes / dtype_size(c.x.dtype);
  Lowering l;
  l.scratch_bytes = c.gemm_m * c.gemm_k * dtype_size(c.x.dtype);
  KernelStep im;
  im.template_name = "im2col_nhwc";
  im.holes = {{"comment", "im2col for " + c.comment},
              {"T", dtype_c_type(c.x.dtype)},
              {"LANES", int_literal(lanes)},
              {"IDX", index_type(std::max(c.gemm_m * c.gemm_k, c.x.numel()))},
              {"UNROLL", int_literal(kIm2colUnroll)}};
  const auto window = window_2d_holes(c.cs);
  im.holes.insert(im.holes.end(), window.begin(), window.end());
  im.args = {c.node.inputs[0], kScratchArg};
  im.block = Dim3{256, 1, 1};
  im.grid = grid_for((c.gemm_m * c.gemm_k / lanes + kIm2colUnroll - 1) / kIm2colUnroll, 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, im, {}});
  l.steps.push_back(conv_gemm_step(c, kScratchArg, c.gemm_m, c.gemm_k));
  return l;
}

// The Concat slab a cluster convolution copies besides (opt/slab_into_producer): its output h is
// input j of a Concat / aotc.SubsampleConcat (written in place, Value::stored_in) whose attribute
// slab_copied = [k, j] says that h's producer also copies input k. Everything else is the Concat's:
// the source is its input k, the destination its output, the step its steps[k] (1 for Concat), the
// column the channels of the inputs before k.
struct SlabCopy {
  ValueId src = kNoValue, dst = kNoValue;
  int64_t step = 1, offset = 0;
};

std::optional<SlabCopy> slab_of(const Node& node, const Graph& graph) {
  if (node.outputs.empty() || node.outputs[0] == kNoValue) return std::nullopt;
  const ValueId y = graph.value(node.outputs[0]).stored_in;
  if (y == kNoValue) return std::nullopt;
  for (const Node& cat : graph.nodes) {
    if (cat.outputs.empty() || cat.outputs[0] != y) continue;
    const std::vector<int64_t> copied = cat.attr_ints("slab_copied");
    if (copied.size() != 2 || copied[0] < 0 || copied[1] < 0 || copied[0] >= static_cast<int64_t>(cat.inputs.size()) ||
        copied[1] >= static_cast<int64_t>(cat.inputs.size()) || cat.inputs[static_cast<size_t>(copied[1])] != node.outputs[0])
      return std::nullopt;
    const size_t k = static_cast<size_t>(copied[0]);
    SlabCopy s;
    s.src = cat.inputs[k];
    s.dst = y;
    const std::vector<int64_t> steps = cat.attr_ints("steps");
    s.step = k < steps.size() ? steps[k] : 1;
    for (size_t i = 0; i < k; ++i) s.offset += graph.value(cat.inputs[i]).shape.back();
    return s;
  }
  return std::nullopt;
}

// The slab's holes when the kernel can copy it: a packed 16-bit [N, H, W, C] source of the
// convolution's dtype and batch whose pixel grid at `step` is the destination's, 16-byte vectors
// (C, the destination's row and the offset multiples of 8 elements), int indices.
Expected<std::vector<std::pair<std::string, std::string>>> slab_holes(const NhwcConv& c, const SlabCopy& s) {
  const Graph& g = c.graph;
  const Value& x = g.value(s.src);
  const Value& y = g.value(s.dst);
  const bool shapes = x.shape.size() == 4 && y.shape.size() == 4 && x.shape[0] == c.cs.batch && y.shape[0] == c.cs.batch &&
                      s.step >= 1 && (x.shape[1] + s.step - 1) / s.step == y.shape[1] &&
                      (x.shape[2] + s.step - 1) / s.step == y.shape[2];
  if (!shapes || x.dtype != c.x.dtype || y.dtype != c.x.dtype || g.row_stride(s.src) != 0 ||
      g.row_stride(s.dst) != 0 || x.shape[3] % 8 != 0 || y.shape[3] % 8 != 0 || s.offset % 8 != 0 ||
      s.offset + x.shape[3] > y.shape[3] || std::max(x.numel(), y.numel()) >= (int64_t{1} << 31))
    return node_error(c.node, "the slab " + shape_str(x.shape) + " at step " + std::to_string(s.step) + " into " +
                                  shape_str(y.shape) + " column " + std::to_string(s.offset) +
                                  " is not one this convolution kernel can copy");
  return std::vector<std::pair<std::string, std::string>>{
      {"SLAB", "true"},
      {"SLAB_IN_H", int_literal(x.shape[1])},
      {"SLAB_IN_W", int_literal(x.shape[2])},
      {"SLAB_C", int_literal(x.shape[3])},
      {"SLAB_STEP", int_literal(s.step)},
      {"SLAB_OUT_H", int_literal(y.shape[1])},
      {"SLAB_OUT_W", int_literal(y.shape[2])},
      {"SLAB_OUT_INNER", int_literal(y.shape[3])},
      {"SLAB_OFFSET", int_literal(s.offset)},
      {"slab_comment", "also copies a Concat input " + shape_str(x.shape) + " at step " + std::to_string(s.step) +
                           " into columns " + std::to_string(s.offset) + ".. of " + shape_str(y.shape)}};
}

// One cluster split-K implicit-GEMM kernel (templates/conv_cluster_splitk_nhwc.cu.in; sm_90+, 16-bit;
// see conv_cluster_splitk_config): no im2col matrix, no scratch, any fused activation; asked by its
// Concat (slab_of) it also copies that Concat slab (Lowering::slab_copied).
Expected<Lowering> lower_cluster_splitk(const NhwcConv& c, const ClusterConvConfig& cfg) {
  const Node& node = c.node;
  const ConvShape& cs = c.cs;
  std::vector<std::pair<std::string, std::string>> slab = {
      {"SLAB", "false"},     {"SLAB_IN_H", "1"},  {"SLAB_IN_W", "1"},      {"SLAB_C", "8"},
      {"SLAB_STEP", "1"},    {"SLAB_OUT_H", "1"}, {"SLAB_OUT_W", "1"},     {"SLAB_OUT_INNER", "8"},
      {"SLAB_OFFSET", "0"},  {"slab_comment", "no Concat slab copied here"}};
  const std::optional<SlabCopy> copy = slab_of(node, c.graph);
  if (copy) {
    auto holes = slab_holes(c, *copy);
    if (!holes) return holes.status();
    slab = std::move(*holes);
  }
  KernelStep k;
  k.template_name = "conv_cluster_splitk_nhwc";
  k.holes = {{"comment", c.comment + " cluster split-K bn" + std::to_string(cfg.bn) + " bk" + std::to_string(cfg.bk) +
                             " stages" + std::to_string(cfg.stages) + " kg" + std::to_string(cfg.kg) + " split" +
                             std::to_string(cfg.split)},
             {"T", dtype_c_type(c.x.dtype)},
             {"K", int_literal(cs.cout)},
             {"YLD", int_literal(c.y_ld)},
             {"BN", int_literal(cfg.bn)},
             {"BK", int_literal(cfg.bk)},
             {"STAGES", int_literal(cfg.stages)},
             {"KG", int_literal(cfg.kg)},
             {"SPLIT", int_literal(cfg.split)},
             {"THREADS", int_literal(cluster_conv_threads(cfg))},
             {"SMEM_BYTES", int_literal(cluster_conv_smem_bytes(cfg))},
             {"HAS_BIAS", c.has_bias ? "true" : "false"},
             {"HAS_RES", c.has_res ? "true" : "false"},
             {"act_expr", activation_expr(node, c.graph, "v")}};
  const auto window = window_2d_holes(cs);
  k.holes.insert(k.holes.end(), window.begin(), window.end());
  k.holes.insert(k.holes.end(), slab.begin(), slab.end());
  k.args = {node.inputs[0], node.inputs[1], c.has_bias ? node.inputs[2] : kNullArg,
            c.has_res ? node.inputs[kConvResidualInput] : kNullArg, node.outputs[0],
            copy ? copy->src : kNullArg, copy ? copy->dst : kNullArg};
  k.l2_prefetch_args = true;  // + pf, pf_end (codegen: --l2-prefetch)
  const int64_t m_tiles = (c.gemm_m + kClusterConvBm - 1) / kClusterConvBm;
  // The pick rule keeps the grid's CTAs within the target's SM count: no dimension limit is near.
  k.grid = Dim3{cfg.split, cs.cout / cfg.bn, m_tiles};
  k.block = Dim3{cluster_conv_threads(cfg), 1, 1};
  k.shared_bytes = cluster_conv_smem_bytes(cfg);
  k.cluster_size = cfg.split;
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  l.slab_copied = copy.has_value();
  return l;
}

// A strided 1x1 convolution as one strided batched GEMM over its input in place (see
// conv_strided_pointwise_gemm_applies): batch b = n*P + p, its Q rows the pixels (n, p*SH, q*SW).
Lowering lower_strided_pointwise_gemm(const NhwcConv& c) {
  const WindowGeometry& g = c.cs.geo;
  const int64_t cin = c.cs.cin, k = c.cs.cout, q = g.out[1];
  LoweredStep s = conv_gemm_step(c, c.node.inputs[0], q, cin);
  MatmulStep& mm = s.matmul;
  mm.batch = c.cs.batch * g.out[0];
  mm.lda = g.strides[1] * cin;                // next output column: SW pixels on
  mm.stride_a = g.strides[0] * g.in[1] * cin;  // next output row: SH input rows on
  mm.stride_b = 0;                             // the filter, shared
  mm.stride_d = q * c.y_ld;
  if (mm.c != kNullArg) mm.stride_c = q * k;
  Lowering l;
  l.steps.push_back(s);
  return l;
}

// The CUTLASS implicit GEMM (a library kernel: its params are built on the device at create),
// configuration picked for graph.target from the dtype's math (tensor cores: 16-byte accesses,
// instruction 16x8x16; SIMT: 4-byte accesses, one FFMA per instruction).
Lowering lower_cutlass(const NhwcConv& c, ConvMath math) {
  const ConvShape& cs = c.cs;
  const WindowGeometry& g = cs.geo;
  const Node& node = c.node;
  const int64_t gemm_n = cs.cout;
  const ConvKernelConfig& cfg = pick_conv_config(c.graph.target, math, c.gemm_m, gemm_n);
  const int64_t split_k = pick_split_k(c.graph.target, cfg, c.gemm_m, gemm_n, c.gemm_k);
  const int64_t tiles = conv_config_tiles(cfg, c.gemm_m, gemm_n);
  const bool simt = math == ConvMath::kSimt;
  const std::string align = int_literal(simt ? 1 : kTensorCoreChannelAlign);
  KernelStep k;
  k.template_name = "cutlass_conv2d_fprop";
  k.holes = {{"comment", c.comment + " config " + cfg.name},
             {"ELEMENT", cutlass_element(c.x.dtype)},
             {"OP_CLASS", simt ? "cutlass::arch::OpClassSimt" : "cutlass::arch::OpClassTensorOp"},
             {"INSTRUCTION", simt ? "1, 1, 1" : "16, 8, 16"},
             {"TB_M", int_literal(cfg.tb_m)}, {"TB_N", int_literal(cfg.tb_n)}, {"TB_K", int_literal(cfg.tb_k)},
             {"WARP_M", int_literal(cfg.warp_m)}, {"WARP_N", int_literal(cfg.warp_n)}, {"WARP_K", int_literal(cfg.warp_k)},
             {"STAGES", int_literal(cfg.stages)},
             {"SWIZZLE", "1"},
             {"ITERATOR", "kOptimized"},
             {"ALIGN_A", align},
             {"ALIGN_B", align},
             {"ALIGN_C", align},
             {"act_expr", activation_expr(node, c.graph, "v")}};
  k.library_params = true;
  k.builder_args = {cs.batch, g.in[0], g.in[1], cs.cin, cs.cout, g.kernel[0], g.kernel[1], g.out[0], g.out[1],
                    g.pad_begin[0], g.pad_begin[1], g.strides[0], g.strides[1], g.dilations[0], g.dilations[1],
                    split_k, c.has_res ? 1 : 0, c.y_ld};
  // Only the begin pads reach CUTLASS: the output size is passed explicitly, so a larger end
  // pad only means reads past the input, which the iterators mask.
  k.args = {node.inputs[0], node.inputs[1], c.has_bias ? node.inputs[2] : kNullArg,
            c.has_res ? node.inputs[kConvResidualInput] : kNullArg, node.outputs[0],
            split_k > 1 ? kScratchArg : kNullArg};
  // Informative only: the builder reports the real launch shape.
  k.grid = Dim3{tiles, 1, split_k};
  k.block = Dim3{32 * (cfg.tb_m / cfg.warp_m) * (cfg.tb_n / cfg.warp_n), 1, 1};
  Lowering l;
  if (split_k > 1) {
    // Serial split-K: one semaphore per output tile in this node's scratch, zeroed first (one
    // small fill launch; the kernel leaves them zero, but the arena bytes are shared).
    l.scratch_bytes = tiles * 4;
    KernelStep z;
    z.template_name = "fill";
    z.holes = {{"comment", "zero the split-K semaphores of " + node.op_type}, {"T", "int"},
               {"value_bits", "0"}, {"numel", int_literal(tiles)}};
    z.args = {kScratchArg};
    z.block = Dim3{128, 1, 1};
    z.grid = grid_for(tiles, 128);
    k.holes[0].second += " split-K " + std::to_string(split_k);
    l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, z, {}});
  }
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

// CUTLASS 3.x's TMA + wgmma implicit GEMM for sm_90a (templates/cutlass_conv2d_fprop_sm90.cu.in):
// a library kernel whose params aotc builds at compile time (KernelStep::host_params).
Lowering lower_wgmma(const NhwcConv& c, const ConvKernelConfig& cfg) {
  const ConvShape& cs = c.cs;
  const WindowGeometry& g = cs.geo;
  const Node& node = c.node;
  const int min_blocks = conv_wgmma_min_blocks(cfg);
  const int cluster_m = conv_cluster_m(c.graph.target.conv_wgmma_cluster_m, cfg, c.gemm_m);  // --conv-wgmma-cluster
  KernelStep k;
  k.template_name = "cutlass_conv2d_fprop_sm90";
  k.holes = {{"comment", c.comment + " config " + cfg.name},
             {"ELEMENT", cutlass_element(c.x.dtype)},
             {"TILE_M", int_literal(cfg.tb_m)}, {"TILE_N", int_literal(cfg.tb_n)}, {"TILE_K", int_literal(cfg.tb_k)},
             {"STAGES", cfg.stages > 0 ? "cutlass::conv::collective::StageCount<" + std::to_string(cfg.stages) + ">"
                                       : "cutlass::conv::collective::StageCountAutoCarveout<(int)sizeof(typename "
                                         "Epilogue::SharedStorage)>"},
             {"STAGES_NOTE", cfg.stages > 0 ? std::to_string(cfg.stages) + " stages" : "as many stages as fit"},
             {"MIN_BLOCKS", int_literal(min_blocks)},
             {"CLUSTER_M", std::to_string(cluster_m)},
             {"CLUSTER_DIMS", cluster_dims_attribute(cluster_m)},
             {"act_expr", activation_expr(node, c.graph, "v")}};
  k.library_params = true;
  k.host_params = true;
  k.builder_args = {cs.batch, g.in[0], g.in[1], cs.cin, cs.cout, g.kernel[0], g.kernel[1],
                    g.pad_begin[0], g.pad_begin[1], g.pad_end[0], g.pad_end[1], g.strides[0], g.strides[1],
                    g.dilations[0], g.dilations[1], c.y_ld, c.has_res ? 1 : 0, c.has_bias ? 1 : 0};
  k.args = {node.inputs[0], node.inputs[1], c.has_bias ? node.inputs[2] : kNullArg,
            c.has_res ? node.inputs[kConvResidualInput] : kNullArg, node.outputs[0]};
  // Informative only: the compile-time builder reports the real launch shape.
  k.grid = Dim3{conv_config_tiles(cfg, c.gemm_m, cs.cout), 1, 1};
  k.block = Dim3{256, 1, 1};
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

// Depthwise: the shared-memory tile kernel when C is a multiple of one 16-byte vector (8 16-bit
// or 4 fp32 channels), else the scalar kernel. Tile kernel (templates/conv_depthwise_nhwc_tile.cu.in):
// a block computes TOH x TOW outputs x CB channels from an input window staged in shared memory
// (each input element read from global memory once per tile; the earlier per-thread kernels read
// it KH to 3*KW times through L1/L2 and ran at 0.5-2.4 TB/s with 96-128 registers per thread,
// docs/perf_notes.md v10). Shape rule, for the target's SM count:
//  - TOW: the whole output row when OW <= 16 (no halo columns between tiles), else 8 columns;
//    TOH: 8, 7, 6, 5 or 4 rows, whichever pads OH least (ties: the taller);
//  - CB: the largest of 64, 48, 32, 24, 16, 8 (4 for fp32) channels dividing C whose window fits
//    kDepthwiseTileSmemBytes of shared memory;
//  - while the grid has fewer than 2 blocks per SM (Target::depthwise_tile_tow_first, the
//    default): TOW halves (down to 4), then TOH (down to 1), then CB (down to one vector); with
//    --depthwise-tile cb-first: CB first, then TOH, then TOW (2-3% slower at batch 1, v65).
struct DepthwiseTile {
  int64_t cb = 0, toh = 0, tow = 0;
};

constexpr int64_t kDepthwiseTileSmemBytes = 24 * 1024;

std::optional<DepthwiseTile> depthwise_tile(const NhwcConv& c) {
  const ConvShape& cs = c.cs;
  const WindowGeometry& g = cs.geo;
  const int64_t esize = dtype_size(c.x.dtype);
  const bool supported = c.x.dtype == DType::kFloat32 || c.x.dtype == DType::kFloat16 || c.x.dtype == DType::kBFloat16;
  const int64_t vec = kVectorBytes / esize;
  if (!supported || cs.cin % vec != 0) return std::nullopt;
  // Zeros outside the image must stay zero under the input clamp min(x, M).
  if (c.node.has_attr("input_max") && !(c.node.attr_float("input_max", 0.0f) >= 0.0f)) return std::nullopt;
  std::vector<int64_t> cbs;
  for (int64_t cb : {64, 48, 32, 24, 16, 8, 4})
    if (cb % vec == 0 && cb % 2 == 0 && cs.cin % cb == 0) cbs.push_back(cb);
  if (cbs.empty()) return std::nullopt;
  DepthwiseTile t;
  t.tow = g.out[1] <= 16 ? g.out[1] : 8;
  int64_t best_waste = -1;
  for (int64_t toh : {8, 7, 6, 5, 4}) {
    const int64_t waste = (g.out[0] + toh - 1) / toh * toh - g.out[0];
    if (best_waste < 0 || waste < best_waste) best_waste = waste, t.toh = toh;
  }
  t.toh = std::min(t.toh, g.out[0]);
  auto smem = [&](const DepthwiseTile& d) {
    const int64_t ih = (d.toh - 1) * g.strides[0] + (g.kernel[0] - 1) * g.dilations[0] + 1;
    const int64_t iw = (d.tow - 1) * g.strides[1] + (g.kernel[1] - 1) * g.dilations[1] + 1;
    return ih * iw * d.cb * esize;
  };
  auto blocks = [&](const DepthwiseTile& d) {
    return cs.batch * ((g.out[0] + d.toh - 1) / d.toh) * ((g.out[1] + d.tow - 1) / d.tow) * (cs.cin / d.cb);
  };
  size_t ci = 0;
  t.cb = cbs[0];
  while (smem(t) > kDepthwiseTileSmemBytes) {
    if (ci + 1 < cbs.size()) t.cb = cbs[++ci];
    else if (t.toh > 1) t.toh = (t.toh + 1) / 2;
    else if (t.tow > 1) t.tow = (t.tow + 1) / 2;
    else return std::nullopt;
  }
  const int64_t want = 2 * int64_t{c.graph.target.sm_count};
  if (c.graph.target.depthwise_tile_tow_first) {  // the default; --depthwise-tile cb-first below
    while (blocks(t) < want) {
      if (t.tow > 4) t.tow = (t.tow + 1) / 2;
      else if (t.toh > 1) t.toh = (t.toh + 1) / 2;
      else if (ci + 1 < cbs.size()) t.cb = cbs[++ci];
      else break;
    }
    return t;
  }
  while (blocks(t) < want) {
    if (ci + 1 < cbs.size()) t.cb = cbs[++ci];
    else if (t.toh > 1) t.toh = (t.toh + 1) / 2;
    else if (t.tow > 4) t.tow = (t.tow + 1) / 2;
    else break;
  }
  return t;
}

Expected<Lowering> lower_depthwise(const NhwcConv& c) {
  const ConvShape& cs = c.cs;
  const WindowGeometry& g = cs.geo;
  const Node& node = c.node;
  const std::optional<DepthwiseTile> tile = depthwise_tile(c);
  KernelStep k;
  k.template_name = tile ? "conv_depthwise_nhwc_tile" : "conv_depthwise_nhwc";
  if (node.has_attr("input_max") && has_input_activation(node))
    return node_error(node, "input_max and input_activation together are not implemented");
  k.holes = {{"comment", c.comment + (node.has_attr("input_max") ? " input_max" : "") +
                             (has_input_activation(node) ? " input " + load_input_activation(node).op_type : "")},
             {"T", dtype_c_type(c.x.dtype)},
             {"ACC", c.x.dtype == DType::kFloat64 ? "double" : "float"},
             {"HAS_INPUT_MAX", node.has_attr("input_max") ? "1" : "0"},
             {"INPUT_MAX", float_literal(node.attr_float("input_max", 0.0f))},
             {"HAS_IN_ACT", has_input_activation(node) ? "1" : "0"},
             {"in_act_expr", input_activation_expr(node, c.graph, "u")}};
  std::vector<std::pair<std::string, std::string>> shape_holes = window_2d_holes(cs);
  const std::vector<std::pair<std::string, std::string>> more_holes = {
      {"HAS_BIAS", c.has_bias ? "1" : "0"},
      {"HAS_RES", c.has_res ? "1" : "0"},
      {"IDX", index_type(std::max(shape_numel(nchw_to_nhwc(cs.out)), c.x.numel()))},
      {"act_expr", activation_expr(node, c.graph, "v")}};
  shape_holes.insert(shape_holes.end(), more_holes.begin(), more_holes.end());
  k.holes.insert(k.holes.end(), shape_holes.begin(), shape_holes.end());
  k.args = {node.inputs[0], node.inputs[1], c.has_bias ? node.inputs[2] : kNullArg,
            c.has_res ? node.inputs[kConvResidualInput] : kNullArg, node.outputs[0]};
  if (tile) {
    const int64_t tiles_w = (g.out[1] + tile->tow - 1) / tile->tow, tiles_h = (g.out[0] + tile->toh - 1) / tile->toh;
    const int64_t threads = tile->cb / 2 * tile->toh;
    k.holes.push_back({"CB", int_literal(tile->cb)});
    k.holes.push_back({"TOH", int_literal(tile->toh)});
    k.holes.push_back({"TOW", int_literal(tile->tow)});
    k.holes.push_back({"TILES_W", int_literal(tiles_w)});
    k.holes.push_back({"THREADS", int_literal(threads)});
    k.holes[0].second += " tile " + std::to_string(tile->toh) + "x" + std::to_string(tile->tow) + "x" + std::to_string(tile->cb);
    if (cs.batch > 65535 || cs.cin / tile->cb > 65535 || tiles_w * tiles_h > (int64_t{1} << 31) - 1)
      return node_error(node, "too large a grid for the depthwise tile kernel");
    k.block = Dim3{threads, 1, 1};
    k.grid = Dim3{tiles_w * tiles_h, cs.cin / tile->cb, cs.batch};
  } else {
    // Channels across a warp, output pixels across warps and blocks, the filter taps in
    // registers for all of a thread's pixels (kDepthwisePixelsPerThread of them while the grid
    // still fills two waves of the target, else 1).
    const int64_t pixels = cs.batch * g.out[0] * g.out[1];
    const int64_t chunks = (cs.cin + 31) / 32;
    int64_t ppt = kDepthwisePixelsPerThread;
    while (ppt > 1 && ((pixels + 8 * ppt - 1) / (8 * ppt)) * chunks < 2 * int64_t{c.graph.target.sm_count} * 8) ppt /= 2;
    k.block = Dim3{32, 8, 1};
    k.grid = Dim3{std::min<int64_t>((pixels + 8 * ppt - 1) / (8 * ppt), int64_t{1} << 30), chunks, 1};
    if (k.grid.y > 65535) return node_error(node, "too many channels for the depthwise kernel's grid");
  }
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

// The holes and arguments every stem template shares (conv_stem_nhwc, conv_stem_pool_nhwc,
// conv_stem_pool_wgmma_nhwc).
// Tiles one block of a stem kernel runs (it stages the filter once for them): as many as leave
// about 4 blocks per SM of the target (ResNet-50's stem + pool gets 3 resident blocks per SM),
// at most 8. Measured on an H200 at batch 32 (tools/device/stem_bench): 1 tile a block 81 us,
// 2: 76, 4: 74, 8: 73.5.
int64_t stem_tiles_per_block(int64_t tiles, const Target& target) {
  return std::clamp<int64_t>(tiles / (4 * int64_t{target.sm_count}), 1, 8);
}

KernelStep stem_step(const NhwcConv& c, const std::string& template_name, const std::string& note, int64_t threads,
                     int64_t tiles_per_block) {
  const ConvShape& cs = c.cs;
  const WindowGeometry& g = cs.geo;
  const Node& node = c.node;
  const Node* pack = stem_pack_of(c.graph, node);
  const Value* src = pack ? &c.graph.value(pack->inputs[0]) : nullptr;
  KernelStep k;
  k.template_name = template_name;
  k.holes = {{"comment", c.comment + note + (pack ? " (reads the NCHW " + dtype_name(src->dtype) + " input: pack absorbed)" : "")},
             {"T", dtype_c_type(c.x.dtype)},
             {"TI", dtype_c_type(src ? src->dtype : c.x.dtype)},
             {"PACKED", pack ? "1" : "0"},
             {"CI", int_literal(src ? src->shape[1] : cs.cin)},
             {"MMA_TYPE", c.x.dtype == DType::kBFloat16 ? "bf16" : "f16"},
             {"IDX", index_type(std::max(shape_numel(nchw_to_nhwc(cs.out)), c.x.numel()))},
             {"N", int_literal(cs.batch)}, {"H", int_literal(g.in[0])}, {"W", int_literal(g.in[1])},
             {"C", int_literal(cs.cin)}, {"K", int_literal(cs.cout)},
             {"KH", int_literal(g.kernel[0])}, {"KW", int_literal(g.kernel[1])},
             {"OH", int_literal(g.out[0])}, {"OW", int_literal(g.out[1])},
             {"SH", int_literal(g.strides[0])}, {"SW", int_literal(g.strides[1])},
             {"PH", int_literal(g.pad_begin[0])}, {"PW", int_literal(g.pad_begin[1])},
             {"THREADS", int_literal(threads)},
             {"TPB", int_literal(tiles_per_block)},
             {"HAS_BIAS", c.has_bias ? "1" : "0"},
             {"act_expr", activation_expr(node, c.graph, "v")}};
  k.args = {node.inputs[0], node.inputs[1], c.has_bias ? node.inputs[2] : kNullArg, node.outputs[0]};
  return k;
}

// The stem kernel (conv_configs.h: conv_stem_applies): TOH output rows (one warp each) x TOW
// columns (16 or 32) per block, all K channels. Start with 8 x 32 and shrink the tile, rows first,
// while the grid has fewer blocks than the target has SMs or the staged input window exceeds the
// static shared memory.
Expected<Lowering> lower_stem(const NhwcConv& c) {
  const ConvShape& cs = c.cs;
  const WindowGeometry& g = cs.geo;
  const Node& node = c.node;
  constexpr int64_t kSmemLimit = 48 * 1024;
  int64_t toh = 8, tow = 32;
  auto smem = [&](int64_t h, int64_t w) {
    const int64_t pr = (h - 1) * g.strides[0] + g.kernel[0], pc = (w - 1) * g.strides[1] + g.kernel[1];
    return pr * pc * cs.cin * 2;
  };
  auto blocks = [&](int64_t h, int64_t w) { return cs.batch * ((g.out[0] + h - 1) / h) * ((g.out[1] + w - 1) / w); };
  while (smem(toh, tow) > kSmemLimit || blocks(toh, tow) < c.graph.target.sm_count) {
    if (toh > 2) toh /= 2;
    else if (tow > 16) tow = 16;
    else break;
  }
  if (smem(toh, tow) > kSmemLimit) return node_error(node, "stem window too large for the stem kernel's shared memory");
  const int64_t tiles_w = (g.out[1] + tow - 1) / tow, tiles_h = (g.out[0] + toh - 1) / toh;
  if (cs.batch * tiles_w * tiles_h > (int64_t{1} << 31) - 1) return node_error(node, "too large a grid for the stem kernel");
  const int64_t tiles = cs.batch * tiles_w * tiles_h, tpb = stem_tiles_per_block(tiles, c.graph.target);
  KernelStep k = stem_step(c, "conv_stem_nhwc", " stem tile " + std::to_string(toh) + "x" + std::to_string(tow), toh * 32, tpb);
  k.holes.insert(k.holes.end(), {{"TOH", int_literal(toh)}, {"TOW", int_literal(tow)}, {"TILES_W", int_literal(tiles_w)},
                                 {"WRS", int_literal(stem_filter_row_words(g.kernel[0], g.kernel[1]))}});
  k.block = Dim3{toh * 32, 1, 1};
  k.grid = Dim3{(tiles + tpb - 1) / tpb, 1, 1};
  k.shared_bytes = stem_filter_smem_bytes(cs.cout, g.kernel[0], g.kernel[1]) + smem(toh, tow);
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

// The holes of an absorbed max pool both stem + pool templates take: its window, strides, pads and
// output, and the pooled tile (PTH x PTW, TILES_W of them across a row).
void add_pool_holes(KernelStep& k, const NhwcConv& c, const WindowGeometry& pool, int64_t pth, int64_t ptw,
                    int64_t tiles_w) {
  k.holes.insert(k.holes.end(), {
             {"T2", c.x.dtype == DType::kBFloat16 ? "__nv_bfloat162" : "__half2"},
             {"PKH", int_literal(pool.kernel[0])}, {"PKW", int_literal(pool.kernel[1])},
             {"PSH", int_literal(pool.strides[0])}, {"PSW", int_literal(pool.strides[1])},
             {"PPH", int_literal(pool.pad_begin[0])}, {"PPW", int_literal(pool.pad_begin[1])},
             {"POH", int_literal(pool.out[0])}, {"POW", int_literal(pool.out[1])},
             {"PTH", int_literal(pth)}, {"PTW", int_literal(ptw)}, {"TILES_W", int_literal(tiles_w)}});
}

// The stem kernel with an absorbed max pool (templates/conv_stem_pool_nhwc.cu.in): PTH x PTW
// pooled pixels per block (4 x 8: the conv tile of 9 x 17 pixels is 1.2x the pooled area's 4x,
// fits 5 warps of 32 conv pixels and ~27 KB of shared memory for ResNet's 7x7/2 + 3x3/2), rows
// halved while the grid has fewer blocks than the target has SMs.
Expected<Lowering> lower_stem_pool(const NhwcConv& c) {
  const ConvShape& cs = c.cs;
  const WindowGeometry& g = cs.geo;
  const Node& node = c.node;
  auto pgeo = absorbed_pool_geometry(node, g.out[0], g.out[1]);
  if (!pgeo) return pgeo.status();
  const std::vector<int64_t>& pk = pgeo->kernel;
  const std::vector<int64_t>& ps = pgeo->strides;
  constexpr int64_t kSmemLimit = 48 * 1024;
  int64_t pth = 4, ptw = 8;
  auto conv_px = [&](int64_t h, int64_t w) { return ((h - 1) * ps[0] + pk[0]) * ((w - 1) * ps[1] + pk[1]); };
  auto smem = [&](int64_t h, int64_t w) {  // the window and the conv tile (the filter comes on top)
    const int64_t cr = (h - 1) * ps[0] + pk[0], cc = (w - 1) * ps[1] + pk[1];
    const int64_t pr = (cr - 1) * g.strides[0] + g.kernel[0], pc = (cc - 1) * g.strides[1] + g.kernel[1];
    return (pr * pc * cs.cin * 2 + 15) / 16 * 16 + cr * cc * (cs.cout + 8) * 2;  // conv pixels padded by 16 bytes
  };
  auto blocks = [&](int64_t h, int64_t w) { return cs.batch * ((pgeo->out[0] + h - 1) / h) * ((pgeo->out[1] + w - 1) / w); };
  while (smem(pth, ptw) > kSmemLimit || conv_px(pth, ptw) > 8 * 32 || blocks(pth, ptw) < c.graph.target.sm_count) {
    if (pth > 1) pth /= 2;
    else if (ptw > 2) ptw /= 2;
    else break;
  }
  if (smem(pth, ptw) > kSmemLimit || conv_px(pth, ptw) > 8 * 32)
    return node_error(node, "pool window too large for the stem kernel with an absorbed pool");
  const int64_t warps = (conv_px(pth, ptw) + 31) / 32;
  const int64_t tiles_w = (pgeo->out[1] + ptw - 1) / ptw, tiles_h = (pgeo->out[0] + pth - 1) / pth;
  if (cs.batch * tiles_w * tiles_h > (int64_t{1} << 31) - 1) return node_error(node, "too large a grid for the stem kernel");
  const int64_t tiles = cs.batch * tiles_w * tiles_h, tpb = stem_tiles_per_block(tiles, c.graph.target);
  KernelStep k = stem_step(c, "conv_stem_pool_nhwc",
                           " + MaxPool " + shape_str(pk) + " pooled tile " + std::to_string(pth) + "x" + std::to_string(ptw),
                           warps * 32, tpb);
  add_pool_holes(k, c, *pgeo, pth, ptw, tiles_w);
  k.holes.push_back({"WRS", int_literal(stem_filter_row_words(g.kernel[0], g.kernel[1]))});
  k.block = Dim3{warps * 32, 1, 1};
  k.grid = Dim3{(tiles + tpb - 1) / tpb, 1, 1};
  k.shared_bytes = stem_filter_smem_bytes(cs.cout, g.kernel[0], g.kernel[1]) + smem(pth, ptw);
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

// The stem + pool on sm_90a's warpgroup MMA (ir/ops/conv_configs.h: stem_wgmma_config and
// stem_wgmma_applies; templates/conv_stem_pool_wgmma_nhwc.cu.in), or nullopt where it does not apply.
std::optional<Expected<Lowering>> lower_stem_pool_wgmma(const NhwcConv& c) {
  const ConvShape& cs = c.cs;
  const WindowGeometry& g = cs.geo;
  const Node& node = c.node;
  auto pgeo = absorbed_pool_geometry(node, g.out[0], g.out[1]);
  if (!pgeo) return Expected<Lowering>(pgeo.status());
  const Node* pack = stem_pack_of(c.graph, node);
  const int64_t src_bytes = pack ? dtype_size(c.graph.value(pack->inputs[0]).dtype) : 0;
  if (!stem_wgmma_applies(c.graph.target, c.x.dtype, cs.cout, src_bytes)) return std::nullopt;
  const int64_t ci = pack ? c.graph.value(pack->inputs[0]).shape[1] : cs.cin;
  auto cfg = stem_wgmma_config(c.graph.target, cs.batch, g.kernel[0], g.kernel[1], g.strides[0], g.strides[1],
                               pgeo->kernel[0], pgeo->kernel[1], pgeo->strides[0], pgeo->strides[1], pgeo->out[0],
                               pgeo->out[1], pack ? ci * src_bytes : 8);
  if (!cfg) return std::nullopt;
  KernelStep k = stem_step(c, "conv_stem_pool_wgmma_nhwc",
                           " + MaxPool " + shape_str(pgeo->kernel) + " on wgmma, pooled tile " + std::to_string(cfg->pth) +
                               "x" + std::to_string(cfg->ptw),
                           kStemWgmmaRows, cfg->tiles_per_block);
  add_pool_holes(k, c, *pgeo, cfg->pth, cfg->ptw, cfg->tiles_w);
  k.holes.insert(k.holes.end(), {{"MF", "2"}, {"MIN_BLOCKS", int_literal(kStemWgmmaBlocksPerSm)},
                                 {"SMEM_BYTES", int_literal(cfg->smem_bytes)}});
  // An absorbed QuantizeLinear (opt/fuse_stem_quantize): the pooled values, rounded to T, quantized
  // as templates/quantize_linear.cu.in does (float division, rint, the type's saturation); the
  // division as a product with 1 / scale where that is proven equal for every fp16 value
  // (fp16_quantize_reciprocal: one FMUL instead of the division's sequence).
  const bool quantized = has_quantize(node);
  const AbsorbedQuantize q = quantized ? load_quantize(node) : AbsorbedQuantize{};
  float qlo = 0.0f, qhi = 0.0f;
  quant_range(q.dtype, &qlo, &qhi);
  const std::optional<float> rcp = c.x.dtype == DType::kFloat16 && quantized
                                       ? fp16_quantize_reciprocal(q.scale, static_cast<float>(q.zero_point), qlo, qhi)
                                       : std::nullopt;
  k.holes.insert(k.holes.end(), {{"QUANT", quantized ? "true" : "false"},
                                 {"TO", quantized ? dtype_c_type(q.dtype) : dtype_c_type(c.x.dtype)},
                                 {"QDIVIDE", rcp ? "__fmul_rn(v, " + float_literal(*rcp) + ")"
                                                 : "__fdiv_rn(v, " + float_literal(q.scale) + ")"},
                                 {"QZP", float_literal(static_cast<float>(q.zero_point))},
                                 {"QLO", float_literal(qlo)},
                                 {"QHI", float_literal(qhi)}});
  if (quantized) k.holes[0].second += " + QuantizeLinear to " + dtype_name(q.dtype);
  k.block = Dim3{kStemWgmmaRows, 1, 1};
  k.grid = Dim3{cfg->blocks, 1, 1};
  k.shared_bytes = cfg->smem_bytes;
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return Expected<Lowering>(std::move(l));
}

}  // namespace

namespace {

bool absorbable_pack(const Graph& graph, const Node& pack) {
  if (pack.op_type != "PackNhwc" || pack.domain != "aotc" || pack.inputs.size() != 1 || pack.outputs.size() != 1) return false;
  if (pack.attr_int("block", 1) != 1 || pack.has_attr("pads") || pack.has_attr("spatial")) return false;
  const Value& src = graph.value(pack.inputs[0]);
  const Value& out = graph.value(pack.outputs[0]);
  return src.shape.size() == 4 && src.shape[1] <= kStemChannels && out.shape.size() == 4 && out.shape[3] == kStemChannels &&
         !graph.is_graph_output(pack.outputs[0]) &&
         (src.dtype == DType::kFloat32 || src.dtype == DType::kFloat16 || src.dtype == DType::kBFloat16);
}

}  // namespace

bool plain_pointwise_conv(const Node& n, bool activation_ok, bool strided, int64_t* stride) {
  if (!is_conv_node(n) || !channels_last(n) || n.outputs.size() != 1 || n.inputs.size() < 2) return false;
  static const std::set<std::string> kWindow = {"channels_last", "dilations", "group", "kernel_shape", "pads", "strides"};
  for (const auto& kv : n.attrs) {
    if (kWindow.count(kv.first)) continue;
    if (activation_ok && (kv.first == "activation" || kv.first.rfind("act.", 0) == 0)) continue;
    return false;
  }
  const std::vector<int64_t> strides = n.attr_ints("strides", {1, 1});
  if (strides.size() != 2 || strides[0] != strides[1] || strides[0] < 1 || (!strided && strides[0] != 1)) return false;
  if (stride) *stride = strides[0];
  for (int64_t v : n.attr_ints("dilations", {1, 1}))
    if (v != 1) return false;
  for (int64_t v : n.attr_ints("pads", {0, 0, 0, 0}))
    if (v != 0) return false;
  return n.attr_int("group", 1) == 1;
}

bool node_runs_on_stem_kernel(const Graph& graph, const Node& n) {
  if (!is_conv_node(n) || !channels_last(n) || n.inputs.size() < 2 || n.outputs.size() != 1) return false;
  const Value& x = graph.value(n.inputs[0]);
  const Value& w = graph.value(n.input(1));
  if (x.shape.size() != 4 || w.shape.size() != 4) return false;  // NHWC input, KRSC weights
  return conv_runs_on_stem_kernel(graph.target, x.dtype, n.attr_int("group", 1), x.shape[3], w.shape[0], {w.shape[1], w.shape[2]},
                                  n.attr_ints("dilations", {1, 1}), n.input(kConvResidualInput) != kNoValue);
}

const Node* stem_pack_of(const Graph& graph, const Node& conv) {
  if (conv.inputs.empty() || conv.inputs[0] == kNoValue || !node_runs_on_stem_kernel(graph, conv)) return nullptr;
  const Node* pack = nullptr;
  int readers = 0;
  for (const Node& n : graph.nodes) {
    for (const ValueId out : n.outputs)
      if (out == conv.inputs[0]) pack = &n;
    for (const ValueId in : n.inputs) readers += in == conv.inputs[0] ? 1 : 0;
  }
  return pack && readers == 1 && absorbable_pack(graph, *pack) ? pack : nullptr;
}

bool stem_absorbs_pack(const Graph& graph, const Node& pack) {
  if (!absorbable_pack(graph, pack)) return false;
  const Node* reader = nullptr;
  int readers = 0;
  for (const Node& n : graph.nodes)
    for (const ValueId in : n.inputs)
      if (in == pack.outputs[0]) reader = &n, ++readers;
  return readers == 1 && stem_pack_of(graph, *reader) == &pack;
}

Expected<Lowering> conv_lower_channels_last_strategy(const Node& node, const Graph& graph, const ConvShape& cs);

bool conv_asked_to_copy_slab(const Node& node, const Graph& graph) { return slab_of(node, graph).has_value(); }

Expected<Lowering> conv_lower_channels_last(const Node& node, const Graph& graph, const ConvShape& cs) {
  Expected<Lowering> l = conv_lower_channels_last_strategy(node, graph, cs);
  // Only the cluster kernel copies a Concat slab besides (opt/slab_into_producer asks it and keeps
  // the Concat's attribute only where it answers yes); any other strategy would leave it unwritten.
  if (l && !l->slab_copied && conv_asked_to_copy_slab(node, graph))
    return node_error(node, "a Concat's slab_copied is implemented by the cluster split-K convolution only");
  return l;
}

Expected<Lowering> conv_lower_channels_last_strategy(const Node& node, const Graph& graph, const ConvShape& cs) {
  const Value& xv = input_value(graph, node, 0);
  const bool depthwise = cs.group == cs.cin && cs.cout == cs.cin;
  if ((node.has_attr("input_max") || has_input_activation(node)) && !depthwise)
    return node_error(node, "input_max and input_activation are implemented by the depthwise NHWC kernels only");
  const WindowGeometry& g = cs.geo;
  NhwcConv c{node, graph, cs, xv, node.input(2) != kNoValue, node.input(kConvResidualInput) != kNoValue,
             !has_activation(node) || (load_activation(node).op_type == "Relu" && load_activation(node).attrs.empty()),
             "", cs.batch * g.out[0] * g.out[1], g.kernel[0] * g.kernel[1] * cs.cin};
  const int64_t y_stride = graph.row_stride(node.outputs[0]);
  c.y_ld = y_stride != 0 ? y_stride : cs.cout;
  c.comment = node.op_type + " NHWC X " + shape_str(xv.shape) + " W(KRSC) " + shape_str(input_value(graph, node, 1).shape) +
              " -> " + shape_str(nchw_to_nhwc(cs.out)) + " group " + std::to_string(cs.group) +
              (has_activation(node) ? " act " + load_activation(node).op_type : "");
  std::vector<int64_t> pads = g.pad_begin;
  pads.insert(pads.end(), g.pad_end.begin(), g.pad_end.end());
  const Target& t = graph.target;
  const bool stem = conv_runs_on_stem_kernel(t, xv.dtype, cs.group, cs.cin, cs.cout, g.kernel, g.dilations, c.has_res);
  if (has_pool(node)) {
    if (!stem) return node_error(node, "an absorbed pool runs only on the stem kernel");
    if (auto l = lower_stem_pool_wgmma(c)) return std::move(*l);
    if (has_quantize(node)) return node_error(node, "an absorbed QuantizeLinear runs only on the sm_90a stem + pool kernel");
    return lower_stem_pool(c);
  }
  if (stem) return lower_stem(c);
  // The strategies below write the output through c.y_ld (its row_stride when set: a Concat's
  // slab, opt/concat_in_place.cc); the stem and depthwise kernels above and below write packed.
  auto strided = [y_stride](Lowering l) {
    l.strided_output = y_stride != 0;
    return l;
  };
  // The sm_90a kernel where it applies (below), for 1x1 stride-1 convolutions too when asked.
  auto wgmma = [&]() -> std::optional<ConvKernelConfig> {
    auto cfg = conv_wgmma_config(t, xv.dtype, cs.group, cs.cin, cs.cout, c.y_ld, c.has_res, g.kernel, g.strides,
                                 g.dilations, pads, c.gemm_m);
    if (cfg && fixed_address(graph, node.inputs[0]) && fixed_address(graph, node.outputs[0]) &&
        (!c.has_res || fixed_address(graph, node.inputs[kConvResidualInput])))
      return cfg;
    return std::nullopt;
  };
  const bool pointwise =
      conv_pointwise_gemm_applies(t, xv.dtype, cs.group, cs.cin, cs.cout, g.kernel, g.strides, pads, c.relu_or_none);
  if (pointwise && t.conv_wgmma_pointwise)
    if (auto cfg = wgmma()) return strided(lower_wgmma(c, *cfg));
  if (pointwise) {
    // Y[N*H*W, K] = X[N*H*W, C] x W[K, C]^T (+ bias) (+ residual as C, beta 1) (then ReLU).
    Lowering l;
    l.steps.push_back(conv_gemm_step(c, node.inputs[0], c.gemm_m, cs.cin));
    return strided(std::move(l));
  }
  if (conv_strided_pointwise_gemm_applies(t, xv.dtype, cs.group, cs.cin, cs.cout, g.kernel, g.strides, pads, cs.batch,
                                          g.in[0], g.out[0], c.gemm_m, c.relu_or_none))
    return strided(lower_strided_pointwise_gemm(c));
  if (auto cfg = wgmma()) return strided(lower_wgmma(c, *cfg));
  if (auto cfg = conv_cluster_splitk_config(t, xv.dtype, cs.group, cs.cin, cs.cout, c.gemm_m, c.gemm_k,
                                            std::max(xv.numel(), shape_numel(cs.out)))) {
    auto l = lower_cluster_splitk(c, *cfg);
    if (!l) return l.status();
    return strided(std::move(*l));
  }

  if (conv_im2col_gemm_applies(t, xv.dtype, cs.group, cs.cin, cs.cout, c.gemm_m, c.gemm_k, c.relu_or_none))
    return strided(lower_im2col_gemm(c));
  ConvMath math;
  if (conv_implicit_gemm_applies(t, xv.dtype, cs.group, cs.cin, cs.cout) && conv_math_for(xv.dtype, &math)) {
    if (g.kernel[0] > kImplicitGemmMaxWindow || g.kernel[1] > kImplicitGemmMaxWindow)
      return node_error(node, "window " + shape_str(g.kernel) + " is past the CUTLASS implicit GEMM's " +
                                  std::to_string(kImplicitGemmMaxWindow) + "x" + std::to_string(kImplicitGemmMaxWindow));
    return strided(lower_cutlass(c, math));
  }
  if (depthwise) return lower_depthwise(c);
  return node_error(node, "no NHWC implementation for this convolution on the target (dtype " + dtype_name(xv.dtype) +
                              ", group " + std::to_string(cs.group) + ", C " + std::to_string(cs.cin) + ", K " +
                              std::to_string(cs.cout) + ")");
}

}  // namespace aotc
