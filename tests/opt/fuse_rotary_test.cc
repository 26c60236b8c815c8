// fuse_rotary: HF's rotate_half rotary embedding (x*cos + cat(-x2, x1)*sin, constant tables)
// becomes one RotaryEmbedding, on the head split's [B,S,H*D] rows where x is that split; the CPU
// reference of the written-out ops before and of RotaryEmbedding after agree on random inputs;
// the cases where it must not fire; and the whole pipeline on a small LLaMA-like attention block.
#include <cmath>
#include <functional>

#include "ir/ops/attention.h"
#include "opt/passes.h"
#include "opt/pipeline.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// A table literal of shape `dims` (row-major) with element (index vector) -> value.
std::string table(const std::vector<int64_t>& dims, const std::function<double(const std::vector<int64_t>&)>& f) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::string out = "[";
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t r = e;
    for (size_t k = dims.size(); k-- > 0;) {
      idx[k] = r % dims[k];
      r /= dims[k];
    }
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", f(idx));
    out += std::string(e ? "," : "") + buf;
  }
  return out + "]";
}

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

// HF LLaMA's tables: angle s * 10000^(-2i/D) for i < D/2, the halves equal (cat(freqs, freqs)).
double angle(int64_t s, int64_t d, int64_t head_size) {
  const int64_t i = d % (head_size / 2);
  return static_cast<double>(s) * std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(head_size));
}

// The rotary pattern on %x (shape x_dims, head size D = last dim) with tables of shape t_dims.
// `fc` / `fs` give the tables' elements (default: cos / sin of angle(s, d)). Named lines can be
// replaced by the tests (e.g. "CAT" for the Concat).
struct Pattern {
  std::vector<int64_t> x_dims = {2, 3, 5, 8};
  std::vector<int64_t> t_dims = {1, 1, 5, 8};
  std::string type = "float";
  std::function<double(const std::vector<int64_t>&)> fc, fs;
  std::string head = "    input %x : T[XD]\n";  // what makes %x
  std::string extra;                            // lines after the pattern
  std::string cat = "%cat : T[?] = Concat(%n, %x1) {axis=-1}";
  std::string mul_cos = "%xc : T[?] = Mul(%x, %c)";
  std::string mul_sin = "%rs : T[?] = Mul(%cat, %s)";
  std::string add = "%y : T[?] = Add(%xc, %rs)";
  std::string upper_end = "9223372036854775807";  // torch's x[..., D/2:]

  std::string text() const {
    const int64_t d = x_dims.back(), h = d / 2;
    const size_t seq_axis = t_dims.size() - 2;
    std::function<double(const std::vector<int64_t>&)> cos_of = fc, sin_of = fs;
    if (!cos_of) cos_of = [&](const std::vector<int64_t>& i) { return std::cos(angle(i[seq_axis], i.back(), d)); };
    if (!sin_of) sin_of = [&](const std::vector<int64_t>& i) { return std::sin(angle(i[seq_axis], i.back(), d)); };
    std::string s = head + "    const %c : T[" + dims_str(t_dims) + "] = " + table(t_dims, cos_of) + "\n" +
                    "    const %s : T[" + dims_str(t_dims) + "] = " + table(t_dims, sin_of) + "\n" +
                    "    const %lo_s : int64[1] = [0]\n    const %lo_e : int64[1] = [" + std::to_string(h) + "]\n" +
                    "    const %hi_s : int64[1] = [" + std::to_string(h) + "]\n    const %hi_e : int64[1] = [" +
                    upper_end + "]\n    const %ax : int64[1] = [-1]\n    const %st : int64[1] = [1]\n" +
                    "    " + mul_cos + "\n" +
                    "    %x1 : T[?] = Slice(%x, %lo_s, %lo_e, %ax, %st)\n" +
                    "    %x2 : T[?] = Slice(%x, %hi_s, %hi_e, %ax)\n" +
                    "    %n : T[?] = Neg(%x2)\n    " + cat + "\n    " + mul_sin + "\n    " + add + "\n" +
                    "    output %y\n" + extra;
    auto rep = [&](const std::string& from, const std::string& to) {
      for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    };
    rep("XD", dims_str(x_dims));
    rep("T[", type + "[");
    return s;
  }
};

Expected<bool> run(Graph& g) {
  Expected<bool> changed = fuse_rotary(g);
  if (changed) {
    Status s = verify(g);
    if (!s) return s;
  }
  return changed;
}

