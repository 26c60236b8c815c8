// Whole-model check on the CPU reference: import an ONNX model with the input shapes of one
// test_data_set folder, run the pass pipeline, evaluate the graph with the reference kernels and
// compare each output with output_K.pb by the whole-model metric (tools/compare.h). It also says
// which op types survive the pipeline (no shape op may) and, on request, whether every node lowers
// and the memory plan succeeds, so one run tells how far a model is from compiling.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace aotc {

struct ModelCheckOptions {
  bool lower = false;  // also lower every node and plan memory
  std::vector<std::string> disabled_passes;  // pipeline passes to skip (--disable-pass)
  // --int8-calib DIR: the --precision int8 path before the pipeline (entropy calibration on the
  // folder's inputs, BatchNormalization folded, every Conv / Gemm / MatMul with a constant weight
  // in QDQ form, which fuse_qdq makes int8), the rest fp32 on the CPU. The outputs then pass when
  // their relative L2 error is at most int8_max_rel_l2 and every row's arg max (last axis) agrees.
  std::string int8_calib_dir;
  std::string int8_calibrator = "entropy";  // as aotc's --calibrator
  std::string write_outputs_dir;  // --write-outputs DIR: the CPU outputs as DIR/output_K.pb
  double int8_max_rel_l2 = 0;
};

struct OutputCheck {
  std::string name;
  bool pass = false;
  std::string reason;  // why it failed, one line
  double rel_l2 = 0, max_abs_error = 0, max_abs_ref = 0;
  double top1_agreement = -1;  // --int8-calib: fraction of rows whose arg max agrees
  uint64_t fnv1a = 0;  // of the CPU output's bytes: equal hashes = bit-identical outputs
};

struct ModelCheckResult {
  bool pass = false;               // every stage requested succeeded and every output matched
  std::string stage;               // where it stopped: inputs, import, pipeline, evaluate, compare, lower, plan, done
  std::string error;               // the first error, one line ("" when none)
  int nodes_imported = 0, nodes_final = 0;
  std::map<std::string, int> final_ops;       // op type (domain-prefixed if not ONNX) -> count
  std::vector<std::string> shape_ops_left;     // "op 'node'" of shape computations that survived
  std::vector<std::string> lowering_failures;  // one line per node that did not lower
  int64_t arena_bytes = -1, lower_bound_bytes = -1;
  std::vector<OutputCheck> outputs;
  double seconds = 0;
};

// Reads `case_dir`/input_K.pb (K = 0, 1, ...: named tensors bind by name, unnamed ones by graph
// input order) and output_K.pb, and checks `model_path` against them.
ModelCheckResult check_model_case(const std::string& model_path, const std::string& case_dir,
                                  const ModelCheckOptions& options);

// The test_data_set* folders of a model folder, sorted by name.
std::vector<std::string> find_case_dirs(const std::string& model_dir);

// One line: "PASS model case: ..." / "FAIL model case: stage: reason".
std::string format_result_line(const std::string& model_label, const std::string& case_label,
                               const ModelCheckResult& result);

}  // namespace aotc
