// Compile a Graph into a .so through the same stages the aotc driver runs (run_pipeline ->
// plan_memory -> compile_library), then dlopen it and run it through the C ABI's host-pointer call
// (docs/abi.md). Shared by the conformance runner's --gpu mode and tests/gpu. Never touches CUDA
// in the calling process except inside run_library / probe_gpu (call those in a child process
// when the caller forks afterwards).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace aotc::conformance {

struct GpuBuildOptions {
  std::string output_path;          // the .so to write
  std::string name = "t";           // ABI prefix
  std::vector<std::string> archs;   // e.g. {"sm_90"}; empty = {"sm_90"}
  std::string nvcc;                 // empty = $CUDA_HOME/bin/nvcc or /usr/local/cuda/bin/nvcc
  std::string cuda_include_dir;     // empty = next to nvcc's ../include
  // The SM count the strategy rules plan for instead of the arch table's (0 = the table's): a test
  // makes small problems take a rule meant for a full GPU (e.g. the persistent int8 GEMM's
  // one-wave floor), whose persistent grid then loops over several tiles a CTA.
  int sm_count = 0;
};

// Why a build did not happen: kUnsupported = an op has no GPU lowering or its lowering refused
// the node (the reason says which); kFailed = any other stage failed (a bug, not a gap).
struct BuildOutcome {
  enum class Kind { kBuilt, kUnsupported, kFailed };
  Kind kind = Kind::kFailed;
  std::string message;
};

// Runs the pipeline on `graph` (modified in place) and writes options.output_path.
BuildOutcome build_library(Graph& graph, const GpuBuildOptions& options);

// dlopens `so_path`, creates a handle on device 0, runs once per entry of `runs` (each a map
// from input name to tensor), returns the outputs of each run in the library's output order
// with their names. Host output buffers are filled with 0xFF (NaN for floats) before each run,
// so an output the library never copies back shows as a mismatch.
struct LibraryOutputs {
  std::vector<std::string> names;
  std::vector<std::vector<Tensor>> runs;  // runs[r][k]: output k of run r
};
Expected<LibraryOutputs> run_library(const std::string& so_path, const std::string& name,
                                     const std::vector<std::map<std::string, Tensor>>& runs);

// Whether a usable CUDA GPU is present (dlopen libcuda.so.1, cuInit, device count); on success
// sets `arch` to device 0's "sm_XY". The message says what is missing.
Status probe_gpu(std::string* arch);

// nvcc and the CUDA include folder as the options resolve them (for messages and defaults).
std::string default_nvcc();

// For a process that runs many libraries one after another (aotc-conformance's GPU workers):
// initialises the driver and retains device 0's primary context for the life of the process, and
// pins libcublasLt, so each library's create/destroy reuses them instead of creating the context
// (hundreds of milliseconds, serialised in the driver across processes) every time. Best effort:
// a failure here only means each library sets itself up as usual.
void hold_gpu_context();

}  // namespace aotc::conformance