const Node* find_op(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

// The caches hold the first half of the tables' rows and the position ids count 0..S-1.
void expect_rotary_inputs(const Graph& g, const Node& r, int64_t batch, int64_t seq, int64_t head_size) {
  const int64_t h = head_size / 2;
  ASSERT_EQ(r.inputs.size(), 4u);
  const Value &cos = g.value(r.inputs[1]), &sin = g.value(r.inputs[2]), &pos = g.value(r.inputs[3]);
  ASSERT_TRUE(cos.is_constant() && sin.is_constant() && pos.is_constant());
  EXPECT_EQ(cos.shape, (Shape{seq, h}));
  EXPECT_EQ(sin.shape, (Shape{seq, h}));
  EXPECT_EQ(pos.shape, (Shape{batch, seq}));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s) EXPECT_EQ(pos.constant->get_int(b * seq + s), s);
  const double tol = cos.dtype == DType::kFloat32 ? 1e-7 : 1e-3;
  for (int64_t s = 0; s < seq; ++s)
    for (int64_t i = 0; i < h; ++i) {
      EXPECT_NEAR(cos.constant->get(s * h + i), std::cos(angle(s, i, head_size)), tol) << s << "," << i;
      EXPECT_NEAR(sin.constant->get(s * h + i), std::sin(angle(s, i, head_size)), tol) << s << "," << i;
    }
  EXPECT_EQ(r.attr_int("interleaved", 0), 0);
  EXPECT_EQ(r.attr_int("rotary_embedding_dim", 0), 0);
}

TEST(FuseRotary, FourDPatternBecomesOneRotaryEmbedding) {
  AOTC_REQUIRE_OPS("RotaryEmbedding", "Slice", "Neg", "Concat");
  for (const char* type : {"float", "float16"}) {
    Pattern p;
    p.type = type;
    AOTC_BUILD(g, p.text());
    Graph before = g;
    auto changed = run(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed) << type;
    ASSERT_EQ(op_list(g), "RotaryEmbedding") << type;
    const Node& r = g.nodes[0];
    EXPECT_EQ(r.inputs[0], g.find_value("x"));
    EXPECT_EQ(r.outputs[0], g.find_value("y"));
    expect_rotary_inputs(g, r, 2, 5, 8);
    const bool fp16 = std::string(type) == "float16";
    EXPECT_TRUE(testing_util::same_outputs(before, g, 3, fp16 ? 2.5e-3 : 1e-5, fp16 ? 1e-3 : 1e-4)) << type;
  }
}

// Operands the other way round, tables [B, 1, S, D] (the same for every batch) and [S, D], the
// axis as 3 instead of -1, and the one-head 3-D form [B, S, D].
TEST(FuseRotary, OperandOrdersTableShapesAndThreeDInput) {
  AOTC_REQUIRE_OPS("RotaryEmbedding", "Slice", "Neg", "Concat");
  std::vector<Pattern> cases(4);
  cases[0].mul_cos = "%xc : T[?] = Mul(%c, %x)";
  cases[0].mul_sin = "%rs : T[?] = Mul(%s, %cat)";
  cases[0].add = "%y : T[?] = Add(%rs, %xc)";
  cases[1].t_dims = {2, 1, 5, 8};
  cases[1].cat = "%cat : T[?] = Concat(%n, %x1) {axis=3}";
  cases[2].t_dims = {5, 8};
  cases[3].x_dims = {2, 5, 6};
  cases[3].t_dims = {1, 5, 6};
  cases[3].upper_end = "6";
  for (size_t i = 0; i < cases.size(); ++i) {
    AOTC_BUILD(g, cases[i].text());
    Graph before = g;
    auto changed = run(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed) << i;
    ASSERT_EQ(op_list(g), "RotaryEmbedding") << i;
    const std::vector<int64_t>& xd = cases[i].x_dims;
    expect_rotary_inputs(g, g.nodes[0], xd[0], xd[xd.size() - 2], xd.back());
    if (xd.size() == 3) {
      EXPECT_EQ(g.nodes[0].attr_int("num_heads", 0), 1);
    }
    EXPECT_TRUE(testing_util::same_outputs(before, g, 5 + i, 1e-5, 1e-4)) << i;
  }
}

