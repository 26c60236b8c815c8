// templates/host_params.cuh: the compile-time params builder of host-params library kernels
// (codegen/host_params.cc). Some CUTLASS kernels (the 3.x sm90 ones) take a params struct that
// only CUTLASS's host code can build, and that holds TMA descriptors made by the driver's
// tensor-map encoders. aotc therefore builds it on the machine that compiles the model: a host
// program made of this harness and every such kernel's template rendered with AOTC_HOST_PARAMS,
// each of which registers
//   int <kernel>_host_build(const long long* args, int num_args, const unsigned long long* pointers,
//                           aotc_params_header* header, unsigned char* params);
// (CUTLASS's to_underlying_arguments with stand-in pointers). The harness intercepts the driver's
// encoders (the template defines CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL, so CUTLASS calls them by
// name and these definitions are the ones linked: no driver is needed), records their arguments,
// and finds where the stand-in pointers and the marked descriptors landed in the struct. The
// runtime copies the bytes at create and encodes each descriptor again with the real address
// (runtime/aotc_rt_create.c). Bytes the struct leaves uninitialised (padding) would carry stack
// garbage: each problem is built twice over differently scribbled stacks and the bytes that
// differ are zeroed. (Garbage that is the same in both builds of one process, e.g. a return
// address a callee left, is not caught: the bytes are then reproducible only within a process.)
//
// Usage: host_params IN OUT. IN holds one problem per line:
//   <kernel> <num_pointers> <num_args> <arg0> ... <argN-1>
// OUT gets per problem:
//   kernel <kernel> <index> <status>        status 0: ok; otherwise an `error` line follows
//   error <text>
//   tmap <arg> <offset> <im2col> <dtype> <rank> dims[5] strides[4] box[5] lower[3] upper[3]
//        <channels> <pixels> element_strides[5] <interleave> <swizzle> <l2> <oob>
//   bytes <hex of the header (AOTC_PARAMS_OFFSET bytes) and the params struct>
//   end
#pragma once
#include <cstdio>
#include <cstring>
#include <cuda.h>
#include "library_params.cuh"

