/* run() and run_host(): resolve every pointer argument (arena, weights, the caller's inputs and
   outputs), patch library kernels' params structs, launch in table order on the caller's stream
   (through the CUDA graph cache of aotc_rt_graph.c when it can). No allocation (run_host's staging
   buffers once), no host synchronisation in run(). Plain C11; never aborts. */
#include "aotc_rt_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static CUdeviceptr resolve(const aotc_rt_handle* h, aotc_rt_ref ref, const void* const* inputs,
                           void* const* outputs) {
  switch (ref.loc) {
    case AOTC_LOC_ARENA: return h->arena + ref.offset;
    case AOTC_LOC_WEIGHTS: return h->weights + ref.offset;
    case AOTC_LOC_INPUT: return (CUdeviceptr)(uintptr_t)inputs[ref.index] + ref.offset;
    case AOTC_LOC_OUTPUT: return (CUdeviceptr)(uintptr_t)outputs[ref.index] + ref.offset;
    default: return 0;
  }
}

int aotc_rt_check_io(aotc_rt_handle* h, const void* const* inputs, void* const* outputs, int device) {
  const aotc_rt_model_desc* d = h->desc;
  if (d->num_inputs > 0 && !inputs)
    return aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT, "run: `inputs` is NULL");
  if (d->num_outputs > 0 && !outputs)
    return aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT, "run: `outputs` is NULL");
  /* Kernels read and write 16-byte vectors and cuBLASLt chose its algorithms for aligned
     operands: every device pointer must be 256-byte aligned, as cudaMalloc's are (docs/abi.md).
     run_host's host pointers may be anything: it stages through its own aligned buffers. */
  for (int i = 0; i < d->num_inputs; ++i) {
    if (!inputs[i] && d->inputs[i].bytes > 0)
      return aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT, "run: input %d is NULL", i);
    if (device && ((uintptr_t)inputs[i] & 255u) != 0)
      return aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT, "run: input %d is not 256-byte aligned", i);
  }
  for (int i = 0; i < d->num_outputs; ++i) {
    if (!outputs[i] && d->outputs[i].bytes > 0)
      return aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT, "run: output %d is NULL", i);
    if (device && ((uintptr_t)outputs[i] & 255u) != 0)
      return aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT, "run: output %d is not 256-byte aligned", i);
  }
  return AOTC_OK;
}

void aotc_rt_pdl_setup(aotc_rt_handle* h) {
  const aotc_rt_model_desc* d = h->desc;
  h->pdl_enabled = 0;
  if (!h->pdl_allowed || !h->cu.launch_kernel_ex || !h->cu.module_get_global) return;
  int any = 0;
  for (int i = 0; i < d->num_kernels; ++i) any |= d->kernels[i].pdl;
  if (!any) return;
  for (int m = 0; m < d->num_fatbins; ++m) {
    CUdeviceptr p = 0;
    size_t bytes = 0;
    int value = 0;
    if (h->cu.module_get_global(&p, &bytes, h->modules[m], "aotc_pdl_arch") != AOTC_CU_SUCCESS ||
        bytes != sizeof value || h->cu.memcpy_dtoh(&value, p, sizeof value) != AOTC_CU_SUCCESS ||
        value != 1)
      return;
  }
  h->pdl_enabled = 1;
}

cublasStatus_t aotc_rt_issue_matmul(aotc_rt_handle* h, int i, const cublasLtMatmulAlgo_t* algo,
                                    CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUdeviceptr d,
                                    CUdeviceptr bias, CUdeviceptr workspace, CUstream stream) {
  const aotc_rt_model_desc* desc = h->desc;
  const aotc_rt_matmul* mm = &desc->matmuls[i];
  aotc_rt_matmul_state* st = &h->matmuls[i];
  float alpha = mm->alpha, beta = c ? mm->beta : 0.0f;
  cublasStatus_t status = 0;
  if (AOTC_EPI_HAS_BIAS(mm->epilogue)) {
    const void* bias_ptr = (const void*)(uintptr_t)bias;
    status = h->lt.matmul_desc_set_attribute(st->desc, AOTC_CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                             &bias_ptr, sizeof bias_ptr);
  }
  if (status != 0) return status;
  return h->lt.matmul(h->lt_handle, st->desc, &alpha, (const void*)(uintptr_t)b, st->layout_a,
                      (const void*)(uintptr_t)a, st->layout_b, &beta,
                      (const void*)(uintptr_t)(c ? c : d), st->layout_c, (void*)(uintptr_t)d,
                      st->layout_d, algo, (void*)(uintptr_t)workspace, desc->lt_workspace_bytes,
                      stream);
}

