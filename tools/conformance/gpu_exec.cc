// Build a .so from a Graph via the driver's stages, and run it through the C ABI with dlopen.
// The ABI symbols are looked up by prefix at run time, so this file links to nothing of CUDA and
// builds on a machine without a GPU.
#include "tools/conformance/gpu_exec.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

#include "codegen/codegen.h"
#include "codegen/cutlass_dir.h"
#include "ir/op_registry.h"
#include "opt/memory_plan.h"
#include "opt/pipeline.h"

namespace aotc::conformance {
namespace {

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Every node must have a lowering that accepts it; otherwise the GPU cannot run the graph and
// the reason (the lowering's own message) is a gap, not a bug.
Status check_lowerings(const Graph& graph) {
  const OpRegistry& registry = default_registry();
  for (const Node& node : graph.nodes) {
    const OpDef* def = registry.find(node.op_type, node.domain);
    if (def == nullptr) return node_error(node, "op is not registered");
    if (def->lower == nullptr) return node_error(node, "no GPU lowering for this op");
    Expected<Lowering> lowering = def->lower(node, graph);
    if (!lowering) return lowering.status();
  }
  return Status::ok();
}

}  // namespace

std::string default_nvcc() {
  const char* home = std::getenv("CUDA_HOME");
  if (home != nullptr && *home != '\0' && file_exists(std::string(home) + "/bin/nvcc"))
    return std::string(home) + "/bin/nvcc";
  if (file_exists("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  return "nvcc";
}

BuildOutcome build_library(Graph& graph, const GpuBuildOptions& options) {
  BuildOutcome out;
  // The passes and lowerings choose implementations for the GPU the library is built for.
  // The caller's strategy switches (precision, implementation choices) stay.
  // Only the GPU facts (archs, SM count) change; every strategy switch the caller set stays.
  const Target probed = target_from_archs(options.archs.empty() ? std::vector<std::string>{"sm_90"} : options.archs);
  graph.target.sms = probed.sms;
  graph.target.sm_count = options.sm_count > 0 ? options.sm_count : probed.sm_count;
  Expected<std::vector<PassStats>> stats = run_pipeline(graph, PipelineOptions{});
  if (!stats) {
    out.message = "pipeline: " + stats.status().message();
    return out;
  }
  Status lowered = check_lowerings(graph);
  if (!lowered) {
    out.kind = BuildOutcome::Kind::kUnsupported;
    out.message = lowered.message();
    return out;
  }
  Expected<MemoryPlan> plan = plan_memory(graph);
  if (!plan) {
    out.message = "memory plan: " + plan.status().message();
    return out;
  }
  CodegenOptions cg;
  cg.name = options.name;
  if (!options.archs.empty()) cg.archs = options.archs;
  cg.output_path = options.output_path;
  cg.nvcc = options.nvcc.empty() ? default_nvcc() : options.nvcc;
  cg.cuda_include_dir = options.cuda_include_dir;
  if (cg.cuda_include_dir.empty()) {
    std::string nvcc = cg.nvcc;
    size_t slash = nvcc.rfind("/bin/");
    cg.cuda_include_dir = slash == std::string::npos ? "/usr/local/cuda/include"
                                                     : nvcc.substr(0, slash) + "/include";
  }
  cg.aotc_version = "conformance";
  // CUTLASS headers for the tensor-core kernels: CUTLASS_DIR or the pip package (codegen says
  // clearly when a model needs them and none is found).
  if (Expected<std::string> cutlass = find_cutlass_include_dir(""); cutlass.is_ok()) cg.cutlass_include_dir = *cutlass;
  Expected<CodegenStats> built = compile_library(graph, *plan, cg);
  if (!built) {
    out.message = "codegen: " + built.status().message();
    return out;
  }
  out.kind = BuildOutcome::Kind::kBuilt;
  return out;
}

Expected<LibraryOutputs> run_library(const std::string& so_path, const std::string& name,
                                     const std::vector<std::map<std::string, Tensor>>& runs) {
  void* lib = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return Status::error(std::string("dlopen: ") + dlerror());
  auto sym = [&](const char* suffix) { return dlsym(lib, (name + suffix).c_str()); };
  using CreateFn = int (*)(void**, int, void*, const void*);
  using DestroyFn = void (*)(void*);
  using RunHostFn = int (*)(void*, const void* const*, void* const*);
  using ErrorFn = const char* (*)(const void*);
  using CountFn = int (*)();
  using NameFn = const char* (*)(int);
  using IntFn = int (*)(int);
  using ShapeFn = const long long* (*)(int);
  using BytesFn = unsigned long long (*)(int);
  auto create = reinterpret_cast<CreateFn>(sym("_create"));
  auto destroy = reinterpret_cast<DestroyFn>(sym("_destroy"));
  auto run_host = reinterpret_cast<RunHostFn>(sym("_run_host"));
  auto last_error = reinterpret_cast<ErrorFn>(sym("_last_error"));
  auto num_inputs = reinterpret_cast<CountFn>(sym("_num_inputs"));
  auto num_outputs = reinterpret_cast<CountFn>(sym("_num_outputs"));
  auto input_name = reinterpret_cast<NameFn>(sym("_input_name"));
  auto output_name = reinterpret_cast<NameFn>(sym("_output_name"));
  auto input_bytes = reinterpret_cast<BytesFn>(sym("_input_bytes"));
  auto output_bytes = reinterpret_cast<BytesFn>(sym("_output_bytes"));
  auto output_dtype = reinterpret_cast<IntFn>(sym("_output_dtype"));
  auto output_rank = reinterpret_cast<IntFn>(sym("_output_rank"));
  auto output_shape = reinterpret_cast<ShapeFn>(sym("_output_shape"));
  if (!create || !destroy || !run_host || !last_error || !num_inputs || !num_outputs ||
      !input_name || !output_name || !input_bytes || !output_bytes || !output_dtype ||
      !output_rank || !output_shape) {
    dlclose(lib);
    return Status::error("library lacks an ABI symbol with prefix '" + name + "_'");
  }
  void* model = nullptr;
  if (create(&model, 0, nullptr, nullptr) != 0) {
    std::string msg = std::string("create: ") + last_error(nullptr);
    dlclose(lib);
    return Status::error(msg);
  }
  LibraryOutputs result;
  Status failure = Status::ok();
  for (int k = 0; k < num_outputs(); ++k) result.names.push_back(output_name(k));
  for (const auto& run : runs) {
    std::vector<const void*> in_ptrs;
    for (int i = 0; i < num_inputs() && failure.is_ok(); ++i) {
      auto it = run.find(input_name(i));
      if (it == run.end()) {
        failure = Status::error(std::string("no data for library input '") + input_name(i) + "'");
      } else if (static_cast<unsigned long long>(it->second.byte_size()) != input_bytes(i)) {
        failure = Status::error(std::string("input '") + input_name(i) + "' has " +
                                std::to_string(it->second.byte_size()) + " bytes, library wants " +
                                std::to_string(input_bytes(i)));
      } else {
        in_ptrs.push_back(it->second.raw());
      }
    }
    if (!failure) break;
    std::vector<Tensor> outs;
    std::vector<void*> out_ptrs;
    for (int k = 0; k < num_outputs(); ++k) {
      const long long* dims = output_shape(k);
      Shape shape(dims, dims + output_rank(k));
      outs.emplace_back(static_cast<DType>(output_dtype(k)), shape);
      if (static_cast<unsigned long long>(outs.back().byte_size()) != output_bytes(k)) {
        failure = Status::error("output " + std::to_string(k) + " size disagrees with its shape");
        break;
      }
    }
    if (!failure) break;
    for (Tensor& t : outs) {
      std::memset(t.raw(), 0xFF, static_cast<size_t>(t.byte_size()));
      out_ptrs.push_back(t.raw());
    }
    if (run_host(model, in_ptrs.data(), out_ptrs.data()) != 0) {
      failure = Status::error(std::string("run_host: ") + last_error(model));
      break;
    }
    result.runs.push_back(std::move(outs));
  }
  destroy(model);
  dlclose(lib);
  if (!failure) return failure;
  return result;
}

Status probe_gpu(std::string* arch) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr) return Status::error(std::string("cannot load libcuda.so.1: ") + dlerror());
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  using GetFn = int (*)(int*, int);
  using AttrFn = int (*)(int*, int, int);
  auto init = reinterpret_cast<InitFn>(dlsym(cuda, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(cuda, "cuDeviceGetCount"));
  auto get = reinterpret_cast<GetFn>(dlsym(cuda, "cuDeviceGet"));
  auto attr = reinterpret_cast<AttrFn>(dlsym(cuda, "cuDeviceGetAttribute"));
  if (!init || !count || !get || !attr) return Status::error("libcuda.so.1 lacks driver entry points");
  int rc = init(0);
  if (rc != 0) return Status::error("cuInit failed with CUresult " + std::to_string(rc));
  int n = 0;
  if (count(&n) != 0 || n == 0) return Status::error("no CUDA device");
  int dev = 0, major = 0, minor = 0;
  const int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76;  // CUdevice_attribute
  if (get(&dev, 0) != 0 || attr(&major, kComputeCapabilityMajor, dev) != 0 ||
      attr(&minor, kComputeCapabilityMinor, dev) != 0)
    return Status::error("cannot query device 0");
  if (arch != nullptr) *arch = "sm_" + std::to_string(major) + std::to_string(minor);
  return Status::ok();
}

void hold_gpu_context() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);  // never closed: held for the process
  if (cuda == nullptr) return;
  using InitFn = int (*)(unsigned);
  using GetFn = int (*)(int*, int);
  using RetainFn = int (*)(void**, int);
  auto init = reinterpret_cast<InitFn>(dlsym(cuda, "cuInit"));
  auto get = reinterpret_cast<GetFn>(dlsym(cuda, "cuDeviceGet"));
  auto retain = reinterpret_cast<RetainFn>(dlsym(cuda, "cuDevicePrimaryCtxRetain"));
  int dev = 0;
  void* ctx = nullptr;
  if (init && get && retain && init(0) == 0 && get(&dev, 0) == 0) (void)retain(&ctx, dev);
  if (dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL) == nullptr)
    (void)dlopen("libcublasLt.so.12", RTLD_NOW | RTLD_LOCAL);
}

}  // namespace aotc::conformance
