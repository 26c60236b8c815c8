// Opening a library made by aotc: dlopen it and resolve the prefixed C ABI of docs/abi.md.
// Introspection (names, dtypes, shapes, sizes) needs no GPU, so `aotc-run --info` and the tests
// use it on machines without one. The handle stays open for the life of the process.
#pragma once

#include <string>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace aotc {

struct AbiTensorInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;
  uint64_t bytes = 0;
};

struct AbiLibrary {
  using Model = struct AbiModelOpaque;
  std::string path, prefix;
  std::vector<AbiTensorInfo> inputs, outputs;
  uint64_t arena_bytes = 0, weight_bytes = 0;

  int (*create)(Model** out, int device, void* workspace, const Model* share_weights_with) = nullptr;
  void (*destroy)(Model* model) = nullptr;
  int (*run)(Model* model, const void* const* inputs, void* const* outputs, void* stream) = nullptr;
  int (*run_host)(Model* model, const void* const* inputs, void* const* outputs) = nullptr;
  const char* (*last_error)(const Model* model) = nullptr;

  // The optional profiling extension (docs/abi.md); all null when the library lacks it (built by
  // an aotc without it), all set otherwise.
  int (*profile_num_steps)() = nullptr;
  const char* (*profile_step_label)(int i) = nullptr;
  const char* (*profile_step_kind)(int i) = nullptr;
  unsigned long long (*profile_step_flops)(int i) = nullptr;
  unsigned long long (*profile_step_bytes)(int i) = nullptr;
  int (*profile_run)(Model* model, const void* const* inputs, void* const* outputs, void* stream,
                     float* step_ms) = nullptr;
  bool has_profile() const { return profile_run != nullptr; }
};

// `path` without a '/' is taken relative to the current directory (never searched on
// LD_LIBRARY_PATH). Errors name the missing symbol and suggest --name when the prefix is wrong.
Expected<AbiLibrary> open_abi_library(const std::string& path, const std::string& prefix);

// "input 'x': float[1x3x224x224] (602112 bytes)"
std::string describe_tensor(const AbiTensorInfo& info);

}  // namespace aotc
