#include "tools/calibration_io.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "frontend/tensor_file.h"
#include "tools/json_reader.h"
#include "tools/json_writer.h"

namespace aotc {
namespace fs = std::filesystem;

namespace {

// Stacks `parts` (same dtype, same shape [b, ...]) along dimension 0.
Tensor stack(const std::vector<Tensor>& parts, const Shape& shape) {
  Tensor out(parts[0].dtype(), shape);
  size_t at = 0;
  for (const Tensor& p : parts) {
    std::memcpy(out.data<uint8_t>() + at, p.raw(), static_cast<size_t>(p.byte_size()));
    at += static_cast<size_t>(p.byte_size());
  }
  return out;
}

}  // namespace

Expected<std::vector<std::vector<Tensor>>> load_calibration_batches(const std::string& dir, const Graph& graph,
                                                                    int max_batches, std::string* note) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status::error("--calib '" + escape_for_message(dir) + "' is not a folder");
  const size_t num_inputs = graph.inputs.size();
  if (num_inputs == 0) return Status::error("the model has no inputs to calibrate with");
  // Samples: each a list of tensors in graph.inputs order.
  std::vector<std::vector<std::string>> samples;
  std::vector<std::string> sets, files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory(ec) && name.rfind("test_data_set_", 0) == 0) sets.push_back(e.path().string());
    else if (e.is_regular_file(ec) && (e.path().extension() == ".npy" || e.path().extension() == ".pb"))
      files.push_back(e.path().string());
  }
  if (ec) return Status::error("cannot list --calib '" + escape_for_message(dir) + "': " + ec.message());
  std::sort(sets.begin(), sets.end());
  std::sort(files.begin(), files.end());
  if (!sets.empty()) {
    for (const std::string& s : sets) {
      std::vector<std::string> one;
      for (size_t k = 0; k < num_inputs; ++k) one.push_back(s + "/input_" + std::to_string(k) + ".pb");
      samples.push_back(one);
    }
  } else {
    if (num_inputs != 1)
      return Status::error("the model has " + std::to_string(num_inputs) +
                           " inputs: give --calib a folder of test_data_set_N folders (input_K.pb each)");
    for (const std::string& f : files) samples.push_back({f});
  }
  if (samples.empty())
    return Status::error("--calib '" + escape_for_message(dir) + "' has no .npy, .pb or test_data_set_* samples");

  // Per input: how many samples make one batch (the model's leading dimension / the sample's).
  std::vector<std::vector<Tensor>> batches;
  std::vector<std::vector<Tensor>> pending(num_inputs);
  int64_t per_batch = -1;
  for (size_t s = 0; s < samples.size(); ++s) {
    std::vector<Tensor> loaded;
    for (size_t k = 0; k < num_inputs; ++k) {
      auto t = load_tensor_file(samples[s][k]);
      if (!t) return Status::error("calibration sample '" + escape_for_message(samples[s][k]) + "': " + t.status().message());
      const Value& in = graph.value(graph.inputs[k]);
      if (t->dtype() != in.dtype)
        return Status::error("calibration sample '" + escape_for_message(samples[s][k]) + "' is " +
                             dtype_name(t->dtype()) + ", input '" + escape_for_message(in.name) + "' is " +
                             dtype_name(in.dtype));
      int64_t ratio = 0;
      if (t->shape() == in.shape) {
        ratio = 1;
      } else if (t->rank() == static_cast<int64_t>(in.shape.size()) && t->rank() > 0 && t->shape()[0] > 0 &&
                 std::equal(t->shape().begin() + 1, t->shape().end(), in.shape.begin() + 1) &&
                 in.shape[0] % t->shape()[0] == 0) {
        ratio = in.shape[0] / t->shape()[0];
      }
      if (ratio == 0)
        return Status::error("calibration sample '" + escape_for_message(samples[s][k]) + "' has shape [" +
                             shape_str(t->shape()) + "], input '" + escape_for_message(in.name) + "' is [" +
                             shape_str(in.shape) + "] (a sample must match it or divide its first dimension)");
      if (per_batch < 0) per_batch = ratio;
      if (ratio != per_batch)
        return Status::error("calibration samples differ in their first dimension ('" +
                             escape_for_message(samples[s][k]) + "')");
      loaded.push_back(std::move(*t));
    }
    for (size_t k = 0; k < num_inputs; ++k) pending[k].push_back(std::move(loaded[k]));
    if (static_cast<int64_t>(pending[0].size()) == per_batch) {
      std::vector<Tensor> batch;
      for (size_t k = 0; k < num_inputs; ++k) {
        batch.push_back(per_batch == 1 ? std::move(pending[k][0]) : stack(pending[k], graph.value(graph.inputs[k]).shape));
        pending[k].clear();
      }
      batches.push_back(std::move(batch));
      if (max_batches > 0 && static_cast<int>(batches.size()) >= max_batches) break;
    }
  }
  if (batches.empty())
    return Status::error("--calib '" + escape_for_message(dir) + "': " + std::to_string(samples.size()) +
                         " sample(s), fewer than one batch of " + std::to_string(per_batch));
  if (note) {
    *note = std::to_string(batches.size()) + " batch(es) of " + std::to_string(per_batch) + " sample(s)";
    const int64_t left = static_cast<int64_t>(samples.size()) - static_cast<int64_t>(batches.size()) * per_batch;
    if (left > 0) *note += "; " + std::to_string(left) + " sample(s) not used";
  }
  return batches;
}

