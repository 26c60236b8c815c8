// aotc-run: loads a library made by aotc, runs it on the GPU (device buffers through the dlopen'd
// driver, outputs poisoned with 0xFF first), writes/compares outputs, benchmarks with CUDA events
// and profiles per step through the library's optional profiling extension (--profile).
// Exit codes: 0 pass, 1 mismatch, 2 error (bad arguments, bad files, no GPU, CUDA errors, no
// profiling extension).
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "tools/abi_library.h"
#include "tools/cli_options.h"
#include "tools/compare.h"
#include "tools/cuda_driver.h"
#include "tools/json_writer.h"
#include "tools/profile_report.h"
#include "tools/run_io.h"

namespace aotc {
namespace {

constexpr int kExitPass = 0, kExitMismatch = 1, kExitError = 2;
constexpr unsigned kPoisonByte = 0xFF;  // as fp32/fp16 this is NaN: unwritten elements show

int fail(const Status& s) {
  std::string line = s.message();
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::fprintf(stderr, "aotc-run: error: %s\n", line.c_str());
  return kExitError;
}

struct OutputReport {
  bool compared = false;
  CompareResult result;
  int64_t nan_count = 0;
};

// Everything that holds GPU resources, released in reverse order of acquisition.
struct GpuSession {
  const CudaDriver* cu = nullptr;
  const AbiLibrary* lib = nullptr;
  CuDevice device = 0;
  CuContext ctx = nullptr;
  AbiLibrary::Model* model = nullptr;
  CuStream stream = nullptr;
  std::vector<DeviceBuffer> in_bufs, out_bufs;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;

  ~GpuSession() {
    in_bufs.clear();
    out_bufs.clear();
    if (model) lib->destroy(model);
    if (stream) cu->cuStreamDestroy(stream);
    if (ctx) cu->cuDevicePrimaryCtxRelease(device);
  }

  Status lib_error(int code, const char* what) const {
    const char* msg = lib->last_error(model);
    return Status::error(std::string(what) + " returned " + std::to_string(code) + ": " +
                         escape_for_message(msg ? msg : "", 400));
  }

