// fuse_copy_chains (with fuse_matmul_transpose where the exporters' k^T feeds a MatMul): the
// attention head split of torch's MultiheadAttention (ViT), GPT-2's Split and Slice chains become
// one aotc.StridedCopy per consumer, views stay views, identities become a Reshape; outputs are
// bit-identical on the CPU reference (pure data movement, and a folded Mul rounds as the Mul
// kernel did). Must not fire: intermediates read elsewhere or graph outputs, Gathers with a
// run-time or multi-element index, reshapes that cut the composed view unevenly, lone kernels.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

Expected<bool> run_and_verify(Expected<bool> (*pass)(Graph&), Graph& g) {
  Expected<bool> changed = pass(g);
  if (changed) {
    Status s = verify(g);
    if (!s) return s;
  }
  return changed;
}

// Bit-identical outputs on seeded random inputs.
::testing::AssertionResult identical(const Graph& before, const Graph& after, uint64_t seed = 3) {
  return testing_util::same_outputs(before, after, seed, 0.0, 0.0);
}

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += (node.domain.empty() ? "" : node.domain + ".") + node.op_type == op;
  return n;
}

// One layer of torchvision's ViT as TorchScript exports nn.MultiheadAttention (sequence-first),
// S=5, B=2, E=8, H=2, D=4, in the order aotc's report lists the nodes.
std::string vit_layer(const std::string& t) {
  return R"(
    input %x : )" + t + R"([2x5x8]
    const %w_in : )" + t + R"([8x24] = random(1)
    const %b_in : )" + t + R"([24] = random(2)
    const %shape2 : int64[4] = [5, 2, 3, 8]
    const %ax0 : int64[1] = [0]
    const %ax3 : int64[1] = [3]
    const %i0 : int64[scalar] = [0]
    const %i1 : int64[scalar] = [1]
    const %i2 : int64[scalar] = [2]
    const %shape3 : int64[3] = [5, 4, 4]
    const %shape6 : int64[4] = [2, 2, 5, 4]
    const %scale : )" + t + R"([scalar] = [0.7071]
    const %shape9 : int64[2] = [10, 8]
    const %w_out : )" + t + R"([8x8] = random(3)
    const %shape10 : int64[3] = [5, 2, 8]
    %xt : )" + t + R"([?] = Transpose(%x) {perm=[1,0,2]}  # Transpose
    %p : )" + t + R"([?] = MatMul(%xt, %w_in)  # MatMul
    %pb : )" + t + R"([?] = Add(%p, %b_in)  # Add
    %r2 : )" + t + R"([?] = Reshape(%pb, %shape2)  # Reshape_2
    %u1 : )" + t + R"([?] = Unsqueeze(%r2, %ax0)  # Unsqueeze_1
    %t1 : )" + t + R"([?] = Transpose(%u1) {perm=[3,1,2,0,4]}  # Transpose_1
    %s1 : )" + t + R"([?] = Squeeze(%t1, %ax3)  # Squeeze_1
    %q : )" + t + R"([?] = Gather(%s1, %i0) {axis=0}  # Gather_3
    %k : )" + t + R"([?] = Gather(%s1, %i1) {axis=0}  # Gather_4
    %v : )" + t + R"([?] = Gather(%s1, %i2) {axis=0}  # Gather_5
    %q3 : )" + t + R"([?] = Reshape(%q, %shape3)  # Reshape_3
    %q4 : )" + t + R"([?] = Transpose(%q3) {perm=[1,0,2]}  # Transpose_2
    %k3 : )" + t + R"([?] = Reshape(%k, %shape3)  # Reshape_4
    %k4 : )" + t + R"([?] = Transpose(%k3) {perm=[1,0,2]}  # Transpose_3
    %v3 : )" + t + R"([?] = Reshape(%v, %shape3)  # Reshape_5
    %v4 : )" + t + R"([?] = Transpose(%v3) {perm=[1,0,2]}  # Transpose_4
    %q6 : )" + t + R"([?] = Reshape(%q4, %shape6)  # Reshape_6
    %k6 : )" + t + R"([?] = Reshape(%k4, %shape6)  # Reshape_7
    %v6 : )" + t + R"([?] = Reshape(%v4, %shape6)  # Reshape_8
    %kt : )" + t + R"([?] = Transpose(%k6) {perm=[0,1,3,2]}  # Transpose_5
    %qs : )" + t + R"([?] = Mul(%q6, %scale)  # Mul_1
    %ks : )" + t + R"([?] = Mul(%kt, %scale)  # Mul_2
    %a : )" + t + R"([?] = MatMul(%qs, %ks)  # MatMul_1
    %pr : )" + t + R"([?] = Softmax(%a) {axis=-1}  # Softmax
    %o : )" + t + R"([?] = MatMul(%pr, %v6)  # MatMul_2
    %ot : )" + t + R"([?] = Transpose(%o) {perm=[2,0,1,3]}  # Transpose_6
    %o9 : )" + t + R"([?] = Reshape(%ot, %shape9)  # Reshape_9
    %g : )" + t + R"([?] = Gemm(%o9, %w_out) {transB=1}  # Gemm
    %g10 : )" + t + R"([?] = Reshape(%g, %shape10)  # Reshape_10
    %t7 : )" + t + R"([?] = Transpose(%g10) {perm=[1,0,2]}  # Transpose_7
    %y : )" + t + R"([?] = Add(%t7, %x)  # Add_1
    output %y
  )";
}

