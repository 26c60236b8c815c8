// This area's kernels against the CPU reference: every case is rendered and compiled with nvcc
// (bfloat16 included), run through the CPU emulation of CUDA (tests/ops_compute/cuda_emulation.h;
// no bfloat16 there) and on the GPU when there is one (else "no CUDA GPU: ..."). Outputs are
// poisoned (0xFF) before each run. Shapes include 1, primes and broadcasts; NaN/Inf, 0 divisors,
// INT_MIN and out-of-range casts are planted where they matter.
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "tests/ops_basic/ops_test_util.h"
#include "tests/ops_compute/kernel_harness.h"

namespace aotc {
namespace {

using test::OneNode;

struct KernelCase {
  std::string label;  // starts with the op type; words in it pick input ranges (see random_input)
  std::function<void(OneNode&)> build;
  int64_t opset = 17;
};

std::vector<KernelCase> kernel_cases() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, f64 = DType::kFloat64;
  const DType i8 = DType::kInt8, i32 = DType::kInt32, i64 = DType::kInt64, u8 = DType::kUInt8, u64 = DType::kUInt64;
  const DType b = DType::kBool;
  std::vector<KernelCase> c;
  auto add = [&](std::string label, std::function<void(OneNode&)> f, int64_t opset = 17) {
    c.push_back({std::move(label), std::move(f), opset});
  };
  auto un = [&](const char* op, DType t, Shape s, const char* extra = "") {
    add(std::string(op) + " " + dtype_name(t) + " " + shape_str(s) + " " + extra,
        [=](OneNode& n) { n.input(t, s); });
  };
  for (const char* op : {"Tanh", "Erf", "Exp", "Sin", "Cos", "Atan", "Sinh", "Cosh", "Asinh", "Floor", "Ceil", "Round",
                         "Reciprocal", "Neg", "Abs", "Sign", "Softplus", "Softsign", "HardSwish", "Sigmoid"})
    un(op, f32, {131});
  for (const char* op : {"Log", "Sqrt", "Acosh"}) un(op, f32, {67}, "positive");
  for (const char* op : {"Asin", "Acos", "Atanh", "Tan"}) un(op, f32, {67}, "unit");
  un("Tanh", f16, {3, 37});
  un("Exp", f64, {29});
  un("Round", f16, {41}, "halves");
  un("Round", f32, {41}, "halves");
  un("Neg", i8, {67}, "specials");
  un("Neg", i64, {13});
  un("Abs", i32, {67}, "specials");
  un("Abs", u8, {17});
  un("Sign", i64, {19});
  un("Sign", f32, {19}, "specials");
  un("Not", b, {4, 5});
  un("IsNaN", f32, {23}, "specials");
  un("IsNaN", f16, {23}, "specials");
  un("IsInf", f32, {23}, "specials");
  un("IsInf", f64, {23}, "specials");
  add("IsInf f32 positive only specials", [=](OneNode& n) {
    n.input(f32, {23}).attr("detect_negative", Attribute::of_int(0));
  });
  add("IsInf f32 negative only specials", [=](OneNode& n) {
    n.input(f32, {23}).attr("detect_positive", Attribute::of_int(0));
  });
  add("LeakyRelu f32", [=](OneNode& n) { n.input(f32, {97}).attr("alpha", Attribute::of_float(0.3f)); });
  add("LeakyRelu f16 default", [=](OneNode& n) { n.input(f16, {97}); });
  add("Elu f32", [=](OneNode& n) { n.input(f32, {97}).attr("alpha", Attribute::of_float(2.f)); });
  add("Selu f64", [=](OneNode& n) { n.input(f64, {31}); });
  add("Celu f32", [=](OneNode& n) { n.input(f32, {31}).attr("alpha", Attribute::of_float(0.5f)); });
  add("ThresholdedRelu f32", [=](OneNode& n) { n.input(f32, {31}).attr("alpha", Attribute::of_float(1.5f)); });
  add("HardSigmoid f32", [=](OneNode& n) {
    n.input(f32, {97}).attr("alpha", Attribute::of_float(0.5f)).attr("beta", Attribute::of_float(0.6f));
  });
  add("HardSigmoid f16 default", [=](OneNode& n) { n.input(f16, {97}); });
  add("Gelu f32 none", [=](OneNode& n) { n.input(f32, {257}); }, 20);
  add("Gelu f32 tanh", [=](OneNode& n) { n.input(f32, {257}).attr("approximate", Attribute::of_string("tanh")); }, 20);
  add("Gelu f16 none", [=](OneNode& n) { n.input(f16, {61}); }, 20);
  // Binary arithmetic.
  // The broadcast kernel's 16-byte vector path (both inputs contiguous in the innermost dim, a
  // multiple of 8 halves / 4 words there): the squeeze-excitation scale x[N,H,W,C] * s[N,1,1,C],
  // a float Sub over a middle broadcast, an int32 Div with zero divisors; and beside them shapes
  // that keep the element loop (C = 12 halves, a broadcast innermost dim).
  add("Mul f16 vector bcast", [=](OneNode& n) { n.input(f16, {2, 5, 3, 24}).input(f16, {2, 1, 1, 24}); });
  add("Sub f32 vector bcast", [=](OneNode& n) { n.input(f32, {3, 4, 8}).input(f32, {3, 1, 8}); });
  add("Div int32 vector bcast specials", [=](OneNode& n) { n.input(i32, {5, 12}).input(i32, {12}); });
  // The same-shape kernel's vector path (the three types of one size, the count a multiple of the
  // vector): fp16 Add, a float Mul, LLaMA's SwiGLU; 19 int32s keep the element loop.
  add("Add f16 vector same", [=](OneNode& n) { n.input(f16, {3, 40}).input(f16, {3, 40}); });
  add("Mul f32 vector same", [=](OneNode& n) { n.input(f32, {6, 4}).input(f32, {6, 4}); });
  add("SwiGLU f16 vector same", [=](OneNode& n) { n.input(f16, {4, 16}).input(f16, {4, 16}); });
  // aotc.SwiGLUPacked (opt/merge_swiglu_projections): the gate and up halves of each row read in
  // place, the up half through the step's byte offset: fp16 with 16-element halves (vectors of 8,
  // the up half 32 bytes in), float halves of 12 with alpha, fp16 halves of 5 (element loop).
  add("SwiGLUPacked f16 vector halves", [=](OneNode& n) { n.node.domain = "aotc"; n.input(f16, {3, 32}); });
  add("SwiGLUPacked f32 alpha", [=](OneNode& n) {
    n.node.domain = "aotc";
    n.input(f32, {2, 3, 24}).attr("alpha", Attribute::of_float(1.5f));
  });
  add("SwiGLUPacked f16 odd halves", [=](OneNode& n) { n.node.domain = "aotc"; n.input(f16, {4, 10}); });
  add("Mul f16 bcast twelve", [=](OneNode& n) { n.input(f16, {2, 3, 12}).input(f16, {2, 1, 12}); });
  add("Mul f16 bcast innermost", [=](OneNode& n) { n.input(f16, {2, 3, 16}).input(f16, {2, 3, 1}); });
  add("Pow f32 f32 bcast positive", [=](OneNode& n) { n.input(f32, {3, 5}).input(f32, {5}); });
  add("Pow f32 int64 exponent", [=](OneNode& n) { n.input(f32, {7, 3}).input(i64, {3}); });
  add("Pow f16 f32 exponent positive", [=](OneNode& n) { n.input(f16, {17}).input(f32, {}); });
  add("Pow int32 int32 small", [=](OneNode& n) { n.input(i32, {19}).input(i32, {19}); });
  add("Pow int64 f32 small", [=](OneNode& n) { n.input(i64, {19}).input(f32, {19}); });
  add("Mod int32 fmod0 specials", [=](OneNode& n) { n.input(i32, {64}).input(i32, {64}); });
  add("Mod int8 fmod1 specials", [=](OneNode& n) {
    n.input(i8, {64}).input(i8, {64}).attr("fmod", Attribute::of_int(1));
  });
  add("Mod int64 fmod0 bcast", [=](OneNode& n) { n.input(i64, {4, 5}).input(i64, {5}); });
  add("Mod uint64 fmod0", [=](OneNode& n) { n.input(u64, {19}).input(u64, {19}); });
  add("Mod f32 fmod1 bcast", [=](OneNode& n) {
    n.input(f32, {3, 1, 5}).input(f32, {4, 1}).attr("fmod", Attribute::of_int(1));
  });
  add("Mod f16 fmod1", [=](OneNode& n) { n.input(f16, {33}).input(f16, {33}).attr("fmod", Attribute::of_int(1)); });
  // Mod-28: fmod=0 on floats is the floor modulo (numpy's np.mod), with the spec's special cases.
  add("Mod f32 fmod0 specials", [=](OneNode& n) { n.input(f32, {64}).input(f32, {64}); });
  add("Mod f64 fmod0 bcast", [=](OneNode& n) { n.input(f64, {4, 5}).input(f64, {5}); });
  add("Mod f16 fmod0", [=](OneNode& n) { n.input(f16, {33}).input(f16, {33}); });
  // BitShift-28 on signed integers (negative and too-large shifts), BitwiseAnd/Or/Xor/Not-18.
  add("BitShift int8 right specials", [=](OneNode& n) {
    n.input(i8, {37}).input(i8, {37}).attr("direction", Attribute::of_string("RIGHT"));
  });
  add("BitShift int32 left specials", [=](OneNode& n) {
    n.input(i32, {37}).input(i32, {37}).attr("direction", Attribute::of_string("LEFT"));
  });
  add("BitShift int64 right wide bcast", [=](OneNode& n) {
    n.input(i64, {3, 7}).input(i64, {7}).attr("direction", Attribute::of_string("RIGHT"));
  });
  add("BitShift int8 left small", [=](OneNode& n) {
    n.input(i8, {29}).input(i8, {29}).attr("direction", Attribute::of_string("LEFT"));
  });
  add("BitwiseAnd int32 bcast", [=](OneNode& n) { n.input(i32, {3, 5}).input(i32, {5}); });
  add("BitwiseOr uint64", [=](OneNode& n) { n.input(u64, {19}).input(u64, {19}); });
  add("BitwiseXor int8 bcast", [=](OneNode& n) { n.input(i8, {4, 1}).input(i8, {1, 6}); });
  un("BitwiseNot", i8, {31});
  un("BitwiseNot", u64, {7});
  un("Mish", f32, {61}, "wide");
  un("Mish", f16, {33});
  add("Swish f32 alpha", [=](OneNode& n) { n.input(f32, {45}).attr("alpha", Attribute::of_float(0.75f)); });
  un("Swish", f16, {33});
  add("SwiGLU f32 alpha", [=](OneNode& n) { n.input(f32, {3, 17}).input(f32, {3, 17}).attr("alpha", Attribute::of_float(1.702f)); });
  add("SwiGLU f16", [=](OneNode& n) { n.input(f16, {29}).input(f16, {29}); });
  add("PRelu f32 channel slope", [=](OneNode& n) { n.input(f32, {2, 3, 5}).input(f32, {3, 1}); });
  add("PRelu f16 scalar slope", [=](OneNode& n) { n.input(f16, {37}).input(f16, {1}); });
  add("PRelu int32 same shape", [=](OneNode& n) { n.input(i32, {37}).input(i32, {37}); });
  add("BitShift uint8 left wide shifts", [=](OneNode& n) {
    n.input(u8, {37}).input(u8, {37}).attr("direction", Attribute::of_string("LEFT"));
  });
  add("BitShift uint64 right bcast", [=](OneNode& n) {
    n.input(u64, {3, 7}).input(u64, {7}).attr("direction", Attribute::of_string("RIGHT"));
  });
  add("Shrink f32", [=](OneNode& n) {
    n.input(f32, {61}).attr("lambd", Attribute::of_float(1.5f)).attr("bias", Attribute::of_float(0.5f));
  });
  // Comparisons and logic.
  add("Equal int64 bcast", [=](OneNode& n) { n.input(i64, {3, 4}).input(i64, {4}); });
  add("Equal bool", [=](OneNode& n) { n.input(b, {13}).input(b, {13}); });
  add("Less f32 specials", [=](OneNode& n) { n.input(f32, {23}).input(f32, {23}); });
  add("Greater f16 bcast", [=](OneNode& n) { n.input(f16, {5, 1}).input(f16, {1, 7}); });
  add("LessOrEqual uint8", [=](OneNode& n) { n.input(u8, {31}).input(u8, {31}); });
  add("GreaterOrEqual f64 scalar", [=](OneNode& n) { n.input(f64, {31}).input(f64, {}); });
  add("And bool bcast", [=](OneNode& n) { n.input(b, {3, 4, 5}).input(b, {4, 5}); });
  add("Or bool", [=](OneNode& n) { n.input(b, {29}).input(b, {29}); });
  add("Xor bool bcast", [=](OneNode& n) { n.input(b, {3, 1}).input(b, {1, 6}); });
  // Variadic.
  add("Max f32 one input", [=](OneNode& n) { n.input(f32, {17}); });
  add("Max f32 three bcast specials", [=](OneNode& n) { n.input(f32, {3, 1}).input(f32, {1, 5}).input(f32, {5}); });
  add("Min int8 two", [=](OneNode& n) { n.input(i8, {41}).input(i8, {41}); });
  add("Min uint64 four bcast", [=](OneNode& n) {
    n.input(u64, {2, 3}).input(u64, {3}).input(u64, {2, 1}).input(u64, {2, 3});
  });
  add("Sum f16 three", [=](OneNode& n) { n.input(f16, {4, 7}).input(f16, {7}).input(f16, {4, 7}); });
  add("Mean f32 four bcast", [=](OneNode& n) {
    n.input(f32, {2, 3}).input(f32, {3}).input(f32, {2, 1}).input(f32, {});
  });
  add("Mean f64 two", [=](OneNode& n) { n.input(f64, {9}).input(f64, {9}); });
  // Where.
  add("Where f32 3-way bcast", [=](OneNode& n) { n.input(b, {3, 1, 5}).input(f32, {4, 1}).input(f32, {5}); });
  add("Where int64 same", [=](OneNode& n) { n.input(b, {37}).input(i64, {37}).input(i64, {37}); });
  add("Where f16 scalar y", [=](OneNode& n) { n.input(b, {2, 9}).input(f16, {2, 9}).input(f16, {}); });
  add("Where bool", [=](OneNode& n) { n.input(b, {11}).input(b, {11}).input(b, {1}); });
  // Cast.
  auto cast = [&](DType from, DType to, const char* extra = "") {
    add("Cast " + dtype_name(from) + " to " + dtype_name(to) + " " + extra,
        [=](OneNode& n) { n.input(from, {37}).attr("to", Attribute::of_int(static_cast<int64_t>(to))); });
  };
  cast(f32, f16);
  cast(f16, f32);
  cast(f64, f16);
  cast(f32, i32, "specials wide");
  cast(f32, u8, "specials wide");
  cast(f64, i64, "specials wide");
  cast(f16, i8, "wide");
  cast(i64, f32);
  cast(i64, i8);
  cast(u8, i64);
  cast(i32, f16);
  cast(f32, b, "specials");
  cast(b, f32);
  cast(b, i64);
  cast(i64, b);
  add("CastLike f32 like int32", [=](OneNode& n) { n.input(f32, {37}).input(i32, {1}); });
  return c;
}

bool has(const std::string& label, const char* word) { return label.find(word) != std::string::npos; }

Tensor random_input(const std::string& label, const Value& v, size_t index, uint32_t seed) {
  Tensor t(v.dtype, v.shape);
  double lo = -4, hi = 4;
  if (v.dtype == DType::kBool) {
    lo = 0;
    hi = 2;
  } else if (!dtype_is_signed(v.dtype) && !dtype_is_float(v.dtype)) {
    lo = 0;
    hi = 200;
  } else if (dtype_is_integer(v.dtype)) {
    lo = -100;
    hi = 100;
  }
  if (has(label, "positive")) lo = 0.1;
  if (has(label, "unit")) lo = -0.99, hi = 0.99;
  if (has(label, "small")) lo = index == 0 ? -5 : 0, hi = index == 0 ? 6 : 5;
  if (has(label, "wide")) lo = -1000, hi = 1000;
  if (has(label, "Acosh")) lo = 1, hi = 5;
  std::vector<double> x = test::lcg_values(t.numel(), lo, hi, seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double d = x[static_cast<size_t>(i)];
    if (has(label, "halves")) d = std::round(d * 2) / 2;  // many exact .5 ties
    t.set(i, dtype_is_float(v.dtype) ? d : std::floor(d));
  }
  if (has(label, "specials") && t.numel() >= 6) {
    if (dtype_is_float(v.dtype)) {
      const double inf = std::numeric_limits<double>::infinity();
      const double vals[] = {NAN, inf, -inf, 0.0, 1e10, -1e10};
      for (int k = 0; k < 6; ++k) t.set((k + static_cast<int>(index)) % 6, vals[k]);
    } else if (dtype_is_signed(v.dtype)) {
      int64_t min = v.dtype == DType::kInt8 ? -128 : v.dtype == DType::kInt32 ? std::numeric_limits<int32_t>::min() : -100;
      if (index == 0) {
        t.set_int(0, min);
        t.set_int(1, min);
        t.set_int(2, 7);
        t.set_int(3, -7);
      } else {
        t.set_int(0, -1);
        t.set_int(1, 0);
        t.set_int(2, -2);
        t.set_int(3, 3);
      }
    }
  }
  return t;
}

struct Prepared {
  std::unique_ptr<OneNode> node;
  Lowering lowering;
  std::vector<Tensor> inputs;
  std::map<ValueId, Tensor> values;
};

std::vector<Prepared> prepare_all() {
  std::vector<Prepared> out;
  uint32_t seed = 11;
  for (const KernelCase& c : kernel_cases()) {
    SCOPED_TRACE(c.label);
    Prepared p;
    p.node = std::make_unique<OneNode>(c.label.substr(0, c.label.find(' ')), c.opset);
    c.build(*p.node);
    Status s = p.node->build();
    EXPECT_TRUE(s.is_ok()) << s.message();
    if (!s.is_ok()) continue;
    const Node& node = p.node->built();
    auto l = default_registry().find(node.op_type, node.domain)->lower(node, p.node->graph);
    EXPECT_TRUE(l.is_ok()) << l.status().message();
    if (!l.is_ok()) continue;
    p.lowering = *l;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Value& v = p.node->graph.value(node.inputs[i]);
      Tensor t = random_input(c.label, v, i, seed++);
      p.inputs.push_back(t);
      p.values[node.inputs[i]] = t;
    }
    out.push_back(std::move(p));
  }
  return out;
}

