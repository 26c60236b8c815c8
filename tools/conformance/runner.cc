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
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
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
    BuildOutcome b = build_library(*graph, build);
    if (b.kind == BuildOutcome::Kind::kUnsupported) return make_result(test, "unsupported", b.message);
    if (b.kind == BuildOutcome::Kind::kFailed) return make_result(test, "failed", b.message);
    if (options.compile_only) {
      TestResult r = make_result(test, "passed", "built, not run (--compile-only)");
      if (!options.keep) fs::remove(build.output_path);
      return r;
    }
    Expected<LibraryOutputs> got = run_library(build.output_path, build.name, {feeds});
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
  out << r.status << "\n" << r.detail << "\n";
}

bool read_result_file(const std::string& path, TestResult& r) {
  std::ifstream in(path);
  std::string status, detail;
  if (!std::getline(in, status)) return false;
  std::getline(in, detail);
  if (status != "passed" && status != "failed" && status != "unsupported") return false;
  r.status = status;
  r.detail = detail;
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
  for (size_t i = 0; i < test.data_sets.size(); ++i) {
    last = run_data_set(test, test.data_sets[i], options, scratch, static_cast<int>(i));
    if (last.status != "passed") break;
  }
  return last;
}

static volatile sig_atomic_t g_stop_requested = 0;
static void request_stop(int) { g_stop_requested = 1; }

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
      std::string scratch = options.workdir + "/" + test.name;
      fs::create_directories(scratch);
      fs::remove(scratch + "/result.txt");
      pid_t pid = fork();
      if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        setpgid(0, 0);  // own group, so a timeout also ends nvcc and the host compiler
        int log = open((scratch + "/child.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (log >= 0) {
          dup2(log, 1);
          dup2(log, 2);
        }
        TestResult r = execute_test(test, options);
        write_result_file(scratch + "/result.txt", r);
        _exit(0);
      }
      if (pid < 0) {
        results[next] = make_result(test, "failed", std::string("fork: ") + std::strerror(errno));
        on_done(results[next]);
      } else {
        setpgid(pid, pid);
        running.push_back(Child{next, pid, std::chrono::steady_clock::now(), scratch});
      }
      ++next;
    }
    for (size_t c = 0; c < running.size();) {
      Child& child = running[c];
      const TestCase& test = tests[child.index];
      int status = 0;
      pid_t done = waitpid(child.pid, &status, WNOHANG);
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - child.start).count();
      if (done == 0 && elapsed <= options.timeout_s) {
        ++c;
        continue;
      }
      TestResult r = make_result(test, "failed", "");
      if (done == 0) {
        kill(-child.pid, SIGKILL);
        waitpid(child.pid, &status, 0);
        r.detail = "timed out after " + std::to_string(static_cast<int>(options.timeout_s)) + " s" +
                   log_tail(child.scratch + "/child.log");
      } else if (WIFSIGNALED(status)) {
        r.detail = std::string("crashed: signal ") + std::to_string(WTERMSIG(status)) + " (" +
                   strsignal(WTERMSIG(status)) + ")" + log_tail(child.scratch + "/child.log");
      } else if (!read_result_file(child.scratch + "/result.txt", r)) {
        r.detail = "child exited with code " + std::to_string(WEXITSTATUS(status)) + " and no result" +
                   log_tail(child.scratch + "/child.log");
      }
      r.seconds = elapsed;
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
