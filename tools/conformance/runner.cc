// Test discovery, one test's execution (CPU reference or compiled .so) and the fork-per-test
// scheduler. A child writes its result to a file in its scratch folder; the parent reads it after
// waitpid, so a child that crashes or hangs still yields a (failed) result.
#include "tools/conformance/runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "frontend/onnx_loader.h"
#include "frontend/tensor_file.h"
#include "ir/evaluator.h"
#include "tools/conformance/compare.h"
#include "tools/conformance/gpu_exec.h"

namespace fs = std::filesystem;

namespace aotc::conformance {
namespace {

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return s;
}

TestResult make_result(const TestCase& test, const std::string& status, const std::string& detail) {
  TestResult r;
  r.name = test.name;
  r.op = test.op;
  r.ops = test.info.op_types;
  r.exclusion = test.info.exclusion;
  r.status = status;
  r.detail = one_line(detail);
  return r;
}

int count_files(const std::string& dir, const std::string& prefix) {
  int n = 0;
  while (fs::exists(dir + "/" + prefix + std::to_string(n) + ".pb")) ++n;
  return n;
}

// True when `got` and `want` (bfloat16, same shape) differ somewhere and every difference is one
// unit in the last place: the signature of truncated expected data against our round-to-nearest.
bool differs_by_one_bf16_ulp(const Tensor& got, const Tensor& want) {
  if (got.dtype() != DType::kBFloat16 || want.dtype() != DType::kBFloat16 || got.shape() != want.shape())
    return false;
  bool any = false;
  for (int64_t i = 0; i < want.numel(); ++i) {
    uint16_t g, w;
    std::memcpy(&g, got.raw() + i * 2, 2);
    std::memcpy(&w, want.raw() + i * 2, 2);
    if (g == w) continue;
    if ((g ^ w) & 0x8000 || (g > w ? g - w : w - g) != 1) return false;
    any = true;
  }
  return any;
}

// One data set: import (with shape-deciding inputs bound as constants), run, compare.
// The build phase's result of a test whose libraries are ready for a worker to run.
const char* const kBuiltNotRun = "built; to be run by a worker";

// Time spent building and running the libraries of the test this (forked) process executes.
double g_build_seconds = 0, g_run_seconds = 0;

TestResult run_data_set(const TestCase& test, const std::string& ds, const RunOptions& options,
                        const std::string& scratch, int index) {
  const ModelInfo& info = test.info;
  const std::string ds_dir = test.dir + "/" + ds;
  const int n_in = count_files(ds_dir, "input_"), n_out = count_files(ds_dir, "output_");
  if (n_in != static_cast<int>(info.input_names.size()))
    return make_result(test, "failed", ds + ": " + std::to_string(n_in) + " input files for " +
                                           std::to_string(info.input_names.size()) + " model inputs");
  // Attempt 1 binds the shape-deciding inputs; if the import refuses an attribute-like input
  // at run time (Clip's min, ...), attempt 2 binds those too.
  Expected<Graph> graph = Status::error("not imported");
  std::map<std::string, Tensor> feeds;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::vector<int> bound = info.constant_inputs;
    if (attempt == 1) {
      if (info.attribute_inputs.empty()) break;
      bound.insert(bound.end(), info.attribute_inputs.begin(), info.attribute_inputs.end());
    }
    std::string model_path = test.dir + "/model.onnx";
    std::vector<std::string> const_names, const_files;
    for (int i : bound) {
      const_names.push_back(info.input_names[i]);
      const_files.push_back(ds_dir + "/input_" + std::to_string(i) + ".pb");
    }
    if (!const_names.empty()) {
      model_path = scratch + "/model_" + std::to_string(index) + "_" + std::to_string(attempt) + ".onnx";
      Status s = write_model_with_constants(test.dir + "/model.onnx", const_names, const_files, model_path);
      if (!s) return make_result(test, "failed", "binding constant inputs: " + s.message());
    }
    ImportOptions import;
    feeds.clear();
    for (int i = 0; i < n_in; ++i) {
      if (std::count(bound.begin(), bound.end(), i)) continue;
      Expected<Tensor> t = load_tensor_pb(ds_dir + "/input_" + std::to_string(i) + ".pb");
      if (!t)
        return make_result(test, "unsupported", "input_" + std::to_string(i) + ".pb: " + t.status().message());
      if (!info.input_static[i]) import.input_shapes[info.input_names[i]] = t->shape();
      feeds.emplace(info.input_names[i], as_declared_bfloat16(std::move(*t), info.input_elem_types[i]));
    }
    Expected<Graph> attempt_graph = load_onnx_model(model_path, import);
    if (attempt == 0 || attempt_graph.is_ok()) graph = std::move(attempt_graph);
    if (graph.is_ok()) break;
  }
  if (!graph) return make_result(test, "unsupported", graph.status().message());