void check_all(std::vector<Prepared>& cases, const std::function<Status(size_t, Prepared&)>& run) {
  const std::vector<KernelCase> meta = kernel_cases();
  ASSERT_EQ(cases.size(), meta.size());
  for (size_t r = 0; r < cases.size(); ++r) {
    Prepared& p = cases[r];
    SCOPED_TRACE(meta[r].label);
    auto want = p.node->run(p.inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().message();
    ValueId out = p.node->built().outputs[0];
    Tensor poisoned(p.node->out().dtype, p.node->out().shape);
    std::memset(poisoned.raw(), 0xFF, static_cast<size_t>(poisoned.byte_size()));
    if (poisoned.dtype() == DType::kBool) std::memset(poisoned.raw(), 0x02, static_cast<size_t>(poisoned.byte_size()));
    p.values[out] = poisoned;
    Status s = run(r, p);
    ASSERT_TRUE(s.is_ok()) << s.message();
    const Tensor& got = p.values[out];
    if (got.dtype() == DType::kBool) {
      // Bytes must be exactly 0 or 1 (a poisoned 2 shows an unwritten element).
      ASSERT_EQ(std::memcmp(got.raw(), want.value()[0].raw(), static_cast<size_t>(got.byte_size())), 0);
    } else {
      EXPECT_TENSOR_NEAR(got, want.value()[0]);
    }
  }
}

std::string all_sources(std::vector<Prepared>& cases, std::vector<std::string>* errors) {
  std::string source;
  for (size_t r = 0; r < cases.size(); ++r)
    for (size_t i = 0; i < cases[r].lowering.steps.size(); ++i) {
      auto text = testing_util::render_kernel(cases[r].lowering.steps[i].kernel,
                                              "c" + std::to_string(r) + "_k" + std::to_string(i));
      if (!text.is_ok()) errors->push_back(text.status().message());
      else source += *text + "\n";
    }
  return source;
}

TEST(Elementwise3Kernels, EmulatedOnCpuMatchReference) {
  std::vector<Prepared> cases = prepare_all();
  std::vector<std::string> errors;
  std::string source = all_sources(cases, &errors);
  for (const std::string& e : errors) ADD_FAILURE() << e;
  // The emulation has __half but no math of its own: the host <cmath> overloads serve float.
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, "#include <cmath>\n" + source);
  check_all(cases, [&](size_t r, Prepared& p) {
    return testing_util::run_on_cpu(*handle, "c" + std::to_string(r) + "_", p.lowering, p.values);
  });
}

