// compile_library: launch program -> device and host sources -> nvcc -> host cc -> libNAME.so.
// Everything is built in a fresh temp directory with relative file names (so the emitted Makefile
// repeats exactly the same commands); the .so and its header are renamed into place only when
// every step succeeded, so a failure leaves nothing at output_path.
#include "codegen/codegen.h"

#include <signal.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <unistd.h>

#include "codegen/cutlass_dir.h"
#include "codegen/device_source.h"
#include "codegen/embedded_files.h"
#include "codegen/host_source.h"
#include "codegen/identifiers.h"
#include "codegen/kernel_cache.h"
#include "codegen/launch_program.h"
#include "codegen/process.h"

namespace aotc {
namespace fs = std::filesystem;

namespace {

// The runtime sources (every embedded runtime/* file, sorted) and the headers the device code may
// include from its own directory (templates/*.cuh other than common.cuh, which is inlined).
std::vector<std::string> runtime_files(const char* suffix = "") {
  std::vector<std::string> names;
  const std::string dir = "runtime/";
  for (const EmbeddedFile& f : embedded_files()) {
    std::string path = f.path;
    if (path.rfind(dir, 0) != 0) continue;
    std::string name = path.substr(dir.size());
    if (name.size() >= std::strlen(suffix) &&
        name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
      names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}
const char* const kDeviceHeaders[] = {"library_params.cuh", "int8_requant.cuh", "conv_cluster_splitk.cuh",
                                      "cutlass_act.cuh"};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Status write_file(const fs::path& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Status::error("cannot write " + path.string());
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!f) return Status::error("cannot write " + path.string());
  return Status::ok();
}

Status write_text(const fs::path& path, const std::string& text) {
  return write_file(path, text.data(), text.size());
}

// [A-Za-z_][A-Za-z0-9_]*, in the "C" locale's character classes.
bool is_c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// The ABI prefix: --name, or the output file name without "lib" and ".so".
Expected<std::string> choose_prefix(const CodegenOptions& options) {
  if (!options.name.empty()) {
    if (!is_c_identifier(options.name) || options.name.size() > 64)
      return Status::error("--name '" + escape_for_message(options.name) +
                           "' is not a C identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 chars)");
    return options.name;
  }
  std::string stem = fs::path(options.output_path).filename().string();
  if (stem.rfind("lib", 0) == 0) stem = stem.substr(3);
  if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".so") == 0) stem.resize(stem.size() - 3);
  return abi_prefix(stem);
}

// "sm_90" -> "90"; also "sm_90a" and "compute_87" (PTX only). Empty on a malformed arch.
std::string arch_number(const std::string& arch) {
  std::string rest;
  if (arch.rfind("sm_", 0) == 0) rest = arch.substr(3);
  else if (arch.rfind("compute_", 0) == 0) rest = arch.substr(8);
  else return "";
  size_t digits = 0;
  while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) ++digits;
  if (digits < 2 || digits > 3) return "";
  if (rest.size() == digits) return rest;
  return rest.size() == digits + 1 && (rest[digits] == 'a' || rest[digits] == 'f') ? rest : "";
}

// A device file with a kernel for sm_90a only (wgmma, TMA im2col: templates/
// cutlass_conv2d_fprop_sm90.cu.in): its sm_90 code is compiled as sm_90a (which runs on compute
// capability 9.0 only; such kernels are lowered only when every target is sm_90).
bool source_requires_sm90a(const std::string& source) {
  return source.find("AOTC_REQUIRES_SM90A") != std::string::npos;
}