const Node& producer_of(const Graph& g, const std::string& value) {
  const int p = g.producers()[static_cast<size_t>(g.find_value(value))];
  EXPECT_GE(p, 0) << value;
  return g.nodes[static_cast<size_t>(std::max(p, 0))];
}

TEST(FuseCopyChains, MultiheadAttentionHeadSplitBecomesThreeCopies) {
  for (const char* t : {"float16", "float"}) {
    AOTC_BUILD(g, vit_layer(t));
    Graph before = g;
    EXPECT_EQ(count_ops(g, "Transpose") + count_ops(g, "Gather") + count_ops(g, "Mul"), 13) << t;
    auto mt = run_and_verify(fuse_matmul_transpose, g);
    ASSERT_TRUE(mt.is_ok()) << mt.status().message();
    EXPECT_TRUE(*mt);
    auto changed = run_and_verify(fuse_copy_chains, g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed);
    EXPECT_EQ(op_list(g),
              "Transpose,MatMul,Add,aotc.StridedCopy,aotc.StridedCopy,aotc.StridedCopy,aotc.MatMulT,Softmax,MatMul,"
              "Transpose,Reshape,Gemm,Reshape,Transpose,Add")
        << t;
    // q, k and v are each one gather straight from the projection [S, B, 3E]: [B, H, S, D] with
    // strides (3E, D, B*3E, 1) from offsets 0, E and 2E; q and k carry the Mul's scale.
    const Node& mm = producer_of(g, "a");
    EXPECT_EQ(mm.attr_int("transA", -1), 0);
    EXPECT_EQ(mm.attr_int("transB", -1), 1);
    const Node& q = g.nodes[static_cast<size_t>(g.producers()[static_cast<size_t>(mm.inputs[0])])];
    const Node& k = g.nodes[static_cast<size_t>(g.producers()[static_cast<size_t>(mm.inputs[1])])];
    const Node& v = producer_of(g, "v6");
    EXPECT_EQ(q.name, "Mul_1");
    EXPECT_EQ(k.name, "Mul_2");
    for (const Node* n : {&q, &k, &v}) {
      EXPECT_EQ(n->op_type, "StridedCopy");
      EXPECT_EQ(n->inputs[0], g.find_value("pb"));
      EXPECT_EQ(n->attr_ints("dims"), (std::vector<int64_t>{2, 2, 5, 4}));
      EXPECT_EQ(n->attr_ints("strides"), (std::vector<int64_t>{24, 4, 48, 1}));
      EXPECT_EQ(n->attr_ints("shape"), (std::vector<int64_t>{2, 2, 5, 4}));
    }
    EXPECT_EQ(q.attr_int("base", -1), 0);
    EXPECT_EQ(k.attr_int("base", -1), 8);
    EXPECT_EQ(v.attr_int("base", -1), 16);
    EXPECT_TRUE(q.has_attr("scale") && k.has_attr("scale") && !v.has_attr("scale"));
    EXPECT_EQ(q.attr_float("scale", 0), static_cast<float>(g.value(g.find_value("scale")).constant->get(0)));
    EXPECT_TRUE(identical(before, g)) << t;
    // Idempotent: a second run finds nothing.
    auto again = fuse_copy_chains(g);
    ASSERT_TRUE(again.is_ok());
    EXPECT_FALSE(*again);
  }
}

