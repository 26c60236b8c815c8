// aotc-run's host side: which tensors go in (files by name, index or position, an ONNX
// test_data_set folder, or seeded random), which are expected, and writing the outputs.
// Every tensor is checked against the library's declared dtype and shape before any GPU work.
#pragma once

#include <string>
#include <vector>

#include "frontend/tensor_file.h"  // load_tensor_file
#include "ir/status.h"
#include "ir/tensor.h"
#include "tools/abi_library.h"
#include "tools/cli_options.h"

namespace aotc {


// One tensor per library input, in order; `sources` says where each came from ("random (seed 1)").
Expected<std::vector<Tensor>> gather_inputs(const RunOptions& options, const AbiLibrary& lib,
                                            std::vector<std::string>* sources);

// Expected outputs (empty when nothing is to be compared): --expect files or --expect-dir.
Expected<std::vector<Tensor>> gather_expected(const RunOptions& options, const AbiLibrary& lib);

// DIR/output_K.pb (named like the output) and DIR/output_K.npy; creates DIR if needed.
Status write_outputs(const std::string& dir, const AbiLibrary& lib, const std::vector<Tensor>& outputs);

}  // namespace aotc
