// Helpers shared by the pass tests: build a graph from text IR (parse, run each op's importer,
// infer shapes), skip when an op family has not landed yet, compare reference runs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ir/evaluator.h"
#include "ir/op_registry.h"
#include "ir/constant_folding.h"
#include "ir/shape_inference.h"
#include "ir/text_ir.h"
#include "ir/verifier.h"

namespace aotc {
namespace testing_util {

// Names of the ops in `ops` ("Conv", "aotc.FusedConv") missing from the default registry.
inline std::string missing_ops(const std::vector<std::string>& ops) {
  std::string missing;
  for (const std::string& op : ops) {
    size_t dot = op.rfind('.');
    std::string domain = dot == std::string::npos ? "" : op.substr(0, dot);
    std::string type = dot == std::string::npos ? op : op.substr(dot + 1);
    if (!default_registry().find(type, domain)) missing += (missing.empty() ? "" : ", ") + op;
  }
  return missing;
}

// Parses, imports (each op's import hook, as the frontend would) and infers shapes.
inline Expected<Graph> build(const std::string& text) {
  Expected<Graph> g = parse_text_ir(text);
  if (!g) return g;
  if (g->opset == 0) g->opset = 17;
  for (Node& node : g->nodes) {
    const OpDef* def = default_registry().find(node.op_type, node.domain);
    if (def && def->import) {
      Status s = def->import(node, *g, g->opset);
      if (!s) return s;
    }
  }
  Status s = infer_shapes(*g);
  if (!s) return s;
  s = verify(*g);
  if (!s) return s;
  return g;
}

// Like build(), but folds each node whose inputs are constant (or that only reads shapes) right
// after inferring it, as the frontend does while importing: shape subgraphs vanish before the
// ops that need their values (Reshape's shape input) are inferred.
inline Expected<Graph> build_folding(const std::string& text) {
  Expected<Graph> g = parse_text_ir(text);
  if (!g) return g;
  if (g->opset == 0) g->opset = 17;
  std::vector<Node> kept;
  for (Node& node : g->nodes) {
    const OpDef* def = default_registry().find(node.op_type, node.domain);
    if (def && def->import) {
      Status s = def->import(node, *g, g->opset);
      if (!s) return s;
    }
    Status s = infer_node(node, *g);
    if (!s) return s;
    Expected<bool> folded = try_fold_node(node, *g);
    if (!folded) return folded.status();
    if (!*folded) kept.push_back(std::move(node));
  }
  g->nodes = std::move(kept);
  Status s = verify(*g);
  if (!s) return s;
  return g;
}

// Seeded random inputs in [-1, 1) for every graph input.
inline std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed) {
  std::vector<Tensor> in;
  for (ValueId id : g.inputs)
    in.push_back(seeded_random_tensor(g.value(id).dtype, g.value(id).shape, seed + in.size() * 7919));
  return in;
}

// Per element |a - b| <= atol + rtol * |b| (fp32: 1e-5, 1e-4), NaN positions equal.
inline ::testing::AssertionResult all_close(const Tensor& got, const Tensor& want, double atol = 1e-5,
                                            double rtol = 1e-4) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return ::testing::AssertionFailure() << "dtype/shape differ: " << shape_str(got.shape()) << " vs "
                                         << shape_str(want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.get(i), b = want.get(i);
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) return ::testing::AssertionFailure() << "NaN mismatch at " << i;
      continue;
    }
    if (std::fabs(a - b) > atol + rtol * std::fabs(b))
      return ::testing::AssertionFailure() << "element " << i << ": " << a << " vs " << b;
  }
  return ::testing::AssertionSuccess();
}

// Evaluates `before` and `after` on the same seeded random inputs and compares every output.
// Tolerances default to fp32's; fp16 graphs pass 2.5e-3 / 1e-3.
inline ::testing::AssertionResult same_outputs(const Graph& before, const Graph& after, uint64_t seed = 42,
                                               double atol = 1e-5, double rtol = 1e-4) {
  std::vector<Tensor> in = random_inputs(before, seed);
  auto a = evaluate_graph(before, in);
  if (!a) return ::testing::AssertionFailure() << "before: " << a.status().message();
  auto b = evaluate_graph(after, in);
  if (!b) return ::testing::AssertionFailure() << "after: " << b.status().message();
  if (a->size() != b->size()) return ::testing::AssertionFailure() << "output counts differ";
  for (size_t i = 0; i < a->size(); ++i) {
    auto r = all_close((*b)[i], (*a)[i], atol, rtol);
    if (!r) return ::testing::AssertionFailure() << "output " << i << ": " << r.message();
  }
  return ::testing::AssertionSuccess();
}

// Op types of the nodes, in order, e.g. "Conv,Relu"; domains as "aotc.FusedConv".
// g's reference outputs for `feed` (a test failure, and none, where evaluation fails).
inline std::vector<Tensor> evaluated(const Graph& g, const std::vector<Tensor>& feed) {
  auto out = evaluate_graph(g, feed);
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return out.is_ok() ? *out : std::vector<Tensor>{};
}

// `after` gives `before`'s outputs for `feed` byte for byte (an exact rewrite); `what` names the run.
inline void expect_same_bytes(const Graph& before, const Graph& after, const std::vector<Tensor>& feed,
                              const std::string& what) {
  const std::vector<Tensor> want = evaluated(before, feed), got = evaluated(after, feed);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].dtype(), want[i].dtype()) << what << " output " << i;
    ASSERT_EQ(got[i].byte_size(), want[i].byte_size()) << what << " output " << i;
    EXPECT_EQ(std::memcmp(got[i].raw(), want[i].raw(), static_cast<size_t>(got[i].byte_size())), 0) << what << " output " << i;
  }
}

inline std::string op_list(const Graph& g) {
  std::string s;
  for (const Node& n : g.nodes) s += (s.empty() ? "" : ",") + (n.domain.empty() ? "" : n.domain + ".") + n.op_type;
  return s;
}

}  // namespace testing_util
}  // namespace aotc

// Skips the test while an op family it needs is not registered yet (written concurrently).
#define AOTC_REQUIRE_OPS(...)                                                              \
  do {                                                                                     \
    std::string aotc_missing_ = ::aotc::testing_util::missing_ops({__VA_ARGS__});          \
    if (!aotc_missing_.empty()) GTEST_SKIP() << "ops not registered yet: " << aotc_missing_; \
  } while (0)

#define AOTC_BUILD(var, text)                                             \
  auto var##_built_ = ::aotc::testing_util::build(text);                  \
  ASSERT_TRUE(var##_built_.is_ok()) << var##_built_.status().message();   \
  ::aotc::Graph& var = *var##_built_
