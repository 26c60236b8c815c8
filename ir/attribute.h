// Node attributes: the ONNX attribute kinds aotc understands, stored by name.
// Importers normalise them (defaults filled, opset differences resolved) so passes and codegen
// read one canonical form.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace aotc {

struct Attribute {
  enum class Kind { kInt, kFloat, kString, kTensor, kInts, kFloats, kStrings, kGraph };
  Kind kind = Kind::kInt;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::shared_ptr<const Tensor> t;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;

  static Attribute of_int(int64_t v) { Attribute a; a.kind = Kind::kInt; a.i = v; return a; }
  static Attribute of_float(float v) { Attribute a; a.kind = Kind::kFloat; a.f = v; return a; }
  static Attribute of_string(std::string v) { Attribute a; a.kind = Kind::kString; a.s = std::move(v); return a; }
  static Attribute of_ints(std::vector<int64_t> v) { Attribute a; a.kind = Kind::kInts; a.ints = std::move(v); return a; }
  static Attribute of_floats(std::vector<float> v) { Attribute a; a.kind = Kind::kFloats; a.floats = std::move(v); return a; }
  static Attribute of_strings(std::vector<std::string> v) { Attribute a; a.kind = Kind::kStrings; a.strings = std::move(v); return a; }
  static Attribute of_tensor(Tensor v) { Attribute a; a.kind = Kind::kTensor; a.t = std::make_shared<const Tensor>(std::move(v)); return a; }
};

using Attributes = std::map<std::string, Attribute>;

const char* attribute_kind_name(Attribute::Kind kind);

}  // namespace aotc
