// The whole-model CPU check (see model_check.h): import with the data set's input shapes, run the
// declared pipeline, evaluate on the reference, compare by the whole-model metric; then, when
// asked, lower every node and plan the arena, as aotc would before codegen.
#include "tools/model_check/model_check.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "frontend/onnx_loader.h"
#include "frontend/tensor_file.h"
#include "ir/evaluator.h"
#include "ir/op_registry.h"
#include "opt/memory_plan.h"
#include "opt/calibration.h"
#include "opt/pipeline.h"
#include "opt/quant_sensitivity.h"
#include "tools/calibration_io.h"
#include "tools/compare.h"

namespace aotc {
namespace {

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// prefix_0.pb, prefix_1.pb, ... until the first missing index.
Expected<std::vector<NamedTensor>> load_numbered(const std::string& dir, const std::string& prefix) {
  std::vector<NamedTensor> out;
  for (int k = 0;; ++k) {
    std::string path = dir + "/" + prefix + "_" + std::to_string(k) + ".pb";
    if (!file_exists(path)) break;
    NamedTensor nt;
    Expected<Tensor> t = load_tensor_pb(path, &nt.name);
    if (!t) return Status::error(path + ": " + t.status().message());
    nt.tensor = std::move(*t);
    out.push_back(std::move(nt));
  }
  return out;
}

std::string node_label(const Node& node) {
  return node.qualified_op() + " '" + escape_for_message(node.name, 60) + "'";
}

// Survivors that compute shapes: shape-only ops (Shape, Size), and nodes whose inputs are all
// constants, which fold_constants should have turned into constants (unless over the fold limit).
void find_shape_ops(const Graph& graph, const OpRegistry& registry, std::vector<std::string>* out) {
  for (const Node& node : graph.nodes) {
    const OpDef* def = registry.find(node.op_type, node.domain);
    if (def && def->traits.shape_only) {
      out->push_back(node_label(node) + " (shape-only op)");
      continue;
    }
    bool any = false, all_constant = true;
    for (ValueId in : node.inputs) {
      if (in == kNoValue) continue;
      any = true;
      if (!graph.value(in).is_constant()) all_constant = false;
    }
    if (any && all_constant) out->push_back(node_label(node) + " (all inputs constant, not folded)");
  }
}

// Binds the data set's tensors to graph input names: by the tensors' own names when every one
// has a name, else by position in the model's input list (read through a default import).
Expected<std::vector<std::string>> input_names(const std::string& model_path,
                                               const std::vector<NamedTensor>& inputs) {
  std::vector<std::string> names;
  bool all_named = std::all_of(inputs.begin(), inputs.end(), [](const NamedTensor& t) { return !t.name.empty(); });
  if (all_named) {
    for (const NamedTensor& t : inputs) names.push_back(t.name);
    return names;
  }
  Expected<Graph> probe = load_onnx_model(model_path);
  if (!probe) return Status::error("unnamed input tensors, and the model does not import with default shapes to "
                                   "list its inputs: " + probe.status().message());
  if (probe->inputs.size() != inputs.size())
    return Status::error("the data set has " + std::to_string(inputs.size()) + " inputs, the model " +
                         std::to_string(probe->inputs.size()));
  for (ValueId id : probe->inputs) names.push_back(probe->value(id).name);
  return names;
}

void fail(ModelCheckResult& r, const std::string& stage, const std::string& error) {
  r.pass = false;
  r.stage = stage;
  r.error = error;
}

}  // namespace

std::vector<std::string> find_case_dirs(const std::string& model_dir) {
  std::vector<std::string> dirs;
  DIR* d = ::opendir(model_dir.c_str());
  if (!d) return dirs;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.rfind("test_data_set", 0) != 0) continue;
    struct stat st;
    if (::stat((model_dir + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) dirs.push_back(name);
  }
  ::closedir(d);
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

ModelCheckResult check_model_case(const std::string& model_path, const std::string& case_dir,
                                  const ModelCheckOptions& options) {
  auto t_start = std::chrono::steady_clock::now();
  ModelCheckResult r;
  auto finish = [&]() -> ModelCheckResult& {
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    return r;
  };

  Expected<std::vector<NamedTensor>> inputs = load_numbered(case_dir, "input");
  Expected<std::vector<NamedTensor>> expected = load_numbered(case_dir, "output");
  if (!inputs) return fail(r, "inputs", inputs.status().message()), finish();
  if (!expected) return fail(r, "inputs", expected.status().message()), finish();
  if (expected->empty()) return fail(r, "inputs", "no output_0.pb in " + case_dir), finish();
  Expected<std::vector<std::string>> names = input_names(model_path, *inputs);
  if (!names) return fail(r, "inputs", names.status().message()), finish();

  ImportOptions import;
  for (size_t i = 0; i < inputs->size(); ++i) import.input_shapes[(*names)[i]] = (*inputs)[i].tensor.shape();
  Expected<Graph> loaded = load_onnx_model(model_path, import);
  if (!loaded) return fail(r, "import", loaded.status().message()), finish();
  Graph& graph = *loaded;
  r.nodes_imported = static_cast<int>(graph.nodes.size());

  const bool int8 = !options.int8_calib_dir.empty();
  if (int8) {  // what `aotc --precision int8 --calib DIR` does before its pipeline
    auto batches = load_calibration_batches(options.int8_calib_dir, graph, 0, nullptr);
    if (!batches) return fail(r, "int8", batches.status().message()), finish();
    auto calibrator = parse_calibrator(options.int8_calibrator);
    if (!calibrator) return fail(r, "int8", calibrator.status().message()), finish();
    CalibrationOptions copts;
    copts.calibrator = *calibrator;
    auto ranges = calibrate_graph(graph, *batches, copts);
    if (!ranges) return fail(r, "int8", ranges.status().message()), finish();
    auto prepared = prepare_for_quantization(graph);
    if (!prepared) return fail(r, "int8", prepared.status().message()), finish();
    std::vector<QuantLayer> layers = quantizable_layers(graph);
    auto quantized = quantize_to_qdq(graph, layers, std::vector<bool>(layers.size(), true), *ranges);
    if (!quantized) return fail(r, "int8", quantized.status().message()), finish();
    graph = std::move(*quantized);
  }

  PipelineOptions popts;
  popts.disabled = options.disabled_passes;
  Expected<std::vector<PassStats>> stats = run_pipeline(graph, popts);
  if (!stats) return fail(r, "pipeline", stats.status().message()), finish();
  r.nodes_final = static_cast<int>(graph.nodes.size());
  const OpRegistry& registry = default_registry();
  for (const Node& node : graph.nodes) ++r.final_ops[node.qualified_op()];
  find_shape_ops(graph, registry, &r.shape_ops_left);

  // Graph inputs in the graph's order, each from the data set tensor of the same name.
  std::vector<Tensor> feed;
  for (ValueId id : graph.inputs) {
    const std::string& name = graph.value(id).name;
    auto it = std::find(names->begin(), names->end(), name);
    if (it == names->end()) return fail(r, "inputs", "no data for graph input '" + escape_for_message(name) + "'"), finish();
    feed.push_back((*inputs)[static_cast<size_t>(it - names->begin())].tensor);
  }
  Expected<std::vector<Tensor>> got = evaluate_graph(graph, feed);
  if (!got) return fail(r, "evaluate", got.status().message()), finish();
  if (!options.write_outputs_dir.empty()) {
    ::mkdir(options.write_outputs_dir.c_str(), 0755);
    for (size_t i = 0; i < got->size(); ++i) {
      Status w = save_tensor_pb(options.write_outputs_dir + "/output_" + std::to_string(i) + ".pb", (*got)[i],
                                graph.value(graph.outputs[i]).name);
      if (!w.is_ok()) return fail(r, "outputs", w.message()), finish();
    }
  }
  if (got->size() != expected->size())
    return fail(r, "compare", "the model has " + std::to_string(got->size()) + " outputs, the data set " +
                                  std::to_string(expected->size())), finish();

  std::string first_mismatch;
  for (size_t i = 0; i < got->size(); ++i) {
    Tolerance tol = default_tolerance((*expected)[i].tensor.dtype());
    // Floating outputs: the whole-model metric; integer/bool outputs stay exact.
    tol.model_metric = dtype_is_float((*expected)[i].tensor.dtype());
    CompareResult c = compare_tensors((*got)[i], (*expected)[i].tensor, tol);
    double top1 = -1;
    if (int8 && dtype_is_float((*expected)[i].tensor.dtype())) {
      // The int8 metric: relative L2 within the given bound and the arg max of every row (last
      // axis) unchanged.
      const Tensor& a = (*got)[i];
      const Tensor& b = (*expected)[i].tensor;
      const int64_t row = b.shape().empty() ? 1 : b.shape().back();
      int64_t rows = row > 0 ? b.numel() / row : 0, agree = 0;
      for (int64_t q = 0; q < rows; ++q) {
        int64_t ia = 0, ib = 0;
        for (int64_t k = 1; k < row; ++k) {
          if (a.get(q * row + k) > a.get(q * row + ia)) ia = k;
          if (b.get(q * row + k) > b.get(q * row + ib)) ib = k;
        }
        agree += ia == ib ? 1 : 0;
      }
      top1 = rows > 0 ? static_cast<double>(agree) / static_cast<double>(rows) : 1.0;
      c.pass = c.rel_l2 <= options.int8_max_rel_l2 && agree == rows;
      char why[200];
      std::snprintf(why, sizeof why, "int8: rel L2 %.3g (bound %.3g), arg max agrees on %lld of %lld rows", c.rel_l2,
                    options.int8_max_rel_l2, static_cast<long long>(agree), static_cast<long long>(rows));
      c.reason = c.pass ? "" : why;
    }
    OutputCheck oc;
    oc.top1_agreement = top1;
    oc.name = graph.value(graph.outputs[i]).name;
    oc.pass = c.pass;
    oc.reason = c.reason;
    oc.rel_l2 = c.rel_l2;
    oc.max_abs_error = c.max_abs_error;
    oc.max_abs_ref = c.max_abs_ref;
    oc.fnv1a = 14695981039346656037ull;
    for (int64_t b = 0; b < (*got)[i].byte_size(); ++b)
      oc.fnv1a = (oc.fnv1a ^ static_cast<uint8_t>((*got)[i].raw()[b])) * 1099511628211ull;
    if (!c.pass && first_mismatch.empty()) first_mismatch = "output '" + escape_for_message(oc.name, 60) + "': " + c.reason;
    r.outputs.push_back(oc);
  }
  if (!first_mismatch.empty()) {
    fail(r, "compare", first_mismatch);
    return finish();
  }
  if (!r.shape_ops_left.empty()) {
    fail(r, "shape_ops", std::to_string(r.shape_ops_left.size()) + " shape computation(s) left after the pipeline, first: " +
                             r.shape_ops_left.front());
    return finish();
  }

  if (options.lower) {
    for (const Node& node : graph.nodes) {
      const OpDef* def = registry.find(node.op_type, node.domain);
      if (!def || !def->lower) {
        r.lowering_failures.push_back(node_label(node) + ": no lowering");
        continue;
      }
      Expected<Lowering> l = def->lower(node, graph);
      if (!l) r.lowering_failures.push_back(l.status().message());
    }
    if (!r.lowering_failures.empty()) {
      fail(r, "lower", std::to_string(r.lowering_failures.size()) + " node(s) do not lower, first: " +
                           r.lowering_failures.front());
      return finish();
    }
    Expected<MemoryPlan> plan = plan_memory(graph);
    if (!plan) return fail(r, "plan", plan.status().message()), finish();
    r.arena_bytes = plan->arena_bytes;
    r.lower_bound_bytes = plan->lower_bound;
  }
  r.pass = true;
  r.stage = "done";
  return finish();
}

std::string format_result_line(const std::string& model_label, const std::string& case_label,
                               const ModelCheckResult& r) {
  char buf[160];
  std::string line = std::string(r.pass ? "PASS " : "FAIL ") + model_label + " " + case_label + ":";
  for (const OutputCheck& o : r.outputs) {
    std::snprintf(buf, sizeof(buf), " %s rel_l2 %.3g max_abs %.3g (max|ref| %.3g)%s;", escape_for_message(o.name, 40).c_str(),
                  o.rel_l2, o.max_abs_error, o.max_abs_ref, o.pass ? "" : " MISMATCH");
    line += buf;
    if (o.top1_agreement >= 0) {
      std::snprintf(buf, sizeof(buf), " top-1 agreement %.3f;", o.top1_agreement);
      line += buf;
    }
  }
  if (r.nodes_imported > 0) line += " nodes " + std::to_string(r.nodes_imported) + "->" + std::to_string(r.nodes_final) + ";";
  if (r.arena_bytes >= 0) line += " arena " + std::to_string(r.arena_bytes) + " B (bound " + std::to_string(r.lower_bound_bytes) + ");";
  std::snprintf(buf, sizeof(buf), " %.2f s", r.seconds);
  line += buf;
  if (!r.pass) line += " | " + r.stage + ": " + r.error;
  return line;
}

}  // namespace aotc