// -DNDEBUG: a release build of the device code. Without it CUTLASS's device-side asserts stay in
// and break the wgmma pipeline of its sm90 kernels ("wgmma.mma_async instructions are serialized
// due to ... a function call"); measured on an H200 at 1.2-1.9x the time of the same kernels built
// with it (docs/results.md, twenty-second session, calls 1-2).
std::vector<std::string> nvcc_command(const CodegenOptions& o, const std::string& prefix, int file, bool sm90a) {
  std::vector<std::string> argv = {o.nvcc, "--fatbin", "-O3", "-std=c++17", "--expt-relaxed-constexpr", "-DNDEBUG"};
  if (o.pdl == PdlMode::kEarly) argv.push_back("-DAOTC_PDL_EARLY_TRIGGER=1");  // templates/common.cuh
  if (!o.cutlass_include_dir.empty()) argv.push_back("-I" + o.cutlass_include_dir);
  for (const std::string& dir : cutlass_extra_include_dirs(o.cutlass_include_dir)) argv.push_back("-I" + dir);
  std::string highest;
  for (const std::string& arch : o.archs) {
    std::string n = arch_number(arch);
    const bool ptx_only = arch.compare(0, 8, "compute_") == 0;
    if (sm90a && n == "90") n = "90a";
    argv.push_back("-gencode");
    argv.push_back("arch=compute_" + n + ",code=" + (ptx_only ? "compute_" : "sm_") + n);
    if (highest.empty() || std::stoi(n) > std::stoi(highest)) highest = n;
  }
  // PTX of the highest arch, so newer GPUs can JIT it.
  argv.push_back("-gencode");
  argv.push_back("arch=compute_" + highest + ",code=compute_" + highest);
  argv.push_back("-o");
  argv.push_back(fatbin_file(prefix, file));
  argv.push_back(cuda_file(prefix, file));
  return argv;
}

// The host compiler and the flags of every host compile (the runtime's files and the model's).
std::vector<std::string> host_cc_argv(const CodegenOptions& o) {
  return {o.host_cc, "-std=c11", "-O2", "-fPIC", "-fvisibility=hidden"};
}

// The runtime's C files compiled to objects (cc -c: NAME.o in the build directory). They depend on
// nothing the model produces, so compile_library runs this beside nvcc and its last host step is
// cc_command(o, prefix, true): the model's file, the blobs and the link.
std::vector<std::string> runtime_objects_command(const CodegenOptions& o) {
  std::vector<std::string> argv = host_cc_argv(o);
  argv.push_back("-c");
  for (const std::string& c : runtime_files(".c")) argv.push_back(c);
  return argv;
}

// `runtime_objects`: the runtime's objects from runtime_objects_command instead of its C files (the
// Makefile's one step compiles those).
std::vector<std::string> cc_command(const CodegenOptions& o, const std::string& prefix, bool runtime_objects) {
  // The .S includes the fatbins and the weight blob from the working directory.
  std::vector<std::string> argv = host_cc_argv(o);
  for (const std::string& a : {std::string("-shared"), std::string("-o"), "lib" + prefix + ".so", model_c_file(prefix)})
    argv.push_back(a);
  for (std::string c : runtime_files(".c")) argv.push_back(runtime_objects ? c.replace(c.size() - 1, 1, "o") : c);
  argv.push_back(blobs_file(prefix));
  for (const char* a : {"-ldl", "-Wl,--no-undefined"}) argv.push_back(a);
  return argv;
}

std::string makefile(const CodegenOptions& o, const std::string& prefix, const std::vector<std::string>& device) {
  const int files = static_cast<int>(device.size());
  std::vector<std::string> cc = cc_command(o, prefix, false);
  cc[0] = "$(CC)";
  std::string lib = "lib" + prefix + ".so";
  std::string m = "# Rebuilds " + lib + " with the commands aotc ran (no shell was involved there).\n";
  m += "# `make -j` compiles the device files in parallel, as aotc does.\n";
  m += "NVCC = " + o.nvcc + "\nCC = " + o.host_cc + "\n\n";
  std::string fatbins;
  for (int f = 0; f < files; ++f) fatbins += " " + fatbin_file(prefix, f);
  std::string runtime;
  for (const std::string& r : runtime_files()) runtime += " " + r;
  m += lib + ": " + model_c_file(prefix) + runtime + " " + header_file(prefix) + " " +
       blobs_file(prefix) + fatbins + " " + weights_file(prefix) + "\n\t" + join_command(cc) +
       "\n\n";
  std::string device_headers;
  for (const char* h : kDeviceHeaders) device_headers += std::string(" ") + h;
  for (int f = 0; f < files; ++f) {
    std::vector<std::string> nvcc = nvcc_command(o, prefix, f, source_requires_sm90a(device[static_cast<size_t>(f)]));
    nvcc[0] = "$(NVCC)";
    m += fatbin_file(prefix, f) + ": " + cuda_file(prefix, f) + device_headers + "\n\t" +
         join_command(nvcc) + "\n\n";
  }
  m += "clean:\n\trm -f " + lib + fatbins + "\n\n.PHONY: clean\n";
  return m;
}

