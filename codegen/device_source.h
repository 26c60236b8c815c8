// The device half of a generated library: one .cu file with a date-free provenance header (aotc
// version, model hash), templates/common.cuh, then one rendered template per kernel step, each
// preceded by a comment naming the ONNX node it covers and its shapes (all model text sanitized).
#pragma once

#include <string>

#include "codegen/launch_program.h"
#include "ir/status.h"

namespace aotc {

struct DeviceSourceInfo {
  std::string aotc_version;
  std::string model_hash;
  std::string model_name;
};

Expected<std::string> render_device_source(const LaunchProgram& program, const Graph& graph,
                                           const DeviceSourceInfo& info);

}  // namespace aotc
