// aotc-conformance: runs the ONNX backend node tests on the CPU reference (--cpu) or as compiled
// .so files on the GPU (--gpu) and reports passed / failed / unsupported per test, per op, and two
// pass rates (all node tests; the inference set). See docs/conformance.md.
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include "tools/conformance/gpu_exec.h"
#include "tools/conformance/report.h"
#include "tools/conformance/runner.h"

namespace fs = std::filesystem;
using namespace aotc;
using namespace aotc::conformance;

namespace {

const char kUsage[] =
    "usage: aotc-conformance [--cpu | --gpu] [options]\n"
    "  --data DIR          node test folders (default /usr/include/onnx/backend/test/data/node)\n"
    "  --filter REGEX      only tests whose folder name matches (ECMAScript regex, search)\n"
    "  --ops A,B,...       only tests whose op under test is one of these\n"
    "  --require-pass      exit 1 unless every selected test in the inference set whose ops all\n"
    "                      lie in --ops passes (unsupported allowed only when listed in --allow)\n"
    "  --allow FILE        lines 'test_name<TAB or space>reason': accepted unsupported tests\n"
    "  --known-failures FILE  lines 'test_name reason': tests known to fail (e.g. expected data\n"
    "                      less precise than the tolerance); still run and reported as failed,\n"
    "                      --require-pass tolerates them only while they fail and are selected\n"
    "  --log FILE          one line per test\n"
    "  --json FILE         results as JSON (input of tools/conformance/gen_ops_md.py)\n"
    "  --jobs N            tests run in parallel (forked children; default 1)\n"
    "  --workers N         persistent processes that run the tests: with --gpu they run the libraries\n"
    "                      the children built, each holding one CUDA context, spread over the GPUs\n"
    "                      (CUDA_VISIBLE_DEVICES, else every GPU the driver lists); default with --gpu:\n"
    "                      2 per GPU; 0: each test's child also creates a context and runs (slow when\n"
    "                      many run at once: the driver serialises context creation)\n"
    "  --timeout S         seconds per test before it is killed and failed (default 120, GPU 600)\n"
    "  --deadline S        start no test after S seconds; the ones running then are stopped, and\n"
    "                      they and the rest are reported 'not run' (so are all on SIGTERM/SIGINT)\n"
    "  --workdir DIR       scratch folder (default a fresh /tmp/aotc-conformance-XXXXXX)\n"
    "  --keep              keep the scratch folder (models, .so files, child logs)\n"
    "  --arch sm_XY        --gpu: nvcc arch (repeatable; default: the GPU's own)\n"
    "  --compile-only      --gpu: build each .so but do not run it (no GPU needed; 'passed' then\n"
    "                      means 'built'; the JSON mode is gpu-compile-only)\n"
    "  --nvcc PATH         --gpu: nvcc (default $CUDA_HOME/bin/nvcc or /usr/local/cuda/bin/nvcc)\n"
    "  --quiet             no per-test lines on stdout\n";

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::map<std::string, std::string> read_allow_file(const std::string& path, bool* ok) {
  std::map<std::string, std::string> allow;
  std::ifstream in(path);
  *ok = static_cast<bool>(in);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t sep = line.find_first_of(" \t");
    std::string name = line.substr(0, sep);
    allow[name] = sep == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", sep));
  }
  return allow;
}

std::string now_text() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
  return buf;
}