TEST(FuseCopyChains, WithoutTheMatMulPassTheKeyTransposeJoinsItsChain) {
  AOTC_BUILD(g, vit_layer("float16"));
  Graph before = g;
  auto changed = run_and_verify(fuse_copy_chains, g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_EQ(count_ops(g, "aotc.StridedCopy"), 3);
  const Node& k = producer_of(g, "ks");
  EXPECT_EQ(k.attr_ints("dims"), (std::vector<int64_t>{2, 2, 4, 5}));  // k^T [B, H, D, S]
  EXPECT_EQ(k.attr_ints("strides"), (std::vector<int64_t>{24, 4, 1, 48}));
  EXPECT_TRUE(identical(before, g));
}

TEST(FuseCopyChains, Gpt2SplitHeadsBecomeOneCopyEach) {
  AOTC_BUILD(g, R"(
    input %qkv : float16[2x3x24]
    const %sizes : int64[3] = [8, 8, 8]
    const %heads : int64[4] = [2, 3, 2, 4]
    %q : float16[?], %k : float16[?], %v : float16[?] = Split(%qkv, %sizes) {axis=2}  # split
    %q4 : float16[?] = Reshape(%q, %heads)
    %k4 : float16[?] = Reshape(%k, %heads)
    %v4 : float16[?] = Reshape(%v, %heads)
    %qh : float16[?] = Transpose(%q4) {perm=[0,2,1,3]}  # q_heads
    %kh : float16[?] = Transpose(%k4) {perm=[0,2,3,1]}  # k_heads
    %vh : float16[?] = Transpose(%v4) {perm=[0,2,1,3]}  # v_heads
    %s : float16[?] = MatMul(%qh, %kh)
    %o : float16[?] = MatMul(%s, %vh)
    output %o
  )");
  Graph before = g;
  ASSERT_TRUE(run_and_verify(fuse_matmul_transpose, g).is_ok());
  EXPECT_EQ(op_list(g), "Split,Reshape,Reshape,Reshape,Transpose,Transpose,Transpose,aotc.MatMulT,MatMul");
  auto changed = run_and_verify(fuse_copy_chains, g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "aotc.StridedCopy,aotc.StridedCopy,aotc.StridedCopy,aotc.MatMulT,MatMul");
  const Node& k = g.nodes[1];
  EXPECT_EQ(k.name, "k_heads");
  EXPECT_EQ(k.attr_ints("dims"), (std::vector<int64_t>{2, 2, 3, 4}));
  EXPECT_EQ(k.attr_ints("strides"), (std::vector<int64_t>{72, 4, 24, 1}));
  EXPECT_EQ(k.attr_int("base", -1), 8);
  EXPECT_TRUE(identical(before, g));
}

TEST(FuseCopyChains, SliceGatherAndTransposeCompose) {
  AOTC_BUILD(g, R"(
    input %x : float[4x6x5]
    const %starts : int64[2] = [5, 4]
    const %ends : int64[2] = [-100, 0]
    const %axes : int64[2] = [1, 2]
    const %steps : int64[2] = [-2, -1]
    const %idx : int64[1] = [-1]
    %s : float[?] = Slice(%x, %starts, %ends, %axes, %steps)
    %t : float[?] = Transpose(%s) {perm=[2,0,1]}
    %y : float[?] = Gather(%t, %idx) {axis=1}
    output %y
  )");
  Graph before = g;
  auto changed = run_and_verify(fuse_copy_chains, g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "aotc.StridedCopy");
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{4, 1, 3}));
  EXPECT_TRUE(identical(before, g));
}

