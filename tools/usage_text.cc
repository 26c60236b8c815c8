// The --help texts of aotc and aotc-run: complete usage with examples. Kept beside the parser
// (cli_options.cc) so that every option the parser accepts is documented in one place.
#include "tools/cli_options.h"

namespace aotc {

std::string aotc_usage() {
  return R"(usage: aotc MODEL.onnx -o libNAME.so [options]
       aotc check MODEL.onnx [--input-shape NAME:DIMS ...] [--batch N]
       aotc calibrate MODEL.onnx --calib DIR [-o calib.json] [--calib-cache FILE]
                 [--calibrator entropy|minmax|percentile|mse] [--percentile P] [--max-batches N]

Compiles an ONNX model into one self-contained CUDA shared library (see docs/abi.md) and writes
NAME.h next to it. Progress goes to stderr; errors are one line "aotc: error: ...", exit code 2,
and no output file is left behind.

options:
  -o, --output PATH        the library to write (libNAME.so)
  --name PREFIX            ABI prefix of every exported symbol; default from -o: directory,
                           "lib" and ".so" stripped, other characters than [A-Za-z0-9_] -> '_'
  --arch LIST              GPU architectures, sm_NN (machine code) or compute_NN (PTX only, JIT on
                           load), comma list or repeated (default sm_90)
  --input-shape NAME:DIMS  fix an input's shape, e.g. input:1x3x224x224 (NAME:scalar = rank 0);
                           repeatable
  --batch N                value for a symbolic first dim of inputs not named above (default 1)
  --precision P            fp32 (default, IEEE), fp16 or bf16: values stored in 16 bits, convolutions
                           and GEMMs on tensor cores (fp32 accumulation), reductions, softmax and
                           norms computed in fp32; inputs/outputs keep the model's dtypes.
                           int8 (with --calib or --calib-cache): every Conv / Gemm / MatMul with a
                           constant weight runs on int8 values (activation per tensor from the
                           calibrated range, weight per output channel, symmetric; int32 sums,
                           requantized once; layers --accuracy-budget keeps out stay float), the
                           rest in fp16. A model already in QDQ form (QuantizeLinear /
                           DequantizeLinear pairs) gets int8 layers with its own scales at any
                           --precision, without calibration
  --io-dtype model|fp16|bf16
                           model (default): inputs and outputs keep the model's declared dtypes
                           (float32 I/O, converted inside the library); fp16 / bf16 (with the same
                           --precision): float32 inputs and outputs become 16-bit in the ABI (the
                           header states each dtype): no conversion kernels, half the I/O bytes
  --keep-fp32 NODE|OP      keep these nodes (by name) or op types in fp32 (comma list, repeatable)
  --conv-config NAME       force one CUTLASS convolution configuration for the convolutions of its
                           kind (tc*: fp16/bf16 tensor cores, simt*: fp32; sgemm*: the fp32
                           SIMT GEMM, forced for every single-matrix float GEMM; for measuring;
                           the names are in ir/ops/conv_configs.h)
  --conv-pointwise IMPL    cublaslt (default): 1x1 stride-1 NHWC convolutions with no or ReLU
                           activation run as cuBLASLt GEMMs; cutlass: as CUTLASS implicit GEMMs
  --conv-im2col on|off     on (default): NHWC convolutions too small to fill the GPU (batch 1)
                           run as im2col + a cuBLASLt GEMM; off: CUTLASS implicit GEMM
  --int8-requant auto|double|fp32|dmagic
                           how the int8 tensor-core epilogues round their requantization (the
                           same outputs bit for bit): auto (default) double without conversion
                           instructions for layers whose multipliers are all below 0.5 (one
                           fused multiply-add where the weights prove every sum under 2^29),
                           double for the others, exact fp32 arithmetic on GPUs with slow FP64
                           (sm_86/87/89, Jetson Orin); double: the double path for every layer
                           (fp32 on those GPUs); fp32: fp32 arithmetic everywhere; dmagic: auto
                           without the fused multiply-add
  --matmul-impl cublaslt|reference
                           cublaslt (default): GEMMs run on cuBLASLt; reference: on a plain aotc
                           kernel each (slow; a library with no cuBLASLt kernel, for
                           compute-sanitizer racecheck runs and cross-checks)
  --aux-streams 0|1        1: a node that leaves the GPU mostly idle (outputs of at most 4 MiB)
                           and has independent work beside it runs concurrently with that work on
                           an auxiliary stream of the CUDA graph (ResNet's downsample beside
                           conv1 / conv2 at batch 1); 0 (default): one stream (measured faster
                           on ResNet-50 batch 1, docs/perf_notes.md v18)
  --conv-strided-pointwise gemm|im2col
                           gemm (default): of those, strided 1x1 convolutions without padding
                           read their input in place (a strided batched cuBLASLt GEMM, one batch
                           per output row); im2col: im2col + GEMM like the others
  --conv-cluster on|off    on (default): of those, 16-bit ones whose channels are a multiple of
                           64 run as one kernel that splits the K loop across a thread-block
                           cluster when every --arch is sm_90 or newer (no im2col matrix); off:
                           im2col + GEMM
  --conv-pw-pair on|off    on: a 16-bit pointwise convolution and the pointwise convolution
                           that reads its output (ResNet's conv3 + residual and the next block's
                           conv1 at batch 1) run as one thread-block-cluster kernel when every
                           --arch is sm_90 or newer and the shares fit in shared memory; off
                           (default, measured faster on ResNet-50 at batch 1): one GEMM each
  --conv-cluster-max-split N
                           the most CTAs (K slices) of that kernel's cluster, 1-16 (default 6;
                           over 8: sm_90's non-portable cluster size; for measuring)
  --conv-cluster-warp-groups 2|4
                           warp groups of 4 warps in each of that kernel's CTAs (default 2; 4:
                           twice the warps an SM, measured slower on ResNet-50; for measuring)
  --conv-wgmma on|off      on (default): fp16 convolutions that fill half a wave run on
                           CUTLASS 3.x's TMA + wgmma implicit GEMM when every --arch is sm_90
                           (its params are built at compile time, which needs nvcc and CUTLASS
                           here but nothing more at run time); off: CUTLASS 2.x mma.sync
  --conv-wgmma-int8 on|off on: requantizing int8 convolutions (--precision int8, QDQ models)
                           that fill half a wave run on CUTLASS 3.x's TMA + int8 wgmma implicit
                           GEMM when every --arch is sm_90, the requantization in its epilogue
                           (and residual Adds, --int8-fuse-residual); default on;
                           off: CUTLASS 2.x mma.sync
  --conv-wgmma-int8-expand on|off
                           on (default): expanding 1x1 int8 convolutions (Cout >= 4 Cin) on
                           that kernel take a 128x64 tile, two CTAs an SM; off: the rule's tile
  --conv-gemm-int8 on|coop|off
                           on (default): pointwise int8 layers (1x1, stride 1, unpadded) on
                           that kernel whose tiles fill a wave run as CUTLASS 3.x's persistent
                           ping-pong GEMM with the same requantizing epilogue (its cooperative
                           schedule where a residual Add is fused); coop: cooperative for all;
                           off: the convolution kernel
  --int8-fuse-residual auto|on|off
                           an int8 residual Add runs in the epilogue of the int8 convolution
                           that produces one operand (both roundings kept: the same results):
                           auto (default) where that convolution runs as the persistent GEMM,
                           on: wherever a kernel takes it, off: never
  --int8-epilogue-tile auto|32|64|128
                           the persistent int8 GEMM's epilogue subtile width in output channels:
                           auto (default) the kernel table's (64); a wider one (at most the
                           tile's) has fewer barriers a tile; for measuring
  --int8-gemm-tile-n auto|128|256
                           the cooperative persistent int8 GEMM's tile width: auto (default)
                           256 where Cout divides by it and the GPU's waves of tiles allow
                           (half the tiles), else the kernel table's (128 or 64); 128: the
                           table's everywhere; 256: wherever Cout divides by it
  --int8-conv-cluster 1|2  the int8 wgmma convolutions' CTAs in clusters of 2 along M that
                           share each filter tile by TMA multicast (where the M tiles pair up);
                           1 (default) none; for measuring (2 measured slower)
  --conv-wgmma-cluster 1|2 the same for the fp16 / bf16 wgmma convolutions; for measuring
                           (2 measured slower)
  --conv-wgmma-fill half|wave
                           half (default): that kernel takes convolutions with tiles for at
                           least half a wave of SMs; wave: a whole wave
  --conv-wgmma-pointwise on|off
                           on: 1x1 stride-1 convolutions too, where that kernel takes them; off
                           (default): those run as one cuBLASLt GEMM each
  --conv-stem-wgmma on|off on (default): a stem convolution with an absorbed max pool (ResNet's
                           7x7/2 + 3x3/2, 64 channels, fp16) runs on sm_90a's warpgroup MMA
                           when every --arch is sm_90 and the batch fills the GPU; off: the
                           mma.sync stem kernel
  --gemv on|off            on (default): a 16-bit Gemm of one row against a [N][K] weight (a
                           batch-1 classifier) runs on aotc's warp-per-column kernel; off:
                           cuBLASLt
  --pool-gemm on|off       on: a batch-1 CNN's global average pool and the classifier GEMV
                           after it run as one cluster kernel (every --arch sm_90+); off
                           (default): two kernels
  --gemm-wgmma on|off      on: an fp16 GEMM with an activation cuBLASLt's epilogues lack (the erf
                           GELU of BERT / ViT, SiLU, ...) runs on CUTLASS 3.x's sm_90a GEMM with
                           the activation in its epilogue, when every --arch is sm_90 and its
                           tiles fill the GPU; off (default; measured neutral to slower on an
                           H200): cuBLASLt + an epilogue kernel
  --gemm-wgmma-config NAME that kernel's configuration NAME (ir/ops/conv_configs.h
                           gemm_wgmma_configs) wherever it runs (for measuring)
  --l2-prefetch on|off     on (default): the batch-1 cluster split-K convolutions prefetch into
                           L2 the weights of the steps after them (up to the next such
                           convolution) while they run (ResNet-50 bs1 fp16 on an H200: -2.8%);
                           off: they do not
  --fp32-gemm auto|cublaslt|simt-reduce
                           auto (default): float GEMMs too small for cuBLASLt's 128x128 tiles to
                           fill the GPU (transformers at batch 1) run on a CUTLASS SIMT GEMM (fp32
                           FFMA, no TF32) with split-K and every activation in its epilogue; the
                           K slices of a tile are summed inside the kernel across a thread-block
                           cluster when every --arch is sm_90 or newer; simt-reduce: the same GEMM
                           with the slices summed by a second kernel; cublaslt: all on cuBLASLt
  --depthwise-tile cb-first|tow-first
                           how the depthwise tile kernel's tiles shrink until the grid has 2
                           blocks an SM: tow-first (default) halves the width of a tile first
                           (more threads a block), cb-first its channels (the earlier rule)
  --epilogue-exclude OP    keep these activation op types (comma list, repeatable; e.g. Swish)
                           out of convolution and GEMM epilogues: they run as their own kernels
                           (for measuring)
  --gemm-16bit cublaslt|cutlass
                           cublaslt (default): every fp16 GEMM on cuBLASLt; cutlass: those too
                           small for cuBLASLt's 128x128 tiles to fill the GPU (transformers at
                           batch 1) on CUTLASS's tensor-op GEMM with 64x64 tiles, K split across a
                           thread-block cluster (summed inside the kernel) and bias, residual and
                           every activation in its epilogue, when every --arch is sm_90 or newer
                           (measured slower on an H200; for measuring)
  --fp32-gemm-max-cluster 8|16
                           the most K slices summed in one cluster (default 8, the portable
                           cluster size; 16: sm_90's non-portable one)
  --fp32-gemm-blocks-per-sm N
                           their split-K gives N thread blocks per SM (1-8, default 3; for
                           measuring)
  --conv-stem direct|cutlass
                           direct (default): 16-bit convolutions of at most 4 input channels (the
                           RGB stem) run on the direct tensor-core stem kernel; cutlass: space-to-
                           depth packing / channel padding + the CUTLASS implicit GEMM
  int8 calibration (aotc calibrate, and compiles with --precision int8):
  --calib DIR              calibration inputs: .npy or TensorProto .pb files (one sample each, for
                           single-input models) or test_data_set_N folders (input_K.pb); samples
                           whose first dimension divides the model's are stacked into batches
  --calibrator NAME        entropy (default: KL divergence, as TensorRT's entropy calibrator),
                           minmax, percentile, mse: how a tensor's |x| histogram (2048 bins)
                           becomes its symmetric int8 range amax (scale = amax / 127)
  --percentile P           for --calibrator percentile (default 99.99)
  --calib-cache FILE       JSON written after calibrating and reused when it is for the same model
                           file (SHA-256) and calibrator
  --max-batches N          use at most N batches of the folder
  --sensitivity            also quantize each Conv / Gemm / MatMul alone (activation per tensor from
                           its range, weight per output channel, symmetric int8, simulated on the
                           CPU reference) and report the outputs' relative L2 error and SQNR per layer
  --accuracy-budget P      with --sensitivity: start from every layer in int8 and move the most
                           sensitive layers to fp16 until the outputs' relative L2 error against fp32
                           is at most P (1% or 0.01); the JSON and the table give each layer's choice
  --sensitivity-batches N  calibration batches the sensitivity runs on (default 1)
                           (--accuracy-budget in a compile implies --sensitivity)
  --tune-matmuls auto|on|off
                           on: the library times up to 8 cuBLASLt algorithms per matmul on its GPU
                           at create() and keeps the fastest (adds create time; measured 4-7%
                           faster on CNNs at batch 32, 1-7% slower on transformers); off: cuBLASLt's
                           heuristic; auto (default): on for convolution networks (more Conv than
                           Gemm/MatMul nodes). AOTC_MATMUL_TUNE=1 / AOTC_NO_MATMUL_TUNE=1 switch it
                           at run time
  --pdl off|wait|early     programmatic dependent launch on sm_90+ (the runtime turns it off for
                           code built for older GPUs, and AOTC_NO_PDL=1 at run time): off
                           (default; measured neutral with CUDA graphs on an H100); wait: a kernel
                           is scheduled as its predecessor's blocks exit and waits for its writes;
                           early: also while the predecessor runs (measured slower)
  --attention fused|fused64|fused32|rows
                           fused (default): Attention ops run as CUTLASS's fused attention kernel
                           where it is exact (16-bit: tensor cores; fp32: FFMA), in blocks of 32
                           queries where blocks of 64 would leave SMs idle; fused64: always 64-query
                           blocks where the head dim allows; fused32: always 32-query blocks of
                           128 keys; rows: the row-tile kernel everywhere
  --attention-sm90 on|off  on (default): fp16 attention with head dim 64 (causal, or an additive
                           fp16 mask) runs as CUTLASS's sm_90a FMHA (TMA + wgmma) when every --arch
                           is sm_90; off: the kernel --attention picks
  --conv-fp32 nhwc|nchw    nhwc (default): fp32 convolution chains run channels-last on fp32
                           kernels (cuBLASLt SGEMM and CUTLASS SIMT implicit GEMM, no TF32; NHWC
                           depthwise and pooling); nchw: the NCHW fp32 kernels
  --max-split-k N          serial split-K (1-16) for convolutions that cannot fill the GPU
                           (default 1: off; measured slower than no split on an H100)
  --disable-pass NAME      skip a pass (fuse_epilogue, precision, layout_nhwc, ...; for ablation)
  --report FILE            write a JSON compile report (stages, passes, memory plan, kernels).
                           On failure the report is still written, with "ok": false and "error"
  --dump-after PASS|all    dump the IR after that pass (or every pass); "frontend" dumps the
                           imported graph, "memory_plan" the memory plan
  --dump-dir DIR           write dumps to DIR/NN_PASS.txt instead of stderr
  --emit-source DIR        also write the generated sources, blobs and a Makefile to DIR
                           (-o may then be omitted)
  --nvcc PATH              nvcc to use (default $CUDA_HOME/bin/nvcc, /usr/local/cuda/bin/nvcc,
                           else nvcc on PATH)
  --host-cc CC             host C compiler, e.g. aarch64-linux-gnu-gcc (default $CC, else cc)
  --cache-dir DIR          nvcc output cache (default $XDG_CACHE_HOME/aotc, else ~/.cache/aotc);
                           keyed by the .cu source, nvcc --version, nvcc flags, CUTLASS version
  --no-cache               always run nvcc; read and write no cache
  --kernel-library DIR     a kernel library to read (repeatable): fatbins of CUTLASS 3.x kernels
                           compiled once, model-independent (default $AOTC_KERNEL_LIBRARY, else
                           <aotc's folder>/../share/aotc/kernels if it exists; made by
                           tools/build_kernel_library.sh); a kernel it holds is not compiled
  --add-to-kernel-library  compile each CUTLASS 3.x kernel alone and add it to the first
                           --kernel-library DIR
  --no-kernel-library      read no kernel library
  --cutlass-dir DIR        CUTLASS headers (DIR/cutlass/cutlass.h or DIR/include/...) for models
                           that need them (default $CUTLASS_DIR, else pip package nvidia-cutlass)
  -q, --quiet              no progress lines
  --version                print the version
  -h, --help               this text

aotc check lists every node the compiler cannot handle (one line each); exit 0 if the model
imports, 2 otherwise.

examples:
  aotc resnet50.onnx -o libresnet50.so --report report.json
  aotc bert.onnx -o out/libbert.so --name bert --input-shape input_ids:1x128 \
       --input-shape attention_mask:1x128
  aotc model.onnx -o libmodel.so --arch sm_90,sm_87 --host-cc aarch64-linux-gnu-gcc
  aotc model.onnx -o libmodel.so --dump-after all --dump-dir dumps/
  aotc check model.onnx
)";
}

