// The protocol between a library kernel's params builder and the runtime (runtime/aotc_runtime.c
// keeps a C copy of these numbers). The builder `<kernel>_params(unsigned char* out,
// aotc_builder_args args)` runs as one thread at create(); it writes an aotc_params_header at `out`
// and the kernel's params struct at out + AOTC_PARAMS_OFFSET. run() copies nothing to the device:
// it patches the pointer arguments into a host copy at slot_offset[i] and passes the struct as the
// kernel's only parameter.
#pragma once

#define AOTC_PARAMS_MAGIC 0x41505248u  /* "APRH" */
#define AOTC_PARAMS_OFFSET 256
#define AOTC_PARAMS_MAX_BYTES 4096      /* header + params; kernel parameters are limited to 4 KiB */
#define AOTC_PARAMS_MAX_SLOTS 8
#define AOTC_PARAMS_MAX_ARGS 24
#define AOTC_SLOT_UNUSED 0xffffffffu

struct aotc_builder_args {
  long long v[AOTC_PARAMS_MAX_ARGS];
};

struct aotc_params_header {
  unsigned magic;
  unsigned params_bytes;      // sizeof(Params); AOTC_PARAMS_OFFSET + params_bytes <= AOTC_PARAMS_MAX_BYTES
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;      // dynamic shared memory of one block
  unsigned num_slots;         // = number of pointer args of the step
  unsigned slot_offset[AOTC_PARAMS_MAX_SLOTS];  // byte offset in the params; AOTC_SLOT_UNUSED: not used
  int status;                 // 0: ok; otherwise the kernel cannot run this problem (a bug in lowering)
  unsigned cluster_size;      // CTAs per cluster of a __cluster_dims__ kernel; over 8 (non-portable,
                              // sm_90: up to 16) the runtime allows it at create; 0: not reported
};
