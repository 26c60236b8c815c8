// Command-line parsing for `aotc`, `aotc check` and `aotc-run`, kept apart from the drivers so
// tests call it directly. Parsing never prints and never exits: it returns the options or a Status
// whose one-line message the driver prints as "aotc: error: <message>" with exit code 2.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/pdl_mode.h"
#include "ir/status.h"
#include "ir/target.h"
#include "ir/tensor.h"

namespace aotc {

// `aotc MODEL.onnx -o libNAME.so [options]`, `aotc check MODEL.onnx [options]` and
// `aotc calibrate MODEL.onnx --calib DIR [-o calib.json] [options]`.
struct AotcOptions {
  enum class Mode { kCompile, kCheck, kCalibrate, kHelp, kVersion };
  Mode mode = Mode::kCompile;
  std::string model_path;
  std::string output_path;             // -o
  std::string name;                    // --name, else derived from -o (abi_name_from_path)
  std::vector<std::string> archs;      // --arch, deduplicated, in order; default {"sm_90"}
  std::map<std::string, Shape> input_shapes;  // --input-shape name:1x3x224x224
  int64_t batch = 1;                   // --batch: value of symbolic first dims
  std::string precision = "fp32";      // --precision fp32|fp16|bf16
  std::vector<std::string> keep_fp32;  // --keep-fp32 NODE|OP[,...] (repeatable)
  std::string io_dtype = "model";      // --io-dtype model|fp16|bf16 (16-bit I/O needs that --precision)
  std::string conv_config;             // --conv-config NAME (force one CUTLASS conv configuration)
  bool conv_pointwise_gemm = true;     // --conv-pointwise cublaslt|cutlass (1x1 convs as cuBLASLt GEMMs)
  bool conv_im2col_gemm = true;        // --conv-im2col on|off (underfilled convs as im2col + cuBLASLt)
  Int8Requant int8_requant = Int8Requant::kAuto;  // --int8-requant auto|double|fp32 (the int8 epilogues' rounding)
  bool conv_strided_pointwise_gemm = true;  // --conv-strided-pointwise gemm|im2col
  bool conv_cluster_splitk = true;          // --conv-cluster on|off
  int conv_cluster_max_split = 6;           // --conv-cluster-max-split N
  int conv_cluster_warp_groups = 2;         // --conv-cluster-warp-groups 2|4
  bool conv_pw_pair = false;                // --conv-pw-pair on|off
  bool conv_wgmma = true;                   // --conv-wgmma on|off
  bool conv_wgmma_int8 = true;              // --conv-wgmma-int8 on|off
  bool conv_wgmma_int8_expand_2cta = true;  // --conv-wgmma-int8-expand on|off
  ConvGemmInt8 conv_gemm_int8 = ConvGemmInt8::kPingpong;  // --conv-gemm-int8 on|coop|off
  Int8FuseResidual int8_fuse_residual = Int8FuseResidual::kGemm;  // --int8-fuse-residual auto|on|off
  int int8_epilogue_tile_n = 0;  // --int8-epilogue-tile auto|32|64|128
  int int8_gemm_tile_n = 0;      // --int8-gemm-tile-n auto|128|256
  int int8_conv_cluster_m = 1;   // --int8-conv-cluster 1|2
  int conv_wgmma_cluster_m = 1;  // --conv-wgmma-cluster 1|2
  double conv_wgmma_fill = 0.5;             // --conv-wgmma-fill half|wave
  bool conv_wgmma_pointwise = false;        // --conv-wgmma-pointwise on|off
  bool conv_stem_wgmma = true;              // --conv-stem-wgmma on|off
  bool gemm_gemv = true;                    // --gemv on|off
  bool pool_gemm = false;                   // --pool-gemm on|off
  bool gemm_wgmma = false;                  // --gemm-wgmma on|off
  std::string gemm_wgmma_config;            // --gemm-wgmma-config NAME
  bool l2_prefetch = true;                  // --l2-prefetch on|off
  bool gemm_fp32_simt = true;               // --fp32-gemm auto|cublaslt|simt-reduce (few-row fp32 GEMMs on CUTLASS SIMT)
  bool gemm_fp32_cluster = true;            // --fp32-gemm simt-reduce: their split-K without clusters
  std::vector<std::string> epilogue_excluded;  // --epilogue-exclude OP[,...] (repeatable)
  bool depthwise_tile_tow_first = true;      // --depthwise-tile cb-first|tow-first
  bool gemm_16bit_cluster = false;          // --gemm-16bit cublaslt|cutlass (few-row fp16 GEMMs on CUTLASS tensor ops)
  int simt_gemm_max_cluster = 8;            // --fp32-gemm-max-cluster 8|16
  int simt_gemm_blocks_per_sm = 3;          // --fp32-gemm-blocks-per-sm N (their split-K's target)
  bool matmul_reference = false;            // --matmul-impl cublaslt|reference
  int aux_streams = 0;                      // --aux-streams 0|1 (side branches beside the main lane)
  bool conv_stem_kernel = true;       // --conv-stem direct|cutlass (16-bit RGB stems on the direct kernel)
  PdlMode pdl = PdlMode::kOff;         // --pdl off|wait|early
  std::string tune_matmuls = "auto";   // --tune-matmuls auto|on|off
  bool attention_fused = true;         // --attention fused|fused64|rows (CUTLASS fused attention where exact)
  // --attention fused (kFillSms) | fused64 (its 64-query blocks even where they leave SMs idle) |
  // fused32 (its 32-query blocks everywhere)
  AttentionBlocks attention_blocks = AttentionBlocks::kFillSms;
  bool attention_sm90 = true;          // --attention-sm90 on|off (CUTLASS's sm_90a FMHA where it applies)
  bool conv_fp32_nhwc = true;          // --conv-fp32 nhwc|nchw (fp32 conv chains on the NHWC kernels)
  int max_split_k = 1;                 // --max-split-k N (serial split-K for underfilled convs; 1 = off)
  std::vector<std::string> disabled_passes;  // --disable-pass NAME (repeatable; ablation)
  std::string report_path;             // --report
  std::string dump_after;              // --dump-after PASS|all
  std::string dump_dir;                // --dump-dir (default: dumps go to stderr)
  std::string emit_source_dir;         // --emit-source
  std::string nvcc;                    // --nvcc, else find_nvcc()
  std::string host_cc;                 // --host-cc, else $CC, else "cc"
  std::string cache_dir;               // --cache-dir, else default_kernel_cache_dir()
  bool no_cache = false;               // --no-cache
  // --kernel-library DIR (repeatable), else $AOTC_KERNEL_LIBRARY, else <aotc's folder>/../share/aotc/kernels
  // where it exists; --no-kernel-library: none. --add-to-kernel-library adds to the first.
  std::vector<std::string> kernel_library_dirs;
  bool add_to_kernel_library = false;
  bool no_kernel_library = false;
  std::string cutlass_dir;             // --cutlass-dir, else $CUTLASS_DIR, else pip nvidia-cutlass
  bool quiet = false;
  // aotc calibrate (issue 8): --calib DIR, --calibrator NAME, --percentile P, --calib-cache FILE,
  // --max-batches N.
  std::string calib_dir;
  std::string calibrator = "entropy";
  double percentile = 99.99;
  std::string calib_cache;
  int64_t max_batches = 0;  // 0: every batch the folder holds
  bool sensitivity = false;        // --sensitivity: per-layer int8 sensitivity (CPU reference)
  double accuracy_budget = 0;      // --accuracy-budget P% (relative L2 of the outputs; 0: none)
  int64_t sensitivity_batches = 1; // --sensitivity-batches N
};

// `aotc-run libX.so [options]`.
struct RunOptions {
  enum class Mode { kRun, kHelp, kInfo };
  Mode mode = Mode::kRun;
  std::string library_path;
  std::string name;                            // --name, else derived from the file name
  std::vector<std::string> input_specs;        // --input NAME=FILE or INDEX=FILE (resolved later)
  std::vector<std::string> positional_inputs;  // FILE ... after the library, by input index
  uint64_t seed = 1;                           // --seed for random inputs
  std::string output_dir;                      // --output-dir
  std::vector<std::string> expect_files;       // --expect FILE (in output order)
  std::string expect_dir;                      // --expect-dir DIR (ONNX test_data_set layout)
  bool atol_set = false, rtol_set = false;
  double atol = 0, rtol = 0;                   // --atol / --rtol (floating outputs only)
  bool model_metric = false;                   // --model-metric
  int bench_runs = 0;                          // --bench N
  int warmup_runs = 10;                        // --warmup N (only with --bench)
  std::string json_path;                       // --json FILE
  bool profile = false;                        // --profile (also implied by --profile-json)
  std::string profile_json_path;               // --profile-json FILE
  int profile_iters = 20;                      // --profile-iters N (medians per step over N runs)
  int profile_top = 15;                        // --profile-top N (table rows; JSON has every step)
  int device = 0;                              // --device N
  bool quiet = false;
};

// args excludes argv[0].
Expected<AotcOptions> parse_aotc_args(const std::vector<std::string>& args);
Expected<RunOptions> parse_run_args(const std::vector<std::string>& args);

// The ABI prefix from an output path: directory, a leading "lib" and a trailing ".so" stripped,
// every other character outside [A-Za-z0-9_] replaced by '_'. Refuses an empty result or one that
// starts with a digit (the prefix becomes C identifiers), asking for --name instead.
Expected<std::string> abi_name_from_path(const std::string& path);
// An explicit --name must already be a C identifier: [A-Za-z_][A-Za-z0-9_]*, at most 64 chars.
Status check_abi_name(const std::string& name);
// "sm_90,sm_87" -> {"sm_90", "sm_87"}; each item must be sm_NN or sm_NNN with an optional 'a'.
Expected<std::vector<std::string>> parse_arch_list(const std::string& text);
// "name:1x3x224x224" (the last ':' separates; "name:scalar" is rank 0). Dims are integers >= 0.
Expected<std::pair<std::string, Shape>> parse_input_shape(const std::string& text);

// nvcc: $CUDA_HOME/bin/nvcc if it exists, else /usr/local/cuda/bin/nvcc, else "nvcc" (PATH).
std::string find_nvcc();

std::string aotc_usage();
std::string run_usage();
const char* aotc_version_string();

}  // namespace aotc
