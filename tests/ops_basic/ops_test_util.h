// Helpers for the ops_basic tests: build a one-node graph (runtime inputs, constants, absent
// optionals), import it like the frontend would, infer shapes, run the CPU reference, and compare
// tensors with the project's per-element tolerances (NaN/Inf positions must match).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ir/evaluator.h"
#include "ir/op_registry.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"

namespace aotc {
namespace test {

class OneNode {
 public:
  explicit OneNode(std::string op, int64_t opset = 17) {
    graph.opset = opset;
    node.name = "n0";
    node.op_type = std::move(op);
  }
  // A runtime input (fed to run()).
  OneNode& input(DType t, Shape s) {
    ValueId id = graph.add_value("in" + std::to_string(node.inputs.size()), t, s, true);
    graph.inputs.push_back(id);
    node.inputs.push_back(id);
    return *this;
  }
  OneNode& constant(Tensor t) {
    node.inputs.push_back(graph.add_constant("c" + std::to_string(node.inputs.size()), std::move(t)));
    return *this;
  }
  OneNode& absent() {
    node.inputs.push_back(kNoValue);
    return *this;
  }
  OneNode& attr(const std::string& k, Attribute a) {
    node.attrs[k] = std::move(a);
    return *this;
  }
  // Runs the op's importer (as the frontend does), adds the node and infers shapes.
  Status build(int outputs = 1) {
    for (int i = 0; i < outputs; ++i) {
      ValueId y = graph.add_value("out" + std::to_string(i));
      node.outputs.push_back(y);
      graph.outputs.push_back(y);
    }
    const OpDef* def = default_registry().find(node.op_type);
    if (def && def->import) AOTC_RETURN_IF_ERROR(def->import(node, graph, graph.opset));
    graph.nodes.push_back(node);
    AOTC_RETURN_IF_ERROR(infer_shapes(graph));
    return verify(graph);
  }
  const Node& built() const { return graph.nodes.at(0); }
  const Value& out(size_t i = 0) const { return graph.value(graph.outputs.at(i)); }
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) const {
    return evaluate_graph(graph, inputs);
  }

  Graph graph;
  Node node;
};

inline Tensor make_tensor(DType t, Shape s, const std::vector<double>& values) {
  Tensor x(t, std::move(s));
  EXPECT_EQ(static_cast<int64_t>(values.size()), x.numel());
  for (int64_t i = 0; i < x.numel() && i < static_cast<int64_t>(values.size()); ++i) x.set(i, values[i]);
  return x;
}

// Deterministic pseudo-random values in [lo, hi) (an LCG: no dependence on the library's RNG).
inline std::vector<double> lcg_values(int64_t n, double lo, double hi, uint32_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  uint32_t s = seed * 2654435761u + 12345u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = lo + (hi - lo) * (static_cast<double>(s >> 8) / 16777216.0);
  }
  return v;
}

inline void tolerance_for(DType t, double* atol, double* rtol) {
  if (t == DType::kFloat16 || t == DType::kBFloat16) {
    *atol = 2.5e-3;
    *rtol = 1e-3;
  } else if (dtype_is_float(t)) {
    *atol = 1e-5;
    *rtol = 1e-4;
  } else {
    *atol = 0;
    *rtol = 0;
  }
}

// Empty string when `got` matches `want` elementwise within tolerance; else the first mismatch.
inline std::string compare_tensors(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype())
    return "dtype " + dtype_name(got.dtype()) + " != " + dtype_name(want.dtype());
  if (got.shape() != want.shape()) return "shape " + shape_str(got.shape()) + " != " + shape_str(want.shape());
  double atol, rtol;
  tolerance_for(got.dtype(), &atol, &rtol);
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (dtype_is_integer(got.dtype()) || got.dtype() == DType::kBool) {
      if (got.get_int(i) != want.get_int(i))
        return "element " + std::to_string(i) + ": " + std::to_string(got.get_int(i)) + " != " +
               std::to_string(want.get_int(i));
      continue;
    }
    double g = got.get(i), w = want.get(i);
    bool ok = (std::isnan(g) && std::isnan(w)) || (std::isinf(w) && g == w) ||
              (std::isfinite(g) && std::isfinite(w) && std::fabs(g - w) <= atol + rtol * std::fabs(w));
    if (!ok) return "element " + std::to_string(i) + ": " + std::to_string(g) + " != " + std::to_string(w);
  }
  return "";
}

#define EXPECT_TENSOR_NEAR(got, want)                          \
  do {                                                         \
    std::string aotc_mismatch_ = ::aotc::test::compare_tensors((got), (want)); \
    EXPECT_TRUE(aotc_mismatch_.empty()) << aotc_mismatch_;     \
  } while (0)

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Builds `n` and lowers it; the holes of its single kernel step (empty, with a test failure,
// when the build or the lowering fails or gives another number of steps). `template_name`, when
// given, must be the step's template.
inline std::map<std::string, std::string> lowered_holes(OneNode& n, const std::string& template_name = "") {
  std::map<std::string, std::string> out;
  Status s = n.build();
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s.is_ok()) return out;
  auto l = default_registry().find(n.built().op_type)->lower(n.built(), n.graph);
  EXPECT_TRUE(l.is_ok()) << l.status().message();
  if (!l.is_ok() || l->steps.size() != 1) return out;
  if (!template_name.empty()) {
    EXPECT_EQ(l->steps[0].kernel.template_name, template_name);
  }
  for (const auto& [k, v] : l->steps[0].kernel.holes) out[k] = v;
  return out;
}

}  // namespace test
}  // namespace aotc
