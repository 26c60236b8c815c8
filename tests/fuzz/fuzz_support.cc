// See fuzz_support.h.
#include "tests/fuzz/fuzz_support.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>

#include "codegen/codegen.h"
#include "opt/memory_plan.h"
#include "opt/pipeline.h"

namespace aotc::fuzz {
namespace {

std::map<std::string, std::string>& scratch_dirs() {
  static std::map<std::string, std::string> dirs;
  return dirs;
}

void remove_scratch_dirs() {
  std::error_code ec;
  for (const auto& kv : scratch_dirs()) std::filesystem::remove_all(kv.second, ec);
}

}  // namespace

const std::string& scratch_dir(const std::string& tag) {
  auto& dirs = scratch_dirs();
  auto it = dirs.find(tag);
  if (it != dirs.end()) return it->second;
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/aotc-fuzz-" + tag + "-XXXXXX";
  if (!::mkdtemp(pattern.data())) {
    std::perror("aotc fuzz: mkdtemp");
    std::abort();
  }
  if (dirs.empty()) std::atexit(remove_scratch_dirs);
  return dirs[tag] = pattern;
}

ImportOptions import_options() {
  ImportOptions options;
  options.limits.max_folded_bytes = int64_t{256} << 20;
  // And the folding work: the CLI's 2^31 takes seconds in a release build, ten times that here.
  options.limits.max_fold_work = int64_t{1} << 25;
  // And the unrolled control flow: a Scan of 4,096 iterations of a 2-node body (8,192 nodes, within
  // the CLI's limits) took 10 s through the sanitized pipeline and codegen here, libFuzzer's
  // timeout; the caps themselves are tested at their values (tests/frontend/limits_test.cc).
  options.limits.max_loop_iterations = 256;
  options.limits.max_unrolled_nodes = 2048;
  return options;
}

// The message without its quoted parts: names from the model are quoted (escape_for_message
// backslash-escapes quotes and backslashes inside), and a name may say anything.
std::string outside_quotes(const std::string& m) {
  std::string out;
  bool quoted = false;
  for (size_t i = 0; i < m.size(); ++i) {
    if (quoted && m[i] == '\\') {
      ++i;
      continue;
    }
    if (m[i] == '\'') quoted = !quoted;
    else if (!quoted) out += m[i];
  }
  return out;
}

void require_proper_error(const Status& status, const char* stage) {
  if (status.is_ok()) return;
  const std::string m = outside_quotes(status.message());
  // "internal:" opens an invariant reported as an error (also after "pass NAME: " and a node's
  // name and op, whose characters a model cannot forge); "after pass" is a pass that left an
  // invalid graph. Only aotc's own text is matched: libFuzzer learns the compared strings and
  // writes them into names ("is internal to the compiler", for the aotc domain, is a refusal).
  static const std::regex kInternal("^(pass [a-z_0-9]+: )?(node  \\([A-Za-z0-9_.]*\\): )?internal");
  const bool improper = status.message().empty() || std::regex_search(m, kInternal) ||
                        m.rfind("after pass ", 0) == 0;
  if (!improper) return;
  std::fprintf(stderr, "aotc fuzz: %s: improper error: '%s'\n", stage, status.message().c_str());
  std::abort();
}

Status compile_to_source(Graph& graph, const std::string& precision) {
  graph.target = target_from_archs({"sm_90"});
  graph.target.precision.dtype = precision == "fp16"   ? DType::kFloat16
                                 : precision == "bf16" ? DType::kBFloat16
                                                       : DType::kFloat32;
  PipelineOptions pipeline;  // verify() after every pass, as the CLI does
  auto passes = run_pipeline(graph, pipeline);
  if (!passes) return passes.status();
  auto plan = plan_memory(graph);
  if (!plan) return plan.status();
  CodegenOptions options;
  options.name = "fuzz";
  options.archs = {"sm_90"};
  // A non-empty folder: models whose kernels include CUTLASS render like the others (the headers
  // are only read by nvcc, which does not run here).
  options.cutlass_include_dir = "/nonexistent/cutlass/include";
  options.model_hash = "0";
  options.aotc_version = "fuzz";
  options.run_host_params_builder = false;  // nvcc does not run here either
  auto sources = render_library_sources(graph, *plan, options);
  if (!sources) return sources.status();
  return Status::ok();
}

}  // namespace aotc::fuzz
