// The host half of a generated library, all plain C: <prefix>_model.c (arena and weight offsets as
// named constants, the kernel / matmul / copy tables, the launch order, input and output tables,
// and the exported prefixed ABI wrapping runtime/aotc_runtime.c), the public header <prefix>.h
// (ABI, threading promise, shapes as comments) and <prefix>_blobs.S (fatbin and weight blob
// embedded with .incbin, never as C arrays, so compile time does not grow with the weights).
#pragma once

#include <string>
#include <vector>

#include "codegen/launch_program.h"

namespace aotc {

struct HostSourceInfo {
  std::string prefix;                 // valid C identifier
  std::vector<std::string> archs;
  std::string aotc_version;
  std::string model_hash;
  std::string model_name;
  int device_files = 1;               // number of .cu / .fatbin files
  bool tune_matmuls = false;          // the library times cuBLASLt candidates at create (--tune-matmuls)
};

struct HostSources {
  std::string model_c;   // <prefix>_model.c
  std::string header;    // <prefix>.h
  std::string blobs_s;   // <prefix>_blobs.S (includes every <prefix>_devN.fatbin and <prefix>_weights.bin)
};

// File names used by the generated sources, the build and the Makefile.
std::string model_c_file(const std::string& prefix);
std::string header_file(const std::string& prefix);
std::string blobs_file(const std::string& prefix);
std::string fatbin_file(const std::string& prefix, int index);
std::string weights_file(const std::string& prefix);
std::string cuda_file(const std::string& prefix, int index);

HostSources render_host_sources(const LaunchProgram& program, const Graph& graph,
                                const HostSourceInfo& info);

}  // namespace aotc
