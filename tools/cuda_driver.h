// The few CUDA driver API calls aotc-run needs, resolved from libcuda.so.1 with dlopen so that
// aotc-run links no CUDA library (like the generated .so files). Types are declared here with the
// driver's ABI (CUdeviceptr is 64-bit, handles are pointers) instead of including cuda.h, so the
// tools build without a CUDA toolkit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/status.h"

namespace aotc {

using CuResult = int;
using CuDevice = int;
using CuDevicePtr = unsigned long long;
using CuContext = struct CuContextOpaque*;
using CuStream = struct CuStreamOpaque*;
using CuEvent = struct CuEventOpaque*;

struct CudaDriver {
  CuResult (*cuInit)(unsigned) = nullptr;
  CuResult (*cuDeviceGetCount)(int*) = nullptr;
  CuResult (*cuDeviceGet)(CuDevice*, int) = nullptr;
  CuResult (*cuDeviceGetName)(char*, int, CuDevice) = nullptr;
  CuResult (*cuDevicePrimaryCtxRetain)(CuContext*, CuDevice) = nullptr;
  CuResult (*cuDevicePrimaryCtxRelease)(CuDevice) = nullptr;
  CuResult (*cuCtxSetCurrent)(CuContext) = nullptr;
  CuResult (*cuMemAlloc)(CuDevicePtr*, size_t) = nullptr;
  CuResult (*cuMemFree)(CuDevicePtr) = nullptr;
  CuResult (*cuMemcpyHtoD)(CuDevicePtr, const void*, size_t) = nullptr;
  CuResult (*cuMemcpyDtoH)(void*, CuDevicePtr, size_t) = nullptr;
  CuResult (*cuMemsetD8)(CuDevicePtr, unsigned char, size_t) = nullptr;
  CuResult (*cuStreamCreate)(CuStream*, unsigned) = nullptr;
  CuResult (*cuStreamDestroy)(CuStream) = nullptr;
  CuResult (*cuStreamSynchronize)(CuStream) = nullptr;
  CuResult (*cuEventCreate)(CuEvent*, unsigned) = nullptr;
  CuResult (*cuEventDestroy)(CuEvent) = nullptr;
  CuResult (*cuEventRecord)(CuEvent, CuStream) = nullptr;
  CuResult (*cuEventSynchronize)(CuEvent) = nullptr;
  CuResult (*cuEventElapsedTime)(float*, CuEvent, CuEvent) = nullptr;
  CuResult (*cuGetErrorName)(CuResult, const char**) = nullptr;

  // "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2)"
  Status check(CuResult result, const char* what) const;
};

// Opens libcuda.so.1, resolves every entry point, calls cuInit and checks that `device` exists;
// the error says plainly when there is no driver or no GPU ("no CUDA GPU: ..."). The handle stays
// open for the life of the process.
Expected<const CudaDriver*> load_cuda_driver(int device);

// A device buffer released on destruction (the driver outlives it).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer();
  Status allocate(const CudaDriver* driver, size_t bytes);
  CuDevicePtr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  const CudaDriver* driver_ = nullptr;
  CuDevicePtr ptr_ = 0;
  size_t bytes_ = 0;
};

}  // namespace aotc