// The dynamo exporter's head split: p [B,S,H*D] (here through a second reshape from the
// projection's [B*S, H*D] rows) -> [B,S,H,D] -> Transpose(0,2,1,3) -> x. The rotary runs on the
// rows (num_heads H) and the transpose follows it.
TEST(FuseRotary, HeadSplitTransposeMovesPastTheRotary) {
  AOTC_REQUIRE_OPS("RotaryEmbedding", "Slice", "Neg", "Concat", "Transpose", "Reshape");
  for (const char* type : {"float", "float16"}) {
    Pattern p;
    p.type = type;
    p.head = R"(
    input %rows : T[10x24]
    const %s3 : int64[3] = [2,5,24]
    const %s4 : int64[4] = [2,5,3,8]
    %p : T[?] = Reshape(%rows, %s3)
    %p4 : T[?] = Reshape(%p, %s4)
    %x : T[?] = Transpose(%p4) {perm=[0,2,1,3]}
)";
    AOTC_BUILD(g, p.text());
    Graph before = g;
    auto changed = run(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed) << type;
    ASSERT_EQ(op_list(g), "Reshape,RotaryEmbedding,Reshape,Transpose") << type;
    const Node& r = g.nodes[1];
    EXPECT_EQ(r.inputs[0], g.find_value("p"));
    EXPECT_EQ(r.attr_int("num_heads", 0), 3);
    EXPECT_EQ(g.value(r.outputs[0]).shape, (Shape{2, 5, 24}));
    EXPECT_EQ(g.nodes[3].attr_ints("perm"), (std::vector<int64_t>{0, 2, 1, 3}));
    EXPECT_EQ(g.nodes[3].outputs[0], g.find_value("y"));
    expect_rotary_inputs(g, r, 2, 5, 8);
    const bool fp16 = std::string(type) == "float16";
    EXPECT_TRUE(testing_util::same_outputs(before, g, 7, fp16 ? 2.5e-3 : 1e-5, fp16 ? 1e-3 : 1e-4)) << type;
  }
  // The head split also read elsewhere: the rotary runs on x itself, the transpose stays.
  Pattern p;
  p.head = R"(
    input %p : T[2x5x24]
    const %s4 : int64[4] = [2,5,3,8]
    %p4 : T[?] = Reshape(%p, %s4)
    %x : T[?] = Transpose(%p4) {perm=[0,2,1,3]}
)";
  p.extra = "    %r : float[?] = Relu(%x)\n    output %r\n";
  AOTC_BUILD(g, p.text());
  Graph before = g;
  auto changed = run(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Reshape,Transpose,RotaryEmbedding,Relu");
  EXPECT_EQ(find_op(g, "RotaryEmbedding")->inputs[0], g.find_value("x"));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 9, 1e-5, 1e-4));
}

TEST(FuseRotary, MustNotFire) {
  AOTC_REQUIRE_OPS("RotaryEmbedding", "Slice", "Neg", "Concat");
  auto base_cos = [](const std::vector<int64_t>& i) { return std::cos(angle(i[2], i[3], 8)); };
  std::vector<std::pair<const char*, Pattern>> cases;
  {
    Pattern p;  // cos halves differ in one element (s = 2, d = 6 vs d = 2)
    p.fc = [&](const std::vector<int64_t>& i) { return base_cos(i) + (i[2] == 2 && i[3] == 6 ? 0.01 : 0.0); };
    cases.emplace_back("cos halves differ", p);
  }
  {
    Pattern p;  // a [1, H, S, D] table whose head 1 differs
    p.t_dims = {1, 3, 5, 8};
    p.fc = [&](const std::vector<int64_t>& i) { return base_cos(i) * (i[1] == 1 ? 0.5 : 1.0); };
    cases.emplace_back("cos varies with the head", p);
  }
  {
    Pattern p;  // a [B, 1, S, D] table whose batch 1 differs
    p.t_dims = {2, 1, 5, 8};
    p.fc = [&](const std::vector<int64_t>& i) { return base_cos(i) + (i[0] == 1 ? 0.25 : 0.0); };
    cases.emplace_back("cos varies with the batch", p);
  }
  {
    Pattern p;  // sin halves differ
    p.fs = [](const std::vector<int64_t>& i) { return std::sin(angle(i[2], i[3], 8)) * (i[3] >= 4 ? -1.0 : 1.0); };
    cases.emplace_back("sin halves differ (sign)", p);
  }
  {
    Pattern p;
    p.head = "    input %x : T[XD]\n    input %c2 : T[1x1x5x8]\n";
    p.mul_cos = "%xc : T[?] = Mul(%x, %c2)";
    cases.emplace_back("a run-time cos", p);
  }
  {
    Pattern p;
    p.extra = "    output %n\n";
    cases.emplace_back("the Neg output is a graph output", p);
  }
  {
    Pattern p;
    p.extra = "    %r : float[?] = Relu(%cat)\n    output %r\n";
    cases.emplace_back("the Concat output has another reader", p);
  }
  {
    Pattern p;
    p.extra = "    %r : float[?] = Relu(%xc)\n    output %r\n";
    cases.emplace_back("x * cos has another reader", p);
  }
  {
    Pattern p;
    p.cat = "%cat : T[?] = Concat(%x1, %n) {axis=-1}";
    cases.emplace_back("cat(x1, -x2) is not rotate_half", p);
  }
  {
    Pattern p;  // D = 9: x1 = x[..., :4], x2 = x[..., 4:] (5 wide); cat(-x2, x1) is 9 wide
    p.x_dims = {2, 3, 5, 9};
    p.t_dims = {1, 1, 5, 9};
    cases.emplace_back("odd head size", p);
  }
  for (auto& [why, p] : cases) {
    AOTC_BUILD(g, p.text());
    const std::string ops = op_list(g);
    auto changed = run(g);
    ASSERT_TRUE(changed.is_ok()) << why << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << why;
    EXPECT_EQ(op_list(g), ops) << why;
  }
}

