/* Misuse checks that need more than a NULL test (docs/abi.md "Misuse"): the process-wide registry of
   live handles (so run / destroy / last_error on a destroyed or foreign handle return a status
   instead of touching freed memory), and the driver's view of a caller's pointer (device memory of
   this handle's device, large enough), asked once per pointer set and remembered per handle, so
   steady-state runs pay a few compares and no driver call. Plain C11, no pthread; never aborts. */
#define _POSIX_C_SOURCE 200809L /* sched_yield */
#include "aotc_rt_internal.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- live handles ----
   An open-addressing set of handle addresses. Lookups (every call) take no lock: they read the
   current table and its slots with acquire loads. Adding and removing (create, destroy) take a
   spin lock. A full table is rebuilt into a larger one, published atomically; the old one is kept
   (linked from the new) because a reader may still be scanning it: the memory kept is less than
   the current table's. A removed handle leaves a tombstone, so the probe chains of the others stay
   intact. Why not a magic field in the handle, read first: reading a destroyed handle's field is
   itself a use after free (AddressSanitizer reports it; the memory may be reused), and the lookup
   costs about as much as that read. What this cannot see: a new handle created at the address of
   a destroyed one (the allocator reused it) is live, and the stale pointer then reaches it. */
#define AOTC_RT_TOMBSTONE ((uintptr_t)1)

typedef struct registry_table {
  size_t mask; /* capacity - 1; capacity is a power of two */
  struct registry_table* retired; /* the table this one replaced (kept for readers) */
  _Atomic uintptr_t slots[];
} registry_table;

static _Atomic(registry_table*) g_table;
static atomic_flag g_lock = ATOMIC_FLAG_INIT;
static size_t g_live, g_tombstones; /* under g_lock */

static void lock(void) {
  while (atomic_flag_test_and_set_explicit(&g_lock, memory_order_acquire)) sched_yield();
}
static void unlock(void) { atomic_flag_clear_explicit(&g_lock, memory_order_release); }