namespace aotc_host {

typedef int (*BuildFn)(const long long*, int, const unsigned long long*, aotc_params_header*, unsigned char*);

struct Builder {
  const char* name;
  BuildFn fn;
};
constexpr int kMaxBuilders = 64;
inline Builder g_builders[kMaxBuilders];
inline int g_num_builders = 0;
inline bool g_builders_overflow = false;

struct Register {
  Register(const char* name, BuildFn fn) {
    if (g_num_builders < kMaxBuilders) g_builders[g_num_builders++] = {name, fn};
    else g_builders_overflow = true;  // main() then fails
  }
};

struct TensorMapRecord {
  int im2col = 0;
  int dtype = 0, rank = 0;
  unsigned long long address = 0;
  unsigned long long dims[5] = {0, 0, 0, 0, 0};
  unsigned long long strides[4] = {0, 0, 0, 0};
  unsigned box[5] = {0, 0, 0, 0, 0};
  int lower[3] = {0, 0, 0}, upper[3] = {0, 0, 0};
  unsigned channels = 0, pixels = 0;
  unsigned elem_strides[5] = {0, 0, 0, 0, 0};
  int interleave = 0, swizzle = 0, l2 = 0, oob = 0;
};
constexpr int kMaxRecords = 16;
inline TensorMapRecord g_records[kMaxRecords];
inline int g_num_records = 0;
inline bool g_overflow = false;

// A descriptor stand-in: "AOTCTMAP", the record index, then a fixed filler.
inline TensorMapRecord* next_record(CUtensorMap* m) {
  if (g_num_records >= kMaxRecords) {
    g_overflow = true;
    return nullptr;
  }
  unsigned char* b = reinterpret_cast<unsigned char*>(m);
  for (int i = 0; i < 128; ++i) b[i] = (unsigned char)(0xA5 ^ i);
  std::memcpy(b, "AOTCTMAP", 8);
  std::memcpy(b + 8, &g_num_records, sizeof g_num_records);
  return &g_records[g_num_records++];
}

// Stand-in device addresses of the pointer arguments: 256-byte aligned, unlike any other 8-byte
// word a params struct is likely to hold.
inline unsigned long long stand_in(int arg) { return 0x00007a0c00000000ull + ((unsigned long long)(arg + 1) << 24); }

// Fills a stack region with `pattern` just below the caller, where the builder's frames will be.
__attribute__((noinline)) inline void scribble_stack(unsigned char pattern) {
  volatile unsigned char area[256 * 1024];
  for (unsigned i = 0; i < sizeof area; ++i) area[i] = pattern;
}

struct Built {
  int status = 0;
  aotc_params_header header{};
  alignas(128) unsigned char params[AOTC_PARAMS_MAX_BYTES] = {};
  TensorMapRecord records[kMaxRecords];
  int num_records = 0;
};

__attribute__((noinline)) inline void build_once(BuildFn fn, const long long* args, int n, unsigned char pattern,
                                                 Built* out) {
  scribble_stack(pattern);
  unsigned long long pointers[AOTC_PARAMS_MAX_SLOTS];
  for (int i = 0; i < AOTC_PARAMS_MAX_SLOTS; ++i) pointers[i] = stand_in(i);
  g_num_records = 0;
  g_overflow = false;
  out->status = fn(args, n, pointers, &out->header, out->params);
  if (g_overflow && out->status == 0) out->status = 90;
  out->num_records = g_num_records;
  for (int i = 0; i < g_num_records; ++i) out->records[i] = g_records[i];
}

inline void print_record(const TensorMapRecord& r, int arg, unsigned offset) {
  std::printf("tmap %d %u %d %d %d", arg, offset, r.im2col, r.dtype, r.rank);
  for (unsigned long long d : r.dims) std::printf(" %llu", d);
  for (unsigned long long s : r.strides) std::printf(" %llu", s);
  for (unsigned b : r.box) std::printf(" %u", b);
  for (int l : r.lower) std::printf(" %d", l);
  for (int u : r.upper) std::printf(" %d", u);
  std::printf(" %u %u", r.channels, r.pixels);
  for (unsigned e : r.elem_strides) std::printf(" %u", e);
  std::printf(" %d %d %d %d\n", r.interleave, r.swizzle, r.l2, r.oob);
}

// One problem: build twice, reconcile, locate pointers and descriptors, print. Returns 0 when the
// problem was built (a refused problem is reported in the output, not by the return value).
inline int run_problem(const char* name, int index, int num_pointers, const long long* args, int n) {
  BuildFn fn = nullptr;
  for (int i = 0; i < g_num_builders; ++i)
    if (std::strcmp(g_builders[i].name, name) == 0) fn = g_builders[i].fn;
  static Built a, b;
  const char* error = nullptr;
  int status = 0;
  if (!fn) {
    status = 91, error = "no such kernel in this host program";
  } else if (num_pointers < 0 || num_pointers > AOTC_PARAMS_MAX_SLOTS) {
    status = 92, error = "too many pointer arguments";
  } else {
    a = Built();
    b = Built();
    build_once(fn, args, n, 0x00, &a);
    build_once(fn, args, n, 0xff, &b);
    status = b.status;
    if (status != 0) error = "CUTLASS's host code refused the problem (can_implement or a size check)";
  }
  const unsigned bytes = b.header.params_bytes;
  if (status == 0 && (bytes == 0 || bytes + AOTC_PARAMS_OFFSET > AOTC_PARAMS_MAX_BYTES))
    status = 93, error = "params struct larger than the protocol allows";
  if (status == 0 && (a.num_records != b.num_records || a.status != 0 ||
                      std::memcmp(&a.header, &b.header, sizeof a.header) != 0))
    status = 94, error = "two builds of the same problem disagree";
  aotc_params_header& h = b.header;
  unsigned char* p = b.params;
  // Uninitialised bytes: whatever differs between the builds (descriptor stand-ins are equal).
  if (status == 0)
    for (unsigned i = 0; i < bytes; ++i)
      if (a.params[i] != p[i]) p[i] = 0;
  unsigned long long pointers[AOTC_PARAMS_MAX_SLOTS];
  for (int i = 0; i < AOTC_PARAMS_MAX_SLOTS; ++i) pointers[i] = stand_in(i);
  int found[kMaxRecords] = {0};
  if (status == 0) {
    h.magic = AOTC_PARAMS_MAGIC;
    h.num_slots = (unsigned)num_pointers;
    for (int i = 0; i < AOTC_PARAMS_MAX_SLOTS; ++i) h.slot_offset[i] = AOTC_SLOT_UNUSED;
    for (unsigned off = 0; off + 8 <= bytes; off += 8) {
      unsigned long long w;
      std::memcpy(&w, p + off, 8);
      for (int arg = 0; arg < num_pointers; ++arg) {
        if (w != pointers[arg]) continue;
        if (h.slot_offset[arg] != AOTC_SLOT_UNUSED) status = 95, error = "a pointer argument is stored twice";
        h.slot_offset[arg] = off;
      }
    }
    for (unsigned off = 0; off + 128 <= bytes; off += 64) {
      int rec;
      std::memcpy(&rec, p + off + 8, sizeof rec);
      if (std::memcmp(p + off, "AOTCTMAP", 8) == 0 && rec >= 0 && rec < b.num_records) ++found[rec];
    }
    // A descriptor CUTLASS's host code made and did not keep (the sm_90a FMHA builds its P V
    // operand's A-side descriptor from a stand-in and keeps only the B side) is not in the struct:
    // nothing to re-encode. One the struct holds must describe a pointer argument.
    for (int r = 0; r < b.num_records && status == 0; ++r) {
      int arg = -1;
      for (int i = 0; i < num_pointers; ++i)
        if (b.records[r].address == pointers[i]) arg = i;
      if (found[r] != 0 && arg < 0) status = 97, error = "a tensor map describes memory that is no pointer argument";
    }
  }
  h.status = status;
  std::printf("kernel %s %d %d\n", name, index, status);
  if (status != 0) {
    std::printf("error %s\nend\n", error);
    return 0;
  }
  for (unsigned off = 0; off + 128 <= bytes; off += 64) {
    int rec;
    std::memcpy(&rec, p + off + 8, sizeof rec);
    if (std::memcmp(p + off, "AOTCTMAP", 8) != 0 || rec < 0 || rec >= b.num_records) continue;
    int arg = -1;
    for (int i = 0; i < num_pointers; ++i)
      if (b.records[rec].address == pointers[i]) arg = i;
    print_record(b.records[rec], arg, off);
  }
  unsigned char head[AOTC_PARAMS_OFFSET] = {0};
  std::memcpy(head, &h, sizeof h);
  std::printf("bytes ");
  for (unsigned i = 0; i < AOTC_PARAMS_OFFSET; ++i) std::printf("%02x", head[i]);
  for (unsigned i = 0; i < bytes; ++i) std::printf("%02x", p[i]);
  std::printf("\nend\n");
  return 0;
}

}  // namespace aotc_host

