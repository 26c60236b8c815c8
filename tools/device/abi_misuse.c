/* abi_stress misuse: the misuse matrix of docs/abi.md against a live library. One row per case:
   the code expected and returned, whether the outputs (poisoned with 0x5A before the call) are
   untouched afterwards, and under the fake driver (tests/tools/fake_libcuda.c) how many kernels
   and copies were launched. A row passes when the code matches, nothing was written and nothing
   was launched; control rows (valid uses next to a misuse, e.g. an exact-size workspace) must
   return 0. The sticky-fault rows come last: a PTX kernel (JIT-compiled by the driver) writes to
   address 0x10, which poisons the context for the rest of the process. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_stress.h"

static int g_rows, g_failed, g_skipped;
static CUdeviceptr g_out[kMaxIo];
static unsigned char* g_host_bad; /* a malloc'ed buffer passed where device memory belongs */
static size_t g_host_bad_bytes;

static const char* code_name(int c) {
  static const char* const kNames[] = {"OK", "INVALID_ARGUMENT", "NO_DRIVER", "NO_CUBLASLT",
                                       "OUT_OF_MEMORY", "CUDA", "STICKY"};
  return c >= 0 && c <= 6 ? kNames[c] : "?";
}

/* untouched: 1 yes, 0 no, -1 not checked; launched: -1 unknown (a real driver). */
static void report(const char* row, int expected, int got, int untouched, int launched, const char* msg) {
  int ok = got == expected && untouched != 0 && launched <= 0;
  ++g_rows;
  if (!ok) ++g_failed;
  char l[16];
  snprintf(l, sizeof l, "%d", launched);
  printf("%-52s expected %-16s got %-16s outputs %-9s launched %-4s %s | %.160s\n", row,
         code_name(expected), code_name(got), untouched < 0 ? "-" : untouched ? "untouched" : "WRITTEN",
         launched < 0 ? "-" : l, ok ? "ok" : "FAILED", msg ? msg : "");
}
static void skip(const char* row, const char* why) {
  ++g_skipped;
  printf("%-52s skipped: %s\n", row, why);
}

static int launches(void) { return cu.fake_launches ? cu.fake_launches() : -1; }
static int launched_since(int before) { return cu.fake_launches ? cu.fake_launches() - before : -1; }

static void poison(void) {
  for (int o = 0; o < g_num_outputs; ++o) CU(cu.memset_d8(g_out[o], 0x5A, g_out_bytes[o]));
  if (g_host_bad) memset(g_host_bad, 0x5A, g_host_bad_bytes);
  CU(cu.ctx_synchronize());
}
static int untouched(void) {
  int same = 1;
  for (int o = 0; o < g_num_outputs; ++o) {
    unsigned char* b = (unsigned char*)malloc(g_out_bytes[o] ? g_out_bytes[o] : 1);
    CU(cu.dtoh(b, g_out[o], g_out_bytes[o]));
    for (unsigned long long i = 0; i < g_out_bytes[o]; ++i) same &= b[i] == 0x5A;
    free(b);
  }
  for (size_t i = 0; g_host_bad && i < g_host_bad_bytes; ++i) same &= g_host_bad[i] == 0x5A;
  return same;
}

/* One run() row. check: compare the outputs with their poison (not after a fault). */
static void run_row(const char* row, int expected, model* m, const void* const* ins, void* const* outs,
                    int check) {
  if (check) poison();
  int before = launches();
  int rc = lib.run(m, ins, outs, NULL);
  int launched = expected == 0 ? -1 : launched_since(before);
  int same = -1;
  if (check) {
    CU(cu.ctx_synchronize());
    same = expected == 0 ? -1 : untouched();
  }
  report(row, expected, rc, same, launched, lib.last_error(m));
}
static void create_row(const char* row, int expected, int device, void* ws, const model* share) {
  model* m = (model*)(uintptr_t)0x1;
  int before = launches();
  int rc = lib.create(&m, device, ws, share);
  int launched = expected == 0 ? -1 : launched_since(before);
  report(row, expected, rc, -1, launched, lib.last_error(NULL));
  if (rc == 0) lib.destroy(m);
  else if (m != NULL) printf("  ^ FAILED: *out is not NULL after a failed create\n"), ++g_failed;
}

static const char kFaultPtx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry aotc_fault(.param .u64 p)\n{\n  .reg .b64 %rd<2>;\n  .reg .b32 %r<2>;\n"
    "  ld.param.u64 %rd1, [p];\n  mov.u32 %r1, 1;\n  st.global.u32 [%rd1], %r1;\n  ret;\n}\n";

/* A kernel that writes to address 0x10 (or the fake driver's fault); returns the sync result. */
static CUresult fault(void) {
  if (cu.fake_inject_fault) {
    cu.fake_inject_fault();
    return cu.ctx_synchronize();
  }
  void* module = NULL;
  void* fn = NULL;
  CUresult r;
  if (!cu.module_load_data || !cu.launch_kernel) return -1;
  if ((r = cu.module_load_data(&module, kFaultPtx)) != 0) return r;
  if ((r = cu.module_get_function(&fn, module, "aotc_fault")) != 0) return r;
  CUdeviceptr bad = 0x10;
  void* params[] = {&bad};
  if ((r = cu.launch_kernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL)) != 0) return r;
  return cu.ctx_synchronize();
}

