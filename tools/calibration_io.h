// Calibration inputs and the calibration cache for `aotc calibrate` (issue 8): the inputs come
// from a folder of .npy or TensorProto .pb files (one sample each, single-input models) or of ONNX
// `test_data_set_*` folders (input_K.pb per model input); samples whose leading dimension divides
// the model's are stacked into full batches. The cache is JSON (calibration_to_json) and is reused
// only for the same model file (SHA-256) and calibrator.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"
#include "opt/calibration.h"
#include "opt/quant_sensitivity.h"

namespace aotc {

// Batches in graph.inputs order; at most `max_batches` (0: all). `note` (may be null) receives a
// line about samples left over or stacked.
Expected<std::vector<std::vector<Tensor>>> load_calibration_batches(const std::string& dir, const Graph& graph,
                                                                    int max_batches, std::string* note);

std::string calibration_to_json(const CalibrationResult& result, const SensitivityReport* sensitivity = nullptr);
// `sensitivity` (optional) receives the file's sensitivity section; its `layers` stay empty when
// the file has none.
Expected<CalibrationResult> calibration_from_json(const std::string& text, SensitivityReport* sensitivity = nullptr);

}  // namespace aotc
