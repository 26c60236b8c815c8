// Test-only harness for this area's templates, independent of codegen/ (written concurrently):
// a naive {{hole}} renderer (fails on missing or unused keys), nvcc invocation, and execution of
// a Lowering on the GPU through the CUDA driver API loaded with dlopen (matmul steps are emulated
// on the CPU from the MatmulStep description, so the lowering's parameters are still checked).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/lowering.h"
#include "ir/status.h"

namespace aotc {
namespace testing_util {

// templates/<name>.cu.in with every hole filled (kernel_name included).
Expected<std::string> render_kernel(const KernelStep& step, const std::string& kernel_name);
// Path of nvcc (CUDA_HOME, /usr/local/cuda, PATH) or "" when there is none.
std::string find_nvcc();
// Compiles `source` (prefixed with #include <cuda_fp16.h>) with nvcc: to an object (`cubin` false)
// or a cubin for `arch` (e.g. "sm_90"). Returns nvcc's output on failure.
Status nvcc_compile(const std::string& source, const std::string& arch, bool cubin, const std::string& out_path);

// Applies one MatmulStep to host tensors, exactly as documented in ir/lowering.h (row-major).
Status emulate_matmul(const MatmulStep& m, std::map<ValueId, Tensor>& values);

// CPU emulation of the kernels (tests/ops_compute/cuda_emulation.h): compiles `source` (rendered
// kernels) with the host C++ compiler into a shared object and dlopens it; nullptr + message on
// failure. Then runs a lowering whose kernel step i is named `prefix + "k" + i` in that object.
Expected<void*> compile_for_cpu(const std::string& source);
// In a test body: `auto handle = compile_for_cpu(source)`; skips the test when the host has no C++
// compiler at all, fails it when the compiler rejects the source (a test's gtest include needed).
#define AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, source)                                        \
  auto handle = ::aotc::testing_util::compile_for_cpu(source);                             \
  if (!handle && handle.status().message().find("g++ failed") == std::string::npos)        \
    GTEST_SKIP() << "no host compiler for the emulation: " << handle.status().message();  \
  ASSERT_TRUE(handle.is_ok()) << handle.status().message()
Status run_on_cpu(void* handle, const std::string& prefix, const Lowering& lowering, std::map<ValueId, Tensor>& values);

class Gpu {
 public:
  // nullptr (and a reason) when there is no driver or no device.
  static std::unique_ptr<Gpu> open(std::string* why_not);
  ~Gpu();
  std::string arch() const;  // "sm_90"
  // Runs every step of `lowering`; `values` holds all node inputs and (allocated) outputs, which
  // are poisoned with 0xFF bytes before the run so unwritten elements show as NaN / -1.
  Status run(const Lowering& lowering, std::map<ValueId, Tensor>& values);

 private:
  Gpu() = default;
  struct Api;
  std::unique_ptr<Api> api_;
  int major_ = 0, minor_ = 0;
};

}  // namespace testing_util
}  // namespace aotc