  Status run_once() {
    int code = lib->run(model, in_ptrs.data(), out_ptrs.data(), stream);
    if (code != 0) return lib_error(code, (lib->prefix + "_run").c_str());
    return Status::ok();
  }
};

Status start(GpuSession& g, const RunOptions& o, const std::vector<Tensor>& inputs) {
  const CudaDriver* cu = g.cu;
  AOTC_RETURN_IF_ERROR(cu->check(cu->cuDeviceGet(&g.device, o.device), "cuDeviceGet"));
  AOTC_RETURN_IF_ERROR(cu->check(cu->cuDevicePrimaryCtxRetain(&g.ctx, g.device), "cuDevicePrimaryCtxRetain"));
  AOTC_RETURN_IF_ERROR(cu->check(cu->cuCtxSetCurrent(g.ctx), "cuCtxSetCurrent"));
  int code = g.lib->create(&g.model, o.device, nullptr, nullptr);
  if (code != 0) {
    g.model = nullptr;
    return g.lib_error(code, (g.lib->prefix + "_create").c_str());
  }
  AOTC_RETURN_IF_ERROR(cu->check(cu->cuStreamCreate(&g.stream, 0), "cuStreamCreate"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    g.in_bufs.emplace_back();
    AOTC_RETURN_IF_ERROR(g.in_bufs.back().allocate(cu, static_cast<size_t>(inputs[i].byte_size())));
    if (inputs[i].byte_size() > 0) {  // empty tensors: nothing to copy (and raw() may be null)
      AOTC_RETURN_IF_ERROR(cu->check(
          cu->cuMemcpyHtoD(g.in_bufs.back().ptr(), inputs[i].raw(), static_cast<size_t>(inputs[i].byte_size())),
          "cuMemcpyHtoD"));
    }
    g.in_ptrs.push_back(reinterpret_cast<const void*>(g.in_bufs.back().ptr()));
  }
  for (const auto& info : g.lib->outputs) {
    g.out_bufs.emplace_back();
    AOTC_RETURN_IF_ERROR(g.out_bufs.back().allocate(cu, info.bytes));
    if (info.bytes > 0) {
      AOTC_RETURN_IF_ERROR(cu->check(cu->cuMemsetD8(g.out_bufs.back().ptr(), kPoisonByte, info.bytes), "cuMemsetD8"));
    }
    g.out_ptrs.push_back(reinterpret_cast<void*>(g.out_bufs.back().ptr()));
  }
  return Status::ok();
}

Expected<TimingSummary> bench(GpuSession& g, const RunOptions& o) {
  const CudaDriver* cu = g.cu;
  for (int i = 0; i < o.warmup_runs; ++i) AOTC_RETURN_IF_ERROR(g.run_once());
  AOTC_RETURN_IF_ERROR(cu->check(cu->cuStreamSynchronize(g.stream), "cuStreamSynchronize"));
  CuEvent start = nullptr, stop = nullptr;
  AOTC_RETURN_IF_ERROR(cu->check(cu->cuEventCreate(&start, 0), "cuEventCreate"));
  Status s = cu->check(cu->cuEventCreate(&stop, 0), "cuEventCreate");
  std::vector<double> ms;
  for (int i = 0; s.is_ok() && i < o.bench_runs; ++i) {
    float t = 0;
    s = cu->check(cu->cuEventRecord(start, g.stream), "cuEventRecord");
    if (s.is_ok()) s = g.run_once();
    if (s.is_ok()) s = cu->check(cu->cuEventRecord(stop, g.stream), "cuEventRecord");
    if (s.is_ok()) s = cu->check(cu->cuEventSynchronize(stop), "cuEventSynchronize");
    if (s.is_ok()) s = cu->check(cu->cuEventElapsedTime(&t, start, stop), "cuEventElapsedTime");
    ms.push_back(t);
  }
  if (start) cu->cuEventDestroy(start);
  if (stop) cu->cuEventDestroy(stop);
  if (!s.is_ok()) return s;
  return summarize_timings(ms);
}

// --profile: the step table, two warm-up profile runs (the first creates the library's events),
// then o.profile_iters timed ones.
Expected<ProfileReport> profile(GpuSession& g, const RunOptions& o) {
  const AbiLibrary& lib = *g.lib;
  int n = lib.profile_num_steps();
  if (n < 0 || n > 10000000) return Status::error(lib.prefix + "_profile_num_steps returned " + std::to_string(n));
  std::vector<ProfileStepInfo> steps(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const char* label = lib.profile_step_label(i);
    const char* kind = lib.profile_step_kind(i);
    steps[static_cast<size_t>(i)] = {label ? label : "?", kind ? kind : "?", lib.profile_step_flops(i),
                                     lib.profile_step_bytes(i)};
  }
  std::vector<float> ms(static_cast<size_t>(n) + 1, 0.0f);
  std::vector<std::vector<float>> samples;
  for (int i = -2; i < o.profile_iters; ++i) {
    int code = lib.profile_run(g.model, g.in_ptrs.data(), g.out_ptrs.data(), g.stream, ms.data());
    if (code != 0) return g.lib_error(code, (lib.prefix + "_profile_run").c_str());
    if (i >= 0) samples.emplace_back(ms.begin(), ms.begin() + n);
  }
  return build_profile_report(steps, samples);
}

void write_json(JsonWriter& j, const RunOptions& o, const AbiLibrary& lib, const std::vector<std::string>& sources,
                const std::vector<OutputReport>& reports, bool pass, const TimingSummary* timing) {
  j.begin_object();
  j.key("library").value(lib.path).key("prefix").value(lib.prefix);
  j.key("arena_bytes").value(static_cast<int64_t>(lib.arena_bytes));
  j.key("weight_bytes").value(static_cast<int64_t>(lib.weight_bytes));
  j.key("inputs").begin_array();
  for (size_t i = 0; i < lib.inputs.size(); ++i) {
    j.begin_object().key("name").value(lib.inputs[i].name).key("dtype").value(dtype_name(lib.inputs[i].dtype));
    j.key("shape").int_array(lib.inputs[i].shape).key("source").value(sources[i]).end_object();
  }
  j.end_array();
  j.key("outputs").begin_array();
  for (size_t i = 0; i < lib.outputs.size(); ++i) {
    const auto& r = reports[i];
    j.begin_object().key("name").value(lib.outputs[i].name).key("dtype").value(dtype_name(lib.outputs[i].dtype));
    j.key("shape").int_array(lib.outputs[i].shape).key("nan_count").value(r.nan_count);
    j.key("compared").value(r.compared);
    if (r.compared) {
      j.key("pass").value(r.result.pass).key("reason").value(r.result.reason);
      j.key("elements").value(r.result.elements).key("mismatches").value(r.result.mismatches);
      j.key("max_abs_error").value(r.result.max_abs_error).key("max_abs_ref").value(r.result.max_abs_ref);
      j.key("rel_l2").value(r.result.rel_l2);
    }
    j.end_object();
  }
  j.end_array();
  j.key("metric").value(o.model_metric ? "model" : "per_element");
  j.key("pass").value(pass);
  if (timing) {
    j.key("bench").begin_object().key("warmup").value(o.warmup_runs).key("runs").value(timing->runs);
    j.key("median_ms").value(timing->median_ms).key("p90_ms").value(timing->p90_ms);
    j.key("p99_ms").value(timing->p99_ms).key("mean_ms").value(timing->mean_ms);
    j.key("min_ms").value(timing->min_ms).key("max_ms").value(timing->max_ms).end_object();
  }
  j.end_object();
}

int run_main(const std::vector<std::string>& args) {
  auto parsed = parse_run_args(args);
  if (!parsed) return fail(parsed.status());
  const RunOptions& o = *parsed;
  if (o.mode == RunOptions::Mode::kHelp) {
    std::fputs(run_usage().c_str(), stdout);
    return kExitPass;
  }
  auto lib = open_abi_library(o.library_path, o.name);
  if (!lib) return fail(lib.status());
  if (o.profile && !lib->has_profile()) {
    return fail(Status::error("'" + escape_for_message(o.library_path) + "' has no profiling extension (" +
                              lib->prefix + "_profile_run is missing: built by an older aotc; rebuild it to "
                              "use --profile)"));
  }
  if (o.mode == RunOptions::Mode::kInfo) {
    for (const auto& t : lib->inputs) std::printf("input  %s\n", describe_tensor(t).c_str());
    for (const auto& t : lib->outputs) std::printf("output %s\n", describe_tensor(t).c_str());
    std::printf("arena_bytes %llu\nweight_bytes %llu\n", static_cast<unsigned long long>(lib->arena_bytes),
                static_cast<unsigned long long>(lib->weight_bytes));
    return kExitPass;
  }
  std::vector<std::string> sources;
  auto inputs = gather_inputs(o, *lib, &sources);
  if (!inputs) return fail(inputs.status());
  auto expected = gather_expected(o, *lib);
  if (!expected) return fail(expected.status());
  auto cu = load_cuda_driver(o.device);
  if (!cu) return fail(cu.status());

  std::vector<Tensor> outputs;
  std::vector<OutputReport> reports(lib->outputs.size());
  TimingSummary timing;
  ProfileReport prof;
  {
    GpuSession g;
    g.cu = *cu;
    g.lib = &*lib;
    Status s = start(g, o, *inputs);
    if (s.is_ok()) s = g.run_once();
    if (s.is_ok()) s = g.cu->check(g.cu->cuStreamSynchronize(g.stream), "cuStreamSynchronize (after run)");
    for (size_t i = 0; s.is_ok() && i < lib->outputs.size(); ++i) {
      outputs.emplace_back(lib->outputs[i].dtype, lib->outputs[i].shape);
      if (lib->outputs[i].bytes == 0) continue;
      s = g.cu->check(g.cu->cuMemcpyDtoH(outputs.back().raw(), g.out_bufs[i].ptr(), lib->outputs[i].bytes),
                      "cuMemcpyDtoH");
    }
    if (s.is_ok() && o.bench_runs > 0) {
      auto t = bench(g, o);
      if (!t) s = t.status();
      else timing = *t;
    }
    if (s.is_ok() && o.profile) {
      auto p = profile(g, o);
      if (!p) s = p.status();
      else prof = std::move(*p);
    }
    if (!s.is_ok()) return fail(s);
  }
  if (!o.output_dir.empty()) {
    Status s = write_outputs(o.output_dir, *lib, outputs);
    if (!s.is_ok()) return fail(s);
  }
  bool pass = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    OutputReport& r = reports[i];
    if (dtype_is_float(outputs[i].dtype())) {
      for (int64_t k = 0; k < outputs[i].numel(); ++k) r.nan_count += std::isnan(outputs[i].get(k)) ? 1 : 0;
    }
    std::string head = "output " + std::to_string(i) + " " + describe_tensor(lib->outputs[i]);
    if (expected->empty()) {
      if (!o.quiet) {
        std::printf("%s: computed%s\n", head.c_str(),
                    r.nan_count ? (" (" + std::to_string(r.nan_count) + " NaN)").c_str() : "");
      }
      continue;
    }
    Tolerance tol = default_tolerance((*expected)[i].dtype());
    if (dtype_is_float((*expected)[i].dtype())) {
      if (o.atol_set) tol.atol = o.atol;
      if (o.rtol_set) tol.rtol = o.rtol;
    }
    tol.model_metric = o.model_metric;
    r.compared = true;
    // A 16-bit output (--io-dtype) against float32 expectations: compared widened (exactly).
    const bool widen = (*expected)[i].dtype() == DType::kFloat32 &&
                       (outputs[i].dtype() == DType::kFloat16 || outputs[i].dtype() == DType::kBFloat16);
    r.result = compare_tensors(widen ? convert_tensor(outputs[i], DType::kFloat32) : outputs[i],
                               (*expected)[i], tol);
    pass = pass && r.result.pass;
    if (!o.quiet || !r.result.pass) {
      std::printf("%s: %s  max_abs_err %.3g  max|ref| %.3g  rel_l2 %.3g%s%s\n", head.c_str(),
                  r.result.pass ? "PASS" : "FAIL", r.result.max_abs_error, r.result.max_abs_ref, r.result.rel_l2,
                  r.result.pass ? "" : "  ", r.result.reason.c_str());
    }
  }
  if (o.bench_runs > 0) {
    std::printf("bench %s: %d runs after %d warm-up: median %.4f ms  p90 %.4f ms  p99 %.4f ms\n",
                lib->prefix.c_str(), timing.runs, o.warmup_runs, timing.median_ms, timing.p90_ms, timing.p99_ms);
  }
  if (o.profile) {
    std::fputs(format_profile_table(prof, lib->prefix, o.profile_top).c_str(), stdout);
    if (!o.profile_json_path.empty()) {
      JsonWriter j;
      write_profile_json(j, prof, lib->path, lib->prefix);
      Status s = write_file_atomically(o.profile_json_path, j.str());
      if (!s.is_ok()) return fail(s);
    }
  }
  if (!o.json_path.empty()) {
    JsonWriter j;
    write_json(j, o, *lib, sources, reports, pass, o.bench_runs > 0 ? &timing : nullptr);
    Status s = write_file_atomically(o.json_path, j.str());
    if (!s.is_ok()) return fail(s);
  }
  if (!expected->empty()) std::printf("%s\n", pass ? "PASS" : "FAIL");
  return pass ? kExitPass : kExitMismatch;
}

}  // namespace
}  // namespace aotc

int main(int argc, char** argv) {
  try {
    return aotc::run_main(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aotc-run: error: internal error: %s\n", e.what());
    return 2;
  }
}