  std::vector<std::string> out_names;
  std::vector<Tensor> outs;
  if (!options.gpu) {
    std::vector<Tensor> ins;
    for (ValueId id : graph->inputs) {
      auto it = feeds.find(graph->value(id).name);
      if (it == feeds.end())
        return make_result(test, "failed", "imported graph input '" + graph->value(id).name + "' has no test data");
      ins.push_back(it->second);
    }
    Expected<std::vector<Tensor>> got = evaluate_graph(*graph, ins);
    if (!got) return make_result(test, "failed", "reference: " + got.status().message());
    for (ValueId id : graph->outputs) out_names.push_back(graph->value(id).name);
    outs = std::move(*got);
  } else {
    GpuBuildOptions build;
    build.output_path = scratch + "/libt" + std::to_string(index) + ".so";
    build.archs = options.archs;
    build.nvcc = options.nvcc;
    build.cuda_include_dir = options.cuda_include_dir;
    if (options.phase != RunOptions::Phase::kRun) {
      const auto build_start = std::chrono::steady_clock::now();
      BuildOutcome b = build_library(*graph, build);
      g_build_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - build_start).count();
      if (b.kind == BuildOutcome::Kind::kUnsupported) return make_result(test, "unsupported", b.message);
      if (b.kind == BuildOutcome::Kind::kFailed) return make_result(test, "failed", b.message);
      if (options.compile_only) {
        TestResult r = make_result(test, "passed", "built, not run (--compile-only)");
        if (!options.keep) fs::remove(build.output_path);
        return r;
      }
      if (options.phase == RunOptions::Phase::kBuild) return make_result(test, "passed", kBuiltNotRun);
    }
    const auto run_start = std::chrono::steady_clock::now();
    Expected<LibraryOutputs> got = run_library(build.output_path, build.name, {feeds});
    g_run_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    if (!got) return make_result(test, "failed", "run: " + got.status().message());
    out_names = got->names;
    outs = std::move(got->runs[0]);
  }
  if (n_out != static_cast<int>(info.output_names.size()))
    return make_result(test, "failed", ds + ": " + std::to_string(n_out) + " output files for " +
                                           std::to_string(info.output_names.size()) + " model outputs");
  for (int k = 0; k < n_out; ++k) {
    auto pos = std::find(out_names.begin(), out_names.end(), info.output_names[k]);
    if (pos == out_names.end())
      return make_result(test, "failed", "output '" + info.output_names[k] + "' missing from the result");
    Expected<Tensor> want = load_tensor_pb(ds_dir + "/output_" + std::to_string(k) + ".pb");
    if (!want) return make_result(test, "failed", "output_" + std::to_string(k) + ".pb: " + want.status().message());
    const Tensor expected = as_declared_bfloat16(*want, info.output_elem_types[k]);
    const Tensor& result = outs[pos - out_names.begin()];
    CompareResult c = compare_tensors(result, expected);
    if (!c.ok && differs_by_one_bf16_ulp(result, expected))
      c.message += "; every difference is 1 bf16 ulp: the expected data was made by truncation, aotc rounds to "
                   "nearest even (as later ONNX does)";
    if (!c.ok)
      return make_result(test, "failed", ds + " output " + std::to_string(k) + " '" +
                                             info.output_names[k] + "': " + c.message);
  }
  return make_result(test, "passed", "");
}

