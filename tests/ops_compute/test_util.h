// Helpers for the ops_compute tests: one-node graphs, seeded random tensors, and the per-element
// comparison with the project tolerances (fp32 atol 1e-5 rtol 1e-4, fp16 atol 2.5e-3 rtol 1e-3).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ir/evaluator.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"

namespace aotc {
namespace testing_util {

struct OneNode {
  Graph graph;
  Node& node() { return graph.nodes[0]; }
};

// A graph with one node; inputs with an empty name are absent (kNoValue). Constant inputs are
// passed as `constants` entries (same index as inputs; an empty Tensor means a runtime input).
inline OneNode one_node(const std::string& op, const std::vector<std::pair<std::string, Shape>>& inputs,
                        Attributes attrs = {}, int outputs = 1, DType dtype = DType::kFloat32,
                        const std::string& domain = "") {
  OneNode g;
  g.graph.opset = 17;
  Node n;
  n.name = "n0";
  n.op_type = op;
  n.domain = domain;
  n.attrs = std::move(attrs);
  for (const auto& in : inputs) {
    if (in.first.empty()) {
      n.inputs.push_back(kNoValue);
      continue;
    }
    ValueId id = g.graph.add_value(in.first, dtype, in.second, true);
    g.graph.inputs.push_back(id);
    n.inputs.push_back(id);
  }
  for (int i = 0; i < outputs; ++i) {
    ValueId id = g.graph.add_value("y" + std::to_string(i));
    n.outputs.push_back(id);
    g.graph.outputs.push_back(id);
  }
  g.graph.nodes.push_back(n);
  return g;
}

inline Tensor random_tensor(DType dtype, const Shape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, dist(rng));  // set() rounds to the dtype
  return t;
}

inline double atol_for(DType t) { return t == DType::kFloat16 ? 2.5e-3 : t == DType::kFloat64 ? 1e-10 : 1e-5; }
inline double rtol_for(DType t) { return t == DType::kFloat16 ? 1e-3 : t == DType::kFloat64 ? 1e-9 : 1e-4; }

// Per-element comparison; NaN/Inf positions must match. Reports the first few mismatches.
inline ::testing::AssertionResult tensors_close(const Tensor& got, const std::vector<double>& want, DType tol_type) {
  if (got.numel() != static_cast<int64_t>(want.size()))
    return ::testing::AssertionFailure() << "numel " << got.numel() << " vs expected " << want.size();
  const double atol = atol_for(tol_type), rtol = rtol_for(tol_type);
  int bad = 0;
  std::string msg;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get(i), w = want[static_cast<size_t>(i)];
    bool ok = (std::isnan(g) && std::isnan(w)) || (std::isinf(w) && g == w) ||
              (std::isfinite(w) && std::isfinite(g) && std::fabs(g - w) <= atol + rtol * std::fabs(w));
    if (!ok && ++bad <= 5) msg += " [" + std::to_string(i) + "] got " + std::to_string(g) + " want " + std::to_string(w) + ";";
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << got.numel() << " elements differ:" << msg;
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult tensors_close(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << "shape " << shape_str(got.shape()) << " vs " << shape_str(want.shape());
  if (got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "dtype " << dtype_name(got.dtype()) << " vs " << dtype_name(want.dtype());
  if (!dtype_is_float(want.dtype())) {
    for (int64_t i = 0; i < got.numel(); ++i)
      if (got.get_int(i) != want.get_int(i))
        return ::testing::AssertionFailure() << "element " << i << ": " << got.get_int(i) << " vs " << want.get_int(i);
    return ::testing::AssertionSuccess();
  }
  return tensors_close(got, want.to_doubles(), want.dtype());
}

// infer + evaluate a one-node graph; returns output `index`.
inline Expected<std::vector<Tensor>> run_one(OneNode& g, const std::vector<Tensor>& inputs) {
  Status s = infer_shapes(g.graph);
  if (!s.is_ok()) return s;
  return evaluate_graph(g.graph, inputs);
}

}  // namespace testing_util
}  // namespace aotc
