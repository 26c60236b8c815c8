// Calibration for int8 quantization (issue 8): per-tensor statistics of every floating-point value
// of the fp32 graph, collected by running the CPU reference over calibration inputs, and the
// calibrators that turn a tensor's statistics into its symmetric int8 range (amax; scale =
// amax / 127): minmax, percentile, entropy (KL divergence, the TensorRT legacy calibrator's
// method) and mse. Statistics live in a histogram of |x| whose range grows by powers of two as
// larger values arrive (merging bins), so one pass over the data suffices.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace aotc {

enum class Calibrator { kMinMax, kPercentile, kEntropy, kMse };
const char* calibrator_name(Calibrator c);
Expected<Calibrator> parse_calibrator(const std::string& name);

// Histogram of |x| over [0, range()) in bins() equal bins; the last bin also holds range() itself.
class AbsHistogram {
 public:
  explicit AbsHistogram(int bins = 2048);
  void add(double x);
  int bins() const { return static_cast<int>(counts_.size()); }
  double range() const { return range_; }              // 0 until a non-zero value arrived
  double bin_width() const { return range_ / bins(); }
  const std::vector<double>& counts() const { return counts_; }
  double total() const { return total_; }
  double min() const { return min_; }                  // signed extremes seen
  double max() const { return max_; }
  double max_abs() const { return max_abs_; }
  double exact_zeros() const { return exact_zeros_; }  // values == 0 (in bin 0 once range() > 0)

 private:
  void grow_to(double x);
  std::vector<double> counts_;
  double range_ = 0, total_ = 0, zeros_ = 0, exact_zeros_ = 0, min_ = 0, max_ = 0, max_abs_ = 0;
  bool any_ = false;
};

// amax (> 0) of a histogram by each rule; 0 for a histogram of zeros only. `levels` is the number
// of non-negative int8 levels (128: 0..127).
double amax_minmax(const AbsHistogram& h);
double amax_percentile(const AbsHistogram& h, double percentile);  // e.g. 99.99
double amax_entropy(const AbsHistogram& h, int levels = 128);
double amax_mse(const AbsHistogram& h, int levels = 128);

struct CalibrationOptions {
  Calibrator calibrator = Calibrator::kEntropy;
  double percentile = 99.99;
  int bins = 2048;
};

struct TensorCalibration {
  std::string name;  // the ONNX value name
  double min = 0, max = 0, amax = 0;
  int64_t count = 0;  // elements seen
};

struct CalibrationResult {
  std::string calibrator;      // calibrator_name
  double percentile = 0;       // for kPercentile
  std::string model_sha256;    // of the model file, for the cache check
  int batches = 0;             // evaluations of the graph
  std::vector<TensorCalibration> tensors;  // every named floating-point value, graph order
};

// Runs the CPU reference once per batch (each a full input list in graph.inputs order) and
// calibrates every named floating-point value (graph inputs and node outputs; not constants).
// `progress` (may be empty) gets (batch done, batches).
Expected<CalibrationResult> calibrate_graph(const Graph& graph, const std::vector<std::vector<Tensor>>& batches,
                                            const CalibrationOptions& options,
                                            const std::function<void(int, int)>& progress = {},
                                            const OpRegistry& registry = default_registry());

}  // namespace aotc