std::string run_usage() {
  return R"(usage: aotc-run libNAME.so [INPUT_FILE ...] [options]

Loads a library made by aotc (dlopen), runs it once on the GPU with the given or seeded random
inputs, writes and/or compares the outputs, and optionally benchmarks it. Needs only the NVIDIA
driver (libcuda.so.1, opened at run time). Exit codes: 0 pass, 1 mismatch, 2 error (including
"no GPU").

options:
  --name PREFIX        ABI prefix (default from the file name like aotc: libNAME.so -> NAME)
  --input NAME=FILE    an input from an ONNX TensorProto (.pb) or NumPy (.npy) file; NAME may
                       also be the input's index. Positional FILEs are taken by index.
  --seed N             seed of the random inputs for inputs not given (default 1): floats
                       uniform in [-1, 1), integers in [1, 4], bools random
  --output-dir DIR     write each output as DIR/output_K.pb and DIR/output_K.npy
  --expect FILE        expected output (.pb/.npy), repeat in output order
  --expect-dir DIR     ONNX test_data_set layout: expected DIR/output_K.pb; if no input is given,
                       the inputs are DIR/input_K.pb
  --atol X, --rtol X   per-element tolerance |got-ref| <= atol + rtol*|ref| for floating outputs
                       (default fp32 1e-5/1e-4, fp16 2.5e-3/1e-3; integers and bools exact)
  --model-metric       pass when relative L2 error < 1e-4 and max abs error < 1e-3 * max|ref|
                       (the whole-model metric) instead of per element
  --bench N            after the checked run: warm-up, then N runs timed with CUDA events;
                       prints median/p90/p99 in ms
  --warmup N           warm-up runs before --bench (default 10)
  --json FILE          machine-readable results (comparisons, timings)
  --profile            after the checked run (and --bench): per-step GPU times through the
                       library's profiling extension (launches without CUDA graphs, CUDA events
                       around every kernel, cuBLASLt matmul and copy): per step label, kind, median
                       ms, share of the total, GFLOP, TFLOP/s, MB, GB/s (FLOPs and bytes computed
                       by aotc at compile time), the top steps and a summary by kind. A library
                       without the extension (built by an older aotc) is an error (exit 2)
  --profile-iters N    profiled runs after 2 warm-up ones; medians per step (default 20)
  --profile-top N      steps shown in the table (default 15; the JSON has every step)
  --profile-json FILE  the profile as JSON (implies --profile)
  --device N           CUDA device ordinal (default 0)
  --info               print the library's inputs, outputs and sizes (no GPU needed)
  -q, --quiet          print only failures and the summary
  -h, --help           this text
NaN and Inf positions must match. Outputs are filled with 0xFF bytes before the run, so
elements the library does not write show up as mismatches.

examples:
  aotc-run libresnet50.so --input input=x.npy --expect ref.npy --model-metric
  aotc-run libconv.so --expect-dir test_data_set_0
  aotc-run libresnet50.so --bench 200 --json bench.json
  aotc-run libresnet50.so --profile --profile-top 20 --profile-json profile.json
)";
}

}  // namespace aotc