void write_result_file(const std::string& path, const TestResult& r) {
  std::ofstream out(path);
  out << r.status << "\n" << r.detail << "\n" << r.build_seconds << " " << r.run_seconds << "\n";
}

bool read_result_file(const std::string& path, TestResult& r) {
  std::ifstream in(path);
  std::string status, detail;
  if (!std::getline(in, status)) return false;
  std::getline(in, detail);
  if (status != "passed" && status != "failed" && status != "unsupported") return false;
  r.status = status;
  r.detail = detail;
  std::string times;
  if (std::getline(in, times)) {
    std::istringstream t(times);
    t >> r.build_seconds >> r.run_seconds;
  }
  return true;
}

// The end of a child's log, for a crash or timeout message (the scratch folder may be removed).
std::string log_tail(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.size() > 300) text = "..." + text.substr(text.size() - 300);
  return text.empty() ? "" : "; log: " + one_line(text);
}

struct Child {
  size_t index;
  pid_t pid;
  std::chrono::steady_clock::time_point start;
  std::string scratch;
};

}  // namespace

std::vector<TestCase> discover_tests(const std::string& data_dir) {
  std::vector<TestCase> tests;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(data_dir, ec)) {
    if (!entry.is_directory() || !fs::exists(entry.path() / "model.onnx")) continue;
    TestCase t;
    t.name = entry.path().filename().string();
    t.dir = entry.path().string();
    Expected<ModelInfo> info = read_model_info(t.dir + "/model.onnx");
    if (info) t.info = *info;
    else t.info_error = info.status().message();
    for (int n = 0; fs::is_directory(t.dir + "/test_data_set_" + std::to_string(n)); ++n)
      t.data_sets.push_back("test_data_set_" + std::to_string(n));
    tests.push_back(std::move(t));
  }
  std::sort(tests.begin(), tests.end(), [](const TestCase& a, const TestCase& b) { return a.name < b.name; });
  std::set<std::string> known;
  for (const TestCase& t : tests) known.insert(t.info.op_types.begin(), t.info.op_types.end());
  std::map<std::string, std::string> label;
  for (TestCase& t : tests) label[t.name] = t.op = primary_op(t.name, t.info, known);
  // An expanded test exercises the same op as its base test (test_mvn_expanded: the function
  // body of MeanVarianceNormalization), whatever ops its body uses.
  const std::string kExpanded = "_expanded";
  for (TestCase& t : tests) {
    if (t.name.size() <= kExpanded.size() ||
        t.name.compare(t.name.size() - kExpanded.size(), kExpanded.size(), kExpanded) != 0)
      continue;
    auto base = label.find(t.name.substr(0, t.name.size() - kExpanded.size()));
    if (base != label.end()) t.op = base->second;
  }
  return tests;
}

TestResult execute_test(const TestCase& test, const RunOptions& options) {
  if (!test.info_error.empty()) return make_result(test, "failed", test.info_error);
  if (test.data_sets.empty()) return make_result(test, "failed", "no test_data_set_N folder");
  const std::string scratch = options.workdir + "/" + test.name;
  fs::create_directories(scratch);
  TestResult last;
  g_build_seconds = g_run_seconds = 0;
  for (size_t i = 0; i < test.data_sets.size(); ++i) {
    last = run_data_set(test, test.data_sets[i], options, scratch, static_cast<int>(i));
    if (last.status != "passed") break;
  }
  last.build_seconds = g_build_seconds;
  last.run_seconds = g_run_seconds;
  return last;
}

static volatile sig_atomic_t g_stop_requested = 0;
static void request_stop(int) { g_stop_requested = 1; }