Status run_tool(const std::vector<std::string>& argv, const fs::path& dir, const char* what) {
  auto result = run_process(argv, dir.string());
  if (!result) return result.status();
  if (result->exit_code != 0)
    return Status::error(std::string(what) + " failed (exit " + std::to_string(result->exit_code) +
                         "): " + join_command(argv) + "\n" + result->output);
  return Status::ok();
}

// Runs the commands, at most `parallel` at a time; the first failure (in command order) wins.
Status run_tools_parallel(const std::vector<std::vector<std::string>>& commands, const fs::path& dir,
                          const char* what, int parallel) {
  std::vector<Status> results(commands.size(), Status::ok());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < commands.size(); i = next++) results[i] = run_tool(commands[i], dir, what);
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < parallel && static_cast<size_t>(t) < commands.size(); ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  for (const Status& s : results)
    if (!s.is_ok()) return s;
  return Status::ok();
}

// Removes the temp build directory on every exit path.
struct TempDir {
  fs::path path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

// Installs the library and its header as a pair: both are staged next to their targets first; the
// header is renamed into place with the previous one kept aside, then the library; if the library
// cannot be installed, the previous header comes back (it used to be deleted), so a failed build
// leaves the previous library AND header exactly as they were.
Status install_pair(const fs::path& lib_from, const fs::path& lib_to, const fs::path& header_from,
                    const fs::path& header_to) {
  const std::string tag = ".tmp-" + std::to_string(getpid());
  fs::path lib_tmp = lib_to, header_tmp = header_to, header_old = header_to;
  lib_tmp += tag;
  header_tmp += tag;
  header_old += ".old" + tag;
  std::error_code ec, cleanup;
  auto fail = [&](const fs::path& target) {
    fs::remove(lib_tmp, cleanup);
    fs::remove(header_tmp, cleanup);
    return Status::error("cannot write " + target.string() + ": " + ec.message());
  };
  fs::copy_file(header_from, header_tmp, fs::copy_options::overwrite_existing, ec);
  if (ec) return fail(header_to);
  fs::copy_file(lib_from, lib_tmp, fs::copy_options::overwrite_existing, ec);
  if (ec) return fail(lib_to);
  const bool had_header = fs::is_regular_file(fs::symlink_status(header_to, cleanup));
  if (had_header) {
    fs::create_hard_link(header_to, header_old, ec);
    if (ec) return fail(header_to);
  }
  fs::rename(header_tmp, header_to, ec);
  if (ec) {
    if (had_header) fs::remove(header_old, cleanup);
    return fail(header_to);
  }
  fs::rename(lib_tmp, lib_to, ec);
  if (ec) {
    if (had_header) fs::rename(header_old, header_to, cleanup);
    else fs::remove(header_to, cleanup);
    return fail(lib_to);
  }
  if (had_header) fs::remove(header_old, cleanup);
  return Status::ok();
}

// --tune-matmuls auto: a convolution network (more Conv than Gemm / MatMul nodes) tunes, and so
// does a model whose Gemm / MatMul nodes are mostly float32 (fp32 transformers: -6 to -25% at
// batch 1, docs/perf_notes.md v30); 16-bit transformers do not (1-7% slower with the timing on,
// v8, not explained).
bool tune_matmuls_for(CodegenOptions::TuneMatmuls mode, const Graph& graph) {
  if (mode != CodegenOptions::TuneMatmuls::kAuto) return mode == CodegenOptions::TuneMatmuls::kOn;
  int64_t convs = 0, matmuls = 0, fp32_matmuls = 0;
  for (const Node& n : graph.nodes) {
    if (n.op_type == "Conv" || n.op_type == "FusedConv") ++convs;
    if (n.op_type == "Gemm" || n.op_type == "FusedGemm" || n.op_type == "MatMul" || n.op_type == "MatMulT") {
      ++matmuls;
      if (!n.outputs.empty() && n.outputs[0] != kNoValue && graph.value(n.outputs[0]).dtype == DType::kFloat32)
        ++fp32_matmuls;
    }
  }
  return convs > matmuls || 2 * fp32_matmuls > matmuls;
}

}  // namespace