// GPT-2's padded LM head: the Slice that drops the padding and the fp16 -> fp32 output Cast become
// one converting copy (`to`), bit-identical to the two kernels; a Cast between other types or
// one that starts a chain on its own stays.
TEST(FuseCopyChains, TrailingFloatCastConvertsInTheCopy) {
  AOTC_BUILD(g, R"(
    input %x : float16[6x16]
    const %starts : int64[1] = [0]
    const %ends : int64[1] = [13]
    const %axes : int64[1] = [1]
    %s : float16[?] = Slice(%x, %starts, %ends, %axes)
    %y : float[?] = Cast(%s) {to=1}
    output %y
  )");
  Graph before = g;
  auto changed = run_and_verify(fuse_copy_chains, g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "aotc.StridedCopy");
  EXPECT_EQ(g.nodes[0].attr_int("to", 0), static_cast<int64_t>(DType::kFloat32));
  EXPECT_EQ(g.value(g.outputs[0]).dtype, DType::kFloat32);
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{6, 13}));
  EXPECT_TRUE(identical(before, g));

  AOTC_BUILD(h, R"(
    input %x : float16[6x16]
    const %starts : int64[1] = [0]
    const %ends : int64[1] = [13]
    const %axes : int64[1] = [1]
    %s : float16[?] = Slice(%x, %starts, %ends, %axes)
    %y : int32[?] = Cast(%s) {to=6}
    output %y
  )");
  auto unchanged = run_and_verify(fuse_copy_chains, h);
  ASSERT_TRUE(unchanged.is_ok()) << unchanged.status().message();
  EXPECT_FALSE(*unchanged) << "a Cast to an integer type is no float conversion";
}

