// Quantization sensitivity and the accuracy budget (issue 8), on the CPU reference: each
// quantizable layer (Conv, Gemm, 2-D MatMul with a constant weight) is fake-quantized alone --
// its activation input per tensor (symmetric int8, scale = calibrated amax / 127, through
// QuantizeLinear -> DequantizeLinear) and its weight per output channel (symmetric int8, rounded
// at compile time) -- and the graph outputs' relative L2 error against fp32 is its sensitivity
// (SQNR = -20 log10). With a budget, every layer starts in int8 and the most sensitive ones move
// to fp16 (not quantized) until the whole-model error meets it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"
#include "opt/calibration.h"

namespace aotc {

struct QuantLayer {
  int node = -1;          // index into graph.nodes
  ValueId activation = kNoValue;
  ValueId weight = kNoValue;
  int weight_axis = 0;    // the weight's output-channel axis
};

std::vector<QuantLayer> quantizable_layers(const Graph& graph);

// The rewrites that change which weights a layer has, run before its layers are quantized (so
// that the int8 weight is the one the kernel multiplies by): BatchNormalization folded into the
// Conv before it (opt/fold_batchnorm), dead nodes dropped. Weights in QDQ form stay as they are.
Expected<bool> prepare_for_quantization(Graph& graph);

// Why a layer has no fast int8 kernel on `target` ("" when it has one: a 2-D convolution of one
// group with 16-aligned channels runs on the int8 tensor-core kernel). `--precision int8` keeps such
// layers in fp16, as a slower int8 layer would buy no speed (TensorRT decides per layer the same way).
std::string int8_kernel_missing(const Graph& graph, const QuantLayer& layer, const Target& target);

// `graph` with the layers whose `quantize` entry is true in QDQ form (and a residual Add read from
// a quantized layer gets both operands through Q/DQ, so it can run on int8): each quantized layer's
// activation through one QuantizeLinear -> DequantizeLinear pair per value (symmetric int8, scale
// amax / 127 from `calibration` by value name; a missing range is an error), its weight an int8
// constant (symmetric, per output channel) through DequantizeLinear. The float reading of this
// graph is what the sensitivity measures; opt/fuse_qdq turns it into int8 kernels for
// `--precision int8`.
Expected<Graph> quantize_to_qdq(const Graph& graph, const std::vector<QuantLayer>& layers,
                              const std::vector<bool>& quantize, const CalibrationResult& calibration);

struct LayerSensitivity {
  std::string node, op_type;
  double rel_l2 = 0;   // outputs' relative L2 error with only this layer in int8
  double sqnr_db = 0;  // -20 log10(rel_l2); large = insensitive
  std::string precision = "int8";  // the budget's choice: int8 or fp16
};

struct SensitivityReport {
  std::vector<LayerSensitivity> layers;  // graph order
  double all_int8_rel_l2 = 0;            // every layer in int8
  double chosen_rel_l2 = 0;              // with the budget's choices
  double budget = 0;                     // relative L2 target (0: none, everything int8)
  bool budget_met = true;
};

// `batches` as for calibrate_graph (the first `max_batches` are used, 0: all).
Expected<SensitivityReport> quantization_sensitivity(const Graph& graph, const CalibrationResult& calibration,
                                                     const std::vector<std::vector<Tensor>>& batches, double budget,
                                                     const std::function<void(const std::string&)>& progress = {});

}  // namespace aotc