namespace aotc_host {
// The fields both encoders take; the caller fills the mode-specific ones.
inline TensorMapRecord* record_common(CUtensorMap* m, bool im2col, CUtensorMapDataType dtype, cuuint32_t rank,
                                      void* address, const cuuint64_t* dims, const cuuint64_t* strides,
                                      const cuuint32_t* elem_strides, CUtensorMapInterleave interleave,
                                      CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                      CUtensorMapFloatOOBfill oob) {
  TensorMapRecord* r = next_record(m);
  if (!r) return nullptr;
  r->im2col = im2col ? 1 : 0;
  r->dtype = (int)dtype;
  r->rank = (int)rank;
  r->address = (unsigned long long)address;
  for (unsigned i = 0; i < rank; ++i) {
    r->dims[i] = dims[i];
    r->elem_strides[i] = elem_strides[i];
    if (i + 1 < rank) r->strides[i] = strides[i];
  }
  r->interleave = (int)interleave;
  r->swizzle = (int)swizzle;
  r->l2 = (int)l2;
  r->oob = (int)oob;
  return r;
}
}  // namespace aotc_host

extern "C" CUresult cuTensorMapEncodeTiled(CUtensorMap* m, CUtensorMapDataType dtype, cuuint32_t rank, void* address,
                                           const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                           const cuuint32_t* elem_strides, CUtensorMapInterleave interleave,
                                           CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                           CUtensorMapFloatOOBfill oob) {
  if (rank < 1 || rank > 5) return CUDA_ERROR_INVALID_VALUE;
  aotc_host::TensorMapRecord* r = aotc_host::record_common(m, false, dtype, rank, address, dims, strides, elem_strides,
                                                           interleave, swizzle, l2, oob);
  if (!r) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < rank; ++i) r->box[i] = box[i];
  return CUDA_SUCCESS;
}

extern "C" CUresult cuTensorMapEncodeIm2col(CUtensorMap* m, CUtensorMapDataType dtype, cuuint32_t rank, void* address,
                                            const cuuint64_t* dims, const cuuint64_t* strides, const int* lower,
                                            const int* upper, cuuint32_t channels, cuuint32_t pixels,
                                            const cuuint32_t* elem_strides, CUtensorMapInterleave interleave,
                                            CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                            CUtensorMapFloatOOBfill oob) {
  if (rank < 3 || rank > 5) return CUDA_ERROR_INVALID_VALUE;
  aotc_host::TensorMapRecord* r = aotc_host::record_common(m, true, dtype, rank, address, dims, strides, elem_strides,
                                                           interleave, swizzle, l2, oob);
  if (!r) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i + 2 < rank; ++i) {
    r->lower[i] = lower[i];
    r->upper[i] = upper[i];
  }
  r->channels = channels;
  r->pixels = pixels;
  return CUDA_SUCCESS;
}

// host_params IN OUT: problems from IN, records to OUT.
int main(int argc, char** argv) {
  if (argc != 3 || aotc_host::g_builders_overflow) return 2;
  std::FILE* in = std::fopen(argv[1], "r");
  if (!in) return 2;
  if (!std::freopen(argv[2], "w", stdout)) return 2;
  char name[256];
  int index = 0;
  while (std::fscanf(in, "%255s", name) == 1) {
    int num_pointers = 0, n = 0;
    if (std::fscanf(in, "%d %d", &num_pointers, &n) != 2 || n < 0 || n > AOTC_PARAMS_MAX_ARGS) return 3;
    long long args[AOTC_PARAMS_MAX_ARGS] = {0};
    for (int i = 0; i < n; ++i)
      if (std::fscanf(in, "%lld", &args[i]) != 1) return 3;
    aotc_host::run_problem(name, index++, num_pointers, args, n);
  }
  std::fclose(in);
  return std::fflush(stdout) == 0 ? 0 : 4;
}
