// Building and serialising the compile report (see compile_report.h). Numbers that a stage did
// not produce are written as null, never as a made-up 0.
#include "tools/compile_report.h"

#include "ir/op_registry.h"
#include "tools/json_writer.h"

namespace aotc {
namespace {

void write_tensors(JsonWriter& j, const char* key, const std::vector<ReportTensor>& tensors) {
  j.key(key).begin_array();
  for (const auto& t : tensors) {
    j.begin_object().key("name").value(t.name).key("dtype").value(dtype_name(t.dtype));
    j.key("shape").int_array(t.shape).end_object();
  }
  j.end_array();
}

void seconds_or_null(JsonWriter& j, const char* key, double s) {
  j.key(key);
  if (s < 0) j.null();
  else j.value(s);
}

void write_counts(JsonWriter& j, const char* key, const std::map<std::string, int>& counts) {
  j.key(key).begin_object();
  for (const auto& kv : counts) j.key(kv.first).value(kv.second);
  j.end_object();
}

}  // namespace

void record_signature(const Graph& graph, CompileReport* report) {
  report->inputs.clear();
  report->outputs.clear();
  for (ValueId id : graph.inputs) {
    const Value& v = graph.value(id);
    report->inputs.push_back({v.name, v.dtype, v.shape});
  }
  for (ValueId id : graph.outputs) {
    const Value& v = graph.value(id);
    report->outputs.push_back({v.name, v.dtype, v.shape});
  }
}

void record_gpu_ops(const Graph& graph, CompileReport* report) {
  const OpRegistry& registry = default_registry();
  report->gpu_ops.clear();
  report->view_ops.clear();
  report->shape_ops_on_gpu = 0;
  report->node_precisions.clear();
  for (const Node& node : graph.nodes) {
    std::string type = node.qualified_op();
    // The node's precision: the dtype of its first floating-point output (else of output 0).
    DType dt = DType::kUndefined;
    for (ValueId v : node.outputs)
      if (v != kNoValue && dt == DType::kUndefined) dt = graph.value(v).dtype;
    for (ValueId v : node.outputs)
      if (v != kNoValue && dtype_is_float(graph.value(v).dtype)) {
        dt = graph.value(v).dtype;
        break;
      }
    // Quantized layers compute in int8 whatever they store (a float output in dequantize mode).
    const bool int8_layer = node.op_type == "QLinearConv" || node.op_type == "QLinearMatMul" ||
                            node.op_type == "ConvInteger" || node.op_type == "MatMulInteger";
    report->node_precisions.push_back({node.name, type, int8_layer ? "int8" : dtype_name(dt),
                                       node.attr_int("channels_last", 0) ? "NHWC" : "as declared"});
    const OpDef* def = registry.find(node.op_type, node.domain);
    if (def && def->traits.is_view) {
      ++report->view_ops[type];
      continue;
    }
    ++report->gpu_ops[type];
    if (def && def->traits.shape_only) ++report->shape_ops_on_gpu;
  }
}

std::string report_to_json(const CompileReport& r) {
  JsonWriter j;
  j.begin_object();
  j.key("ok").value(r.ok);
  if (!r.ok) j.key("error").value(r.error);
  j.key("aotc_version").value(r.aotc_version);
  j.key("model").begin_object().key("path").value(r.model_path).key("sha256").value(r.model_sha256).end_object();
  j.key("output").value(r.output_path).key("name").value(r.name);
  j.key("archs").begin_array();
  for (const auto& a : r.archs) j.value(a);
  j.end_array();
  write_tensors(j, "inputs", r.inputs);
  write_tensors(j, "outputs", r.outputs);
  j.key("nodes_imported");
  if (r.nodes_imported < 0) j.null();
  else j.value(r.nodes_imported);
  j.key("nodes_final");
  if (r.nodes_final < 0) j.null();
  else j.value(r.nodes_final);
  j.key("passes").begin_array();
  for (const auto& p : r.passes) {
    j.begin_object().key("name").value(p.name).key("nodes_before").value(p.nodes_before);
    j.key("nodes_after").value(p.nodes_after).key("changed").value(p.changed);
    j.key("seconds").value(p.seconds).end_object();
  }
  j.end_array();
  j.key("memory");
  if (!r.have_plan) {
    j.null();
  } else {
    j.begin_object().key("arena_bytes").value(r.plan.arena_bytes).key("lower_bound_bytes").value(r.plan.lower_bound);
    j.key("ratio_to_lower_bound");
    if (r.plan.lower_bound > 0) j.value(static_cast<double>(r.plan.arena_bytes) / static_cast<double>(r.plan.lower_bound));
    else j.null();
    j.key("linear_bytes").value(r.plan.linear_bytes).end_object();
  }
  j.key("codegen");
  if (!r.have_codegen) {
    j.null();
  } else {
    j.begin_object().key("kernels").value(r.codegen.kernels).key("matmul_calls").value(r.codegen.matmul_calls);
    j.key("weight_bytes").value(r.codegen.weight_bytes);
    j.key("kernel_cache").begin_object().key("enabled").value(r.codegen.cache_enabled);
    j.key("hits").value(r.codegen.cache_hits).key("misses").value(r.codegen.cache_misses).end_object();
    j.key("kernel_library").begin_object().key("hits").value(r.codegen.library_hits);
    j.key("added").value(r.codegen.library_added).key("params_builder_hits").value(r.codegen.host_params_library_hits);
    j.key("params_builders_added").value(r.codegen.host_params_library_added).end_object();
    j.key("steps").begin_array();
    for (const CodegenStats::Step& s : r.codegen.steps)
      j.begin_object().key("label").value(s.label).key("kind").value(s.kind).key("function").value(s.function)
          .key("node").value(s.node).key("op").value(s.op).end_object();
    j.end_array();
    j.end_object();
  }
  j.key("node_precision").begin_array();
  for (const auto& n : r.node_precisions)
    j.begin_object().key("node").value(n.name).key("op").value(n.op).key("dtype").value(n.dtype).key("layout").value(n.layout).end_object();
  j.end_array();
  j.key("int8");
  if (!r.have_int8) {
    j.null();
  } else {
    j.begin_object().key("calibrator").value(r.int8_calibrator).key("ranges_from_cache").value(r.int8_ranges_from_cache);
    j.key("accuracy_budget_rel_l2").value(r.int8_budget);
    if (r.int8_all_rel_l2 >= 0) {
      j.key("all_int8_rel_l2").value(r.int8_all_rel_l2).key("chosen_rel_l2").value(r.int8_chosen_rel_l2);
      j.key("budget_met").value(r.int8_budget_met);
    }
    j.key("layers").begin_array();
    for (const auto& l : r.int8_layers) {
      j.begin_object().key("node").value(l.node).key("op").value(l.op).key("precision").value(l.precision);
      if (l.rel_l2 >= 0) j.key("rel_l2_alone").value(l.rel_l2).key("sqnr_db").value(l.sqnr_db);
      j.key("why").value(!l.why.empty()            ? l.why
                         : l.precision == "int8" ? (l.rel_l2 >= 0 ? "within the accuracy budget" : "every layer in int8 (no budget)")
                                                 : "kept in fp16: among the most sensitive, the budget needs it");
      j.end_object();
    }
    j.end_array().end_object();
  }
  write_counts(j, "gpu_ops", r.gpu_ops);
  write_counts(j, "view_ops", r.view_ops);
  j.key("shape_ops_on_gpu").value(r.shape_ops_on_gpu);
  j.key("seconds").begin_object();
  seconds_or_null(j, "frontend", r.frontend_s);
  seconds_or_null(j, "passes", r.passes_s);
  seconds_or_null(j, "memory_plan", r.memory_plan_s);
  seconds_or_null(j, "render", r.have_codegen ? r.codegen.render_seconds : -1);
  seconds_or_null(j, "host_params", r.have_codegen ? r.codegen.host_params_seconds : -1);
  seconds_or_null(j, "nvcc", r.have_codegen ? r.codegen.nvcc_seconds : -1);
  seconds_or_null(j, "host_cc", r.have_codegen ? r.codegen.host_cc_seconds : -1);
  seconds_or_null(j, "total", r.total_s);
  j.end_object();
  j.end_object();
  return j.str();
}

}  // namespace aotc