namespace {

// fork() for a child in a process group of its own (a timeout's kill of the group also ends nvcc
// and the host compiler) with default SIGTERM / SIGINT / SIGPIPE handling; the parent's buffered
// output is flushed first so the child cannot write it again. As fork(): the pid, 0 in the child.
pid_t fork_own_group() {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    setpgid(0, 0);
  }
  return pid;
}

// Forks the child that executes `test` (all of it, or options.phase) in its scratch folder: own
// process group (a timeout also ends nvcc and the host compiler), output to child.log, the
// result to result.txt. `close_fds` are descriptors the child must not keep (workers' pipes).
// Returns the pid, or -1 when fork failed.
pid_t fork_test_child(const TestCase& test, const std::string& scratch, const RunOptions& options,
                      const std::vector<int>& close_fds) {
  fs::create_directories(scratch);
  fs::remove(scratch + "/result.txt");
  fs::remove(scratch + "/result_run.txt");
  pid_t pid = fork_own_group();
  if (pid == 0) {
    for (int fd : close_fds) close(fd);
    int log = open((scratch + "/child.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
    }
    TestResult r = execute_test(test, options);
    write_result_file(scratch + "/result.txt", r);
    _exit(0);
  }
  if (pid > 0) setpgid(pid, pid);
  return pid;
}

// The child's result once it has exited or outlived options.timeout_s (then it is killed);
// nullopt while it runs. `phase` ("building", or "" for a whole test) names where it stopped.
std::optional<TestResult> reap_test_child(const Child& child, const TestCase& test, const RunOptions& options,
                                          const std::string& phase) {
  int status = 0;
  pid_t done = waitpid(child.pid, &status, WNOHANG);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - child.start).count();
  if (done == 0 && elapsed <= options.timeout_s) return std::nullopt;
  TestResult r = make_result(test, "failed", "");
  auto log = [&] { return log_tail(child.scratch + "/child.log"); };
  if (done == 0) {
    kill(-child.pid, SIGKILL);
    waitpid(child.pid, &status, 0);
    r.detail = "timed out after " + std::to_string(static_cast<int>(options.timeout_s)) + " s" +
               (phase.empty() ? "" : " (" + phase + ")") + log();
  } else if (WIFSIGNALED(status)) {
    r.detail = std::string(phase.empty() ? "crashed" : "crashed while " + phase) + ": signal " +
               std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")" + log();
  } else if (!read_result_file(child.scratch + "/result.txt", r)) {
    r.detail = "child exited with code " + std::to_string(WEXITSTATUS(status)) + " and no result" + log();
  }
  r.seconds = elapsed;
  return r;
}

// A persistent process that runs tests sent to it by index, one at a time (see RunOptions::workers).
struct Worker {
  pid_t pid = -1;
  int to = -1, from = -1;  // pipes: parent -> worker (indexes), worker -> parent (one byte a test)
  long test = -1;          // the test it runs, or -1 when idle
  std::chrono::steady_clock::time_point start;
  std::string log;
};

void worker_main(const std::vector<TestCase>& tests, RunOptions options, int in, int out) {
  options.phase = options.gpu ? RunOptions::Phase::kRun : RunOptions::Phase::kAll;
  if (options.gpu) hold_gpu_context();
  FILE* requests = fdopen(in, "r");
  char line[64];
  while (requests != nullptr && std::fgets(line, sizeof line, requests) != nullptr) {
    const long index = std::strtol(line, nullptr, 10);
    if (index < 0 || index >= static_cast<long>(tests.size())) break;
    const TestCase& test = tests[static_cast<size_t>(index)];
    TestResult r = execute_test(test, options);
    write_result_file(options.workdir + "/" + test.name + "/result_run.txt", r);
    std::fflush(stdout);
    if (write(out, "d", 1) != 1) break;
  }
  _exit(0);
}

