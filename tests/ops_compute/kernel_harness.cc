// Test-only render / compile / run harness (see kernel_harness.h).
#include <cmath>
#include "tests/ops_compute/kernel_harness.h"

#include "codegen/embedded_files.h"
#include "codegen/template_renderer.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace aotc {
namespace testing_util {

// The production renderer (codegen/template_renderer) on the template embedded in the compiler,
// exactly what codegen emits for this step, with `kernel_name` filled in.
Expected<std::string> render_kernel(const KernelStep& step, const std::string& kernel_name) {
  const std::string path = "templates/" + step.template_name + ".cu.in";
  const EmbeddedFile* file = find_embedded_file(path);
  if (!file) return Status::error("no embedded template " + path);
  Holes holes = step.holes;
  holes.push_back({"kernel_name", kernel_name});
  return render_template(step.template_name, file->text(), holes);
}

std::string find_nvcc() {
  std::vector<std::string> candidates;
  if (const char* home = std::getenv("CUDA_HOME")) candidates.push_back(std::string(home) + "/bin/nvcc");
  candidates.push_back("/usr/local/cuda/bin/nvcc");
  for (const std::string& c : candidates)
    if (access(c.c_str(), X_OK) == 0) return c;
  return "";
}

Status nvcc_compile(const std::string& source, const std::string& arch, bool cubin, const std::string& out_path) {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) return Status::error("no nvcc");
  std::string src_path = out_path + ".cu", log_path = out_path + ".log";
  {
    std::ofstream f(src_path);
    // The same device prelude codegen puts in front of every kernel, unless the caller already
    // pasted it (several kernel tests build their source as common.cuh + kernels).
    std::ifstream common_file(std::string(AOTC_SOURCE_DIR) + "/templates/common.cuh");
    std::stringstream common;
    common << common_file.rdbuf();
    if (source.find(common.str()) == std::string::npos) f << common.str() << "\n";
    f << source;
  }
  pid_t pid = fork();
  if (pid == 0) {
    FILE* log = std::freopen(log_path.c_str(), "w", stderr);
    (void)log;
    dup2(fileno(stderr), fileno(stdout));
    std::string arch_flag = "-arch=" + arch;
    const std::string templates = std::string("-I") + AOTC_SOURCE_DIR + "/templates";  // the device headers
    execl(nvcc.c_str(), nvcc.c_str(), arch_flag.c_str(), templates.c_str(), cubin ? "-cubin" : "-c", "-o",
          out_path.c_str(), src_path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::ok();
  std::ifstream f(log_path);
  std::stringstream ss;
  ss << f.rdbuf();
  return Status::error("nvcc failed on " + src_path + ":\n" + ss.str());
}

Status emulate_matmul(const MatmulStep& m, std::map<ValueId, Tensor>& values) {
  auto get = [&](ValueId id) -> const Tensor* { return values.count(id) ? &values.at(id) : nullptr; };
  const Tensor *a = get(m.a), *b = get(m.b), *c = get(m.c), *bias = get(m.bias);
  if (!a || !b || !values.count(m.d)) return Status::error("matmul operands missing");
  Tensor& d = values.at(m.d);
  for (int64_t bt = 0; bt < m.batch; ++bt)
    for (int64_t i = 0; i < m.m; ++i)
      for (int64_t j = 0; j < m.n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < m.k; ++p) {
          double av = a->get(bt * m.stride_a + (m.trans_a ? p * m.lda + i : i * m.lda + p));
          double bv = b->get(bt * m.stride_b + (m.trans_b ? j * m.ldb + p : p * m.ldb + j));
          s += av * bv;
        }
        double v = m.alpha * s;
        if (c && m.beta != 0.f) v += m.beta * c->get(bt * m.stride_c + i * m.ldc + j);
        if (bias) v += bias->get(j);
        if (m.epilogue == MatmulStep::Epilogue::kRelu || m.epilogue == MatmulStep::Epilogue::kBiasRelu) v = v < 0 ? 0 : v;
        if (m.epilogue == MatmulStep::Epilogue::kGelu || m.epilogue == MatmulStep::Epilogue::kBiasGelu)
          v = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));  // cuBLASLt's GELU
        d.set(bt * m.stride_d + i * m.ldd + j, v);
      }
  return Status::ok();
}