TEST(Elementwise3Kernels, RenderAndCompileWithNvccIncludingBFloat16) {
  std::vector<Prepared> cases = prepare_all();
  // bfloat16 (computed in float) for the families that accept it.
  const char* bf16_ops[] = {"Tanh", "Gelu", "Exp", "Abs", "IsNaN"};
  std::vector<std::unique_ptr<OneNode>> extra;
  for (const char* op : bf16_ops) {
    extra.push_back(std::make_unique<OneNode>(op, 20));
    extra.back()->input(DType::kBFloat16, {9});
  }
  extra.push_back(std::make_unique<OneNode>("Cast"));
  extra.back()->input(DType::kBFloat16, {9}).attr("to", Attribute::of_int(7));
  extra.push_back(std::make_unique<OneNode>("Cast"));
  extra.back()->input(DType::kFloat64, {9}).attr("to", Attribute::of_int(16));
  extra.push_back(std::make_unique<OneNode>("Pow"));
  extra.back()->input(DType::kBFloat16, {3, 9}).input(DType::kInt32, {9});
  extra.push_back(std::make_unique<OneNode>("Max"));
  extra.back()->input(DType::kBFloat16, {3, 9}).input(DType::kBFloat16, {9}).input(DType::kBFloat16, {3, 1});
  extra.push_back(std::make_unique<OneNode>("Less"));
  extra.back()->input(DType::kBFloat16, {9}).input(DType::kBFloat16, {9});
  for (auto& n : extra) {
    Status s = n->build();
    ASSERT_TRUE(s.is_ok()) << s.message();
    auto l = default_registry().find(n->built().op_type)->lower(n->built(), n->graph);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    Prepared p;
    p.lowering = *l;
    cases.push_back(std::move(p));
  }
  std::vector<std::string> errors;
  std::string source = all_sources(cases, &errors);
  for (const std::string& e : errors) ADD_FAILURE() << e;
  const std::string nvcc = testing_util::find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found: render checked, compile skipped";
  std::ifstream common(std::string(AOTC_SOURCE_DIR) + "/templates/common.cuh");
  std::stringstream ss;
  ss << common.rdbuf();
  ASSERT_FALSE(ss.str().empty());
  char dir_template[] = "/tmp/aotc_ew3_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  Status s = testing_util::nvcc_compile(ss.str() + "\n" + source, "sm_90", false, dir + "/k.o");
  EXPECT_TRUE(s.is_ok()) << s.message();
  std::system(("rm -rf " + dir).c_str());
}

TEST(Elementwise3Kernels, MatchReferenceOnGpu) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no CUDA GPU toolchain: nvcc missing";
  std::vector<Prepared> cases = prepare_all();
  check_all(cases, [&](size_t, Prepared& p) { return gpu->run(p.lowering, p.values); });
}

}  // namespace
}  // namespace aotc