// Build folders are named aotc-build-<pid>-XXXXXX. One whose process is gone was left by an aotc
// that was killed (SIGKILL, or SIGTERM during nvcc) and still holds the model's sources and
// weights: every compile removes those before making its own.
static void remove_stale_build_dirs() {
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (ec) return;
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string prefix = "aotc-build-";
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const size_t dash = name.find('-', prefix.size());
    if (dash == std::string::npos || dash == prefix.size()) continue;
    const std::string pid_text = name.substr(prefix.size(), dash - prefix.size());
    if (pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid()) continue;
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) {
      std::error_code rm;
      fs::remove_all(it->path(), rm);
    }
  }
}

namespace {

// The kernel-cache key of a device file (codegen/kernel_cache.h): its text, nvcc's version and
// command, and the headers it includes (CUTLASS's version where it uses CUTLASS).
std::string device_file_key(const std::string& source, const std::string& nvcc_version,
                            const std::string& cutlass_version, const std::vector<std::string>& nvcc_argv) {
  return kernel_cache_key(source, nvcc_version, nvcc_argv,
                          (source_uses_cutlass(source) ? cutlass_version : "") + included_device_headers(source));
}

// `nvcc --version`, or "" where it does not run (no cache then).
std::string nvcc_version_text(const CodegenOptions& options) {
  auto version = run_process({options.nvcc, "--version"});
  return version.is_ok() && version->exit_code == 0 ? version->output : "";
}

HostSourceInfo host_source_info(const LibrarySources& sources, const Graph& graph, const CodegenOptions& options) {
  return {sources.prefix, options.archs, options.aotc_version, options.model_hash, graph.name,
          static_cast<int>(sources.device.size()), tune_matmuls_for(options.tune_matmuls, graph)};
}

}  // namespace

Expected<LibrarySources> render_library_sources(const Graph& graph, const MemoryPlan& plan,
                                                const CodegenOptions& options) {
  if (options.archs.empty()) return Status::error("codegen: no --arch given");
  for (const std::string& arch : options.archs)
    if (arch_number(arch).empty())
      return Status::error("codegen: --arch '" + escape_for_message(arch) +
                           "' is not of the form sm_XX (e.g. sm_87, sm_90)");
  auto prefix_or = choose_prefix(options);
  if (!prefix_or) return prefix_or.status();
  LibrarySources out;
  out.prefix = *prefix_or;
  auto program = build_launch_program(
      graph, plan, options.registry ? *options.registry : default_registry());
  if (!program) return program.status();
  out.program = std::move(*program);
  DeviceSourceInfo device_info{options.aotc_version, options.model_hash, graph.name, &options.extra_templates,
                               options.pdl, {}};
  std::string nvcc_version, cutlass_version;
  if (!options.kernel_library_dirs.empty()) {
    nvcc_version = nvcc_version_text(options);
    cutlass_version = cutlass_headers_version(options.cutlass_include_dir);
    if (!nvcc_version.empty())
      device_info.standalone = [&](const std::string& file) {
        return options.add_to_kernel_library ||
               libraries_contain(options.kernel_library_dirs,
                                 device_file_key(file, nvcc_version, cutlass_version,
                                                 nvcc_command(options, out.prefix, 0, source_requires_sm90a(file))));
      };
  }
  auto device = render_device_sources(out.program, graph, device_info);
  if (!device) return device.status();
  out.device = std::move(*device);
  const int files = static_cast<int>(out.device.size());
  // CUTLASS: only a model whose templates include it needs the headers.
  out.needs_cutlass.assign(static_cast<size_t>(files), false);
  for (int f = 0; f < files; ++f)
    out.needs_cutlass[static_cast<size_t>(f)] = source_uses_cutlass(out.device[static_cast<size_t>(f)]);
  for (const ProgramKernel& k : out.program.kernels) {
    if (!out.needs_cutlass[static_cast<size_t>(k.module)] || !options.cutlass_include_dir.empty()) continue;
    auto extra = options.extra_templates.find(k.template_name);
    const EmbeddedFile* tmpl = find_embedded_file("templates/" + k.template_name + ".cu.in");
    std::string text = extra != options.extra_templates.end() ? extra->second : tmpl ? tmpl->text() : "";
    if (source_uses_cutlass(text))
      return Status::error("this model needs CUTLASS headers for template " +
                           escape_for_message(k.template_name) +
                           "; install nvidia-cutlass (pip) or pass --cutlass-dir");
  }
  if (options.run_host_params_builder) {
    auto hp = build_host_params(out.program, options);
    if (!hp) return hp.status();
    out.host_params = *hp;
  }
  out.host = render_host_sources(out.program, graph, host_source_info(out, graph, options));
  return out;
}

