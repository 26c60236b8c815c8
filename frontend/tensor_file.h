// Tensors from files: ONNX TensorProto (.pb, as in the ONNX backend test data) and NumPy .npy.
// Used by aotc-run and the conformance runner; the model loader shares the TensorProto decoding.
#pragma once

#include <string>

#include "ir/status.h"
#include "ir/tensor.h"

namespace aotc {

Expected<Tensor> load_tensor_pb(const std::string& path);
// Same, also returning the TensorProto's name (empty when it has none) in *name.
Expected<Tensor> load_tensor_pb(const std::string& path, std::string* name);
Status save_tensor_pb(const std::string& path, const Tensor& tensor, const std::string& name = "");
Expected<Tensor> load_npy(const std::string& path);
// A .npy file by its extension, else a TensorProto .pb (aotc-run's inputs, calibration samples).
Expected<Tensor> load_tensor_file(const std::string& path);
Status save_npy(const std::string& path, const Tensor& tensor);

}  // namespace aotc