TEST(FuseCopyChains, ChainsThatUndoThemselvesBecomeAView) {
  // layout_nhwc's edge Transpose back to NCHW, then the patch embedding's flatten(2).transpose(1, 2):
  // the tokens are the NHWC bytes as they are.
  AOTC_BUILD(g, R"(
    input %nhwc : float[2x3x3x8]
    const %shape : int64[3] = [2, 8, 9]
    %nchw : float[?] = Transpose(%nhwc) {perm=[0,3,1,2]}
    %flat : float[?] = Reshape(%nchw, %shape)
    %tokens : float[?] = Transpose(%flat) {perm=[0,2,1]}
    %y : float[?] = Relu(%tokens)
    output %y
  )");
  Graph before = g;
  auto changed = run_and_verify(fuse_copy_chains, g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Reshape,Relu");
  EXPECT_EQ(g.nodes[0].inputs[0], g.find_value("nhwc"));
  EXPECT_TRUE(identical(before, g));
}

TEST(FuseCopyChains, OneScalePerChain) {
  // Two Muls would round twice: the first ends the chain, the second stays a Mul. An fp64 scale
  // that float cannot hold exactly is not folded either.
  AOTC_BUILD(g, R"(
    input %x : float16[3x4]
    const %a : float16[scalar] = [0.3]
    const %b : float16[1] = [3.0]
    %t : float16[?] = Transpose(%x)
    %m1 : float16[?] = Mul(%a, %t)
    %m2 : float16[?] = Mul(%m1, %b)
    output %m2
  )");
  Graph before = g;
  auto changed = run_and_verify(fuse_copy_chains, g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "aotc.StridedCopy,Mul");
  EXPECT_TRUE(identical(before, g));

  AOTC_BUILD(d, R"(
    input %x : double[3x4x2]
    const %i : int64[scalar] = [1]
    const %c : double[scalar] = [0.1]
    %t : double[?] = Transpose(%x)
    %s : double[?] = Gather(%t, %i) {axis=0}
    %y : double[?] = Mul(%s, %c)
    output %y
  )");
  Graph d_before = d;
  ASSERT_TRUE(run_and_verify(fuse_copy_chains, d).is_ok());
  EXPECT_EQ(op_list(d), "aotc.StridedCopy,Mul");
  EXPECT_TRUE(identical(d_before, d));
}

TEST(FuseCopyChains, ChainStartsAtAValueAnotherReaderNeeds) {
  // %t is read by a Relu too: the Transpose stays, and the Gather + Transpose after it (2 kernels)
  // become one copy from %t.
  AOTC_BUILD(g, R"(
    input %x : float[3x4x5]
    const %i : int64[scalar] = [2]
    const %shape : int64[2] = [4, 3]
    %t : float[?] = Transpose(%x) {perm=[2,1,0]}
    %r : float[?] = Relu(%t)
    %s : float[?] = Gather(%t, %i) {axis=0}
    %u : float[?] = Transpose(%s)
    output %r, %u
  )");
  Graph before = g;
  auto changed = run_and_verify(fuse_copy_chains, g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Transpose,Relu,aotc.StridedCopy");
  EXPECT_EQ(g.nodes[2].inputs[0], g.find_value("t"));
  EXPECT_TRUE(identical(before, g));
}

TEST(FuseCopyChains, MustNotFire) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"intermediate read elsewhere", R"(
        input %x : float[3x4]
        const %i : int64[scalar] = [1]
        %t : float[?] = Transpose(%x)
        %g : float[?] = Gather(%t, %i) {axis=0}
        %r : float[?] = Relu(%t)
        output %g, %r
      )"},
      {"intermediate is a graph output", R"(
        input %x : float[3x4]
        const %i : int64[scalar] = [1]
        %t : float[?] = Transpose(%x)
        %g : float[?] = Gather(%t, %i) {axis=0}
        output %g, %t
      )"},
      {"gather index not constant", R"(
        input %x : float[3x4]
        input %i : int64[scalar]
        %t : float[?] = Transpose(%x)
        %g : float[?] = Gather(%t, %i) {axis=0}
        output %g
      )"},
      {"gather index of two elements", R"(
        input %x : float[3x4]
        const %i : int64[2] = [1, 0]
        %t : float[?] = Transpose(%x)
        %g : float[?] = Gather(%t, %i) {axis=0}
        output %g
      )"},
      {"reshape that cuts the transposed view unevenly", R"(
        input %x : float[2x3]
        const %shape : int64[2] = [2, 3]
        %t : float[?] = Transpose(%x)
        %r : float[?] = Reshape(%t, %shape)
        %u : float[?] = Transpose(%r)
        output %u
      )"},
      {"views only", R"(
        input %x : float[2x3x4]
        const %shape : int64[2] = [6, 4]
        const %ax : int64[1] = [0]
        %r : float[?] = Reshape(%x, %shape)
        %u : float[?] = Unsqueeze(%r, %ax)
        %f : float[?] = Flatten(%u) {axis=2}
        %y : float[?] = Relu(%f)
        output %y
      )"},
      {"one kernel between views", R"(
        input %x : float[2x3x4]
        const %shape : int64[4] = [2, 3, 2, 2]
        const %back : int64[2] = [6, 4]
        %r : float[?] = Reshape(%x, %shape)
        %t : float[?] = Transpose(%r) {perm=[0,1,3,2]}
        %b : float[?] = Reshape(%t, %back)
        output %b
      )"},
      {"a Mul by a tensor, not a scalar", R"(
        input %x : float[3x4]
        const %c : float[4x3] = random(1)
        %t : float[?] = Transpose(%x)
        %m : float[?] = Mul(%t, %c)
        output %m
      )"},
  };
  for (const auto& c : cases) {
    AOTC_BUILD(g, c.second);
    const std::string ops = op_list(g);
    auto changed = run_and_verify(fuse_copy_chains, g);
    ASSERT_TRUE(changed.is_ok()) << c.first << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.first;
    EXPECT_EQ(op_list(g), ops) << c.first;
  }
}

}  // namespace
}  // namespace aotc
