// What the library is compiled for, as data the passes and lowerings read (graph.target): the GPU
// architectures of --arch and the facts that choose between implementations (tensor-core class,
// SM count for tile and split heuristics). Set once by the driver; tests set it directly.
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.h"

namespace aotc {

// The precision the library computes in (--precision, --keep-fp32), read by opt/precision.
// The fused attention kernel's query blocks (Target::attention_blocks, --attention fused|fused64|fused32).
enum class AttentionBlocks { kFillSms, k64, k32 };
// The int8 epilogues' requantization route (Target::int8_requant, --int8-requant auto|fp32|dmagic).
enum class Int8Requant { kAuto, kDouble, kFp32, kDmagic };
// --conv-gemm-int8: CUTLASS 3.x GEMM schedule for pointwise int8 layers (Target::conv_gemm_int8).
enum class ConvGemmInt8 { kOff, kPingpong, kCooperative };
// --int8-fuse-residual: which int8 residual Adds opt/fuse_residual_qadd moves into the producing
// convolution's epilogue (Target::int8_fuse_residual): none, those whose convolution runs as the
// persistent GEMM (kGemm, auto), or every one a kernel takes.
enum class Int8FuseResidual { kOff, kGemm, kOn };

struct PrecisionOptions {
  DType dtype = DType::kFloat32;        // kFloat32 (no change), kFloat16 or kBFloat16
  std::vector<std::string> keep_fp32;   // node names or op types that stay fp32
  // --io-dtype fp16|bf16: float32 graph inputs and outputs take the compute dtype (the library's
  // I/O is 16-bit; no boundary Casts). False: they keep their declared dtypes.
  bool low_io = false;
};

struct Target {
  std::vector<int> sms{90};  // compute capabilities, e.g. {90, 87} for --arch sm_90,sm_87
  // Smallest SM count among the targets (tiles must fill the smallest GPU it runs on): 132 for
  // H100/H200, 16 for Jetson AGX Orin. sm_count_for_arch gives the table's value per arch.
  int sm_count = 132;
  PrecisionOptions precision;
  // Largest serial split-K for convolutions that leave SMs idle (--max-split-k). Default 1 (off):
  // measured on an H100 (docs/perf_notes.md v2) serial split-K made ResNet-50 batch 1 slower
  // (0.535 -> 0.768 ms): the slices wait on each other's fp16 partial sums.
  int max_split_k = 1;
  // Force one tensor-core convolution configuration by name (--conv-config; for measuring the
  // table in ir/ops/conv_configs.h). Empty: the pick rule.
  std::string conv_config;
  // How the int8 tensor-core epilogues round their requantization (--int8-requant; every route
  // gives the reference's double rounding bit for bit, templates/int8_requant.cuh). kAuto (default):
  // the conversion-free double route (dmagic) for the layers whose multipliers are all finite with
  // |m| < 0.5, the double path for the others, and on GPUs whose FP64 runs at 1/64 (Jetson's sm_87,
  // sm_86 / sm_89; chosen per arch inside the fatbin) the exact fp32 route. Measured on an H200,
  // ResNet-50 int8 bs32: 1.576 ms with the double path everywhere, 1.328 with dmagic (Sm80 kernel),
  // 1.081 with dmagic on the wgmma kernel (docs/perf_notes.md v51); dmagic as one FMA (dfma) where
  // every |acc + b| < 2^29 is proven from the constant weights (v56). kDouble: the double path
  // where FP64 is fast (the earlier default); kFp32: the fp32 route everywhere; kDmagic: dmagic
  // without the FMA form.
  Int8Requant int8_requant = Int8Requant::kAuto;
  // Pointwise NHWC convolutions (1x1, stride 1, no padding) run as cuBLASLt GEMMs with the bias /
  // ReLU / residual epilogue (ir/ops/conv_configs.h: conv_pointwise_gemm_applies). Off: they take
  // the CUTLASS implicit GEMM like the others (--conv-pointwise cutlass; forced by --conv-config).
  bool conv_pointwise_gemm = true;
  // Tensor-core convolutions whose implicit-GEMM tiles would not fill one wave (batch 1) run as
  // an im2col kernel + a cuBLASLt GEMM (conv_im2col_gemm_applies). Off: CUTLASS (--conv-im2col off).
  bool conv_im2col_gemm = true;
  // Of those, 16-bit ones run as one cluster split-K implicit-GEMM kernel instead when every target
  // is sm_90+ (conv_cluster_splitk_config; templates/conv_cluster_splitk.cuh). Off: im2col + GEMM
  // (--conv-cluster off).
  bool conv_cluster_splitk = true;
  // The most CTAs of such a cluster (--conv-cluster-max-split, 1-16; over 8 is sm_90's
  // non-portable cluster size, allowed by the runtime at create): the rule's bound
  // (conv_configs.h pick_cluster_conv_config). 12 measured slower on ResNet-50's layer 4 at batch 1
  // (9.4-10.9 us against 8.2-9.6 a 3x3, docs/perf_notes.md v45).
  int conv_cluster_max_split = 6;
  // Warp groups of that kernel's CTA (--conv-cluster-warp-groups 2|4): 4 warps each, the groups
  // taking alternate 16-wide slices of every K step (2: 8 warps an SM, the measured default of
  // v25; 4: 16, measured slower: ResNet-50 bs1 0.2502 -> 0.2617 ms, layers 3-4 +1-1.2 us a
  // kernel, docs/perf_notes.md v47).
  int conv_cluster_warp_groups = 2;
  // A pointwise convolution and the pointwise convolution that reads its output as one cluster
  // kernel where its rule has a configuration (opt/fuse_pointwise_pair, conv_configs.h
  // pw_pair_config; --conv-pw-pair on). Off by default: measured slower than the two cuBLASLt
  // GEMMs it replaces on ResNet-50 at batch 1 on an H200 (8.1-8.4 us against 7.7-8.0 a layer-3
  // pair; the whole network 0.2643 / 0.2652 against 0.2552 / 0.2559 ms), neutral on MobileNetV2
  // (docs/perf_notes.md v45).
  bool conv_pw_pair = false;
  // Of those, a strided 1x1 convolution without padding (ResNet's downsample at batch 1) reads its
  // input in place as a strided batched cuBLASLt GEMM, one batch per output row, no im2col
  // (conv_strided_pointwise_gemm_applies). Off: im2col + GEMM like the others
  // (--conv-strided-pointwise im2col).
  bool conv_strided_pointwise_gemm = true;
  // fp16 convolutions that fill half a wave run on CUTLASS 3.x's TMA + wgmma implicit GEMM
  // when every target is sm_90 (conv_wgmma_config; templates/cutlass_conv2d_fprop_sm90.cu.in; its
  // params are built at compile time, codegen/host_params.cc). Off: CUTLASS 2.x mma.sync
  // (--conv-wgmma off).
  bool conv_wgmma = true;
  // Tiles (CTAs) a convolution must have for that kernel, as a share of the target's SM count:
  // 0.5 (half a wave, default) or 1 (--conv-wgmma-fill wave).
  double conv_wgmma_fill = 0.5;
  // 1x1 stride-1 convolutions too (instead of one cuBLASLt GEMM) where that kernel applies
  // (--conv-wgmma-pointwise on; off by default until measured faster: docs/perf_notes.md v40).
  bool conv_wgmma_pointwise = false;
  // Requantizing int8 convolutions (aotc.QLinearConv, int8 / uint8 activations) on CUTLASS 3.x's
  // TMA + wgmma implicit GEMM with the requantization (and a fused residual Add,
  // opt/fuse_residual_qadd) in its epilogue, when every target is sm_90 and the tiles fill
  // Target::conv_wgmma_fill of a wave (conv_wgmma_int8_config; templates/
  // cutlass_conv2d_fprop_sm90_i8.cu.in; --conv-wgmma-int8 off to keep CUTLASS 2.x mma.sync). On by
  // default since the conversion-free requantization took its register spills away: ResNet-50 int8
  // bs32 on an H200 1.081 ms against the Sm80 kernel's 1.328 (docs/perf_notes.md v51; with the
  // double path it was slower, 1.85 against 1.62, v48).
  bool conv_wgmma_int8 = true;
  // Expanding pointwise int8 convolutions (1x1, Cout >= 4 Cin: ResNet's conv3 / layer-1
  // projection, whose time is the requantizing epilogue's, not the MMA's) take the 128x64 tile two
  // CTAs an SM (i8wg128x64x64_s4_2cta: twice the warps in the epilogue) instead of the rule's
  // largest tile; --conv-wgmma-int8-expand off: the rule's. Measured per layer on an H200
  // (ResNet-50 int8 bs32, that tile forced everywhere against the rule, docs/perf_notes.md v51):
  // layer1 conv3 41.5 -> 34 us, layer2 conv3 22.5 -> 20.5, layer3 13.7 -> 12.9, layer4 11.3 ->
  // 10.8; slower on the 3x3s and the reducing 1x1s, which keep the rule's.
  bool conv_wgmma_int8_expand_2cta = true;
  // Pointwise int8 layers (1x1, stride 1, no padding; aotc.QLinearMatMul too) that take the wgmma
  // int8 kernel run as CUTLASS 3.x's GEMM instead, with the same requantizing epilogue tree: two
  // consumer warp groups and a persistent tile scheduler, which CUTLASS's convolution kernel lacks
  // (conv_gemm_int8_config: pointwise, a wave of tiles at least). kPingpong (--conv-gemm-int8 on,
  // the default): one consumer's epilogue overlaps the other's main loop, except in layers with a
  // fused residual Add, which take the cooperative schedule; kCooperative (coop): every layer
  // cooperative, both consumers requantizing halves of one tile at once; kOff: the convolution
  // kernel. Measured on an H200 (ResNet-50 int8 bs32, docs/perf_notes.md v53): 1.050 ms (off) ->
  // 0.980 (ping-pong), 1.016 (coop) without fused Adds; with them coop 0.936-0.979 and ping-pong
  // 1.178 (its fused layers 2-3.5x slower: hence cooperative there).
  ConvGemmInt8 conv_gemm_int8 = ConvGemmInt8::kPingpong;
  // opt/fuse_residual_qadd: int8 residual Adds in the producing convolution's epilogue. kGemm
  // (--int8-fuse-residual auto, the default): only where that convolution runs as the persistent
  // GEMM above, whose producer warp loads the residual while the consumers compute (v53: coop
  // 1.016 -> 0.979 ms with them); kOn: on every int8 tensor-core kernel that takes it (the wgmma
  // convolution kernel measured slower with them, v48 / v51: 1.081 -> 1.285 ms); kOff: none.
  Int8FuseResidual int8_fuse_residual = Int8FuseResidual::kGemm;
  // The persistent int8 GEMM's epilogue subtile width in output channels (--int8-epilogue-tile):
  // 0 (auto) the configuration's (ir/ops/conv_configs.h conv_gemm_int8_config: 64); 32, 64 or 128
  // (at most the tile's width; for measuring, docs/perf_notes.md v56): larger subtiles, fewer a
  // tile, each one barrier and TMA store.
  int int8_epilogue_tile_n = 0;
  // The cooperative persistent int8 GEMM's tile width (--int8-gemm-tile-n auto|128|256): 0 (auto)
  // 256 where Cout divides by it and the persistent grid's waves allow (ir/ops/conv_configs.h
  // int8_gemm_tile_n, v59); 128 the table's (128 or 64) everywhere; 256 wherever Cout divides.
  int int8_gemm_tile_n = 0;
  // The int8 wgmma convolution mode's thread-block cluster along M (--int8-conv-cluster 1|2): 1
  // (default) none; 2 pairs of CTAs sharing each filter tile by TMA multicast (for measuring:
  // slower on ResNet-50 bs32, H200, docs/perf_notes.md v59).
  int int8_conv_cluster_m = 1;
  // The same for the fp16 / bf16 wgmma convolutions (--conv-wgmma-cluster 1|2; slower too, v59).
  int conv_wgmma_cluster_m = 1;
  // The stem + max pool on sm_90a's warpgroup MMA where it applies (ir/ops/conv_configs.h:
  // stem_wgmma_applies; templates/conv_stem_pool_wgmma_nhwc.cu.in). Off: the mma.sync stem kernel
  // (--conv-stem-wgmma off).
  bool conv_stem_wgmma = true;
  // 16-bit GEMMs of one row against a [N][K] weight run on aotc's warp-per-column kernel
  // (ir/ops/conv_configs.h: gemv_applies; templates/gemv_rows.cu.in). Off: cuBLASLt (--gemv off).
  bool gemm_gemv = true;
  // A batch-1 CNN's head - a channels_last 16-bit GlobalAveragePool read only (through views) by a
  // GEMM the GEMV takes - as one cluster kernel (opt/fuse_pool_gemm, aotc.PoolGemm;
  // ir/ops/conv_configs.h pool_gemm_applies; templates/pool_gemv_cluster.cu.in) when every target
  // is sm_90+ (--pool-gemm on). Off by default until measured (predicted, not measured: -2 us of
  // the two kernels' 5.0 us measured on ResNet-50 bs1, docs/perf_notes.md v50).
  bool pool_gemm = false;
  // Kernels that offer it (KernelStep::l2_prefetch_args: the batch-1 cluster split-K convolution)
  // prefetch into L2 the weights of the steps after them, up to the next such kernel, while they
  // run (--l2-prefetch on|off): at batch 1 each GEMM otherwise waits on its weights from DRAM.
  // Measured on an H200, ResNet-50 bs1 fp16: 0.2736 -> 0.2661 ms (docs/perf_notes.md v41).
  bool l2_prefetch = true;
  // 16-bit GEMMs with an activation cuBLASLt's epilogues lack run on CUTLASS 3.x's sm_90a GEMM
  // with the activation in its epilogue where its rule has a configuration (ir/ops/conv_configs.h:
  // gemm_wgmma_config; templates/cutlass_gemm_sm90.cu.in; --gemm-wgmma on). Off by default:
  // measured neutral to slower on BERT-base / ViT-B/16 batch 32 against cuBLASLt + the epilogue
  // kernel (H200, BERT: 1.904-1.909 against 1.878-1.908 ms, docs/perf_notes.md v46).
  bool gemm_wgmma = false;
  // Force one row of that kernel's table by name where it applies (--gemm-wgmma-config; for
  // measuring the table). Empty: the rule.
  std::string gemm_wgmma_config;
  // Every cuBLASLt GEMM runs on aotc's own plain kernel instead (templates/gemm_reference.cu.in;
  // --matmul-impl reference): slow, but the library then launches no cuBLASLt kernel, which
  // compute-sanitizer's racecheck cannot follow on Hopper (docs/reliability.md).
  bool matmul_reference = false;
  // Auxiliary streams for side branches (opt/side_branches.cc, --aux-streams): 1 lets a small
  // node with independent work beside it run concurrently with that work in the CUDA graph
  // (TensorRT's auxiliary streams); 0 (default): one stream, the table order. Off by default
  // because it measured slower where it applies: ResNet-50 fp16 batch 1 on an H100, 0.2880 ->
  // 0.2933 ms with its four downsamples beside conv1 / conv2 (docs/perf_notes.md v18).
  int aux_streams = 0;
  // A side node's outputs may hold at most this many bytes (it then stays allocated over the
  // concurrent region; small outputs are also what under-fills the GPU).
  int64_t aux_stream_max_bytes = int64_t{4} << 20;
  // 16-bit stem convolutions (few input channels) run as the direct tensor-core stem kernel
  // (ir/ops/conv_configs.h: conv_stem_applies). Off: space-to-depth / channel padding + CUTLASS
  // (--conv-stem cutlass).
  bool conv_stem_kernel = true;
  // The ONNX Attention op runs as CUTLASS's fused tensor-core attention kernel where that computes
  // exactly what the op asks (ir/ops/attention.cc: fmha_applies). Off: the row-tile kernel
  // (templates/attention_rows.cu.in) everywhere (--attention rows).
  bool attention_fused = true;
  // Its query blocks: kFillSms (default), the 32-query configuration (32 queries x 128 keys a block)
  // where 64-query blocks would not fill one wave of SMs (batch-1 transformers: 24-48 blocks on 132
  // SMs); k64: 64 queries whenever the head dim allows (--attention fused64); k32: 32 queries
  // wherever it allows (--attention fused32; for measuring: one key block of 128 for BERT's and
  // GPT-2's 128 tokens, measured 2-4% slower at batch 32).
  AttentionBlocks attention_blocks = AttentionBlocks::kFillSms;
  // 16-bit attention with head dim 64 (causal or an additive fp16 mask) runs as CUTLASS's sm_90a
  // FMHA (TMA + wgmma; ir/ops/attention.cc sm90_fmha_applies) when every target is sm_90. Off: the
  // Sm80 kernel above (--attention-sm90 off).
  bool attention_sm90 = true;
  // fp32 convolution chains move to NHWC like 16-bit ones (opt/layout_nhwc), with fp32 kernels:
  // cuBLASLt SGEMM (no TF32) for 1x1 and under-filled convolutions, the CUTLASS SIMT implicit GEMM
  // for the rest, the NHWC depthwise and pooling kernels. Off: fp32 graphs keep the NCHW kernels
  // (--conv-fp32 nchw).
  bool conv_fp32_nhwc = true;
  // float GEMMs whose cuBLASLt tiles would not fill one wave (transformers at batch 1) run on the
  // CUTLASS SIMT GEMM with parallel split-K (ir/ops/conv_configs.h: simt_gemm_plan). Off: cuBLASLt
  // (--fp32-gemm cublaslt).
  bool gemm_fp32_simt = true;
  // Their split-K slices reduce through distributed shared memory inside one kernel (a thread-block
  // cluster per output tile) when every target is sm_90+. Off: a reduction kernel after the GEMM
  // sums the slices' fp32 partials from the node's scratch (--fp32-gemm simt-reduce; the only way
  // before sm_90).
  bool gemm_fp32_cluster = true;
  // fp16 GEMMs whose cuBLASLt tiles would not fill one wave (transformers at batch 1) run on the
  // tensor-op form of the same CUTLASS GEMM, split-K summed in a cluster, when every target is
  // sm_90+ (ir/ops/conv_configs.h: tc_gemm_plan; --gemm-16bit cutlass). Off by default: measured
  // slower than cuBLASLt on GPT-2 / BERT / ViT at batch 1 (docs/perf_notes.md v64).
  // The depthwise tile kernel's shape rule (ir/ops/conv_nhwc.cc depthwise_tile) when the grid has
  // fewer than 2 blocks an SM: true shrinks its width first and keeps the channels (more threads
  // a block, fewer outputs a thread), false shrinks the channels first (the earlier rule:
  // EfficientNet-B0's batch-1 5x5 depthwise got 16-thread blocks of 700 taps a thread). Measured
  // on an H200 (docs/perf_notes.md v65): batch 1 EfficientNet-B0 0.750 -> 0.734 ms, MobileNetV2
  // 0.1475 -> 0.1425; batch 32 unchanged (the grid is full there). --depthwise-tile cb-first|tow-first.
  bool depthwise_tile_tow_first = true;
  // Activation op types that stay out of conv / GEMM epilogues (opt/fuse_epilogue,
  // opt/matmul_to_gemm) although their traits allow it (--epilogue-exclude OP; for measuring).
  std::vector<std::string> epilogue_excluded;
  bool gemm_16bit_cluster = false;
  // The most CTAs (K slices) in such a cluster (--fp32-gemm-max-cluster 8|16): 8, the portable
  // size, measured faster than 16 on GPT-2 / BERT / ViT at batch 1 (docs/perf_notes.md v36).
  int simt_gemm_max_cluster = 8;
  // Their split-K aims at this many thread blocks per SM (--fp32-gemm-blocks-per-sm): 3 with the
  // clusters (2 was best with the reduction kernel, v32; 3 measured -4.7% on ViT, v36).
  int simt_gemm_blocks_per_sm = 3;

