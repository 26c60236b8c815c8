// Shared by the libFuzzer harnesses (docs/reliability.md, "Fuzzing"): a private scratch folder per
// process, the import options every harness uses, the compile up to the rendered source (what
// `aotc` does before nvcc and the host compiler), and the check that a failure is a proper error.
#pragma once

#include <string>

#include "frontend/onnx_loader.h"
#include "ir/graph.h"
#include "ir/status.h"

namespace aotc::fuzz {

// A fresh folder under $TMPDIR (default /tmp), created on the first call for `tag` and removed with
// everything in it when the process exits normally.
const std::string& scratch_dir(const std::string& tag);

// The CLI's defaults, except two totals: folded constants 256 MiB instead of 2 GiB, so that no
// input can legitimately reach libFuzzer's memory limit, and folding work 2^25 instead of 2^31, so
// that none legitimately nears the 10 s per input under the sanitizers (the caps themselves are
// tested at their values in tests/frontend/limits_test.cc and tests/opt/fold_constants_test.cc).
ImportOptions import_options();

// A message must name something: an empty one, or one a caller would read as an aotc bug
// ("internal", a pass leaving an invalid graph), aborts so libFuzzer records the input.
void require_proper_error(const Status& status, const char* stage);

// run_pipeline (verify after every pass), plan_memory and render_library_sources for sm_90 with
// the given precision ("fp32", "fp16", "bf16"); no file is written and nothing is compiled.
Status compile_to_source(Graph& graph, const std::string& precision);

}  // namespace aotc::fuzz