// Any constant tables with equal halves make the pattern a RotaryEmbedding: x*S + cat(-x2, x1)*C
// is RotaryEmbedding(x, cos_cache <- S, sin_cache <- C); the pass does not need to know which
// table is the cosine, and the outputs agree.
TEST(FuseRotary, TablesAreUsedAsGivenNotAssumedToBeCosAndSin) {
  AOTC_REQUIRE_OPS("RotaryEmbedding", "Slice", "Neg", "Concat");
  Pattern p;
  p.mul_cos = "%xc : T[?] = Mul(%x, %s)";
  p.mul_sin = "%rs : T[?] = Mul(%cat, %c)";
  AOTC_BUILD(g, p.text());
  Graph before = g;
  auto changed = run(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "RotaryEmbedding");
  EXPECT_TRUE(testing_util::same_outputs(before, g, 13, 1e-5, 1e-4));
}

int count_op(const Graph& g, const std::string& op) {
  int count = 0;
  for (const Node& n : g.nodes) count += n.op_type == op ? 1 : 0;
  return count;
}

double relative_l2(const Tensor& got, const Tensor& want) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    num += (got.get(i) - want.get(i)) * (got.get(i) - want.get(i));
    den += want.get(i) * want.get(i);
  }
  return std::sqrt(num / den);
}