  int min_sm() const {
    int m = sms.empty() ? 0 : sms[0];
    for (int s : sms) m = s < m ? s : m;
    return m;
  }
  // Sm80-class CUTLASS 2.x kernels (cp.async pipelines; mma.sync tensor cores for 16-bit, FFMA
  // for fp32) run on every target.
  bool has_sm80_tensor_cores() const { return min_sm() >= 80; }
  // Every target is sm_90 (compiled as sm_90a): the wgmma / TMA kernels' applicability.
  bool all_sm90() const {
    if (sms.empty()) return false;
    for (int s : sms)
      if (s != 90) return false;
    return true;
  }
};

// SM count of the reference GPU of an architecture (for heuristics only).
inline int sm_count_for_arch(int sm) {
  switch (sm) {
    case 80: return 108;   // A100
    case 86: return 84;    // RTX A6000 class
    case 87: return 16;    // Jetson AGX Orin (2048 CUDA cores)
    case 89: return 128;   // L40 class
    case 90: return 132;   // H100 / H200 SXM
    default: return sm >= 100 ? 148 : 80;
  }
}

// Target from --arch strings ("sm_90", "sm_87", "compute_87"); unknown strings are skipped.
inline Target target_from_archs(const std::vector<std::string>& archs) {
  Target t;
  t.sms.clear();
  for (const std::string& a : archs) {
    size_t us = a.find('_');
    if (us == std::string::npos) continue;
    int n = 0;
    for (size_t i = us + 1; i < a.size() && a[i] >= '0' && a[i] <= '9'; ++i) n = n * 10 + (a[i] - '0');
    if (n > 0) t.sms.push_back(n);
  }
  if (t.sms.empty()) t.sms.push_back(90);
  t.sm_count = sm_count_for_arch(t.sms[0]);
  for (int s : t.sms) t.sm_count = sm_count_for_arch(s) < t.sm_count ? sm_count_for_arch(s) : t.sm_count;
  return t;
}

}  // namespace aotc
