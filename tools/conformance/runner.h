// The conformance runner: discovers node tests, runs each in a forked child with a timeout (a
// crash or hang is a failed test, never the end of the run), and classifies the outcome as
// passed, failed (with the first mismatch) or unsupported (with the import/lowering reason).
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "tools/conformance/model_info.h"

namespace aotc::conformance {

struct TestCase {
  std::string name;  // folder name, "test_relu"
  std::string dir;
  std::string op;    // primary_op()
  ModelInfo info;
  std::string info_error;  // model.onnx unreadable (then the test is failed)
  std::vector<std::string> data_sets;  // test_data_set_N folders, in numeric order
};

struct TestResult {
  std::string name, op, status, detail, exclusion;  // status: passed / failed / unsupported / not run
  std::vector<std::string> ops;
  double seconds = 0;
  double build_seconds = 0, run_seconds = 0;  // --gpu: aotc + nvcc + host cc, and create + run
};

struct RunOptions {
  bool gpu = false;
  bool compile_only = false;        // --gpu without running: a built .so counts as passed
  int jobs = 1;
  double timeout_s = 120;
  std::string workdir;              // per-test scratch (models with constants, .so files, logs)
  bool keep = false;                // keep per-test scratch folders
  std::vector<std::string> archs;   // --gpu: nvcc archs
  std::string nvcc, cuda_include_dir;
  double deadline_s = 0;            // > 0: no test starts after this many seconds (see run_tests)
  // > 0: persistent worker processes run the tests (--gpu: the libraries the per-test children
  // built, each worker holding one CUDA context on worker_devices[w % size], so no test pays for
  // a context; --cpu: the whole test). 0: one forked child per test does everything.
  int workers = 0;
  std::vector<std::string> worker_devices;  // CUDA_VISIBLE_DEVICES of each worker ("" = inherit)
  // Internal: which part of a test execute_test does (the pipelined runner splits --gpu tests).
  enum class Phase { kAll, kBuild, kRun } phase = Phase::kAll;
};

// Every test folder under data_dir (sorted), with model info and primary op filled in.
std::vector<TestCase> discover_tests(const std::string& data_dir);

// Runs one test in the current process (the child calls this).
TestResult execute_test(const TestCase& test, const RunOptions& options);

// Runs `tests` with options.jobs children at a time; calls on_done as each finishes (in the
// parent, in completion order); returns results in the order of `tests`. At options.deadline_s,
// or on SIGTERM / SIGINT (a caller's `timeout`), the tests still running are stopped and they and
// the tests not started get status "not run", so the results of a cut run are still written.
std::vector<TestResult> run_tests(const std::vector<TestCase>& tests, const RunOptions& options,
                                  const std::function<void(const TestResult&)>& on_done);

// Runs probe_gpu in a forked child so the parent never initialises CUDA before forking.
Status probe_gpu_in_child(std::string* arch);

}  // namespace aotc::conformance
