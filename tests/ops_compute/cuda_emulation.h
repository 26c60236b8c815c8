// Test-only: lets the device code of this area's templates compile as host C++ (g++ -std=c++20)
// and run on the CPU, so kernel logic (tiling, edge tiles, index decoding, epilogues) is checked
// on machines without a GPU. One block runs at a time with one std::thread per CUDA thread;
// __shared__ becomes a function-static (shared by the block's threads, reused by the next block)
// and __syncthreads a std::barrier. __half is emulated with _Float16 (round to nearest even).
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <barrier>
#include <thread>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
// templates/common.cuh's programmatic-dependent-launch entry: nothing to wait for here.
#define AOTC_PDL_ENTER() ((void)0)

struct aotc_emu_dim3 { unsigned x = 1, y = 1, z = 1; };
// 16-byte vector type and the read-only-cache load, as the vectorised templates use them.
struct uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return uint4{a, b, c, d}; }
struct uint2 { unsigned x, y; };
inline uint2 make_uint2(unsigned a, unsigned b) { return uint2{a, b}; }
template <class T>
inline T __ldg(const T* p) { return *p; }

inline thread_local aotc_emu_dim3 threadIdx, blockIdx;
inline aotc_emu_dim3 blockDim, gridDim;
inline std::barrier<>* aotc_emu_barrier = nullptr;
inline void __syncthreads() { aotc_emu_barrier->arrive_and_wait(); }
// Warp shuffle (xor lane) through a block-wide exchange: every thread of the block must call it
// together (the templates that use it keep all warps in step, as real warps would be).
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  static T slots[1024];
  const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  slots[tid] = v;
  __syncthreads();
  const T r = slots[tid ^ static_cast<unsigned>(lane_mask)];
  __syncthreads();
  return r;
}

struct __half {
  _Float16 v;
  __half() = default;
  __half(float f) : v(static_cast<_Float16>(f)) {}  // NOLINT: implicit, like cuda_fp16.h
  operator float() const { return static_cast<float>(v); }
};

// IEEE round-to-nearest single operations (the host compiles these without contraction).
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __uint_as_float(unsigned int bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
inline float __int_as_float(unsigned int bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

// Calls a kernel whose parameters are N pointers with args[0..N).
template <size_t... I>
void aotc_emu_call(void* fn, void** args, std::index_sequence<I...>) {
  using Kernel = void (*)(decltype((void)I, static_cast<void*>(nullptr))...);
  reinterpret_cast<Kernel>(fn)(args[I]...);
}

// The most pointer parameters aotc_emu_launch can pass (run_on_cpu refuses more).
constexpr int kAotcEmuMaxArgs = 12;

// Runs fn (a kernel whose parameters are `nargs` pointers) over the grid. Not inline: the test
// finds it with dlsym (this header is included by exactly one generated file).
extern "C" void aotc_emu_launch(void* fn, int nargs, void** args, unsigned gx, unsigned gy, unsigned gz,
                                       unsigned bx, unsigned by, unsigned bz) {
  gridDim = {gx, gy, gz};
  blockDim = {bx, by, bz};
  const unsigned threads = bx * by * bz;
  std::barrier<> barrier(threads);
  aotc_emu_barrier = &barrier;
  auto call = [&]() {
    switch (nargs) {
      case 1: aotc_emu_call(fn, args, std::make_index_sequence<1>{}); break;
      case 2: aotc_emu_call(fn, args, std::make_index_sequence<2>{}); break;
      case 3: aotc_emu_call(fn, args, std::make_index_sequence<3>{}); break;
      case 4: aotc_emu_call(fn, args, std::make_index_sequence<4>{}); break;
      case 5: aotc_emu_call(fn, args, std::make_index_sequence<5>{}); break;
      case 6: aotc_emu_call(fn, args, std::make_index_sequence<6>{}); break;
      case 7: aotc_emu_call(fn, args, std::make_index_sequence<7>{}); break;
      case 8: aotc_emu_call(fn, args, std::make_index_sequence<8>{}); break;
      case 9: aotc_emu_call(fn, args, std::make_index_sequence<9>{}); break;
      case 10: aotc_emu_call(fn, args, std::make_index_sequence<10>{}); break;
      case 11: aotc_emu_call(fn, args, std::make_index_sequence<11>{}); break;
      case 12: aotc_emu_call(fn, args, std::make_index_sequence<12>{}); break;
    }
  };
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      threadIdx = {t % bx, (t / bx) % by, t / (bx * by)};
      for (unsigned z = 0; z < gz; ++z)
        for (unsigned y = 0; y < gy; ++y)
          for (unsigned x = 0; x < gx; ++x) {
            blockIdx = {x, y, z};
            call();
            barrier.arrive_and_wait();  // the block is done before its shared memory is reused
          }
    });
  for (std::thread& w : workers) w.join();
  aotc_emu_barrier = nullptr;
}