std::string included_device_headers(const std::string& source) {
  std::string out;
  for (const char* name : kDeviceHeaders) {
    if (source.find(std::string("#include \"") + name + "\"") == std::string::npos) continue;
    const EmbeddedFile* f = find_embedded_file(std::string("templates/") + name);
    out += std::string("\n") + name + "\n" + (f ? f->text() : std::string("(missing)"));
  }
  return out;
}

Expected<CodegenStats> compile_library(const Graph& graph, const MemoryPlan& plan,
                                       const CodegenOptions& options) {
  auto report = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  if (options.output_path.empty() && options.emit_source_dir.empty())
    return Status::error("codegen: neither an output path nor --emit-source was given");

  CodegenStats stats;
  auto t0 = std::chrono::steady_clock::now();
  // The compile-time params builder (nvcc on a host program) runs beside the device compiles
  // below; the host sources that embed its output are rendered again when it is done.
  CodegenOptions render_options = options;
  render_options.run_host_params_builder = false;
  auto rendered = render_library_sources(graph, plan, render_options);
  if (!rendered) return rendered.status();
  AOTC_RETURN_IF_ERROR(check_host_params_headers(rendered->program, options.cutlass_include_dir));
  const std::string& prefix = rendered->prefix;
  LaunchProgram* program = &rendered->program;
  const std::vector<std::string>* device = &rendered->device;
  const HostSources& host = rendered->host;
  const int files = static_cast<int>(device->size());
  std::set<std::string> functions;  // distinct __global__ functions (identical kernels share one)
  for (const ProgramKernel& k : program->kernels) functions.insert(k.function);
  stats.kernels = static_cast<int>(functions.size());
  stats.matmul_calls = static_cast<int>(program->matmuls.size());
  for (const ProgramStep& s : program->steps) {
    CodegenStats::Step st;
    st.label = s.label;
    st.kind = s.kind == ProgramStep::Kind::kKernel ? "kernel" : s.kind == ProgramStep::Kind::kMatmul ? "matmul" : "copy";
    st.function = s.kind == ProgramStep::Kind::kKernel ? program->kernels[static_cast<size_t>(s.index)].function
                  : s.kind == ProgramStep::Kind::kMatmul ? "cublasLt"
                                                         : "memcpy";
    if (s.node_index >= 0 && static_cast<size_t>(s.node_index) < graph.nodes.size()) {
      const Node& n = graph.nodes[static_cast<size_t>(s.node_index)];
      st.node = n.name;
      st.op = n.qualified_op();
    }
    stats.steps.push_back(std::move(st));
  }
  stats.weight_bytes = static_cast<int64_t>(program->weights.size());

  TempDir tmp;
  remove_stale_build_dirs();
  std::string tmpl =
      (fs::temp_directory_path() / ("aotc-build-" + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) return Status::error("cannot create a temp build directory");
  tmp.path = tmpl;
  const fs::path dir = tmp.path;
  for (int f = 0; f < files; ++f)
    AOTC_RETURN_IF_ERROR(write_text(dir / cuda_file(prefix, f), (*device)[static_cast<size_t>(f)]));
  AOTC_RETURN_IF_ERROR(write_text(dir / header_file(prefix), host.header));
  AOTC_RETURN_IF_ERROR(write_text(dir / blobs_file(prefix), host.blobs_s));
  AOTC_RETURN_IF_ERROR(
      write_file(dir / weights_file(prefix), program->weights.data(), program->weights.size()));
  AOTC_RETURN_IF_ERROR(write_text(dir / "Makefile", makefile(options, prefix, *device)));
  // Sources go out before compiling, so a failed build can be inspected.
  // The host source as first rendered (host-params kernels without their params yet) goes out now,
  // so a failed build can be inspected; it is rendered and written again below.
  AOTC_RETURN_IF_ERROR(write_text(dir / model_c_file(prefix), host.model_c));
  std::vector<std::string> emitted = {model_c_file(prefix), header_file(prefix), blobs_file(prefix),
                                      weights_file(prefix), "Makefile"};
  for (const std::string& name : runtime_files()) {
    const EmbeddedFile* f = find_embedded_file("runtime/" + name);
    AOTC_RETURN_IF_ERROR(write_file(dir / name, f->data, f->size));
    emitted.push_back(name);
  }
  if (runtime_files(".c").empty()) return Status::error("internal: no runtime/*.c is embedded");
  for (const char* name : kDeviceHeaders) {
    const EmbeddedFile* f = find_embedded_file(std::string("templates/") + name);
    if (!f) return Status::error(std::string("internal: templates/") + name + " is not embedded");
    AOTC_RETURN_IF_ERROR(write_file(dir / name, f->data, f->size));
    emitted.push_back(name);
  }
  stats.render_seconds = seconds_since(t0);

  std::vector<std::string> fatbins;
  std::vector<std::vector<std::string>> nvcc_commands;
  for (int f = 0; f < files; ++f) {
    emitted.push_back(cuda_file(prefix, f));
    fatbins.push_back(fatbin_file(prefix, f));
    nvcc_commands.push_back(nvcc_command(options, prefix, f, source_requires_sm90a((*device)[static_cast<size_t>(f)])));
  }
  auto emit = [&](const std::vector<std::string>& files) -> Status {
    if (options.emit_source_dir.empty()) return Status::ok();
    std::error_code ec;
    fs::create_directories(options.emit_source_dir, ec);
    for (const std::string& f : files) {
      // Never write through a link planted in the folder (its target would be overwritten): the
      // link itself is replaced; anything else that is not a regular file is an error.
      const fs::path dst = fs::path(options.emit_source_dir) / f;
      const fs::file_status st = fs::symlink_status(dst, ec);
      if (fs::is_symlink(st)) {
        fs::remove(dst, ec);
      } else if (fs::exists(st) && !fs::is_regular_file(st)) {
        return Status::error("cannot write " + options.emit_source_dir + "/" + f + ": not a regular file");
      }
      ec.clear();
      fs::copy_file(dir / f, dst, fs::copy_options::overwrite_existing, ec);
      if (ec) return Status::error("cannot write " + options.emit_source_dir + "/" + f + ": " + ec.message());
    }
    return Status::ok();
  };
  AOTC_RETURN_IF_ERROR(emit(emitted));

  // The kernel cache: a hit copies the fatbin instead of running nvcc.
  auto t1 = std::chrono::steady_clock::now();
  KernelCache cache(options.kernel_cache_dir);
  std::vector<std::string> keys(static_cast<size_t>(files));
  std::vector<std::vector<std::string>> to_compile;
  std::vector<int> compiled_files;
  const bool libraries = !options.kernel_library_dirs.empty();
  if (!options.kernel_cache_dir.empty() || libraries) {
    const std::string version = nvcc_version_text(options);
    stats.cache_enabled = !version.empty() && !options.kernel_cache_dir.empty();
    const std::string cutlass_version = cutlass_headers_version(options.cutlass_include_dir);
    for (int f = 0; !version.empty() && f < files; ++f)
      keys[static_cast<size_t>(f)] = device_file_key((*device)[static_cast<size_t>(f)], version, cutlass_version,
                                                     nvcc_commands[static_cast<size_t>(f)]);
  }
  for (int f = 0; f < files; ++f) {
    const std::string& key = keys[static_cast<size_t>(f)];
    const std::string fatbin = (dir / fatbin_file(prefix, f)).string();
    if (stats.cache_enabled && cache.fetch(key, fatbin)) {
      ++stats.cache_hits;
      continue;
    }
    if (!key.empty() && is_kernel_library_file((*device)[static_cast<size_t>(f)]) &&
        fetch_from_libraries(options.kernel_library_dirs, key, fatbin)) {
      ++stats.library_hits;
      continue;
    }
    to_compile.push_back(nvcc_commands[static_cast<size_t>(f)]);
    compiled_files.push_back(f);
  }
  stats.cache_misses = stats.cache_enabled ? static_cast<int>(to_compile.size()) : 0;
  if (stats.library_hits > 0 || options.add_to_kernel_library)
    report("kernel library: " + std::to_string(stats.library_hits) + " kernel file(s) from " +
           options.kernel_library_dirs.front() + (stats.library_hits > 0 && options.kernel_library_dirs.size() > 1 ? " and others" : ""));
  int parallel = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::string cache_note =
      stats.cache_enabled ? "; kernel cache: " + std::to_string(stats.cache_hits) + " hit(s), " +
                                std::to_string(stats.cache_misses) + " miss(es)"
                          : "; kernel cache off";
  report("nvcc: " + std::to_string(stats.kernels) + " distinct kernels (" +
         std::to_string(program->kernels.size()) + " launches) in " + std::to_string(files) +
         " device file(s) for " + std::to_string(options.archs.size()) + " arch(s), " +
         std::to_string(std::min(parallel, std::max<int>(1, static_cast<int>(to_compile.size())))) +
         " at a time" + cache_note);
  // The thread reports through `host_params` only; the main thread touches neither it nor the
  // progress callback until join (every exit path joins).
  Expected<HostParamsStats> host_params = HostParamsStats{};
  // The same thread first compiles the runtime's objects (about a second, off the critical path
  // of a CUTLASS 3.x build's nvcc); `runtime_objects` is read after join only.
  Status runtime_objects = Status::ok();
  std::thread host_params_thread([&] {
    try {
      runtime_objects = run_tool(runtime_objects_command(options), dir, "host compiler");
      host_params = build_host_params(*program, options);
    } catch (const std::exception& e) {
      host_params = Status::error(std::string("compile-time params builder: ") + e.what());
    }
  });
  Status device_status = Status::ok();
  try {
    device_status = run_tools_parallel(to_compile, dir, "nvcc", parallel);
  } catch (...) {
    host_params_thread.join();
    throw;
  }
  host_params_thread.join();
  AOTC_RETURN_IF_ERROR(device_status);
  AOTC_RETURN_IF_ERROR(runtime_objects);
  if (!host_params) return host_params.status();
  stats.host_params_kernels = host_params->kernels;
  stats.host_params_cache_hit = host_params->cache_hit;
  stats.host_params_library_hits = host_params->library_hits;
  stats.host_params_library_added = host_params->library_added;
  stats.host_params_seconds = host_params->seconds;
  if (host_params->kernels > 0) {
    const std::string model_c =
        render_host_sources(*program, graph, host_source_info(*rendered, graph, options)).model_c;
    AOTC_RETURN_IF_ERROR(write_text(dir / model_c_file(prefix), model_c));
    AOTC_RETURN_IF_ERROR(emit({model_c_file(prefix)}));
  }
  for (int f : compiled_files) {
    const std::string& key = keys[static_cast<size_t>(f)];
    if (!options.add_to_kernel_library || key.empty() || !is_kernel_library_file((*device)[static_cast<size_t>(f)]))
      continue;
    Status s = KernelCache(options.kernel_library_dirs.front()).store(key, (dir / fatbin_file(prefix, f)).string());
    if (!s.is_ok()) return Status::error("kernel library: " + s.message());
    ++stats.library_added;
  }
  for (int f : compiled_files) {
    if (!stats.cache_enabled) break;
    Status s = cache.store(keys[static_cast<size_t>(f)], (dir / fatbin_file(prefix, f)).string());
    if (!s.is_ok()) {
      report(s.message() + " (continuing without caching)");
      break;
    }
  }
  stats.nvcc_seconds = seconds_since(t1);
  AOTC_RETURN_IF_ERROR(emit(fatbins));

  report("host compiler: lib" + prefix + ".so");
  auto t2 = std::chrono::steady_clock::now();
  AOTC_RETURN_IF_ERROR(run_tool(cc_command(options, prefix, true), dir, "host compiler"));
  stats.host_cc_seconds = seconds_since(t2);

  if (!options.output_path.empty()) {
    fs::path out = options.output_path;
    fs::path header_path = out.parent_path() / header_file(prefix);
    AOTC_RETURN_IF_ERROR(install_pair(dir / ("lib" + prefix + ".so"), out, dir / header_file(prefix), header_path));
  }
  return stats;
}

}  // namespace aotc
