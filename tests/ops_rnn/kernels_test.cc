// templates/rnn.cu.in lowered from representative RNN / GRU / LSTM nodes (every direction, both
// layouts, sequence_lens, initial states, peepholes, clip, both GRU reset modes, absent outputs,
// fp32 / fp16 / fp64, hidden sizes 1, prime and above one block of threads): nvcc compiles them;
// they run on the CPU through the CUDA emulation shim and on the GPU when there is one, poisoned
// outputs, compared with the CPU reference.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>

#include "tests/ops_basic/ops_test_util.h"
#include "tests/ops_compute/kernel_harness.h"

namespace aotc {
namespace {

using test::OneNode;

struct Case {
  std::string label;
  std::function<void(OneNode&)> build;
  std::vector<bool> outputs;  // present outputs (Y, Y_h[, Y_c])
};

Tensor lens32(std::vector<int64_t> v) {
  Tensor t(DType::kInt32, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.set_int(static_cast<int64_t>(i), v[i]);
  return t;
}
Attribute str(const char* s) { return Attribute::of_string(s); }

std::vector<Case> cases() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, f64 = DType::kFloat64;
  std::vector<Case> c;
  c.push_back({"RNN f32 forward defaults", [=](OneNode& n) {
                 n.node.op_type = "RNN";
                 n.input(f32, {4, 3, 5}).input(f32, {1, 7, 5}).input(f32, {1, 7, 7});
               }, {true, true}});
  c.push_back({"RNN f32 bidirectional bias h0 seq_lens, Relu/LeakyRelu clip", [=](OneNode& n) {
                 n.node.op_type = "RNN";
                 n.input(f32, {5, 3, 2}).input(f32, {2, 3, 2}).input(f32, {2, 3, 3}).input(f32, {2, 6})
                     .constant(lens32({5, 2, 0})).input(f32, {2, 3, 3});
                 n.attr("direction", str("bidirectional")).attr("clip", Attribute::of_float(0.75f));
                 n.attr("activations", Attribute::of_strings({"Relu", "LeakyRelu"}))
                     .attr("activation_alpha", Attribute::of_floats({0.2f}));
               }, {true, true}});
  c.push_back({"GRU f32 reverse layout 1 linear_before_reset", [=](OneNode& n) {
                 n.node.op_type = "GRU";
                 n.input(f32, {2, 4, 3}).input(f32, {1, 15, 3}).input(f32, {1, 15, 5}).input(f32, {1, 30}).absent()
                     .input(f32, {2, 1, 5});
                 n.attr("direction", str("reverse")).attr("layout", Attribute::of_int(1))
                     .attr("linear_before_reset", Attribute::of_int(1));
               }, {true, true}});
  c.push_back({"GRU f32 bidirectional seq_lens, HardSigmoid/Softsign", [=](OneNode& n) {
                 n.node.op_type = "GRU";
                 n.input(f32, {3, 2, 4}).input(f32, {2, 6, 4}).input(f32, {2, 6, 2}).input(f32, {2, 12})
                     .constant(lens32({1, 3}));
                 n.attr("direction", str("bidirectional"))
                     .attr("activations", Attribute::of_strings({"HardSigmoid", "Softsign", "Sigmoid", "Elu"}));
               }, {false, true}});
  c.push_back({"GRU f16 hidden 37", [=](OneNode& n) {
                 n.node.op_type = "GRU";
                 n.input(f16, {3, 2, 4}).input(f16, {1, 111, 4}).input(f16, {1, 111, 37});
               }, {true, false}});
  c.push_back({"LSTM f32 peepholes h0 c0 seq_lens", [=](OneNode& n) {
                 n.node.op_type = "LSTM";
                 n.input(f32, {3, 2, 4}).input(f32, {1, 12, 4}).input(f32, {1, 12, 3}).input(f32, {1, 24})
                     .constant(lens32({3, 2})).input(f32, {1, 2, 3}).input(f32, {1, 2, 3}).input(f32, {1, 9});
               }, {true, true, true}});
  c.push_back({"LSTM f32 bidirectional layout 1 input_forget clip hidden 300", [=](OneNode& n) {
                 n.node.op_type = "LSTM";
                 n.input(f32, {2, 3, 2}).input(f32, {2, 1200, 2}).input(f32, {2, 1200, 300});
                 n.attr("direction", str("bidirectional")).attr("layout", Attribute::of_int(1))
                     .attr("input_forget", Attribute::of_int(1)).attr("clip", Attribute::of_float(0.5f));
               }, {true, true, true}});
  c.push_back({"LSTM f64 reverse Softplus/ScaledTanh/Affine", [=](OneNode& n) {
                 n.node.op_type = "LSTM";
                 n.input(f64, {4, 1, 3}).input(f64, {1, 8, 3}).input(f64, {1, 8, 2}).input(f64, {1, 16});
                 n.attr("direction", str("reverse"))
                     .attr("activations", Attribute::of_strings({"Sigmoid", "ScaledTanh", "Affine"}))
                     .attr("activation_alpha", Attribute::of_floats({0.5f, 0.8f}))
                     .attr("activation_beta", Attribute::of_floats({1.5f, 0.1f}));
               }, {true, false, true}});
  c.push_back({"LSTM f16 hidden 1", [=](OneNode& n) {
                 n.node.op_type = "LSTM";
                 n.input(f16, {2, 2, 3}).input(f16, {1, 4, 3}).input(f16, {1, 4, 1});
               }, {true, true, false}});
  return c;
}

struct Built {
  std::string label;
  std::unique_ptr<OneNode> node;
  Lowering lowering;
};

// Like OneNode::build, but absent outputs stay kNoValue (optional Y, Y_h, Y_c).
Status build_with_outputs(OneNode& n, const std::vector<bool>& present) {
  for (size_t i = 0; i < present.size(); ++i) {
    if (!present[i]) {
      n.node.outputs.push_back(kNoValue);
      continue;
    }
    ValueId y = n.graph.add_value("out" + std::to_string(i));
    n.node.outputs.push_back(y);
    n.graph.outputs.push_back(y);
  }
  n.graph.nodes.push_back(n.node);
  AOTC_RETURN_IF_ERROR(infer_shapes(n.graph));
  return verify(n.graph);
}

std::vector<Built> build_all() {
  std::vector<Built> out;
  for (const Case& c : cases()) {
    auto n = std::make_unique<OneNode>("", 14);
    c.build(*n);
    Status s = build_with_outputs(*n, c.outputs);
    EXPECT_TRUE(s.is_ok()) << c.label << ": " << s.message();
    if (!s.is_ok()) continue;
    auto l = default_registry().find(n->built().op_type)->lower(n->built(), n->graph);
    EXPECT_TRUE(l.is_ok()) << c.label << ": " << l.status().message();
    if (!l.is_ok()) continue;
    out.push_back({c.label, std::move(n), *l});
  }
  return out;
}

void check_all(std::vector<Built>& built,
               const std::function<Status(size_t, const Lowering&, std::map<ValueId, Tensor>&)>& runner) {
  uint32_t seed = 11;
  for (size_t r = 0; r < built.size(); ++r) {
    OneNode& g = *built[r].node;
    std::vector<Tensor> inputs;
    std::map<ValueId, Tensor> values;
    for (ValueId id : g.graph.inputs) {
      const Value& v = g.graph.value(id);
      Tensor t(v.dtype, v.shape);
      std::vector<double> vals = test::lcg_values(t.numel(), -1, 1, seed++);
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, vals[static_cast<size_t>(i)]);
      inputs.push_back(t);
      values[id] = t;
    }
    for (size_t i = 0; i < g.graph.values.size(); ++i)
      if (g.graph.values[i].constant) values[static_cast<ValueId>(i)] = *g.graph.values[i].constant;
    auto want = g.run(inputs);
    ASSERT_TRUE(want.is_ok()) << built[r].label << ": " << want.status().message();
    for (ValueId id : g.graph.outputs) {
      Tensor poisoned(g.graph.value(id).dtype, g.graph.value(id).shape);
      std::memset(poisoned.raw(), 0xFF, static_cast<size_t>(poisoned.byte_size()));
      values[id] = poisoned;
    }
    Status s = runner(r, built[r].lowering, values);
    ASSERT_TRUE(s.is_ok()) << built[r].label << ": " << s.message();
    for (size_t i = 0; i < g.graph.outputs.size(); ++i) {
      std::string mismatch = test::compare_tensors(values[g.graph.outputs[i]], (*want)[i]);
      EXPECT_TRUE(mismatch.empty()) << built[r].label << " output " << i << ": " << mismatch;
    }
  }
}

std::string kernel_source(const std::vector<Built>& built) {
  std::string source;
  for (size_t r = 0; r < built.size(); ++r)
    for (size_t i = 0; i < built[r].lowering.steps.size(); ++i) {
      const LoweredStep& step = built[r].lowering.steps[i];
      auto text = testing_util::render_kernel(step.kernel, "c" + std::to_string(r) + "_k" + std::to_string(i));
      EXPECT_TRUE(text.is_ok()) << built[r].label << ": " << text.status().message();
      if (text.is_ok()) source += *text + "\n";
    }
  return source;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// What templates/common.cuh gives device code, for the host emulation (which has no CUDA headers).
// The shim launches kernels of at most 6 pointer parameters and rnn has 11: each emulated kernel is
// reached through a 2-parameter wrapper whose first argument is a table of the real pointers.
const char* const kEmulatedCommon = R"(
#include <utility>
template <class To, class From> inline To aotc_cast(From v) { return static_cast<To>(v); }
template <class... A, size_t... I>
void aotc_call_table(void (*f)(A...), void** p, std::index_sequence<I...>) { f(static_cast<A>(p[I])...); }
template <class... A>
void aotc_call_table(void (*f)(A...), void** p) { aotc_call_table(f, p, std::index_sequence_for<A...>{}); }
)";
constexpr ValueId kTableId = 1 << 20;  // a ValueId no test graph reaches

// Emulation source: each case's kernel renamed *_impl plus the table wrapper under the real name.
std::string emulated_source(const std::vector<Built>& built) {
  std::string source = kEmulatedCommon;
  for (size_t r = 0; r < built.size(); ++r)
    for (size_t i = 0; i < built[r].lowering.steps.size(); ++i) {
      const std::string name = "c" + std::to_string(r) + "_k" + std::to_string(i);
      auto text = testing_util::render_kernel(built[r].lowering.steps[i].kernel, name + "_impl");
      EXPECT_TRUE(text.is_ok()) << built[r].label << ": " << text.status().message();
      if (!text.is_ok()) continue;
      source += *text + "\nextern \"C\" void " + name + "(void* table, void*) { aotc_call_table(&" + name +
                "_impl, static_cast<void**>(table)); }\n";
    }
  return source;
}

// The lowering as the wrapper sees it: the pointer table twice, the table stored in `values`.
Lowering through_table(const Lowering& l, std::map<ValueId, Tensor>& values) {
  Lowering t = l;
  for (LoweredStep& step : t.steps) {
    Tensor table(DType::kUInt64, {static_cast<int64_t>(step.kernel.args.size())});
    for (size_t a = 0; a < step.kernel.args.size(); ++a) {
      ValueId id = step.kernel.args[a];
      void* p = id == kNullArg ? nullptr : values.at(id).raw();
      std::memcpy(table.raw() + a * sizeof(void*), &p, sizeof p);
    }
    values[kTableId] = table;
    step.kernel.args = {kTableId, kTableId};
  }
  return t;
}

TEST(RnnKernels, TemplateCompilesWithNvcc) {
  std::vector<Built> built = build_all();
  ASSERT_EQ(built.size(), cases().size());
  std::string source = read_text(std::string(AOTC_SOURCE_DIR) + "/templates/common.cuh") + "\n" + kernel_source(built);
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no nvcc: rendered, not compiled";
  const std::string obj = "/tmp/aotc_ops_rnn_" + std::to_string(getpid()) + ".o";
  Status s = testing_util::nvcc_compile(source, "sm_90", false, obj);
  EXPECT_TRUE(s.is_ok()) << s.message();
  std::remove(obj.c_str());
}

TEST(RnnKernels, EmulatedOnCpuMatchReference) {
  std::vector<Built> built = build_all();
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, emulated_source(built));
  check_all(built, [&](size_t r, const Lowering& l, std::map<ValueId, Tensor>& values) {
    Lowering table = through_table(l, values);  // one kernel step per lowering: one table
    return testing_util::run_on_cpu(*handle, "c" + std::to_string(r) + "_", table, values);
  });
}

TEST(RnnKernels, GpuMatchesReference) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  std::vector<Built> built = build_all();
  check_all(built, [&](size_t, const Lowering& l, std::map<ValueId, Tensor>& values) { return gpu->run(l, values); });
}

TEST(RnnKernels, RefusesHiddenBeyondSharedMemory) {
  OneNode n("RNN", 14);
  n.input(DType::kFloat32, {1, 1, 1}).input(DType::kFloat32, {1, 3000, 1}).input(DType::kFloat32, {1, 3000, 3000});
  ASSERT_TRUE(build_with_outputs(n, {false, true}).is_ok());
  auto l = default_registry().find("RNN")->lower(n.built(), n.graph);
  ASSERT_FALSE(l.is_ok());
  EXPECT_TRUE(test::contains(l.status().message(), "shared memory")) << l.status().message();
}

}  // namespace
}  // namespace aotc