static CUresult launch_kernel(aotc_rt_handle* h, const aotc_rt_kernel* k, CUfunction f,
                              const aotc_rt_launch_shape* shape, CUstream stream, void** params) {
  if (h->pdl_enabled && k->pdl) {
    /* The kernel may start before the previous one in the stream has finished: it waits for it
       (griddepcontrol.wait) before touching memory. */
    aotc_cu_launch_attribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = AOTC_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmatic_stream_serialization_allowed = 1;
    aotc_cu_launch_config config;
    memset(&config, 0, sizeof config);
    config.grid_x = shape->grid[0];
    config.grid_y = shape->grid[1];
    config.grid_z = shape->grid[2];
    config.block_x = shape->block[0];
    config.block_y = shape->block[1];
    config.block_z = shape->block[2];
    config.shared_bytes = shape->shared_bytes;
    config.stream = stream;
    config.attrs = &attr;
    config.num_attrs = 1;
    ++h->pdl_launches;
    return h->cu.launch_kernel_ex(&config, f, params, NULL);
  }
  return h->cu.launch_kernel(f, shape->grid[0], shape->grid[1], shape->grid[2], shape->block[0],
                             shape->block[1], shape->block[2], shape->shared_bytes, stream, params,
                             NULL);
}

int aotc_rt_launch_step(aotc_rt_handle* h, int s, const void* const* inputs, void* const* outputs,
                        CUstream stream) {
  const aotc_rt_model_desc* d = h->desc;
  const aotc_rt_step* step = &d->steps[s];
  if (step->kind == AOTC_STEP_KERNEL) {
    const aotc_rt_kernel* k = &d->kernels[step->index];
    const aotc_rt_launch_shape* shape = &h->shapes[step->index];
    void** params = k->num_args ? &h->arg_params[k->first_arg] : NULL;
    void* library_params[1];
    if (k->library) {
      /* Patch the pointers into this kernel's host copy of its params struct (the slots only:
         its tensor maps, encoded at create, lie clear of them); cuLaunchKernel copies the struct
         (its only parameter) at the call. */
      unsigned char* host =
          h->library_params + (size_t)h->library_index[step->index] * AOTC_RT_PARAMS_MAX_BYTES;
      const aotc_rt_params_header* ph = (const aotc_rt_params_header*)(void*)host;
      for (int a = 0; a < k->num_args; ++a) {
        if (ph->slot_offset[a] == AOTC_RT_SLOT_UNUSED) continue;
        CUdeviceptr p = resolve(h, d->kernel_args[k->first_arg + a], inputs, outputs);
        memcpy(host + AOTC_RT_PARAMS_OFFSET + ph->slot_offset[a], &p, sizeof p);
      }
      library_params[0] = host + AOTC_RT_PARAMS_OFFSET;
      params = library_params;
    } else {
      for (int a = 0; a < k->num_args; ++a)
        h->arg_values[k->first_arg + a] = resolve(h, d->kernel_args[k->first_arg + a], inputs, outputs);
    }
    CUresult r = launch_kernel(h, k, h->functions[step->index], shape, stream, params);
    if (r != AOTC_CU_SUCCESS) {
      char what[160];
      snprintf(what, sizeof what, "cuLaunchKernel(%s)", k->name);
      return aotc_rt_cu_fail(h, r, what);
    }
  } else if (step->kind == AOTC_STEP_MATMUL) {
    const aotc_rt_matmul* mm = &d->matmuls[step->index];
    CUdeviceptr a = resolve(h, mm->a, inputs, outputs), b = resolve(h, mm->b, inputs, outputs);
    CUdeviceptr dd = resolve(h, mm->d, inputs, outputs);
    CUdeviceptr c = mm->c.loc != AOTC_LOC_NULL ? resolve(h, mm->c, inputs, outputs) : 0;
    CUdeviceptr bias = AOTC_EPI_HAS_BIAS(mm->epilogue)
                           ? resolve(h, mm->bias, inputs, outputs)
                           : 0;
    /* A lane 1 matmul has its own workspace: it may run beside a lane 0 one. */
    unsigned long long ws = step->lane == 1 && d->lt_aux_workspace_offset ? d->lt_aux_workspace_offset
                                                                          : d->lt_workspace_offset;
    cublasStatus_t status = aotc_rt_issue_matmul(h, step->index, &h->matmuls[step->index].algo,
                                                 a, b, c, dd, bias, h->arena + ws, stream);
    if (status != 0) return aotc_rt_lt_fail(h, status, "cublasLtMatmul", mm->label);
  } else {
    const aotc_rt_copy* cp = &d->copies[step->index];
    CUresult r = h->cu.memcpy_dtod_async(resolve(h, cp->dst, inputs, outputs),
                                         resolve(h, cp->src, inputs, outputs), cp->bytes, stream);
    if (r != AOTC_CU_SUCCESS) return aotc_rt_cu_fail(h, r, "cuMemcpyDtoDAsync(output copy)");
  }
  return AOTC_OK;
}

