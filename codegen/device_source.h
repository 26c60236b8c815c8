// The device half of a generated library: .cu files, each with a date-free provenance header (aotc
// version, model hash), templates/common.cuh, then one rendered template per distinct kernel, each
// preceded by a comment naming the ONNX nodes it covers and their shapes (all model text
// sanitized). Kernels whose rendered code is identical (same template, holes and shapes, e.g. the
// repeated blocks of a ResNet) are emitted once and launched under the first one's name. The
// distinct kernels are split over several files so nvcc can compile them in parallel, balanced by
// a rough compile cost per kernel (CUTLASS 3.x kernels weigh most); the split depends only on the
// model and on which of its heavy kernels an installed kernel library holds (those get a file of
// their own, after the others: DeviceSourceInfo::standalone), so builds with the same library are
// reproducible on any machine.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/pdl_mode.h"
#include "codegen/launch_program.h"
#include "ir/status.h"

namespace aotc {

struct DeviceSourceInfo {
  std::string aotc_version;
  std::string model_hash;
  std::string model_name;
  // Templates by name looked up before the embedded ones (CodegenOptions::extra_templates).
  const std::map<std::string, std::string>* extra_templates = nullptr;
  PdlMode pdl = PdlMode::kOff;
  // The kernel library (CodegenOptions::kernel_library_dirs): given the text of the file of its
  // own that a heavy (CUTLASS 3.x) kernel would get, says whether it is to get it - true where a
  // library holds that file's fatbin, or for every such kernel when the build adds to a library.
  // Other heavy kernels share one file as before (their headers are parsed once). Unset: none.
  std::function<bool(const std::string& file_source)> standalone = nullptr;
};

// The text of a kernel-library file: a fixed header, templates/common.cuh (`common`), the
// sub-16-bit helpers where the code calls them, and `code` (a kernel rendered under its library
// name, aotc_lib_<hash>, without node comments).
std::string kernel_library_file(const std::string& code, const std::string& common);
// Whether a device source is such a file (it starts with their header line).
bool is_kernel_library_file(const std::string& source);

// One .cu file per this many distinct kernels (at most kMaxDeviceFiles files); the balance by
// compile cost may give a file of light kernels more of them.
constexpr int kKernelsPerDeviceFile = 6;
constexpr int kMaxDeviceFiles = 16;

// Sets ProgramKernel::function and ::module of every kernel; returns one source per module.
Expected<std::vector<std::string>> render_device_sources(LaunchProgram& program, const Graph& graph,
                                                         const DeviceSourceInfo& info);

}  // namespace aotc
