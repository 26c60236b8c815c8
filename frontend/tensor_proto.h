// ONNX TensorProto <-> aotc Tensor, shared by the model loader (initializers, Constant nodes,
// tensor attributes) and the .pb tensor files. Decoding checks everything a hostile file could get
// wrong: dtype, dims, element-count overflow, data size, and external data confined to one folder.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "ir/status.h"
#include "ir/tensor.h"

namespace aotc {

// Largest tensor we accept, in bytes (1 TiB): beyond this a dim is absurd, not a real model.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;

// Checks dims (non-negative, element count and byte size without overflow, at most
// kMaxTensorBytes) and returns the element count. `what` names the tensor in the message.
Expected<int64_t> checked_numel(const Shape& dims, DType dtype, const std::string& what);

// Decodes a TensorProto. `base_dir` is the folder that external data must stay inside (the
// model's folder); empty refuses external data. `what` names the tensor in error messages
// (e.g. "initializer 'w'"), already escaped by the caller.
Expected<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir,
                                   const std::string& what);

// Encodes a Tensor as a TensorProto with raw_data (little-endian, as ONNX requires; the 4-bit and
// 2-bit types packed, low bits first).
Status tensor_to_proto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto);

// The folder part of a file path ("." when there is none).
std::string parent_dir(const std::string& path);

}  // namespace aotc