bool spawn_worker(Worker& w, int id, const std::vector<TestCase>& tests, const RunOptions& options,
                  const std::vector<Worker>& all) {
  int down[2], up[2];
  if (pipe(down) != 0) return false;
  if (pipe(up) != 0) {
    close(down[0]);
    close(down[1]);
    return false;
  }
  w.log = options.workdir + "/worker_" + std::to_string(id) + ".log";
  pid_t pid = fork_own_group();
  if (pid == 0) {
    for (const Worker& other : all) {  // only its own pipes stay open in a worker
      if (other.to >= 0) close(other.to);
      if (other.from >= 0) close(other.from);
    }
    close(down[1]);
    close(up[0]);
    const std::string& device = options.worker_devices.empty()
                                    ? std::string()
                                    : options.worker_devices[static_cast<size_t>(id) % options.worker_devices.size()];
    if (!device.empty()) setenv("CUDA_VISIBLE_DEVICES", device.c_str(), 1);
    int log = open(w.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
    }
    worker_main(tests, options, down[0], up[1]);
  }
  close(down[0]);
  close(up[1]);
  if (pid < 0) {
    close(down[1]);
    close(up[0]);
    return false;
  }
  setpgid(pid, pid);
  fcntl(up[0], F_SETFL, fcntl(up[0], F_GETFL) | O_NONBLOCK);
  w.pid = pid;
  w.to = down[1];
  w.from = up[0];
  w.test = -1;
  return true;
}

void stop_worker(Worker& w, bool kill_it) {
  if (w.pid <= 0) return;
  if (w.to >= 0) close(w.to);
  if (kill_it) kill(-w.pid, SIGKILL);
  int status = 0;
  waitpid(w.pid, &status, 0);
  if (w.from >= 0) close(w.from);
  w = Worker{};
}

}  // namespace