int aotc_rt_launch_all(aotc_rt_handle* h, const void* const* inputs, void* const* outputs,
                       CUstream stream) {
  for (int s = 0; s < h->desc->num_steps; ++s) {
    int code = aotc_rt_launch_step(h, s, inputs, outputs, stream);
    if (code != AOTC_OK) return code;
  }
  return AOTC_OK;
}

void aotc_rt_aux_setup(aotc_rt_handle* h) {
  const aotc_rt_model_desc* d = h->desc;
  int lanes = 0;
  for (int s = 0; s < d->num_steps; ++s) lanes |= d->steps[s].lane == 1;
  if (!lanes || !h->graphs_enabled || !h->cu.stream_wait_event || !h->cu.stream_create ||
      !h->cu.event_create)
    return;
  /* CU_STREAM_NON_BLOCKING (1): no implicit order with the legacy stream; CU_EVENT_DISABLE_TIMING
     (2): the events only order work. */
  if (h->cu.stream_create(&h->aux_stream, 1) != AOTC_CU_SUCCESS ||
      h->cu.event_create(&h->fork_event, 2) != AOTC_CU_SUCCESS ||
      h->cu.event_create(&h->join_event, 2) != AOTC_CU_SUCCESS)
    aotc_rt_aux_release(h); /* the handle is calloc'ed: what was not created is NULL */
}

void aotc_rt_aux_release(aotc_rt_handle* h) {
  if (h->join_event && h->cu.event_destroy) h->cu.event_destroy(h->join_event);
  if (h->fork_event && h->cu.event_destroy) h->cu.event_destroy(h->fork_event);
  if (h->aux_stream && h->cu.stream_destroy) h->cu.stream_destroy(h->aux_stream);
  h->join_event = h->fork_event = NULL;
  h->aux_stream = NULL;
}

/* `to` waits for everything issued to `from` so far. */
static int order_after(aotc_rt_handle* h, CUevent event, CUstream from, CUstream to) {
  CUresult r = h->cu.event_record(event, from);
  if (r != AOTC_CU_SUCCESS) return aotc_rt_cu_fail(h, r, "cuEventRecord");
  if ((r = h->cu.stream_wait_event(to, event, 0)) != AOTC_CU_SUCCESS)
    return aotc_rt_cu_fail(h, r, "cuStreamWaitEvent");
  return AOTC_OK;
}

int aotc_rt_launch_lanes(aotc_rt_handle* h, const void* const* inputs, void* const* outputs,
                         CUstream stream) {
  if (!h->aux_stream) return aotc_rt_launch_all(h, inputs, outputs, stream);
  const aotc_rt_model_desc* d = h->desc;
  int code = AOTC_OK, pending = 0; /* pending: lane 1 work not joined back yet */
  for (int s = 0; code == AOTC_OK && s < d->num_steps; ++s) {
    const aotc_rt_step* step = &d->steps[s];
    if (step->lane == 1) {
      if (step->wait) code = order_after(h, h->fork_event, stream, h->aux_stream);
      if (code == AOTC_OK) code = aotc_rt_launch_step(h, s, inputs, outputs, h->aux_stream);
      pending = 1;
    } else {
      if (step->wait && pending) {
        code = order_after(h, h->join_event, h->aux_stream, stream);
        pending = 0;
      }
      if (code == AOTC_OK) code = aotc_rt_launch_step(h, s, inputs, outputs, stream);
    }
  }
  /* A capture ends only with every forked stream joined back: join even after a failure. */
  if (pending) {
    int join = order_after(h, h->join_event, h->aux_stream, stream);
    if (code == AOTC_OK) code = join;
  }
  return code;
}

