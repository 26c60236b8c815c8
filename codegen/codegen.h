// From a planned Graph to a shared library: renders templates/ into one CUDA source (one kernel
// per fused group), compiles it with nvcc into a fatbin for every --arch, writes the host code
// (plain C: driver-API launch sequence, cuBLASLt calls, arena offsets, the C ABI from runtime/),
// embeds the fatbin and the weight blob with assembler .incbin, and links libNAME.so with the host
// compiler. External programs run with a fixed argument vector, never through a shell. The
// output file appears only when everything succeeded (written to a temp name, then renamed).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/host_params.h"
#include "codegen/host_source.h"
#include "codegen/launch_program.h"
#include "codegen/pdl_mode.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/status.h"
#include "opt/memory_plan.h"

namespace aotc {

struct CodegenOptions {
  std::string name;                        // ABI prefix, [A-Za-z_][A-Za-z0-9_]*
  std::vector<std::string> archs{"sm_90"};  // e.g. sm_87, sm_90
  std::string output_path;                 // the .so to write (may be empty with emit_source_dir)
  std::string emit_source_dir;             // if set: write sources, blobs and a Makefile here
  std::string nvcc = "nvcc";               // found from CUDA_HOME or /usr/local/cuda by the CLI
  std::string cuda_include_dir;            // for cuda.h / cublasLt.h headers used by host code
  std::string host_cc = "cc";              // host C compiler (a cross compiler for Jetson)
  // CUTLASS include dir (codegen/cutlass_dir.h finds it); when set, nvcc gets -I<dir>. A model
  // whose templates include CUTLASS fails with a one-line error when it is empty.
  std::string cutlass_include_dir;
  // nvcc output cache (codegen/kernel_cache.h); "" = no cache (--no-cache).
  std::string kernel_cache_dir;
  // Kernel libraries: read-only folders in the cache's format holding fatbins of heavy (CUTLASS
  // 3.x) kernels, each compiled alone from a file that names nothing of a model
  // (codegen/device_source.h: kernel_library_file), e.g. the one tools/build_kernel_library.sh
  // installs. A heavy kernel a library holds gets that file of its own and its fatbin is copied
  // instead of compiled; the others are compiled together as before. With
  // add_to_kernel_library, every heavy kernel gets a file of its own and the fatbins compiled for
  // them are added to the first folder (a build that populates the library).
  std::vector<std::string> kernel_library_dirs;
  bool add_to_kernel_library = false;
  std::string model_hash;                  // provenance: hash of the model file
  std::string aotc_version;
  std::function<void(const std::string&)> progress;  // one line per long step
  const OpRegistry* registry = nullptr;    // lowering source; nullptr = default_registry() (tests)
  // Templates by name (the text of a .cu.in) looked up before the embedded templates/: kernels
  // written outside aotc's tree (tests, experiments).
  std::map<std::string, std::string> extra_templates;
  // Programmatic dependent launch (templates/common.cuh): kOff launches every kernel plainly,
  // kWait lets a kernel be scheduled once its predecessor's blocks have exited (it waits for the
  // predecessor's memory flush in griddepcontrol.wait), kEarly also signals its own dependents at
  // its start (griddepcontrol.launch_dependents), so they are scheduled while it runs.
  PdlMode pdl = PdlMode::kOff;  // measured neutral on an H100 (docs/perf_notes.md v8)
  // The library times up to 8 cuBLASLt candidates per matmul at create() and keeps the fastest
  // (runtime/aotc_rt_tune.c). kAuto (default): on for convolution networks (more Conv nodes than
  // Gemm/MatMul nodes: their GEMMs are convolutions), off otherwise. Measured on ResNet-50 and
  // MobileNetV2 (docs/perf_notes.md v8, v10; H100 and H200): 4-7% faster at batch 32, -0.3% to
  // +4% at batch 1; 1-7% slower on transformers (v8).
  enum class TuneMatmuls { kOff, kOn, kAuto };
  TuneMatmuls tune_matmuls = TuneMatmuls::kAuto;
  // Compile and run the compile-time params builder of host-params kernels (codegen/host_params.h)
  // while rendering. Off only where nothing is compiled (the fuzz harnesses): their kernels then
  // carry no params and the library could not be created.
  bool run_host_params_builder = true;
};

struct CodegenStats {
  int kernels = 0;             // __global__ functions emitted
  int matmul_calls = 0;        // cuBLASLt calls in the launch sequence
  int64_t weight_bytes = 0;    // size of the embedded weight blob
  double render_seconds = 0;   // template rendering and host code generation
  double nvcc_seconds = 0;
  bool cache_enabled = false;  // a cache dir was given and `nvcc --version` ran
  int cache_hits = 0;          // device files whose fatbin came from the cache
  int cache_misses = 0;        // device files compiled by nvcc
  int library_hits = 0;        // device files whose fatbin came from a kernel library
  int library_added = 0;       // fatbins added to the kernel library (add_to_kernel_library)
  double host_cc_seconds = 0;
  // The compile-time params builder (codegen/host_params.h): compile (or cache hit) and run.
  int host_params_kernels = 0;
  bool host_params_cache_hit = false;
  int host_params_library_hits = 0;   // builder programs copied from a kernel library
  int host_params_library_added = 0;  // builder programs added to it
  double host_params_seconds = 0;
  // The launch sequence, one entry per step as the profiling extension numbers them: its label,
  // kind ("kernel", "matmul", "copy"), the function a kernel step launches (an identical earlier
  // kernel's when they share one; "cublasLt" / "memcpy" otherwise), and the node and op type it
  // computes ("" for an output copy). Tools match profiles and kernel traces to steps with it.
  struct Step {
    std::string label, kind, function, node, op;
  };
  std::vector<Step> steps;
};

// Everything compile_library writes before it runs nvcc, rendered in memory: the launch program
// (with the weight blob), one CUDA source per device file and the host sources. Fails like
// compile_library on a bad --name / --arch, a lowering that cannot be built, or a model that needs
// CUTLASS headers when none are given. Nothing is written or run (the fuzz harnesses use it),
// except that with run_host_params_builder (the default) a model with host-params kernels gets
// its compile-time params builder compiled and run in a temp directory (codegen/host_params.h).
struct LibrarySources {
  std::string prefix;                   // the ABI prefix
  LaunchProgram program;
  std::vector<std::string> device;      // <prefix>_devN.cu
  std::vector<bool> needs_cutlass;      // per device file
  HostSources host;
  HostParamsStats host_params;          // the compile-time params builder's run
};
Expected<LibrarySources> render_library_sources(const Graph& graph, const MemoryPlan& plan,
                                                const CodegenOptions& options);

// The headers written beside the device sources (templates/library_params.cuh) that `source`
// includes, each as its name and text: part of the kernel-cache key, so a fatbin compiled against
// another version of such a header is never reused.
std::string included_device_headers(const std::string& source);

Expected<CodegenStats> compile_library(const Graph& graph, const MemoryPlan& plan,
                                       const CodegenOptions& options);

}  // namespace aotc