Expected<void*> compile_for_cpu(const std::string& source) {
  char dir_template[] = "/tmp/aotc_emu_XXXXXX";
  if (!mkdtemp(dir_template)) return Status::error("mkdtemp failed");
  const std::string dir = dir_template, src = dir + "/k.cc", so = dir + "/k.so", log = dir + "/log";
  {
    std::ofstream f(src);
    f << "#include \"" << AOTC_SOURCE_DIR << "/tests/ops_compute/cuda_emulation.h\"\n" << source;
  }
  pid_t pid = fork();
  if (pid == 0) {
    FILE* l = std::freopen(log.c_str(), "w", stderr);
    (void)l;
    const std::string templates = std::string("-I") + AOTC_SOURCE_DIR + "/templates";  // the device headers
    execlp("g++", "g++", "-std=c++20", "-O1", "-w", "-shared", "-fPIC", "-pthread", templates.c_str(), "-o", so.c_str(),
           src.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream f(log);
    std::stringstream ss;
    ss << f.rdbuf();
    return Status::error("g++ failed on " + src + ":\n" + ss.str().substr(0, 4000));
  }
  void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return Status::error(std::string("dlopen: ") + dlerror());
  std::filesystem::remove_all(dir);  // the mapping stays valid
  return handle;
}

Status run_on_cpu(void* handle, const std::string& prefix, const Lowering& lowering, std::map<ValueId, Tensor>& values) {
  using Launch = void (*)(void*, int, void**, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned);
  auto launch = reinterpret_cast<Launch>(dlsym(handle, "aotc_emu_launch"));
  if (!launch) return Status::error("aotc_emu_launch missing");
  std::vector<uint8_t> scratch(static_cast<size_t>(lowering.scratch_bytes) + 1);
  for (size_t i = 0; i < lowering.steps.size(); ++i) {
    const LoweredStep& step = lowering.steps[i];
    if (step.kind == LoweredStep::Kind::kMatmul) {
      const MatmulStep& m = step.matmul;
      if (m.a != kScratchArg && m.b != kScratchArg && m.c != kScratchArg) {
        AOTC_RETURN_IF_ERROR(emulate_matmul(m, values));
        continue;
      }
      // An operand in the node's scratch (im2col + GEMM): the scratch bytes as a flat tensor.
      Tensor flat(m.dtype, {lowering.scratch_bytes / dtype_size(m.dtype)});
      std::memcpy(flat.raw(), scratch.data(), static_cast<size_t>(flat.byte_size()));
      values.emplace(kScratchArg, std::move(flat));
      Status s = emulate_matmul(m, values);
      values.erase(kScratchArg);
      AOTC_RETURN_IF_ERROR(s);
      continue;
    }
    const KernelStep& k = step.kernel;
    void* fn = dlsym(handle, (prefix + "k" + std::to_string(i)).c_str());
    if (!fn) return Status::error("kernel " + prefix + "k" + std::to_string(i) + " missing");
    // Must match kAotcEmuMaxArgs in cuda_emulation.h: a kernel the emulator cannot call is an
    // error, never a silent no-op that would let a test pass without running anything.
    if (k.args.empty() || k.args.size() > 12)
      return Status::error("CPU emulation takes kernels with 1 to 12 pointer parameters, got " +
                           std::to_string(k.args.size()));
    std::vector<void*> args;
    for (size_t j = 0; j < k.args.size(); ++j) {
      const ValueId id = k.args[j];
      uint8_t* p = id == kNullArg ? nullptr : id == kScratchArg ? scratch.data() : values.at(id).raw();
      // A pointer past the value's start (KernelStep::arg_byte_offsets, as the launch program adds).
      if (p && !k.arg_byte_offsets.empty()) p += k.arg_byte_offsets[j];
      args.push_back(p);
    }
    launch(fn, static_cast<int>(args.size()), args.data(), static_cast<unsigned>(k.grid.x), static_cast<unsigned>(k.grid.y),
           static_cast<unsigned>(k.grid.z), static_cast<unsigned>(k.block.x), static_cast<unsigned>(k.block.y),
           static_cast<unsigned>(k.block.z));
  }
  return Status::ok();
}

// ---- the driver API, loaded at run time ----

using CUresult = int;
using CUdeviceptr = unsigned long long;

struct Gpu::Api {
  void* lib = nullptr;
  void* ctx = nullptr;
  int device = 0;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(int*, int);
  CUresult (*cuDeviceGetAttribute)(int*, int, int);
  CUresult (*cuDevicePrimaryCtxRetain)(void**, int);
  CUresult (*cuDevicePrimaryCtxRelease)(int);
  CUresult (*cuCtxSetCurrent)(void*);
  CUresult (*cuModuleLoadData)(void**, const void*);
  CUresult (*cuModuleUnload)(void*);
  CUresult (*cuModuleGetFunction)(void**, void*, const char*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuGetErrorString)(CUresult, const char**);

  Status check(CUresult r, const char* what) {
    if (r == 0) return Status::ok();
    const char* msg = "unknown";
    if (cuGetErrorString) cuGetErrorString(r, &msg);
    return Status::error(std::string(what) + " failed: " + msg);
  }
};

template <class F>
bool load_symbol(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

std::unique_ptr<Gpu> Gpu::open(std::string* why_not) {
  auto api = std::make_unique<Api>();
  api->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!api->lib) {
    *why_not = "libcuda.so.1 not found";
    return nullptr;
  }
  Api& a = *api;
  bool ok = load_symbol(a.lib, "cuInit", a.cuInit) && load_symbol(a.lib, "cuDeviceGetCount", a.cuDeviceGetCount) &&
            load_symbol(a.lib, "cuDeviceGet", a.cuDeviceGet) && load_symbol(a.lib, "cuDeviceGetAttribute", a.cuDeviceGetAttribute) &&
            load_symbol(a.lib, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain) &&
            load_symbol(a.lib, "cuDevicePrimaryCtxRelease_v2", a.cuDevicePrimaryCtxRelease) &&
            load_symbol(a.lib, "cuCtxSetCurrent", a.cuCtxSetCurrent) && load_symbol(a.lib, "cuModuleLoadData", a.cuModuleLoadData) &&
            load_symbol(a.lib, "cuModuleUnload", a.cuModuleUnload) && load_symbol(a.lib, "cuModuleGetFunction", a.cuModuleGetFunction) &&
            load_symbol(a.lib, "cuMemAlloc_v2", a.cuMemAlloc) && load_symbol(a.lib, "cuMemFree_v2", a.cuMemFree) &&
            load_symbol(a.lib, "cuMemcpyHtoD_v2", a.cuMemcpyHtoD) && load_symbol(a.lib, "cuMemcpyDtoH_v2", a.cuMemcpyDtoH) &&
            load_symbol(a.lib, "cuLaunchKernel", a.cuLaunchKernel) && load_symbol(a.lib, "cuCtxSynchronize", a.cuCtxSynchronize) &&
            load_symbol(a.lib, "cuGetErrorString", a.cuGetErrorString);
  int count = 0;
  if (!ok || a.cuInit(0) != 0 || a.cuDeviceGetCount(&count) != 0 || count == 0) {
    *why_not = ok ? "no CUDA device" : "driver API symbols missing";
    dlclose(a.lib);
    return nullptr;
  }
  std::unique_ptr<Gpu> gpu(new Gpu());
  a.cuDeviceGet(&a.device, 0);
  a.cuDeviceGetAttribute(&gpu->major_, 75, a.device);  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  a.cuDeviceGetAttribute(&gpu->minor_, 76, a.device);
  if (a.cuDevicePrimaryCtxRetain(&a.ctx, a.device) != 0 || a.cuCtxSetCurrent(a.ctx) != 0) {
    *why_not = "cannot create a CUDA context";
    return nullptr;
  }
  gpu->api_ = std::move(api);
  return gpu;
}

Gpu::~Gpu() {
  if (api_ && api_->ctx) api_->cuDevicePrimaryCtxRelease(api_->device);
}

std::string Gpu::arch() const { return "sm_" + std::to_string(major_ * 10 + minor_); }

Status Gpu::run(const Lowering& lowering, std::map<ValueId, Tensor>& values) {
  Api& a = *api_;
  // One module holding every kernel step, named k0, k1, ...
  std::string source;
  for (size_t i = 0; i < lowering.steps.size(); ++i) {
    if (lowering.steps[i].kind != LoweredStep::Kind::kKernel) continue;
    auto text = render_kernel(lowering.steps[i].kernel, "k" + std::to_string(i));
    if (!text) return text.status();
    source += *text + "\n";
  }
  std::vector<char> cubin;
  if (!source.empty()) {
    char dir_template[] = "/tmp/aotc_gpu_XXXXXX";
    if (!mkdtemp(dir_template)) return Status::error("mkdtemp failed");
    std::string out = std::string(dir_template) + "/k.cubin";
    AOTC_RETURN_IF_ERROR(nvcc_compile(source, arch(), true, out));
    std::ifstream f(out, std::ios::binary);
    cubin.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    std::filesystem::remove_all(dir_template);
  }
  void* module = nullptr;
  if (!cubin.empty()) AOTC_RETURN_IF_ERROR(a.check(a.cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData"));
  Status result = Status::ok();
  // One scratch buffer for the whole node, as in the arena: a step reads what an earlier step of
  // the same node left there (e.g. SoftmaxCrossEntropyLoss's log-probabilities).
  CUdeviceptr scratch = 0;
  if (lowering.scratch_bytes > 0)
    result = a.check(a.cuMemAlloc(&scratch, static_cast<size_t>(lowering.scratch_bytes)), "cuMemAlloc scratch");
  for (size_t i = 0; i < lowering.steps.size() && result.is_ok(); ++i) {
    const LoweredStep& step = lowering.steps[i];
    if (step.kind == LoweredStep::Kind::kMatmul) {
      result = emulate_matmul(step.matmul, values);
      continue;
    }
    const KernelStep& k = step.kernel;
    std::vector<CUdeviceptr> ptrs(k.args.size(), 0);
    for (size_t j = 0; j < k.args.size() && result.is_ok(); ++j) {
      ValueId id = k.args[j];
      if (id == kNullArg) continue;
      if (id == kScratchArg) {
        ptrs[j] = scratch;
        continue;
      }
      size_t bytes = static_cast<size_t>(values.at(id).byte_size());
      result = a.check(a.cuMemAlloc(&ptrs[j], bytes ? bytes : 1), "cuMemAlloc");
      if (result.is_ok() && bytes) result = a.check(a.cuMemcpyHtoD(ptrs[j], values.at(id).raw(), bytes), "HtoD");
    }
    void* fn = nullptr;
    if (result.is_ok()) result = a.check(a.cuModuleGetFunction(&fn, module, ("k" + std::to_string(i)).c_str()), "cuModuleGetFunction");
    // The launch's pointers: each buffer's start plus the step's byte offset, where it gives one.
    std::vector<CUdeviceptr> launch_ptrs = ptrs;
    for (size_t j = 0; j < launch_ptrs.size(); ++j)
      if (launch_ptrs[j] && !k.arg_byte_offsets.empty()) launch_ptrs[j] += static_cast<CUdeviceptr>(k.arg_byte_offsets[j]);
    std::vector<void*> params;
    for (CUdeviceptr& p : launch_ptrs) params.push_back(&p);
    if (result.is_ok())
      result = a.check(a.cuLaunchKernel(fn, static_cast<unsigned>(k.grid.x), static_cast<unsigned>(k.grid.y), static_cast<unsigned>(k.grid.z),
                                        static_cast<unsigned>(k.block.x), static_cast<unsigned>(k.block.y), static_cast<unsigned>(k.block.z),
                                        static_cast<unsigned>(k.shared_bytes), nullptr, params.data(), nullptr),
                       "cuLaunchKernel");
    if (result.is_ok()) result = a.check(a.cuCtxSynchronize(), "kernel execution");
    for (size_t j = 0; j < k.args.size(); ++j) {
      ValueId id = k.args[j];
      if (result.is_ok() && id >= 0 && values.at(id).byte_size())
        result = a.check(a.cuMemcpyDtoH(values.at(id).raw(), ptrs[j], static_cast<size_t>(values.at(id).byte_size())), "DtoH");
      if (ptrs[j] && k.args[j] != kScratchArg) a.cuMemFree(ptrs[j]);
    }
  }
  if (scratch) a.cuMemFree(scratch);
  if (module) a.cuModuleUnload(module);
  return result;
}

}  // namespace testing_util
}  // namespace aotc
