// Input/expected/output files for aotc-run (see run_io.h).
#include "tools/run_io.h"

#include <sys/stat.h>

#include <cerrno>

#include "frontend/tensor_file.h"
#include "ir/graph.h"
#include "tools/random_tensor.h"

namespace aotc {

namespace {

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Status check_matches(const Tensor& t, const AbiTensorInfo& info, const std::string& what,
                     const std::string& path) {
  if (t.dtype() != info.dtype || t.shape() != info.shape) {
    return Status::error(what + " from '" + escape_for_message(path) + "' is " + dtype_name(t.dtype()) + "[" +
                         shape_str(t.shape()) + "], but the library's " + describe_tensor(info) +
                         " needs " + dtype_name(info.dtype) + "[" + shape_str(info.shape) + "]");
  }
  return Status::ok();
}

// The index of the input named by a "--input NAME=FILE" spec: the longest input name followed by
// '=' wins (names may contain '='), else a decimal index.
Expected<std::pair<int, std::string>> resolve_spec(const std::string& spec, const AbiLibrary& lib) {
  int best = -1;
  size_t best_len = 0;
  for (size_t i = 0; i < lib.inputs.size(); ++i) {
    const std::string& n = lib.inputs[i].name;
    if (spec.size() > n.size() && spec.compare(0, n.size(), n) == 0 && spec[n.size()] == '=' &&
        (best < 0 || n.size() > best_len)) {
      best = static_cast<int>(i);
      best_len = n.size();
    }
  }
  if (best >= 0) return std::make_pair(best, spec.substr(best_len + 1));
  size_t eq = spec.find('=');
  std::string key = spec.substr(0, eq);
  bool digits = !key.empty() && key.size() < 7 && key.find_first_not_of("0123456789") == std::string::npos;
  if (digits) {
    int index = std::stoi(key);
    if (index < static_cast<int>(lib.inputs.size())) return std::make_pair(index, spec.substr(eq + 1));
  }
  std::string names;
  for (const auto& in : lib.inputs) names += (names.empty() ? "'" : ", '") + escape_for_message(in.name) + "'";
  return Status::error("--input '" + escape_for_message(spec) + "' names no input of the library (inputs: " +
                       names + ")");
}

}  // namespace

Expected<std::vector<Tensor>> gather_inputs(const RunOptions& options, const AbiLibrary& lib,
                                            std::vector<std::string>* sources) {
  size_t n = lib.inputs.size();
  std::vector<std::string> paths(n);
  if (options.positional_inputs.size() > n) {
    return Status::error(std::to_string(options.positional_inputs.size()) + " input files given, but the library has " +
                         std::to_string(n) + " input(s)");
  }
  for (size_t i = 0; i < options.positional_inputs.size(); ++i) paths[i] = options.positional_inputs[i];
  for (const auto& spec : options.input_specs) {
    auto r = resolve_spec(spec, lib);
    if (!r) return r.status();
    if (!paths[r->first].empty()) {
      return Status::error("input " + std::to_string(r->first) + " given twice");
    }
    paths[r->first] = r->second;
  }
  bool any_given = options.positional_inputs.size() + options.input_specs.size() > 0;
  if (!any_given && !options.expect_dir.empty()) {
    for (size_t i = 0; i < n; ++i) {
      std::string p = options.expect_dir + "/input_" + std::to_string(i) + ".pb";
      if (!file_exists(p)) return Status::error("--expect-dir: missing " + escape_for_message(p));
      paths[i] = p;
    }
  }
  std::vector<Tensor> tensors;
  sources->clear();
  for (size_t i = 0; i < n; ++i) {
    std::string what = "input " + std::to_string(i);
    if (paths[i].empty()) {
      tensors.push_back(random_tensor(lib.inputs[i].dtype, lib.inputs[i].shape, options.seed, i));
      sources->push_back("random (seed " + std::to_string(options.seed) + ")");
      continue;
    }
    auto t = load_tensor_file(paths[i]);
    if (!t) return Status::error(what + ": " + t.status().message());
    std::string source = paths[i];
    // A library built with --io-dtype fp16/bf16 takes 16-bit floats: float32 data is rounded to
    // its input dtype (to nearest even), as the caller of such a library would.
    if (t->dtype() == DType::kFloat32 && t->shape() == lib.inputs[i].shape &&
        (lib.inputs[i].dtype == DType::kFloat16 || lib.inputs[i].dtype == DType::kBFloat16)) {
      *t = convert_tensor(*t, lib.inputs[i].dtype);
      source += " (float32 rounded to " + dtype_name(lib.inputs[i].dtype) + ")";
    }
    AOTC_RETURN_IF_ERROR(check_matches(*t, lib.inputs[i], what, paths[i]));
    tensors.push_back(std::move(*t));
    sources->push_back(source);
  }
  return tensors;
}

Expected<std::vector<Tensor>> gather_expected(const RunOptions& options, const AbiLibrary& lib) {
  std::vector<std::string> paths = options.expect_files;
  if (!options.expect_dir.empty()) {
    for (size_t i = 0; i < lib.outputs.size(); ++i) {
      paths.push_back(options.expect_dir + "/output_" + std::to_string(i) + ".pb");
    }
  }
  if (paths.empty()) return std::vector<Tensor>{};
  if (paths.size() != lib.outputs.size()) {
    return Status::error(std::to_string(paths.size()) + " expected file(s) given, but the library has " +
                         std::to_string(lib.outputs.size()) + " output(s)");
  }
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < paths.size(); ++i) {
    auto t = load_tensor_file(paths[i]);
    if (!t) return Status::error("expected output " + std::to_string(i) + ": " + t.status().message());
    tensors.push_back(std::move(*t));
  }
  return tensors;
}

Status write_outputs(const std::string& dir, const AbiLibrary& lib, const std::vector<Tensor>& outputs) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::error("cannot create --output-dir '" + escape_for_message(dir) + "'");
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string base = dir + "/output_" + std::to_string(i);
    AOTC_RETURN_IF_ERROR(save_tensor_pb(base + ".pb", outputs[i], lib.outputs[i].name));
    AOTC_RETURN_IF_ERROR(save_npy(base + ".npy", outputs[i]));
  }
  return Status::ok();
}

}  // namespace aotc
