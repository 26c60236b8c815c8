// libFuzzer harness: raw bytes as an ONNX model file, through what `aotc check` and the compile's
// frontend do (parse the ModelProto, check the limits, import every node, infer shapes, fold
// constants, verify), from memory. The model's folder is an empty scratch folder, so external
// data references resolve to nothing. Both entries must agree: a model `aotc check` accepts
// loads, and a model that loads has no problem in `aotc check`.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aotc;
  static const std::string& dir = fuzz::scratch_dir("bytes");
  static const ImportOptions options = fuzz::import_options();
  std::vector<Status> problems = check_onnx_model_from_memory(data, size, dir, options);
  for (const Status& p : problems) fuzz::require_proper_error(p, "check");
  Expected<Graph> graph = load_onnx_model_from_memory(data, size, dir, options);
  fuzz::require_proper_error(graph.status(), "load");
  if (problems.empty() != graph.is_ok()) {
    std::fprintf(stderr, "aotc fuzz: check found %zu problem(s) (first: '%s') but load %s ('%s')\n",
                 problems.size(), problems.empty() ? "" : problems[0].message().c_str(),
                 graph.is_ok() ? "succeeded" : "failed", graph.status().message().c_str());
    std::abort();
  }
  return 0;
}
