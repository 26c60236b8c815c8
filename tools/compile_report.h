// The JSON compile report of `aotc --report FILE`: what was compiled (model path and SHA-256,
// inputs/outputs), what every pass did, the memory plan against its lower bound, what codegen
// emitted, per-stage seconds, and which op types run on the GPU (so "no shape op runs on the GPU"
// can be read off it). A failed compile still gets a report, with "ok": false and "error".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "ir/graph.h"
#include "opt/memory_plan.h"
#include "opt/pipeline.h"

namespace aotc {

struct ReportTensor {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;
};

struct CompileReport {
  bool ok = false;
  std::string error;
  std::string aotc_version, model_path, model_sha256, output_path, name;
  std::vector<std::string> archs;
  std::vector<ReportTensor> inputs, outputs;
  int nodes_imported = -1;
  int nodes_final = -1;
  std::vector<PassStats> passes;
  bool have_plan = false;
  MemoryPlan plan;
  bool have_codegen = false;
  CodegenStats codegen;
  std::map<std::string, int> gpu_ops;   // op type -> nodes that launch work on the GPU
  std::map<std::string, int> view_ops;  // op type -> nodes that became views (no work)
  int shape_ops_on_gpu = 0;             // nodes with OpTraits::shape_only still in the graph
  // Per final node: what it computes in and how it stores its activations (the precision and
  // layout passes' decisions), e.g. {"conv1", "aotc.FusedConv", "float16", "NHWC"}.
  struct NodePrecision {
    std::string name, op, dtype, layout;
  };
  std::vector<NodePrecision> node_precisions;
  // --precision int8: each quantizable layer's choice and why (the sensitivity's figures when an
  // --accuracy-budget asked for them).
  struct Int8Layer {
    std::string node, op, precision;  // precision: int8, or fp16 (kept out by the budget)
    double rel_l2 = -1, sqnr_db = -1;  // < 0: not measured (no budget)
    std::string why;                   // set when not the budget's reason (no int8 kernel)
  };
  bool have_int8 = false;
  std::string int8_calibrator;
  bool int8_ranges_from_cache = false;
  double int8_budget = 0, int8_all_rel_l2 = -1, int8_chosen_rel_l2 = -1;
  bool int8_budget_met = true;
  std::vector<Int8Layer> int8_layers;
  // Seconds per stage; < 0 when the stage did not run.
  double frontend_s = -1, passes_s = -1, memory_plan_s = -1, total_s = -1;
};

// Fills inputs/outputs from the graph's signature.
void record_signature(const Graph& graph, CompileReport* report);
// Fills gpu_ops / view_ops / shape_ops_on_gpu from the final (planned) graph.
void record_gpu_ops(const Graph& graph, CompileReport* report);

std::string report_to_json(const CompileReport& report);

}  // namespace aotc