static size_t slot_of(uintptr_t p, size_t mask) {
  return (size_t)(((uint64_t)(p >> 4) * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

int aotc_rt_registry_contains(const void* h) {
  uintptr_t p = (uintptr_t)h;
  registry_table* t = atomic_load_explicit(&g_table, memory_order_acquire);
  if (!t || p <= AOTC_RT_TOMBSTONE) return 0;
  for (size_t i = slot_of(p, t->mask), n = 0; n <= t->mask; i = (i + 1) & t->mask, ++n) {
    uintptr_t v = atomic_load_explicit(&t->slots[i], memory_order_acquire);
    if (v == p) return 1;
    if (v == 0) return 0;
  }
  return 0;
}

/* Puts p into t (a slot that is empty or a tombstone); t has room. */
static void put(registry_table* t, uintptr_t p) {
  for (size_t i = slot_of(p, t->mask);; i = (i + 1) & t->mask) {
    uintptr_t v = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
    if (v == 0 || v == AOTC_RT_TOMBSTONE) {
      if (v == AOTC_RT_TOMBSTONE) --g_tombstones;
      atomic_store_explicit(&t->slots[i], p, memory_order_release);
      return;
    }
  }
}

int aotc_rt_registry_add(const void* h) {
  uintptr_t p = (uintptr_t)h;
  if (p <= AOTC_RT_TOMBSTONE) return 0;
  if (aotc_rt_registry_contains(h)) return 1;
  lock();
  registry_table* t = atomic_load_explicit(&g_table, memory_order_relaxed);
  if (!t || 2 * (g_live + g_tombstones + 1) > t->mask + 1) { /* keep the load under one half */
    size_t capacity = 64;
    while (capacity < 4 * (g_live + 1)) capacity *= 2;
    registry_table* bigger =
        (registry_table*)calloc(1, sizeof *bigger + capacity * sizeof(_Atomic uintptr_t));
    if (!bigger) {
      unlock();
      return 0;
    }
    bigger->mask = capacity - 1;
    bigger->retired = t;
    g_tombstones = 0;
    for (size_t i = 0; t && i <= t->mask; ++i) {
      uintptr_t v = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
      if (v > AOTC_RT_TOMBSTONE) put(bigger, v);
    }
    atomic_store_explicit(&g_table, bigger, memory_order_release);
    t = bigger;
  }
  put(t, p);
  ++g_live;
  unlock();
  return 1;
}

int aotc_rt_registry_remove(const void* h) {
  uintptr_t p = (uintptr_t)h;
  int found = 0;
  if (p <= AOTC_RT_TOMBSTONE) return 0;
  lock();
  registry_table* t = atomic_load_explicit(&g_table, memory_order_relaxed);
  for (size_t i = t ? slot_of(p, t->mask) : 0, n = 0; t && n <= t->mask; i = (i + 1) & t->mask, ++n) {
    uintptr_t v = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
    if (v == 0) break;
    if (v == p) {
      atomic_store_explicit(&t->slots[i], AOTC_RT_TOMBSTONE, memory_order_release);
      --g_live;
      ++g_tombstones;
      found = 1;
      break;
    }
  }
  unlock();
  return found;
}

/* ---- the driver's view of a caller's pointer ---- */
int aotc_rt_check_device_pointer(aotc_rt_handle* h, const void* ptr, unsigned long long bytes,
                                 const char* what) {
  if (!h->cu.pointer_get_attributes || !ptr) return AOTC_OK; /* old driver: unchecked */
  CUdeviceptr p = (CUdeviceptr)(uintptr_t)ptr;
  unsigned memory_type = 0, managed = 0;
  int ordinal = -1;
  int attributes[3] = {AOTC_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, AOTC_CU_POINTER_ATTRIBUTE_IS_MANAGED,
                       AOTC_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void* data[3] = {&memory_type, &managed, &ordinal};
  ++h->pointer_queries;
  CUresult r = h->cu.pointer_get_attributes(3, attributes, data, p);
  if (r != AOTC_CU_SUCCESS) {
    if (aotc_rt_cu_error_is_sticky(r)) return aotc_rt_cu_fail(h, r, "cuPointerGetAttributes");
    /* INVALID_VALUE / INVALID_CONTEXT: the driver knows no allocation there. Anything else: the
       question could not be asked, so the pointer stays unchecked. */
    if (r != 1 && r != 201) return AOTC_OK;
    memory_type = 0;
  }
  if (managed) return AOTC_OK; /* managed memory: reachable from every device */
  if (memory_type == AOTC_CU_MEMORYTYPE_HOST)
    return aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT,
                             "%s is pinned host memory, not device memory (run takes device "
                             "pointers; run_host takes host pointers)",
                             what);
  if (memory_type != AOTC_CU_MEMORYTYPE_DEVICE)
    return aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT,
                             "%s (%p) is not CUDA device memory (a host pointer? run takes device "
                             "pointers; run_host takes host pointers)",
                             what, ptr);
  if (ordinal != h->device)
    return aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT,
                             "%s is memory of device %d; this handle runs on device %d", what,
                             ordinal, h->device);
  if (bytes == 0) return AOTC_OK;
  /* The allocation holding ptr must hold `bytes` from it. The driver's address range of ptr is
     the allocation for cuMemAlloc / cudaMalloc memory and the reserved range for virtual memory
     management (cuMemAddressReserve + cuMemMap, e.g. PyTorch's expandable segments), whose mapped
     pieces cuMemGetAddressRange reports one by one: a buffer may span several. Drivers without the
     range attributes (before CUDA 11.2): cuMemGetAddressRange; neither: unchecked. */
  CUdeviceptr start = 0;
  size_t size = 0;
  int range_attributes[2] = {AOTC_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                             AOTC_CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void* range_data[2] = {&start, &size};
  if (h->cu.pointer_get_attributes(2, range_attributes, range_data, p) != AOTC_CU_SUCCESS ||
      size == 0) {
    start = 0;
    size = 0;
    if (!h->cu.mem_get_address_range ||
        h->cu.mem_get_address_range(&start, &size, p) != AOTC_CU_SUCCESS)
      return AOTC_OK;
  }
  if (p < start || p - start >= size) return AOTC_OK; /* an answer that does not hold ptr */
  unsigned long long holds = (unsigned long long)(start + size - p);
  if (holds < bytes)
    return aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT,
                             "%s is too small: %llu bytes are needed, its allocation holds %llu "
                             "from there",
                             what, bytes, holds);
  return AOTC_OK;
}

/* ---- pointer sets, checked once ---- */
static size_t set_bytes(const aotc_rt_handle* h) {
  return ((size_t)h->desc->num_inputs + (size_t)h->desc->num_outputs) * sizeof(CUdeviceptr);
}

int aotc_rt_check_pointer_set(aotc_rt_handle* h, const void* const* inputs, void* const* outputs,
                              const char* call) {
  const aotc_rt_model_desc* d = h->desc;
  size_t n = (size_t)d->num_inputs + (size_t)d->num_outputs;
  if (!h->cu.pointer_get_attributes || n == 0) return AOTC_OK;
  CUdeviceptr* key = h->checked_key;
  for (int i = 0; i < d->num_inputs; ++i) key[i] = (CUdeviceptr)(uintptr_t)inputs[i];
  for (int i = 0; i < d->num_outputs; ++i) key[d->num_inputs + i] = (CUdeviceptr)(uintptr_t)outputs[i];
  for (int e = 0; e < h->num_checked; ++e)
    if (memcmp(h->checked_store + n * (size_t)e, key, set_bytes(h)) == 0) return AOTC_OK;
  char what[96];
  for (int i = 0; i < d->num_inputs; ++i) {
    if (d->inputs[i].bytes == 0) continue; /* nothing is read there */
    snprintf(what, sizeof what, "%s: input %d", call, i);
    int code = aotc_rt_check_device_pointer(h, inputs[i], d->inputs[i].bytes, what);
    if (code != AOTC_OK) return code;
  }
  for (int i = 0; i < d->num_outputs; ++i) {
    if (d->outputs[i].bytes == 0) continue;
    snprintf(what, sizeof what, "%s: output %d", call, i);
    int code = aotc_rt_check_device_pointer(h, outputs[i], d->outputs[i].bytes, what);
    if (code != AOTC_OK) return code;
  }
  /* Remembered only when every pointer passed; the oldest set is replaced. */
  memcpy(h->checked_store + n * (size_t)h->checked_next, key, set_bytes(h));
  h->checked_next = (h->checked_next + 1) % kAotcCheckedSets;
  if (h->num_checked < kAotcCheckedSets) ++h->num_checked;
  return AOTC_OK;
}
