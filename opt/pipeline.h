// The declared pass pipeline. A pass is a named function Graph& -> Expected<bool changed>, one per
// file in opt/. run_pipeline runs them in order, records node counts and time per pass, and hands
// the graph to `on_dump` after the pass named in `dump_after` ("all" dumps after every pass).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace aotc {

struct Pass {
  const char* name;  // e.g. "fold_constants"; used by --dump-after and the report
  Expected<bool> (*run)(Graph& graph);
};

struct PassStats {
  std::string name;
  int nodes_before = 0;
  int nodes_after = 0;
  bool changed = false;
  double seconds = 0;
};

struct PipelineOptions {
  std::string dump_after;  // a pass name, "all", or empty
  std::function<void(const std::string& pass_name, const Graph& graph)> on_dump;
  bool verify_each = true;  // run verify() after every pass
  std::vector<std::string> disabled;  // pass names to skip (--disable-pass; ablation)
};

// The default pipeline, in order.
const std::vector<Pass>& default_pipeline();

Expected<std::vector<PassStats>> run_pipeline(Graph& graph, const PipelineOptions& options,
                                              const std::vector<Pass>& passes = default_pipeline());

}  // namespace aotc