int misuse(int no_fault) {
  int count = 0;
  CU(cu.device_get_count(&count));
  model *h = NULL, *h2 = NULL;
  if (lib.create(&h, g_device, NULL, NULL) != 0 || lib.create(&h2, g_device, NULL, NULL) != 0) {
    fprintf(stderr, "abi_stress: create failed: %s\n", lib.last_error(NULL));
    return 2;
  }
  /* Good buffers (inputs zeroed: valid for every dtype and index), with room for offsets. */
  CUdeviceptr in[kMaxIo];
  const void* ins[kMaxIo];
  void* outs[kMaxIo];
  for (int i = 0; i < g_num_inputs; ++i) {
    in[i] = dev_alloc(g_in_bytes[i] + 512);
    CU(cu.memset_d8(in[i], 0, g_in_bytes[i] + 512));
    ins[i] = (const void*)(uintptr_t)in[i];
  }
  for (int o = 0; o < g_num_outputs; ++o) {
    g_out[o] = dev_alloc(g_out_bytes[o] + 512);
    outs[o] = (void*)(uintptr_t)g_out[o];
  }
  size_t big = 256;
  for (int i = 0; i < g_num_inputs; ++i) big = g_in_bytes[i] > big ? g_in_bytes[i] : big;
  for (int o = 0; o < g_num_outputs; ++o) big = g_out_bytes[o] > big ? g_out_bytes[o] : big;
  if (g_arena > big) big = g_arena;
  g_host_bad_bytes = (big + 255) & ~(size_t)255;
  g_host_bad = (unsigned char*)aligned_alloc(256, g_host_bad_bytes);
  void* pinned = NULL;
  if (cu.mem_host_alloc && cu.mem_host_alloc(&pinned, g_host_bad_bytes, 0) != 0) pinned = NULL;
  void* other_ctx = NULL;
  CUdeviceptr other = 0;
  if (count >= 2) {
    int d = g_device == 0 ? 1 : 0;
    CU(cu.primary_ctx_retain(&other_ctx, d));
    CU(cu.ctx_set_current(other_ctx));
    other = dev_alloc(big);
    CU(cu.ctx_set_current(g_ctx));
  }
  run_row("control: run with good buffers", 0, h, ins, outs, 1);

  /* ---- create ---- */
  char row[128];
  int before = launches();
  int rc = lib.create(NULL, g_device, NULL, NULL);
  report("create: out is NULL", 1, rc, -1, launched_since(before), lib.last_error(NULL));
  create_row("create: device -1", 1, -1, NULL, NULL);
  snprintf(row, sizeof row, "create: device %d (= the device count)", count);
  create_row(row, 1, count, NULL, NULL);
  CUdeviceptr ws_big = dev_alloc(g_arena + 512);
  create_row("create: workspace misaligned (+16 bytes)", 1, g_device, (void*)(uintptr_t)(ws_big + 16), NULL);
  create_row("create: workspace is host memory (malloc)", 1, g_device, g_host_bad, NULL);
  if (pinned) create_row("create: workspace is pinned host memory", 1, g_device, pinned, NULL);
  else skip("create: workspace is pinned host memory", "no cuMemHostAlloc");
  if (g_arena >= 512) {
    CUdeviceptr small = dev_alloc(g_arena / 2);
    create_row("create: workspace too small (half the arena)", 1, g_device, (void*)(uintptr_t)small, NULL);
    create_row("create: workspace ending 256 bytes short", 1, g_device,
               (void*)(uintptr_t)(ws_big + 512 + 256), NULL);
    cu.mem_free(small);
  } else {
    skip("create: workspace too small", "arena under 512 bytes");
  }
  if (other) create_row("create: workspace on another device", 1, g_device, (void*)(uintptr_t)other, NULL);
  else skip("create: workspace on another device", "one device");
  model* dead = NULL;
  if (lib.create(&dead, g_device, NULL, NULL) != 0) return 2;
  lib.destroy(dead);
  create_row("create: share_weights_with destroyed", 1, g_device, NULL, dead);
  if (count >= 2) create_row("create: share_weights_with of another device", 1, g_device == 0 ? 1 : 0, NULL, h);
  else skip("create: share_weights_with of another device", "one device");
  create_row("control: create, exact-size workspace", 0, g_device, (void*)(uintptr_t)ws_big, NULL);
  create_row("control: create, workspace at +256 of a larger one", 0, g_device, (void*)(uintptr_t)(ws_big + 256), h);

  /* ---- run ---- */
  const void* bad_in[kMaxIo];
  void* bad_out[kMaxIo];
#define RESET() (memcpy(bad_in, ins, sizeof ins), memcpy(bad_out, outs, sizeof outs))
  RESET();
  run_row("run: NULL handle", 1, NULL, ins, outs, 1);
  if (g_num_inputs > 0) {
    run_row("run: inputs array NULL", 1, h, NULL, outs, 1);
    RESET(); bad_in[0] = NULL;
    run_row("run: input 0 NULL", 1, h, bad_in, outs, 1);
    RESET(); bad_in[0] = (const void*)(uintptr_t)(in[0] + 16);
    run_row("run: input 0 misaligned (+16 bytes)", 1, h, bad_in, outs, 1);
    RESET(); bad_in[0] = g_host_bad;
    run_row("run: input 0 is host memory (malloc)", 1, h, bad_in, outs, 1);
    run_row("run: input 0 is host memory, again (not remembered)", 1, h, bad_in, outs, 1);
    if (pinned) { RESET(); bad_in[0] = pinned; run_row("run: input 0 is pinned host memory", 1, h, bad_in, outs, 1); }
    else skip("run: input 0 is pinned host memory", "no cuMemHostAlloc");
    if (g_in_bytes[0] >= 512) {
      CUdeviceptr small = dev_alloc(g_in_bytes[0] / 2);
      RESET(); bad_in[0] = (const void*)(uintptr_t)small;
      run_row("run: input 0 too small (half its bytes)", 1, h, bad_in, outs, 1);
      cu.mem_free(small);
    } else {
      skip("run: input 0 too small", "input under 512 bytes");
    }
    if (other) { RESET(); bad_in[0] = (const void*)(uintptr_t)other; run_row("run: input 0 on another device", 1, h, bad_in, outs, 1); }
    else skip("run: input 0 on another device", "one device");
    RESET(); bad_in[0] = (const void*)(uintptr_t)(in[0] + 256);
    run_row("control: run, input 0 at +256 of a larger buffer", 0, h, bad_in, outs, 1);
  }
  RESET();
  run_row("run: outputs array NULL", 1, h, ins, NULL, 1);
  bad_out[0] = NULL;
  run_row("run: output 0 NULL", 1, h, ins, bad_out, 1);
  RESET(); bad_out[0] = (void*)(uintptr_t)(g_out[0] + 16);
  run_row("run: output 0 misaligned (+16 bytes)", 1, h, ins, bad_out, 1);
  RESET(); bad_out[0] = g_host_bad;
  run_row("run: output 0 is host memory (malloc)", 1, h, ins, bad_out, 1);
  if (g_out_bytes[0] >= 512) {
    RESET(); bad_out[0] = (void*)(uintptr_t)(g_out[0] + 512 + (g_out_bytes[0] / 2 & ~255ull));
    run_row("run: output 0 ends past its allocation", 1, h, ins, bad_out, 1);
  }
  if (other) { RESET(); bad_out[0] = (void*)(uintptr_t)other; run_row("run: output 0 on another device", 1, h, ins, bad_out, 1); }
  else skip("run: output 0 on another device", "one device");
  RESET();
  run_row("run: destroyed handle", 1, dead, ins, outs, 1);
  int live_text = strstr(lib.last_error(dead), "not a live handle") != NULL;
  report("last_error: destroyed handle (fixed text)", 1, live_text ? 1 : 0, -1, -1, lib.last_error(dead));
  lib.destroy(dead);
  report("destroy: twice (a no-op)", 0, 0, -1, -1, "returned");
  struct { long long words[64]; } not_a_handle;
  memset(&not_a_handle, 0, sizeof not_a_handle);
  run_row("run: a pointer that is not a handle", 1, (model*)(void*)&not_a_handle, ins, outs, 1);
  rc = lib.run_host(NULL, ins, outs);
  report("run_host: NULL handle", 1, rc, -1, -1, lib.last_error(NULL));
  if (g_num_inputs > 0) report("run_host: inputs array NULL", 1, lib.run_host(h, NULL, outs), -1, -1, lib.last_error(h));
  run_row("control: run with good buffers after all that", 0, h, ins, outs, 1);

  /* ---- a sticky fault: last (the context stays poisoned) ---- */
  if (!no_fault) {
    CUresult r = fault();
    printf("%-52s the synchronisation returned %s (%d)\n", "fault: a kernel writes to address 0x10", cu_name(r), r);
    run_row("run after the fault", 6, h, ins, outs, 0);
    run_row("run after the fault, again", 6, h, ins, outs, 0);
    run_row("run on another handle after the fault", 6, h2, ins, outs, 0);
    report("run_host after the fault", 6, lib.run_host(h, ins, outs), -1, -1, lib.last_error(h));
    model* late = NULL;
    before = launches();
    rc = lib.create(&late, g_device, NULL, NULL);
    report("create after the fault", 6, rc, -1, launched_since(before), lib.last_error(NULL));
    if (rc == 0) lib.destroy(late);
  } else {
    skip("fault rows", "--no-fault");
  }
  lib.destroy(h2);
  lib.destroy(h);
  printf("misuse: %d rows, %d passed, %d failed, %d skipped; %s\n", g_rows, g_rows - g_failed, g_failed,
         g_skipped, g_failed ? "FAILED" : "passed");
  return g_failed == 0 ? 0 : 1;
}