int aotc_rt_enter(aotc_rt_handle* h) {
  if (!h) return aotc_rt_set_error(NULL, AOTC_ERROR_INVALID_ARGUMENT, "the model handle is NULL");
  /* Before the first read of *h: a destroyed handle's memory may be gone (aotc_rt_check.c). */
  if (!aotc_rt_registry_contains(h))
    return aotc_rt_set_error(NULL, AOTC_ERROR_INVALID_ARGUMENT,
                             "the model handle %p is not a live handle of this library "
                             "(destroyed, or never created by it)",
                             (void*)h);
  if (h->sticky) return AOTC_ERROR_STICKY; /* keep the first fault's message */
  CUresult r = h->cu.ctx_push(h->ctx);
  if (r != AOTC_CU_SUCCESS) return aotc_rt_cu_fail(h, r, "cuCtxPushCurrent");
  return AOTC_OK;
}

void aotc_rt_leave(aotc_rt_handle* h) {
  CUcontext popped;
  h->cu.ctx_pop(&popped);
}

int aotc_rt_run(aotc_rt_handle* h, const void* const* inputs, void* const* outputs, void* stream) {
  int code = aotc_rt_enter(h);
  if (code != AOTC_OK) return code;
  code = aotc_rt_check_io(h, inputs, outputs, 1);
  if (code == AOTC_OK) code = aotc_rt_check_pointer_set(h, inputs, outputs, "run");
  if (code == AOTC_OK) code = aotc_rt_run_graph_or_plain(h, inputs, outputs, (CUstream)stream);
  if (code == AOTC_OK) h->message[0] = '\0';
  aotc_rt_leave(h);
  return code;
}

static unsigned long long align256(unsigned long long n) { return (n + 255u) & ~255ull; }

int aotc_rt_run_host(aotc_rt_handle* h, const void* const* inputs, void* const* outputs) {
  int code = aotc_rt_enter(h);
  if (code != AOTC_OK) return code;
  const aotc_rt_model_desc* d = h->desc;
  code = aotc_rt_check_io(h, inputs, outputs, 0);
  CUresult r = AOTC_CU_SUCCESS;
  if (code == AOTC_OK && !h->staging) {
    unsigned long long total = 256, at = 0;
    for (int i = 0; i < d->num_inputs; ++i) total += align256(d->inputs[i].bytes);
    for (int i = 0; i < d->num_outputs; ++i) total += align256(d->outputs[i].bytes);
    if ((r = h->cu.mem_alloc(&h->staging, total)) != AOTC_CU_SUCCESS) {
      h->staging = 0;
      code = aotc_rt_cu_fail(h, r, "cuMemAlloc(run_host staging)");
    }
    for (int i = 0; code == AOTC_OK && i < d->num_inputs; ++i) {
      h->staging_inputs[i] = (const void*)(uintptr_t)(h->staging + at);
      at += align256(d->inputs[i].bytes);
    }
    for (int i = 0; code == AOTC_OK && i < d->num_outputs; ++i) {
      h->staging_outputs[i] = (void*)(uintptr_t)(h->staging + at);
      at += align256(d->outputs[i].bytes);
    }
  }
  /* Synchronous copies and the legacy default stream keep copies and kernels in order. */
  for (int i = 0; code == AOTC_OK && i < d->num_inputs; ++i)
    if (d->inputs[i].bytes > 0 &&
        (r = h->cu.memcpy_htod((CUdeviceptr)(uintptr_t)h->staging_inputs[i], inputs[i],
                               d->inputs[i].bytes)) != AOTC_CU_SUCCESS)
      code = aotc_rt_cu_fail(h, r, "cuMemcpyHtoD(input)");
  if (code == AOTC_OK) code = aotc_rt_launch_all(h, h->staging_inputs, h->staging_outputs, NULL);
  for (int i = 0; code == AOTC_OK && i < d->num_outputs; ++i)
    if (d->outputs[i].bytes > 0 &&
        (r = h->cu.memcpy_dtoh(outputs[i], (CUdeviceptr)(uintptr_t)h->staging_outputs[i],
                               d->outputs[i].bytes)) != AOTC_CU_SUCCESS)
      code = aotc_rt_cu_fail(h, r, "cuMemcpyDtoH(output)");
  if (code == AOTC_OK && (r = h->cu.stream_synchronize(NULL)) != AOTC_CU_SUCCESS)
    code = aotc_rt_cu_fail(h, r, "cuStreamSynchronize");
  if (code == AOTC_OK) h->message[0] = '\0';
  aotc_rt_leave(h);
  return code;
}
