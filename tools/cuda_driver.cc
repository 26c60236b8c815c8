// Loading the CUDA driver API at run time (see cuda_driver.h). Versioned entry points (_v2) are
// preferred where the driver exports them, as cuda.h maps the plain names onto them.
#include "tools/cuda_driver.h"

#include <dlfcn.h>

#include <utility>

namespace aotc {
namespace {

constexpr int kCudaErrorNoDevice = 100;

template <class F>
bool resolve(void* lib, F* slot, const char* name, const char* v2_name = nullptr) {
  void* p = v2_name ? dlsym(lib, v2_name) : nullptr;
  if (!p) p = dlsym(lib, name);
  *slot = reinterpret_cast<F>(p);
  return p != nullptr;
}

}  // namespace

Status CudaDriver::check(CuResult result, const char* what) const {
  if (result == 0) return Status::ok();
  const char* name = nullptr;
  if (!cuGetErrorName || cuGetErrorName(result, &name) != 0 || !name) name = "CUDA error";
  return Status::error(std::string(what) + " failed: " + name + " (" + std::to_string(result) + ")");
}

Expected<const CudaDriver*> load_cuda_driver(int device) {
  static CudaDriver driver;
  static bool loaded = false;
  if (!loaded) {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      return Status::error(std::string("no CUDA GPU: cannot open the NVIDIA driver libcuda.so.1 (") +
                           (why ? why : "not found") + ")");
    }
    bool ok = true;
    ok &= resolve(lib, &driver.cuInit, "cuInit");
    ok &= resolve(lib, &driver.cuDeviceGetCount, "cuDeviceGetCount");
    ok &= resolve(lib, &driver.cuDeviceGet, "cuDeviceGet");
    ok &= resolve(lib, &driver.cuDeviceGetName, "cuDeviceGetName");
    ok &= resolve(lib, &driver.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    ok &= resolve(lib, &driver.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease",
                  "cuDevicePrimaryCtxRelease_v2");
    ok &= resolve(lib, &driver.cuCtxSetCurrent, "cuCtxSetCurrent");
    ok &= resolve(lib, &driver.cuMemAlloc, "cuMemAlloc", "cuMemAlloc_v2");
    ok &= resolve(lib, &driver.cuMemFree, "cuMemFree", "cuMemFree_v2");
    ok &= resolve(lib, &driver.cuMemcpyHtoD, "cuMemcpyHtoD", "cuMemcpyHtoD_v2");
    ok &= resolve(lib, &driver.cuMemcpyDtoH, "cuMemcpyDtoH", "cuMemcpyDtoH_v2");
    ok &= resolve(lib, &driver.cuMemsetD8, "cuMemsetD8", "cuMemsetD8_v2");
    ok &= resolve(lib, &driver.cuStreamCreate, "cuStreamCreate");
    ok &= resolve(lib, &driver.cuStreamDestroy, "cuStreamDestroy", "cuStreamDestroy_v2");
    ok &= resolve(lib, &driver.cuStreamSynchronize, "cuStreamSynchronize");
    ok &= resolve(lib, &driver.cuEventCreate, "cuEventCreate");
    ok &= resolve(lib, &driver.cuEventDestroy, "cuEventDestroy", "cuEventDestroy_v2");
    ok &= resolve(lib, &driver.cuEventRecord, "cuEventRecord");
    ok &= resolve(lib, &driver.cuEventSynchronize, "cuEventSynchronize");
    ok &= resolve(lib, &driver.cuEventElapsedTime, "cuEventElapsedTime", "cuEventElapsedTime_v2");
    resolve(lib, &driver.cuGetErrorName, "cuGetErrorName");
    if (!ok) return Status::error("libcuda.so.1 lacks a driver API entry point aotc-run needs (driver too old?)");
    CuResult r = driver.cuInit(0);
    if (r != 0) {
      return Status::error("no CUDA GPU: cuInit failed" +
                           std::string(r == kCudaErrorNoDevice ? " (no CUDA-capable device)" : "") + ": " +
                           driver.check(r, "cuInit").message());
    }
    loaded = true;
  }
  int count = 0;
  AOTC_RETURN_IF_ERROR(driver.check(driver.cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0) return Status::error("no CUDA GPU: the driver reports no device");
  if (device < 0 || device >= count) {
    return Status::error("--device " + std::to_string(device) + " does not exist (" +
                         std::to_string(count) + " CUDA device(s))");
  }
  return &driver;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_ && driver_) driver_->cuMemFree(ptr_);
    driver_ = std::exchange(other.driver_, nullptr);
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ && driver_) driver_->cuMemFree(ptr_);
}

Status DeviceBuffer::allocate(const CudaDriver* driver, size_t bytes) {
  driver_ = driver;
  bytes_ = bytes;
  // A zero-byte tensor still gets a distinct, valid pointer: the ABI takes one per input/output.
  return driver->check(driver->cuMemAlloc(&ptr_, bytes == 0 ? 1 : bytes), "cuMemAlloc");
}

}  // namespace aotc
