/* What abi_stress.c (main, stress mode) and abi_misuse.c (misuse mode) share: the driver and
   library tables (resolved with dlsym), the model's sizes, helpers. */
#ifndef AOTC_ABI_STRESS_H
#define AOTC_ABI_STRESS_H

#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum { kMaxIo = 64, kMaxHandles = 256, kMaxThreads = 256 };

typedef struct aotc_cu_table {
  CUresult (*init)(unsigned);
  CUresult (*device_get_count)(int*);
  CUresult (*primary_ctx_retain)(void**, int);
  CUresult (*ctx_set_current)(void*);
  CUresult (*ctx_synchronize)(void);
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*htod)(CUdeviceptr, const void*, size_t);
  CUresult (*dtoh)(void*, CUdeviceptr, size_t);
  CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*memset_d8_async)(CUdeviceptr, unsigned char, size_t, void*);
  CUresult (*stream_create)(void**, unsigned);
  CUresult (*stream_synchronize)(void*);
  CUresult (*stream_destroy)(void*);
  CUresult (*mem_host_alloc)(void**, size_t, unsigned);
  CUresult (*mem_free_host)(void*);
  CUresult (*module_load_data)(void**, const void*);
  CUresult (*module_get_function)(void**, void*, const char*);
  CUresult (*launch_kernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, void*, void**, void**);
  CUresult (*get_error_name)(CUresult, const char**);
  int (*fake_launches)(void);      /* tests/tools/fake_libcuda.c only */
  void (*fake_inject_fault)(void); /* idem */
} aotc_cu_table;

typedef struct model model;
typedef struct aotc_lib_table {
  int (*create)(model**, int, void*, const model*);
  void (*destroy)(model*);
  int (*run)(model*, const void* const*, void* const*, void*);
  int (*run_host)(model*, const void* const*, void* const*);
  const char* (*last_error)(const model*);
  int (*num_inputs)(void);
  int (*num_outputs)(void);
  int (*input_dtype)(int);
  unsigned long long (*input_bytes)(int);
  unsigned long long (*output_bytes)(int);
  unsigned long long (*arena_bytes)(void);
} aotc_lib_table;

extern aotc_cu_table cu;
extern aotc_lib_table lib;
extern int g_device, g_num_inputs, g_num_outputs;
extern unsigned long long g_in_bytes[kMaxIo], g_out_bytes[kMaxIo], g_arena;
extern void* g_ctx; /* the device's primary context, current on every thread */

const char* cu_name(CUresult r);
CUdeviceptr dev_alloc(unsigned long long bytes); /* exits on failure */
int misuse(int no_fault);                         /* abi_misuse.c */

#define CU(call)                                                                             \
  do {                                                                                       \
    CUresult r_ = (call);                                                                    \
    if (r_ != 0) {                                                                           \
      fprintf(stderr, "abi_stress: %s failed: %s (%d) at %s:%d\n", #call, cu_name(r_), r_, \
              __FILE__, __LINE__);                                                           \
      exit(2);                                                                               \
    }                                                                                        \
  } while (0)

#endif /* AOTC_ABI_STRESS_H */