std::string calibration_to_json(const CalibrationResult& r, const SensitivityReport* sens) {
  JsonWriter w;
  w.begin_object();
  w.key("format").value("aotc-calibration-1");
  w.key("calibrator").value(r.calibrator);
  if (r.calibrator == "percentile") w.key("percentile").value(r.percentile);
  w.key("model_sha256").value(r.model_sha256);
  w.key("batches").value(r.batches);
  w.key("tensors").begin_array();
  for (const TensorCalibration& t : r.tensors) {
    w.begin_object();
    w.key("name").value(t.name);
    w.key("amax").value(t.amax);
    w.key("scale").value(t.amax / 127.0);
    w.key("min").value(t.min);
    w.key("max").value(t.max);
    w.key("count").value(t.count);
    w.end_object();
  }
  w.end_array();
  if (sens) {
    w.key("sensitivity").begin_object();
    w.key("all_int8_rel_l2").value(sens->all_int8_rel_l2);
    w.key("budget").value(sens->budget);
    w.key("chosen_rel_l2").value(sens->chosen_rel_l2);
    w.key("budget_met").value(sens->budget_met);
    w.key("layers").begin_array();
    for (const LayerSensitivity& l : sens->layers) {
      w.begin_object();
      w.key("node").value(l.node);
      w.key("op").value(l.op_type);
      w.key("rel_l2").value(l.rel_l2);
      w.key("sqnr_db").value(l.sqnr_db);
      w.key("precision").value(l.precision);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_object();
  return w.str() + "\n";
}

Expected<CalibrationResult> calibration_from_json(const std::string& text, SensitivityReport* sensitivity) {
  auto doc = parse_json(text);
  if (!doc) return doc.status();
  auto bad = [](const std::string& what) { return Status::error("calibration cache: " + what); };
  const JsonValue* format = doc->find("format");
  if (!format || format->kind != JsonValue::Kind::kString || format->string != "aotc-calibration-1")
    return bad("not an aotc-calibration-1 file");
  CalibrationResult r;
  const JsonValue* cal = doc->find("calibrator");
  const JsonValue* sha = doc->find("model_sha256");
  const JsonValue* batches = doc->find("batches");
  const JsonValue* tensors = doc->find("tensors");
  if (!cal || cal->kind != JsonValue::Kind::kString || !sha || sha->kind != JsonValue::Kind::kString ||
      !batches || batches->kind != JsonValue::Kind::kNumber || !tensors || tensors->kind != JsonValue::Kind::kArray)
    return bad("missing calibrator, model_sha256, batches or tensors");
  r.calibrator = cal->string;
  r.model_sha256 = sha->string;
  r.batches = static_cast<int>(batches->number);
  if (const JsonValue* p = doc->find("percentile"); p && p->kind == JsonValue::Kind::kNumber) r.percentile = p->number;
  for (const JsonValue& t : tensors->array) {
    const JsonValue* name = t.find("name");
    const JsonValue* amax = t.find("amax");
    if (!name || name->kind != JsonValue::Kind::kString || !amax || amax->kind != JsonValue::Kind::kNumber ||
        !(amax->number >= 0))
      return bad("a tensor entry lacks its name or a non-negative amax");
    TensorCalibration c;
    c.name = name->string;
    c.amax = amax->number;
    if (const JsonValue* v = t.find("min"); v && v->kind == JsonValue::Kind::kNumber) c.min = v->number;
    if (const JsonValue* v = t.find("max"); v && v->kind == JsonValue::Kind::kNumber) c.max = v->number;
    if (const JsonValue* v = t.find("count"); v && v->kind == JsonValue::Kind::kNumber) c.count = static_cast<int64_t>(v->number);
    r.tensors.push_back(c);
  }
  const JsonValue* sens = doc->find("sensitivity");
  if (sensitivity && sens) {
    auto number = [](const JsonValue* v, double fallback) {
      return v && v->kind == JsonValue::Kind::kNumber ? v->number : fallback;
    };
    SensitivityReport s;
    s.all_int8_rel_l2 = number(sens->find("all_int8_rel_l2"), 0);
    s.budget = number(sens->find("budget"), 0);
    s.chosen_rel_l2 = number(sens->find("chosen_rel_l2"), 0);
    const JsonValue* met = sens->find("budget_met");
    s.budget_met = met && met->kind == JsonValue::Kind::kBool ? met->boolean : false;
    const JsonValue* layers = sens->find("layers");
    if (!layers || layers->kind != JsonValue::Kind::kArray) return bad("the sensitivity section has no layers");
    for (const JsonValue& l : layers->array) {
      const JsonValue* node = l.find("node");
      const JsonValue* op = l.find("op");
      const JsonValue* precision = l.find("precision");
      if (!node || node->kind != JsonValue::Kind::kString || !op || op->kind != JsonValue::Kind::kString || !precision ||
          precision->kind != JsonValue::Kind::kString || (precision->string != "int8" && precision->string != "fp16"))
        return bad("a sensitivity layer lacks its node, op or an int8/fp16 precision");
      LayerSensitivity ls;
      ls.node = node->string;
      ls.op_type = op->string;
      ls.precision = precision->string;
      ls.rel_l2 = number(l.find("rel_l2"), 0);
      ls.sqnr_db = number(l.find("sqnr_db"), INFINITY);
      s.layers.push_back(ls);
    }
    *sensitivity = std::move(s);
  }
  return r;
}

}  // namespace aotc
