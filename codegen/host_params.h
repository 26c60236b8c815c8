// The compile-time params builder of host-params library kernels (KernelStep::host_params):
// CUTLASS 3.x sm90 kernels take a params struct that only CUTLASS's host code builds, holding TMA
// descriptors made by the driver's encoders. aotc builds it when the model is compiled: one host
// program per model (templates/host_params.cuh + every such function's template rendered with
// AOTC_HOST_PARAMS), compiled by nvcc on this machine (no GPU or driver needed: the encoders are
// intercepted and recorded), kept in the kernel cache like the fatbins, run once on the builder
// arguments of every host-params kernel. Its output fills ProgramKernel::prebuilt and
// ::tensor_maps, which the host source embeds (runtime: aotc_rt_kernel::prebuilt).
#pragma once

#include <string>
#include <vector>

#include "codegen/launch_program.h"
#include "ir/status.h"

namespace aotc {

struct CodegenOptions;

struct HostParamsStats {
  int kernels = 0;          // host-params kernels (launches) resolved
  int programs = 0;         // host programs run (one, plus one per kernel-library kernel's own)
  bool compiled = false;    // a host program was compiled (false: none needed, or all hits)
  bool cache_hit = false;   // every program came from the cache or a kernel library
  int library_hits = 0;     // programs copied from a kernel library
  int library_added = 0;    // programs added to the kernel library (add_to_kernel_library)
  double seconds = 0;       // compile + run
};

// The host program's source: the harness, then each distinct host-params function's template.
// Empty when the program has no host-params kernel. The overloads taking kernels build the program
// of those kernels only (a kernel-library kernel's own program: build_host_params).
std::string host_params_program_source(const LaunchProgram& program);
std::string host_params_program_source(const std::vector<const ProgramKernel*>& kernels);

// The input the host program reads: one line per host-params kernel (function, pointer count,
// builder args), in program order.
std::string host_params_program_input(const LaunchProgram& program);
std::string host_params_program_input(const std::vector<const ProgramKernel*>& kernels);

// Parses the host program's output into the host-params kernels, in program order: each kernel's
// header + params bytes (checked: magic, status 0, sizes) and tensor maps (checked: an offset
// inside the struct, 64-byte aligned; an argument that exists and lives in the arena or the
// weights, whose addresses are fixed at create).
Status parse_host_params_output(const std::string& text, LaunchProgram& program);
Status parse_host_params_output(const std::string& text, const std::vector<ProgramKernel*>& kernels);

// The CUTLASS 3.x kernels also include cutlass/util/packed_stride.hpp from tools/util/include
// beside the headers (codegen/cutlass_dir.h): a one-line error naming it when a program with
// host-params kernels would not find it (nvcc's own error is pages long).
Status check_host_params_headers(const LaunchProgram& program, const std::string& cutlass_include_dir);

// Compiles (or fetches from options.kernel_cache_dir) and runs the host program, then parses its
// output. A no-op for a program without host-params kernels. With kernel libraries
// (CodegenOptions::kernel_library_dirs), a kernel-library kernel whose own program a library holds
// gets that program, copied; with add_to_kernel_library every such kernel's program is compiled
// alone and added. The other kernels share one program, as without a library.
Expected<HostParamsStats> build_host_params(LaunchProgram& program, const CodegenOptions& options);

}  // namespace aotc