// The GPUs a worker may be given, as CUDA_VISIBLE_DEVICES entries, without initialising CUDA in
// this process (it forks afterwards): the caller's CUDA_VISIBLE_DEVICES, else the driver's
// /proc/driver/nvidia/gpus entries (0..n-1); empty when neither says.
std::vector<std::string> visible_gpus() {
  if (const char* env = std::getenv("CUDA_VISIBLE_DEVICES"); env != nullptr && *env != '\0')
    return split_list(env);
  std::vector<std::string> out;
  std::error_code ec;
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    (void)entry;
    out.push_back(std::to_string(n++));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = "/usr/include/onnx/backend/test/data/node";
  std::string filter, log_path, json_path, workdir, allow_path, known_path, nvcc;
  std::vector<std::string> ops, archs;
  bool gpu = false, keep = false, quiet = false, require_pass = false, compile_only = false;
  int jobs = 1, workers = -1;
  double timeout = -1, deadline = 0;
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "aotc-conformance: " << a << " needs a value\n" << kUsage;
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--cpu") gpu = false;
    else if (a == "--gpu") gpu = true;
    else if (a == "--data") data_dir = value();
    else if (a == "--filter") filter = value();
    else if (a == "--ops") ops = split_list(value());
    else if (a == "--require-pass") require_pass = true;
    else if (a == "--allow") allow_path = value();
    else if (a == "--known-failures") known_path = value();
    else if (a == "--log") log_path = value();
    else if (a == "--json") json_path = value();
    else if (a == "--jobs") jobs = std::atoi(value().c_str());
    else if (a == "--workers") workers = std::atoi(value().c_str());
    else if (a == "--timeout") timeout = std::atof(value().c_str());
    else if (a == "--deadline") deadline = std::atof(value().c_str());
    else if (a == "--workdir") workdir = value();
    else if (a == "--keep") keep = true;
    else if (a == "--arch") archs.push_back(value());
    else if (a == "--nvcc") nvcc = value();
    else if (a == "--compile-only") compile_only = true;
    else if (a == "--quiet") quiet = true;
    else if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    } else {
      std::cerr << "aotc-conformance: unknown argument '" << a << "'\n" << kUsage;
      return 2;
    }
  }
  if (!fs::is_directory(data_dir)) {
    std::cerr << "aotc-conformance: no test data folder " << data_dir << "\n";
    return 2;
  }
  std::map<std::string, std::string> allow;
  if (!allow_path.empty()) {
    bool ok = false;
    allow = read_allow_file(allow_path, &ok);
    if (!ok) {
      std::cerr << "aotc-conformance: cannot read --allow file " << allow_path << "\n";
      return 2;
    }
  }
  std::map<std::string, std::string> known;
  if (!known_path.empty()) {
    bool ok = false;
    known = read_allow_file(known_path, &ok);
    if (!ok) {
      std::cerr << "aotc-conformance: cannot read --known-failures file " << known_path << "\n";
      return 2;
    }
  }
  if (compile_only && !gpu) {
    std::cerr << "aotc-conformance: --compile-only needs --gpu\n";
    return 2;
  }
  if (compile_only && archs.empty()) archs.push_back("sm_90");
  if (gpu && !compile_only) {
    std::string arch;
    Status s = probe_gpu_in_child(&arch);
    if (!s) {
      std::cerr << "aotc-conformance: --gpu needs a CUDA GPU and none is usable here (" << s.message()
                << "); run --cpu, or run this on the GPU machine\n";
      return 2;
    }
    if (archs.empty()) archs.push_back(arch);
  }

  std::vector<TestCase> all = discover_tests(data_dir);
  std::vector<TestCase> tests;
  std::regex re;
  try {
    re = std::regex(filter.empty() ? "." : filter);
  } catch (const std::regex_error& e) {
    std::cerr << "aotc-conformance: bad --filter regex: " << e.what() << "\n";
    return 2;
  }
  std::set<std::string> op_set(ops.begin(), ops.end());
  for (TestCase& t : all)
    if (std::regex_search(t.name, re) && (op_set.empty() || op_set.count(t.op))) tests.push_back(t);
  if (tests.empty()) {
    std::cerr << "aotc-conformance: no test selected in " << data_dir << "\n";
    return 2;
  }

  RunOptions options;
  options.gpu = gpu;
  options.compile_only = compile_only;
  options.jobs = jobs;
  options.worker_devices = visible_gpus();
  const int gpus = std::max<int>(1, static_cast<int>(options.worker_devices.size()));
  options.workers = workers >= 0 ? workers : (gpu && !compile_only ? 2 * gpus : 0);
  if (!gpu) options.worker_devices.clear();
  options.timeout_s = timeout > 0 ? timeout : (gpu ? 600 : 120);
  options.deadline_s = deadline;
  options.keep = keep;
  options.archs = archs;
  options.nvcc = nvcc;
  bool temp_workdir = workdir.empty();
  if (temp_workdir) {
    char tmpl[] = "/tmp/aotc-conformance-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      std::cerr << "aotc-conformance: cannot create a scratch folder in /tmp\n";
      return 2;
    }
    workdir = tmpl;
  }
  options.workdir = workdir;
  fs::create_directories(workdir);

  std::ofstream log;
  if (!log_path.empty()) {
    log.open(log_path);
    if (!log) {
      std::cerr << "aotc-conformance: cannot write " << log_path << "\n";
      return 2;
    }
  }
  const std::string label = compile_only ? "GPU build only, not run" : gpu ? "GPU" : "CPU reference";
  std::cout << "aotc-conformance: " << tests.size() << " tests on the " << label << ", " << jobs
            << " at a time";
  if (options.workers > 0) std::cout << ", run by " << options.workers << " worker(s)";
  std::cout << "\n";
  size_t done = 0;
  auto start = std::chrono::steady_clock::now();
  std::vector<TestResult> results = run_tests(tests, options, [&](const TestResult& r) {
    ++done;
    if (log) log << log_line(r) << "\n" << std::flush;  // as each ends: a killed run keeps its log
    if (!quiet) std::cout << "[" << done << "/" << tests.size() << "] " << log_line(r) << "\n" << std::flush;
  });
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  print_summary(std::cout, results, label);
  std::cout << "(" << static_cast<int>(seconds) << " s)\n";
  if (!json_path.empty()) {
    std::ofstream json(json_path);
    write_json(json, JsonHeader{compile_only ? "gpu-compile-only" : gpu ? "gpu" : "cpu", label, data_dir, command, now_text()}, results);
    if (!json) {
      std::cerr << "aotc-conformance: cannot write " << json_path << "\n";
      return 2;
    }
  }
  if (temp_workdir && !keep) fs::remove_all(workdir);
  else std::cout << "scratch kept in " << workdir << "\n";

  if (!require_pass) return 0;
  // Required: in the inference set, and every op of the model is one we claim.
  int bad = 0;
  std::cout << "\nrequired tests (inference set, all ops claimed):\n";
  for (const TestResult& r : results) {
    bool all_claimed = true;
    for (const std::string& op : r.ops) all_claimed = all_claimed && op_set.count(op);
    if (!r.exclusion.empty()) {
      std::cout << "  not required (excluded: " << r.exclusion << "): " << r.name << " " << r.status << "\n";
      continue;
    }
    if (!all_claimed) {
      std::cout << "  not required (uses ops outside --ops): " << r.name << " " << r.status << "\n";
      continue;
    }
    if (r.status == "passed" && known.count(r.name)) {
      std::cout << "  KNOWN FAILURE NOW PASSES (remove it from " << known_path << "): " << r.name << "\n";
      ++bad;
      continue;
    }
    if (r.status == "passed") continue;
    // Only a numeric mismatch is a known failure; a crash, timeout or error of a listed test is not.
    if (r.status == "failed" && known.count(r.name) && r.detail.find("elements differ") != std::string::npos) {
      std::cout << "  known failure, not passed: " << r.name << " (" << known[r.name] << "): " << r.detail << "\n";
      continue;
    }
    if (r.status == "unsupported" && allow.count(r.name)) {
      std::cout << "  accepted unsupported: " << r.name << " (" << allow[r.name] << "): " << r.detail << "\n";
      continue;
    }
    std::cout << "  REQUIRED TEST NOT PASSING: " << log_line(r) << "\n";
    ++bad;
  }
  for (const auto& entry : known) {
    bool found = false;
    for (const TestResult& r : results) found = found || r.name == entry.first;
    if (!found) {
      std::cout << "  KNOWN FAILURE NOT SELECTED (stale entry in " << known_path << "): " << entry.first << "\n";
      ++bad;
    }
  }
  std::cout << (bad ? std::to_string(bad) + " required tests do not pass\n" : "all required tests pass\n");
  return bad ? 1 : 0;
}