// The pipelined runner (options.workers > 0): per-test forked children build (--gpu; the CPU
// reference has nothing to build, so its tests go straight to the workers), persistent workers run.
static std::vector<TestResult> run_tests_with_workers(const std::vector<TestCase>& tests, const RunOptions& options,
                                                      const std::function<void(const TestResult&)>& on_done,
                                                      const std::function<bool()>& past_deadline,
                                                      const std::function<std::string()>& stop_reason) {
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  std::vector<TestResult> results(tests.size());
  std::vector<bool> finished(tests.size(), false);
  std::vector<double> build_elapsed(tests.size(), 0), build_seconds(tests.size(), 0);
  const bool build_first = options.gpu && !options.compile_only;
  RunOptions build_options = options;
  build_options.phase = RunOptions::Phase::kBuild;
  std::vector<Child> building;
  std::vector<size_t> queue;  // built (or, on the CPU, not started), waiting for a worker
  size_t queue_head = 0, next = 0;
  const int jobs = std::max(1, options.jobs);
  std::vector<Worker> workers(static_cast<size_t>(options.workers));
  auto finish = [&](size_t index, TestResult r) {
    if (!options.keep && r.status == "passed") fs::remove_all(options.workdir + "/" + tests[index].name);
    results[index] = std::move(r);
    finished[index] = true;
    on_done(results[index]);
  };
  auto ensure_worker = [&](size_t id) {
    if (workers[id].pid > 0) return true;
    return spawn_worker(workers[id], static_cast<int>(id), tests, options, workers);
  };
  if (!build_first)
    for (; next < tests.size(); ++next) queue.push_back(next);

  while (true) {
    bool workers_busy = false;
    for (const Worker& w : workers) workers_busy = workers_busy || w.test >= 0;
    if (next >= tests.size() && building.empty() && queue_head >= queue.size() && !workers_busy) break;
    if (past_deadline()) {
      const std::string why = stop_reason();
      for (Child& child : building) {
        kill(-child.pid, SIGKILL);
        int status = 0;
        waitpid(child.pid, &status, 0);
        finish(child.index, make_result(tests[child.index], "not run", why + " while it ran"));
      }
      building.clear();
      for (Worker& w : workers) {
        if (w.test >= 0)
          finish(static_cast<size_t>(w.test), make_result(tests[static_cast<size_t>(w.test)], "not run", why + " while it ran"));
        stop_worker(w, true);
      }
      for (; queue_head < queue.size(); ++queue_head)
        finish(queue[queue_head], make_result(tests[queue[queue_head]], "not run", why + " before it ran"));
      for (; next < tests.size(); ++next)
        finish(next, make_result(tests[next], "not run", why + " before it started"));
      break;
    }
    // Start builders.
    while (build_first && next < tests.size() && static_cast<int>(building.size()) < jobs) {
      const TestCase& test = tests[next];
      const std::string scratch = options.workdir + "/" + test.name;
      std::vector<int> worker_fds;
      for (const Worker& w : workers)
        for (int fd : {w.to, w.from})
          if (fd >= 0) worker_fds.push_back(fd);
      const pid_t pid = fork_test_child(test, scratch, build_options, worker_fds);
      if (pid < 0) finish(next, make_result(test, "failed", std::string("fork: ") + std::strerror(errno)));
      else building.push_back(Child{next, pid, Clock::now(), scratch});
      ++next;
    }
    // Reap builders: a built test joins the queue, anything else is its result.
    for (size_t c = 0; c < building.size();) {
      Child& child = building[c];
      std::optional<TestResult> reaped = reap_test_child(child, tests[child.index], options, "building");
      if (!reaped) {
        ++c;
        continue;
      }
      TestResult& r = *reaped;
      if (r.status == "passed" && r.detail == kBuiltNotRun) {
        build_elapsed[child.index] = r.seconds;
        build_seconds[child.index] = r.build_seconds;
        queue.push_back(child.index);
      } else {
        finish(child.index, r);
      }
      building.erase(building.begin() + static_cast<long>(c));
    }
    // Workers: collect, time out, restart after a crash or a failure, hand out the queue.
    for (size_t id = 0; id < workers.size(); ++id) {
      Worker& w = workers[id];
      if (w.test >= 0) {
        const size_t index = static_cast<size_t>(w.test);
        const TestCase& test = tests[index];
        const std::string scratch = options.workdir + "/" + test.name;
        char byte;
        const bool answered = read(w.from, &byte, 1) == 1;
        int status = 0;
        const pid_t gone = answered ? 0 : waitpid(w.pid, &status, WNOHANG);
        const double elapsed = since(w.start);
        if (!answered && gone == 0 && elapsed <= options.timeout_s) continue;
        TestResult r = make_result(test, "failed", "");
        bool restart = true;
        if (answered) {
          if (!read_result_file(scratch + "/result_run.txt", r)) r.detail = "the worker wrote no result";
          restart = r.status != "passed";  // a failed run may have left the context faulted
        } else if (gone == 0) {
          r.detail = "timed out after " + std::to_string(static_cast<int>(options.timeout_s)) + " s (running)" +
                     log_tail(w.log);
        } else {
          r.detail = WIFSIGNALED(status) ? std::string("crashed: signal ") + std::to_string(WTERMSIG(status)) +
                                               " (" + strsignal(WTERMSIG(status)) + ")" + log_tail(w.log)
                                         : "the worker exited with code " + std::to_string(WEXITSTATUS(status)) +
                                               log_tail(w.log);
          w.pid = -1;  // reaped
        }
        r.seconds = build_elapsed[index] + elapsed;
        r.build_seconds = build_seconds[index];
        w.test = -1;
        finish(index, r);
        if (restart) {
          if (w.pid > 0) stop_worker(w, true);
          else {
            if (w.to >= 0) close(w.to);
            if (w.from >= 0) close(w.from);
            w = Worker{};
          }
        }
      }
      if (w.test < 0 && queue_head < queue.size()) {
        const size_t index = queue[queue_head];
        if (!ensure_worker(id)) {
          ++queue_head;
          finish(index, make_result(tests[index], "failed", std::string("cannot start a worker: ") + std::strerror(errno)));
          continue;
        }
        const std::string request = std::to_string(index) + "\n";
        if (write(w.to, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
          stop_worker(w, true);  // try again with a fresh worker on the next round
          continue;
        }
        ++queue_head;
        w.test = static_cast<long>(index);
        w.start = Clock::now();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (Worker& w : workers) stop_worker(w, false);  // EOF on its pipe: it exits
  return results;
}

std::vector<TestResult> run_tests(const std::vector<TestCase>& tests, const RunOptions& options,
                                  const std::function<void(const TestResult&)>& on_done) {
  std::vector<TestResult> results(tests.size());
  std::vector<Child> running;
  size_t next = 0;
  const int jobs = std::max(1, options.jobs);
  const auto started = std::chrono::steady_clock::now();
  struct sigaction stop = {}, old_term = {}, old_int = {};
  stop.sa_handler = request_stop;
  sigemptyset(&stop.sa_mask);
  sigaction(SIGTERM, &stop, &old_term);
  sigaction(SIGINT, &stop, &old_int);
  auto past_deadline = [&] {
    if (g_stop_requested) return true;
    if (options.deadline_s <= 0) return false;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() > options.deadline_s;
  };
  if (options.workers > 0) {
    struct sigaction ignore = {}, old_pipe = {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &old_pipe);  // a worker that died must not kill the runner
    std::vector<TestResult> pipelined = run_tests_with_workers(tests, options, on_done, past_deadline, [&] {
      return g_stop_requested ? std::string("not run: the runner was stopped (signal)")
                              : "not run: the --deadline of " + std::to_string(static_cast<int>(options.deadline_s)) +
                                    " s passed";
    });
    sigaction(SIGPIPE, &old_pipe, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGINT, &old_int, nullptr);
    return pipelined;
  }
  while (next < tests.size() || !running.empty()) {
    if (past_deadline()) {
      const std::string why = g_stop_requested ? "not run: the runner was stopped (signal)"
                                               : "not run: the --deadline of " +
                                                     std::to_string(static_cast<int>(options.deadline_s)) + " s passed";
      for (Child& child : running) {
        kill(-child.pid, SIGKILL);
        int status = 0;
        waitpid(child.pid, &status, 0);
        results[child.index] = make_result(tests[child.index], "not run", why + " while it ran");
        on_done(results[child.index]);
      }
      running.clear();
      for (; next < tests.size(); ++next) {
        results[next] = make_result(tests[next], "not run", why + " before it started");
        on_done(results[next]);
      }
      break;
    }
    while (next < tests.size() && static_cast<int>(running.size()) < jobs) {
      const TestCase& test = tests[next];
      const std::string scratch = options.workdir + "/" + test.name;
      const pid_t pid = fork_test_child(test, scratch, options, {});
      if (pid < 0) {
        results[next] = make_result(test, "failed", std::string("fork: ") + std::strerror(errno));
        on_done(results[next]);
      } else {
        running.push_back(Child{next, pid, std::chrono::steady_clock::now(), scratch});
      }
      ++next;
    }
    for (size_t c = 0; c < running.size();) {
      Child& child = running[c];
      std::optional<TestResult> reaped = reap_test_child(child, tests[child.index], options, "");
      if (!reaped) {
        ++c;
        continue;
      }
      TestResult& r = *reaped;
      if (!options.keep && r.status == "passed") fs::remove_all(child.scratch);
      results[child.index] = r;
      on_done(r);
      running.erase(running.begin() + static_cast<long>(c));
    }
    if (!running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGINT, &old_int, nullptr);
  return results;
}

Status probe_gpu_in_child(std::string* arch) {
  int fds[2];
  if (pipe(fds) != 0) return Status::error("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string found;
    Status s = probe_gpu(&found);
    std::string msg = s ? "ok " + found : "no " + s.message();
    ssize_t written = write(fds[1], msg.data(), msg.size());
    (void)written;
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[256];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (msg.rfind("ok ", 0) == 0) {
    if (arch != nullptr) *arch = msg.substr(3);
    return Status::ok();
  }
  if (msg.rfind("no ", 0) == 0) return Status::error(msg.substr(3));
  return Status::error("the GPU probe crashed (status " + std::to_string(status) + ")");
}

}  // namespace aotc::conformance