// A LLaMA-like attention block as the dynamo exporter writes it (projections, head split by
// Reshape + Transpose, rotate_half rotary on q and k, the Attention op with is_causal, the context
// transposed back into the output projection and the residual Add) through the whole pipeline for
// sm_90 in fp16: no data movement or rotary pieces are left and the attention runs on the fused
// kernel.
TEST(FuseRotary, PipelineRemovesRotaryPiecesAndHeadTransposes) {
  AOTC_REQUIRE_OPS("RotaryEmbedding", "Attention", "aotc.StridedAttention", "Slice", "Neg", "Concat");
  const int64_t b = 2, s = 8, heads = 2, d = 16, e = heads * d;
  const std::vector<int64_t> t_dims = {1, 1, s, d};
  auto cos_of = [&](const std::vector<int64_t>& i) { return std::cos(angle(i[2], i[3], d)); };
  auto sin_of = [&](const std::vector<int64_t>& i) { return std::sin(angle(i[2], i[3], d)); };
  std::string text = R"(
    input %h : float[2x8x32]
    const %wq : float[32x32] = random(1, -0.2, 0.2)
    const %wk : float[32x32] = random(2, -0.2, 0.2)
    const %wv : float[32x32] = random(3, -0.2, 0.2)
    const %wo : float[32x32] = random(4, -0.2, 0.2)
    const %s4 : int64[4] = [2,8,2,16]
    const %s3 : int64[3] = [2,8,32]
    const %lo_s : int64[1] = [0]
    const %half : int64[1] = [8]
    const %hi_e : int64[1] = [9223372036854775807]
    const %ax : int64[1] = [-1]
)";
  text += "    const %cos : float[1x1x8x16] = " + table(t_dims, cos_of) + "\n";
  text += "    const %sin : float[1x1x8x16] = " + table(t_dims, sin_of) + "\n";
  for (const char* n : {"q", "k", "v"}) {
    const std::string v = n;
    text += "    %" + v + "3 : float[?] = MatMul(%h, %w" + v + ")\n";
    text += "    %" + v + "4 : float[?] = Reshape(%" + v + "3, %s4)\n";
    text += "    %" + v + " : float[?] = Transpose(%" + v + "4) {perm=[0,2,1,3]}\n";
  }
  for (const char* n : {"q", "k"}) {
    const std::string v = n;
    text += "    %" + v + "c : float[?] = Mul(%" + v + ", %cos)\n";
    text += "    %" + v + "1 : float[?] = Slice(%" + v + ", %lo_s, %half, %ax)\n";
    text += "    %" + v + "2 : float[?] = Slice(%" + v + ", %half, %hi_e, %ax)\n";
    text += "    %" + v + "n : float[?] = Neg(%" + v + "2)\n";
    text += "    %" + v + "cat : float[?] = Concat(%" + v + "n, %" + v + "1) {axis=-1}\n";
    text += "    %" + v + "s : float[?] = Mul(%" + v + "cat, %sin)\n";
    text += "    %" + v + "r : float[?] = Add(%" + v + "c, %" + v + "s)\n";
  }
  text += R"(
    %o : float[?] = Attention(%qr, %kr, %v) {is_causal=1, scale=0.25}
    %ot : float[?] = Transpose(%o) {perm=[0,2,1,3]}
    %a : float[?] = Reshape(%ot, %s3)
    %ao : float[?] = MatMul(%a, %wo)
    %y : float[?] = Add(%h, %ao)
    output %y
)";
  AOTC_BUILD(g, text);
  Graph before = g;
  g.target = target_from_archs({"sm_90"});
  g.target.precision.dtype = DType::kFloat16;
  PipelineOptions options;
  options.verify_each = true;
  {  // The control: without fuse_rotary the pieces and the q / k head transposes (as copies) stay.
    Graph without = g;
    PipelineOptions disabled = options;
    disabled.disabled = {"fuse_rotary"};
    ASSERT_TRUE(run_pipeline(without, disabled).is_ok());
    EXPECT_EQ(count_op(without, "Neg"), 2) << op_list(without);
    EXPECT_EQ(count_op(without, "RotaryEmbedding"), 0) << op_list(without);
    EXPECT_GE(count_op(without, "StridedCopy") + count_op(without, "Transpose"), 2) << op_list(without);
  }
  auto stats = run_pipeline(g, options);
  ASSERT_TRUE(stats.is_ok()) << stats.status().message();
  const std::string ops = op_list(g);
  for (const char* gone : {"Transpose", "Slice", "Neg", "Concat", "StridedCopy", "Mul", "Add"})
    EXPECT_EQ(count_op(g, gone), 0) << gone << " left: " << ops;
  EXPECT_EQ(count_op(g, "RotaryEmbedding"), 2) << ops;
  const Node* a = find_op(g, "StridedAttention");
  ASSERT_NE(a, nullptr) << ops;
  EXPECT_TRUE(attention_runs_fused(*a, g)) << ops;
  // Q and K are read in place from the rotary outputs' [B, S, H*D] rows.
  for (int o : {0, 1}) {
    const ValueId src = a->inputs[static_cast<size_t>(o)];
    const int p = g.producers()[static_cast<size_t>(src)];
    ASSERT_GE(p, 0);
    EXPECT_EQ(g.nodes[static_cast<size_t>(p)].op_type, "RotaryEmbedding") << o << ": " << ops;
    EXPECT_EQ(g.value(src).shape, (Shape{b, s, e}));
  }
  // fp16 against the fp32 written-out graph: the model tolerance (relative L2 under 1e-2).
  std::vector<Tensor> in = testing_util::random_inputs(before, 21);
  auto want = evaluate_graph(before, in);
  auto got = evaluate_graph(g, in);
  ASSERT_TRUE(want.is_ok() && got.is_ok());
  ASSERT_EQ((*got)[0].shape(), (*want)[0].shape());
  EXPECT_LT(relative_l2((*got)[0], (*want)[0]), 1e-2);
}

}  // namespace
}  // namespace aotc
