// aotc: the compiler driver. frontend (load_onnx_model) -> run_pipeline -> plan_memory ->
// compile_library, with progress lines on stderr, --dump-after, and the JSON report. Every failure
// is one line "aotc: error: <message>" and exit code 2; codegen writes the .so atomically, so a
// failed run leaves no library behind. `aotc check` lists every problem of a model instead.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/cutlass_dir.h"
#include "codegen/kernel_cache.h"
#include "codegen/sha256.h"
#include "frontend/onnx_loader.h"
#include "ir/dump.h"
#include "opt/memory_plan.h"
#include "opt/pipeline.h"
#include "opt/calibration.h"
#include "opt/quant_sensitivity.h"
#include "tools/calibration_io.h"
#include "tools/cli_options.h"
#include "tools/compile_report.h"
#include "tools/json_writer.h"

namespace aotc {
namespace {

constexpr int kExitOk = 0, kExitError = 2;

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

int print_error(const std::string& message) {
  std::fprintf(stderr, "aotc: error: %s\n", one_line(message).c_str());
  return kExitError;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The names --dump-after accepts: every pipeline pass, plus the stages around the pipeline.
Status check_dump_after(const std::string& what) {
  if (what.empty() || what == "all" || what == "frontend" || what == "memory_plan") return Status::ok();
  std::string names = "frontend";
  for (const Pass& p : default_pipeline()) {
    if (what == p.name) return Status::ok();
    names += std::string(", ") + p.name;
  }
  return Status::error("unknown --dump-after '" + escape_for_message(what) + "'; expected all, " + names +
                       ", memory_plan (see aotc --help)");
}

class Dumper {
 public:
  explicit Dumper(const AotcOptions& o) : o_(o) {}
  bool wants(const std::string& stage) const {
    return !o_.dump_after.empty() && (o_.dump_after == "all" || o_.dump_after == stage);
  }
  void write(const std::string& stage, const std::string& text) {
    if (o_.dump_dir.empty()) {
      std::fprintf(stderr, "[aotc] ---- after %s ----\n%s", stage.c_str(), text.c_str());
      return;
    }
    char prefix[16];
    std::snprintf(prefix, sizeof(prefix), "%02d_", counter_++);
    std::string path = o_.dump_dir + "/" + prefix + stage + ".txt";
    Status s = write_file_atomically(path, text);
    if (!s.is_ok() && status_.is_ok()) status_ = s;
  }
  const Status& status() const { return status_; }

 private:
  const AotcOptions& o_;
  int counter_ = 0;
  Status status_ = Status::ok();
};

int run_check(const AotcOptions& o) {
  ImportOptions import;
  import.input_shapes = o.input_shapes;
  import.default_batch = o.batch;
  std::vector<Status> problems = check_onnx_model(o.model_path, import);
  for (const Status& s : problems) std::printf("%s\n", one_line(s.message()).c_str());
  if (problems.empty()) {
    std::fprintf(stderr, "aotc: check: '%s' imports: every node is supported\n",
                 escape_for_message(o.model_path).c_str());
    return kExitOk;
  }
  std::fprintf(stderr, "aotc: check: %zu problem(s) in '%s'\n", problems.size(),
               escape_for_message(o.model_path).c_str());
  return kExitError;
}

// `aotc calibrate`: statistics of every floating-point value of the fp32 graph over the --calib
// inputs (CPU reference), one int8 range per value by the chosen calibrator, written as JSON. A
// --calib-cache of the same model file and calibrator is reused instead of recalibrating.
// The calibration of `aotc calibrate` and of `--precision int8` compiles: the ranges from the
// --calib-cache when it is for this model file (`sha256`) and calibrator, else from the --calib
// inputs through the CPU reference; with o.sensitivity, the per-layer sensitivity and the
// budget's choices too. Notes go to `say`; per-batch progress only to a terminal.
struct CalibrationRun {
  CalibrationResult result;
  bool from_cache = false;
  std::unique_ptr<SensitivityReport> sensitivity;
  bool sensitivity_from_cache = false;
};

Expected<CalibrationRun> run_calibration(const AotcOptions& o, const std::string& sha256,
                                         const std::function<void(const std::string&)>& say) {
  auto t0 = std::chrono::steady_clock::now();
  auto calibrator = parse_calibrator(o.calibrator);
  if (!calibrator) return calibrator.status();
  const std::string* hash = &sha256;
  const bool terminal = ::isatty(2) != 0;
  CalibrationRun run;
  CalibrationResult& result = run.result;
  bool& from_cache = run.from_cache;
  std::unique_ptr<SensitivityReport>& sensitivity = run.sensitivity;
  std::string cache_problem;
  SensitivityReport cached_sensitivity;
  if (!o.calib_cache.empty()) {
    std::ifstream in(o.calib_cache, std::ios::binary);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      auto cached = calibration_from_json(text.str(), &cached_sensitivity);
      if (!cached) {
        cache_problem = "is unreadable (" + cached.status().message() + ")";
      } else if (cached->model_sha256 != *hash || cached->calibrator != o.calibrator ||
                 (o.calibrator == "percentile" && cached->percentile != o.percentile)) {
        cache_problem = "is for another model file or calibrator";
      } else {
        result = *cached;
        from_cache = true;
        say("calibration: " + std::to_string(result.tensors.size()) + " tensors from the cache '" +
            escape_for_message(o.calib_cache) + "'");
      }
    }
  }
  std::unique_ptr<Graph> graph_for_sensitivity;
  std::vector<std::vector<Tensor>> sensitivity_batches;
  if (!from_cache) {
    if (o.calib_dir.empty())
      return Status::error("calibration cache '" + escape_for_message(o.calib_cache) + "' " +
                         (cache_problem.empty() ? std::string("does not exist") : cache_problem) +
                         ", and no --calib folder is given");
    if (!cache_problem.empty())
      say("calibration cache '" + escape_for_message(o.calib_cache) + "' " + cache_problem + ": recalibrating");
    ImportOptions import;
    import.input_shapes = o.input_shapes;
    import.default_batch = o.batch;
    auto graph = load_onnx_model(o.model_path, import);
    if (!graph) return Status::error(graph.status().message());
    std::string note;
    auto batches = load_calibration_batches(o.calib_dir, *graph, static_cast<int>(o.max_batches), &note);
    if (!batches) return Status::error(batches.status().message());
    say("calibration inputs: " + note);
    CalibrationOptions options;
    options.calibrator = *calibrator;
    options.percentile = o.percentile;
    auto calibrated = calibrate_graph(*graph, *batches, options, [&](int done, int total) {
      if (terminal && !o.quiet)
        std::fprintf(stderr, "\r[aotc] calibration: batch %d/%d (%.1f s)%s", done, total, seconds_since(t0),
                     done == total ? "\n" : "");
    });
    if (!calibrated) return Status::error(calibrated.status().message());
    result = *calibrated;
    result.model_sha256 = *hash;
    if (o.sensitivity) {
      graph_for_sensitivity = std::make_unique<Graph>(std::move(*graph));
      AOTC_RETURN_IF_ERROR(prepare_for_quantization(*graph_for_sensitivity).status());
      for (size_t b = 0; b < batches->size() && static_cast<int64_t>(b) < o.sensitivity_batches; ++b)
        sensitivity_batches.push_back((*batches)[b]);
    }
  }
  // The cache's sensitivity serves a rebuild with the same budget: no inputs needed.
  if (o.sensitivity && from_cache && !cached_sensitivity.layers.empty() && cached_sensitivity.budget == o.accuracy_budget) {
    sensitivity = std::make_unique<SensitivityReport>(cached_sensitivity);
    run.sensitivity_from_cache = true;
    say("sensitivity: " + std::to_string(sensitivity->layers.size()) + " layers' choices from the cache (budget " +
        std::to_string(o.accuracy_budget) + ")");
  } else if (o.sensitivity) {
    if (!graph_for_sensitivity) {  // the ranges came from the cache: the inputs are still needed
      if (o.calib_dir.empty()) return Status::error("--sensitivity needs the --calib inputs");
      ImportOptions import;
      import.input_shapes = o.input_shapes;
      import.default_batch = o.batch;
      auto graph = load_onnx_model(o.model_path, import);
      if (!graph) return Status::error(graph.status().message());
      auto batches = load_calibration_batches(o.calib_dir, *graph, static_cast<int>(o.sensitivity_batches), nullptr);
      if (!batches) return Status::error(batches.status().message());
      graph_for_sensitivity = std::make_unique<Graph>(std::move(*graph));
      AOTC_RETURN_IF_ERROR(prepare_for_quantization(*graph_for_sensitivity).status());
      sensitivity_batches = std::move(*batches);
    }
    auto report = quantization_sensitivity(*graph_for_sensitivity, result, sensitivity_batches, o.accuracy_budget,
                                           [&](const std::string& line) {
                                             if (terminal && !o.quiet) std::fprintf(stderr, "\r[aotc] %s   ", line.c_str());
                                           });
    if (terminal && !o.quiet) std::fprintf(stderr, "\n");
    if (!report) return Status::error(report.status().message());
    sensitivity = std::make_unique<SensitivityReport>(std::move(*report));
  }
  return run;
}

int run_calibrate(const AotcOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  struct stat model_st;
  if (::stat(o.model_path.c_str(), &model_st) != 0 || !S_ISREG(model_st.st_mode))
    return print_error("cannot read model '" + escape_for_message(o.model_path) + "' (not a regular file?)");
  auto hash = sha256_file(o.model_path);
  if (!hash) return print_error(hash.status().message());
  // Lines before the result are held back, so that a failure is the only line (exit 2).
  std::vector<std::string> notes;
  auto say = [&](const std::string& line) { notes.push_back(one_line(line)); };
  auto flush = [&]() {
    if (!o.quiet)
      for (const std::string& line : notes) std::fprintf(stderr, "[aotc] %s\n", line.c_str());
    notes.clear();
  };
  auto run = run_calibration(o, *hash, say);
  if (!run) return print_error(run.status().message());
  const CalibrationResult& result = run->result;
  const bool from_cache = run->from_cache;
  const std::unique_ptr<SensitivityReport>& sensitivity = run->sensitivity;
  const std::string json = calibration_to_json(result, sensitivity.get());
  for (const std::string& path : {o.calib_cache, o.output_path}) {
    if (path.empty() || (from_cache && path == o.calib_cache && (!sensitivity || run->sensitivity_from_cache))) continue;
    Status s = write_file_atomically(path, json);
    if (!s.is_ok()) return print_error(s.message());
  }
  char line[200];
  std::snprintf(line, sizeof line, "calibration (%s): %zu tensors, %d batch(es), %.2f s%s", o.calibrator.c_str(),
                result.tensors.size(), result.batches, seconds_since(t0), from_cache ? " (cache)" : "");
  say(line);
  flush();
  if (sensitivity) {
    // The table: one line per layer, most sensitive first is the reader's job (graph order here).
    std::printf("%-40s %-8s %10s %9s %s\n", "layer", "op", "rel L2", "SQNR dB", "precision");
    for (const LayerSensitivity& l : sensitivity->layers)
      std::printf("%-40s %-8s %10.3g %9.1f %s\n", one_line(l.node).substr(0, 40).c_str(), l.op_type.c_str(), l.rel_l2,
                  l.sqnr_db, l.precision.c_str());
    std::printf("every layer int8: rel L2 %.3g", sensitivity->all_int8_rel_l2);
    if (sensitivity->budget > 0)
      std::printf("; budget %.3g: %s, rel L2 %.3g", sensitivity->budget,
                  sensitivity->budget_met ? "met" : "NOT met with every layer in fp16", sensitivity->chosen_rel_l2);
    std::printf("\n");
  }
  return kExitOk;
}

// The compile proper; fills `report` as far as it gets.
Status compile(const AotcOptions& o, CompileReport& report) {
  auto t_start = std::chrono::steady_clock::now();
  auto progress = [&](const std::string& line) {
    if (!o.quiet) std::fprintf(stderr, "[aotc] %s\n", one_line(line).c_str());
  };
  char buf[256];
  AOTC_RETURN_IF_ERROR(check_dump_after(o.dump_after));
  if (!o.dump_dir.empty() && ::mkdir(o.dump_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::error("cannot create --dump-dir '" + escape_for_message(o.dump_dir) + "'");
  }
  // Before anything reads it: a FIFO or a device (/dev/zero) would make the hash below wait or
  // run forever (the loader refuses them too, but only after the hash).
  struct stat model_st;
  if (::stat(o.model_path.c_str(), &model_st) != 0)
    return Status::error("cannot read model '" + escape_for_message(o.model_path) + "'");
  if (!S_ISREG(model_st.st_mode))
    return Status::error("model '" + escape_for_message(o.model_path) + "' is not a regular file");
  auto hash = sha256_file(o.model_path);
  if (!hash) return hash.status();
  report.model_sha256 = *hash;

  Dumper dumper(o);
  auto t0 = std::chrono::steady_clock::now();
  ImportOptions import;
  import.input_shapes = o.input_shapes;
  import.default_batch = o.batch;
  auto loaded = load_onnx_model(o.model_path, import);
  if (!loaded) return loaded.status();
  Graph& graph = *loaded;
  report.frontend_s = seconds_since(t0);
  report.nodes_imported = static_cast<int>(graph.nodes.size());
  record_signature(graph, &report);
  if (dumper.wants("frontend")) dumper.write("frontend", dump_graph(graph));

  if (o.precision == "int8") {
    // Calibrate (or reuse the cache), then write the quantized layers in QDQ form; fuse_qdq turns
    // them into int8 kernels and the precision pass puts the rest in fp16.
    t0 = std::chrono::steady_clock::now();
    // Its notes wait for its success: a failure here is the one line of the compile.
    std::vector<std::string> notes;
    auto run = run_calibration(o, *hash, [&](const std::string& line) { notes.push_back(line); });
    if (!run) return run.status();
    std::snprintf(buf, sizeof(buf), "frontend: %.2f s, %d nodes", report.frontend_s, report.nodes_imported);
    progress(buf);
    for (const std::string& line : notes) progress(line);
    if (!o.calib_cache.empty() && (!run->from_cache || (run->sensitivity && !run->sensitivity_from_cache)))
      AOTC_RETURN_IF_ERROR(write_file_atomically(o.calib_cache, calibration_to_json(run->result, run->sensitivity.get())));
    AOTC_RETURN_IF_ERROR(prepare_for_quantization(graph).status());
    std::vector<QuantLayer> layers = quantizable_layers(graph);
    std::vector<bool> quantize(layers.size(), true);
    if (run->sensitivity) {
      const auto& chosen = run->sensitivity->layers;
      for (size_t i = 0; i < layers.size() && chosen.size() == layers.size(); ++i)
        if (chosen[i].node != graph.nodes[static_cast<size_t>(layers[i].node)].name)
          return Status::error("the sensitivity (of --calib-cache '" + escape_for_message(o.calib_cache) +
                               "'?) names other layers than this model has; remove the cache or pass --calib");
      if (chosen.size() != layers.size())
        return Status::error("the sensitivity (of --calib-cache '" + escape_for_message(o.calib_cache) + "'?) has " +
                             std::to_string(chosen.size()) + " layers, the model " + std::to_string(layers.size()));
      for (size_t i = 0; i < layers.size(); ++i) quantize[i] = chosen[i].precision == "int8";
    }
    // Layers without a fast int8 kernel on this target stay fp16 (the budget only gets easier).
    const Target target = target_from_archs(o.archs);
    std::vector<std::string> why(layers.size());
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string missing = int8_kernel_missing(graph, layers[i], target);
      if (quantize[i] && !missing.empty()) {
        quantize[i] = false;
        why[i] = "kept in fp16: " + missing;
      }
    }
    report.have_int8 = true;
    report.int8_calibrator = o.calibrator;
    report.int8_ranges_from_cache = run->from_cache;
    for (size_t i = 0; i < layers.size(); ++i) {
      const Node& n = graph.nodes[static_cast<size_t>(layers[i].node)];
      CompileReport::Int8Layer l;
      l.node = n.name;
      l.op = n.op_type;
      l.precision = quantize[i] ? "int8" : "fp16";
      l.why = why[i];
      if (run->sensitivity) l.rel_l2 = run->sensitivity->layers[i].rel_l2, l.sqnr_db = run->sensitivity->layers[i].sqnr_db;
      report.int8_layers.push_back(l);
    }
    if (run->sensitivity) {
      report.int8_budget = run->sensitivity->budget;
      report.int8_all_rel_l2 = run->sensitivity->all_int8_rel_l2;
      report.int8_chosen_rel_l2 = run->sensitivity->chosen_rel_l2;
      report.int8_budget_met = run->sensitivity->budget_met;
    }
    auto quantized = quantize_to_qdq(graph, layers, quantize, run->result);
    if (!quantized) return quantized.status();
    graph = std::move(*quantized);
    size_t n_int8 = 0;
    for (bool q : quantize) n_int8 += q ? 1 : 0;
    std::snprintf(buf, sizeof(buf), "int8: %zu of %zu Conv/Gemm/MatMul layers quantized (%s calibration, %.2f s)%s",
                  n_int8, layers.size(), o.calibrator.c_str(), seconds_since(t0), run->from_cache ? ", ranges from the cache" : "");
    progress(buf);
    if (run->sensitivity && run->sensitivity->budget > 0) {
      std::snprintf(buf, sizeof(buf), "int8: accuracy budget %.3g %s (rel L2 %.3g against fp32 on the calibration inputs)",
                    run->sensitivity->budget, run->sensitivity->budget_met ? "met" : "NOT met with every layer in fp16",
                    run->sensitivity->chosen_rel_l2);
      progress(buf);
    }
  }
  if (o.precision != "int8") {
    std::snprintf(buf, sizeof(buf), "frontend: %.2f s, %d nodes", report.frontend_s, report.nodes_imported);
    progress(buf);
  }
  graph.target = target_from_archs(o.archs);
  graph.target.precision.dtype = o.precision == "fp16" || o.precision == "int8" ? DType::kFloat16
                                 : o.precision == "bf16"                        ? DType::kBFloat16
                                                                                : DType::kFloat32;
  graph.target.precision.keep_fp32 = o.keep_fp32;
  graph.target.precision.low_io = o.io_dtype != "model";
  graph.target.max_split_k = o.max_split_k;
  graph.target.conv_config = o.conv_config;
  graph.target.conv_pointwise_gemm = o.conv_pointwise_gemm;
  graph.target.conv_im2col_gemm = o.conv_im2col_gemm;
  graph.target.int8_requant = o.int8_requant;
  graph.target.conv_strided_pointwise_gemm = o.conv_strided_pointwise_gemm;
  graph.target.conv_cluster_splitk = o.conv_cluster_splitk;
  graph.target.conv_cluster_max_split = o.conv_cluster_max_split;
  graph.target.conv_cluster_warp_groups = o.conv_cluster_warp_groups;
  graph.target.conv_pw_pair = o.conv_pw_pair;
  graph.target.conv_wgmma = o.conv_wgmma;
  graph.target.conv_wgmma_int8 = o.conv_wgmma_int8;
  graph.target.conv_wgmma_int8_expand_2cta = o.conv_wgmma_int8_expand_2cta;
  graph.target.conv_gemm_int8 = o.conv_gemm_int8;
  graph.target.int8_fuse_residual = o.int8_fuse_residual;
  graph.target.int8_epilogue_tile_n = o.int8_epilogue_tile_n;
  graph.target.int8_gemm_tile_n = o.int8_gemm_tile_n;
  graph.target.int8_conv_cluster_m = o.int8_conv_cluster_m;
  graph.target.conv_wgmma_cluster_m = o.conv_wgmma_cluster_m;
  graph.target.conv_wgmma_fill = o.conv_wgmma_fill;
  graph.target.conv_wgmma_pointwise = o.conv_wgmma_pointwise;
  graph.target.conv_stem_wgmma = o.conv_stem_wgmma;
  graph.target.gemm_gemv = o.gemm_gemv;
  graph.target.pool_gemm = o.pool_gemm;
  graph.target.gemm_wgmma = o.gemm_wgmma;
  graph.target.gemm_wgmma_config = o.gemm_wgmma_config;
  graph.target.l2_prefetch = o.l2_prefetch;
  graph.target.gemm_fp32_simt = o.gemm_fp32_simt;
  graph.target.gemm_fp32_cluster = o.gemm_fp32_cluster;
  graph.target.gemm_16bit_cluster = o.gemm_16bit_cluster;
  graph.target.epilogue_excluded = o.epilogue_excluded;
  graph.target.depthwise_tile_tow_first = o.depthwise_tile_tow_first;
  graph.target.simt_gemm_max_cluster = o.simt_gemm_max_cluster;
  graph.target.simt_gemm_blocks_per_sm = o.simt_gemm_blocks_per_sm;
  graph.target.matmul_reference = o.matmul_reference;
  graph.target.aux_streams = o.aux_streams;
  graph.target.conv_stem_kernel = o.conv_stem_kernel;
  graph.target.attention_fused = o.attention_fused;
  graph.target.attention_blocks = o.attention_blocks;
  graph.target.attention_sm90 = o.attention_sm90;
  graph.target.conv_fp32_nhwc = o.conv_fp32_nhwc;
  // The CUTLASS headers, needed by the NHWC implicit-GEMM convolutions. Without them fp32 models
  // keep the NCHW convolution kernels (which need none); 16-bit ones fail in codegen with a hint.
  auto cutlass = find_cutlass_include_dir(o.cutlass_dir);
  if (!cutlass) return cutlass.status();
  if (cutlass->empty() && graph.target.conv_fp32_nhwc) {
    graph.target.conv_fp32_nhwc = false;
    progress("note: no CUTLASS headers (pip install nvidia-cutlass, or --cutlass-dir): fp32 convolutions stay NCHW");
  }
  t0 = std::chrono::steady_clock::now();
  PipelineOptions popts;
  popts.disabled = o.disabled_passes;
  popts.dump_after = (o.dump_after == "frontend" || o.dump_after == "memory_plan") ? "" : o.dump_after;
  popts.on_dump = [&](const std::string& pass, const Graph& g) { dumper.write(pass, dump_graph(g)); };
  auto stats = run_pipeline(graph, popts);
  if (!stats) return stats.status();
  report.passes = *stats;
  report.passes_s = seconds_since(t0);
  report.nodes_final = static_cast<int>(graph.nodes.size());
  std::snprintf(buf, sizeof(buf), "passes: %.2f s, %d -> %d nodes (%zu passes)", report.passes_s,
                report.nodes_imported, report.nodes_final, stats->size());
  progress(buf);

  t0 = std::chrono::steady_clock::now();
  auto plan = plan_memory(graph);
  if (!plan) return plan.status();
  report.memory_plan_s = seconds_since(t0);
  report.plan = *plan;
  report.have_plan = true;
  record_gpu_ops(graph, &report);
  double ratio = plan->lower_bound > 0 ? double(plan->arena_bytes) / double(plan->lower_bound) : 1.0;
  std::snprintf(buf, sizeof(buf), "memory plan: %.2f s, arena %lld bytes, lower bound %lld (ratio %.3f), linear %lld",
                report.memory_plan_s, static_cast<long long>(plan->arena_bytes),
                static_cast<long long>(plan->lower_bound), ratio, static_cast<long long>(plan->linear_bytes));
  progress(buf);
  if (dumper.wants("memory_plan")) dumper.write("memory_plan", plan->text + "\n" + dump_graph(graph));
  AOTC_RETURN_IF_ERROR(dumper.status());

  CodegenOptions cg;
  cg.name = o.name;
  cg.archs = o.archs;
  cg.output_path = o.output_path;
  cg.emit_source_dir = o.emit_source_dir;
  cg.nvcc = o.nvcc;
  size_t slash = o.nvcc.find_last_of('/');
  cg.cuda_include_dir = slash == std::string::npos ? "/usr/local/cuda/include" : o.nvcc.substr(0, slash) + "/../include";
  cg.host_cc = o.host_cc;
  if (!o.no_cache) cg.kernel_cache_dir = o.cache_dir.empty() ? default_kernel_cache_dir() : o.cache_dir;
  if (!o.no_kernel_library) cg.kernel_library_dirs = o.kernel_library_dirs.empty() ? default_kernel_library_dirs() : o.kernel_library_dirs;
  cg.add_to_kernel_library = o.add_to_kernel_library;
  cg.cutlass_include_dir = *cutlass;
  cg.pdl = o.pdl;
  cg.tune_matmuls = o.tune_matmuls == "on"    ? CodegenOptions::TuneMatmuls::kOn
                    : o.tune_matmuls == "off" ? CodegenOptions::TuneMatmuls::kOff
                                              : CodegenOptions::TuneMatmuls::kAuto;
  cg.model_hash = report.model_sha256;
  cg.aotc_version = aotc_version_string();
  cg.progress = progress;
  auto cstats = compile_library(graph, *plan, cg);
  if (!cstats) return cstats.status();
  report.codegen = *cstats;
  report.have_codegen = true;
  report.total_s = seconds_since(t_start);
  std::snprintf(buf, sizeof(buf), "codegen: %d kernels, %d matmul calls, %lld weight bytes; render %.2f s, compile-time params %.2f s (%d kernel(s)%s; kernel library %d hit(s), %d added), nvcc %.2f s (cache %d hit(s), %d miss(es); kernel library %d hit(s), %d added), host cc %.2f s",
                cstats->kernels, cstats->matmul_calls, static_cast<long long>(cstats->weight_bytes),
                cstats->render_seconds, cstats->host_params_seconds, cstats->host_params_kernels,
                cstats->host_params_cache_hit ? ", cached" : "", cstats->host_params_library_hits,
                cstats->host_params_library_added, cstats->nvcc_seconds, cstats->cache_hits,
                cstats->cache_misses, cstats->library_hits, cstats->library_added, cstats->host_cc_seconds);
  progress(buf);
  std::string where = o.output_path.empty() ? o.emit_source_dir : o.output_path;
  std::snprintf(buf, sizeof(buf), "wrote %s in %.2f s total", escape_for_message(where).c_str(), report.total_s);
  progress(buf);
  return Status::ok();
}

int aotc_main(const std::vector<std::string>& args) {
  auto parsed = parse_aotc_args(args);
  if (!parsed) return print_error(parsed.status().message());
  const AotcOptions& o = *parsed;
  if (o.mode == AotcOptions::Mode::kHelp) {
    std::fputs(aotc_usage().c_str(), stdout);
    return kExitOk;
  }
  if (o.mode == AotcOptions::Mode::kVersion) {
    std::printf("aotc %s\n", aotc_version_string());
    return kExitOk;
  }
  if (o.mode == AotcOptions::Mode::kCheck) return run_check(o);
  if (o.mode == AotcOptions::Mode::kCalibrate) return run_calibrate(o);

  auto t_start = std::chrono::steady_clock::now();
  CompileReport report;
  report.aotc_version = aotc_version_string();
  report.model_path = o.model_path;
  report.output_path = o.output_path;
  report.name = o.name;
  report.archs = o.archs;
  // Refuse an unwritable --report before the work, so that a report failure cannot follow a
  // successful compile (exit 2 must mean "no library").
  if (!o.report_path.empty()) {
    report.error = "the compile did not finish";
    Status w = write_file_atomically(o.report_path, report_to_json(report));
    if (!w.is_ok()) return print_error(w.message());
    report.error.clear();
  }
  Status s = compile(o, report);
  report.ok = s.is_ok();
  if (!s.is_ok()) report.error = one_line(s.message());
  if (report.total_s < 0) report.total_s = seconds_since(t_start);
  if (!o.report_path.empty()) {
    Status w = write_file_atomically(o.report_path, report_to_json(report));
    if (!w.is_ok() && s.is_ok()) {
      // Exit 2 must mean "no library": take back the one just written.
      if (!o.output_path.empty()) {
        std::remove(o.output_path.c_str());
        size_t slash = o.output_path.find_last_of('/');
        std::string dir = slash == std::string::npos ? "" : o.output_path.substr(0, slash + 1);
        std::remove((dir + o.name + ".h").c_str());
      }
      s = w;
    }
  }
  if (!s.is_ok()) return print_error(s.message());
  return kExitOk;
}

}  // namespace
}  // namespace aotc

int main(int argc, char** argv) {
  try {
    return aotc::aotc_main(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aotc: error: internal error: %s\n", e.what());
    return 2;
  } catch (...) {
    std::fprintf(stderr, "aotc: error: internal error (unknown exception)\n");
    return 2;
  }
}
