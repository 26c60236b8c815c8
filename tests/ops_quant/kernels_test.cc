// Every quantization template, lowered from representative nodes (dtypes, per-tensor and per-axis
// parameters, absent zero points, shapes with 1 and primes), is (1) rendered and compiled with nvcc for sm_90, (2) run on the
// CPU through the CUDA emulation shim of tests/ops_compute and compared with the CPU reference,
// and (3) with a GPU, run there the same way (outputs poisoned first). Without nvcc / a GPU
// those parts skip with the reason.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>

#include "tests/ops_basic/ops_test_util.h"
#include "tests/ops_compute/kernel_harness.h"
#include "ir/ops/op_helpers.h"
#include "templates/int8_requant.cuh"

namespace aotc {
namespace {

using test::OneNode;

struct Case {
  std::string label;
  std::function<void(OneNode&)> build;
  int64_t opset = 18;
  int outputs = 1;
};

Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }
Attribute one(int64_t v) { return Attribute::of_int(v); }
OneNode& set_op(OneNode& n, const char* op) {
  n.node.op_type = op;
  return n;
}

std::vector<Case> cases() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, u8 = DType::kUInt8, i8 = DType::kInt8, i32 = DType::kInt32;
  auto scalar = [](float v) { return Tensor::from_floats({}, {v}); };
  auto fvec = [](std::vector<float> v) { return Tensor::from_floats({static_cast<int64_t>(v.size())}, v); };
  auto zp = [](DType t, Shape s, std::vector<int64_t> v) {
    Tensor x(t, std::move(s));
    for (size_t i = 0; i < v.size(); ++i) x.set_int(static_cast<int64_t>(i), v[i]);
    return x;
  };
  std::vector<Case> c;
  auto add = [&](std::string label, std::function<void(OneNode&)> f, int64_t opset = 13, int outputs = 1) {
    c.push_back({std::move(label), std::move(f), opset, outputs});
  };
  add("QuantizeLinear f32 -> uint8 per tensor", [=](OneNode& n) {
    set_op(n, "QuantizeLinear").input(f32, {3, 67}).constant(scalar(0.013f)).constant(zp(u8, {}, {131}));
  });
  add("QuantizeLinear f32 -> int8 per axis", [=](OneNode& n) {
    set_op(n, "QuantizeLinear").input(f32, {2, 3, 5}).constant(fvec({0.01f, 0.02f, 0.5f})).constant(zp(i8, {3}, {-3, 0, 7}));
  });
  // Counts that are multiples of 16: 16 elements a thread (VEC 16).
  add("QuantizeLinear f32 -> int8 per tensor 16-element vectors", [=](OneNode& n) {
    set_op(n, "QuantizeLinear").input(f32, {4, 48}).constant(scalar(0.013f)).constant(zp(i8, {}, {-3}));
  });
  add("QuantizeLinear f16 -> uint8 per tensor 16-element vectors", [=](OneNode& n) {
    Tensor s(f16, {});
    s.set(0, 0.0213);
    set_op(n, "QuantizeLinear").input(f16, {2, 5, 32}).constant(s).constant(zp(u8, {}, {128}));
  }, 19);
  add("QuantizeLinear int32 no zero point", [=](OneNode& n) { set_op(n, "QuantizeLinear").input(i32, {11}).constant(scalar(0.5f)); });
  add("QuantizeLinear f16 opset 19", [=](OneNode& n) {
    Tensor s(f16, {});
    s.set(0, 0.03125);
    set_op(n, "QuantizeLinear").input(f16, {2, 7}).constant(s).constant(zp(i8, {}, {5}));
  }, 19);
  add("DequantizeLinear uint8 per tensor", [=](OneNode& n) {
    set_op(n, "DequantizeLinear").input(u8, {5, 13}).constant(scalar(0.37f)).constant(zp(u8, {}, {2}));
  });
  add("DequantizeLinear int8 per axis 0", [=](OneNode& n) {
    set_op(n, "DequantizeLinear").input(i8, {3, 7}).constant(fvec({0.5f, 2.f, 0.125f})).constant(zp(i8, {3}, {1, -2, 0})).attr("axis", one(0));
  });
  // int16 / uint16 (opset 21): the same templates with 16-bit storage and ranges.
  add("QuantizeLinear f32 -> int16 per tensor", [=](OneNode& n) {
    set_op(n, "QuantizeLinear").input(f32, {3, 11}).constant(scalar(0.0001f)).constant(zp(DType::kInt16, {}, {-300}));
  }, 21);
  add("QuantizeLinear f32 -> uint16 per axis", [=](OneNode& n) {
    set_op(n, "QuantizeLinear").input(f32, {2, 3, 5}).constant(fvec({0.00001f, 0.02f, 0.5f}))
        .constant(zp(DType::kUInt16, {3}, {32768, 0, 65000}));
  }, 21);
  add("DequantizeLinear int16 per axis 0", [=](OneNode& n) {
    set_op(n, "DequantizeLinear").input(DType::kInt16, {3, 7}).constant(fvec({0.5f, 2.f, 0.125f}))
        .constant(zp(DType::kInt16, {3}, {1000, -2, 0})).attr("axis", one(0));
  }, 21);
  add("DequantizeLinear int32", [=](OneNode& n) { set_op(n, "DequantizeLinear").input(i32, {17}).constant(scalar(0.25f)); });
  add("DynamicQuantizeLinear 1000", [=](OneNode& n) { set_op(n, "DynamicQuantizeLinear").input(f32, {10, 100}); }, 11, 3);
  add("DynamicQuantizeLinear 7", [=](OneNode& n) { set_op(n, "DynamicQuantizeLinear").input(f32, {7}); }, 11, 3);
  add("MatMulInteger uint8 zero points per column", [=](OneNode& n) {
    set_op(n, "MatMulInteger").input(u8, {3, 7}).input(u8, {7, 5}).constant(zp(u8, {}, {2})).constant(zp(u8, {5}, {1, 0, 3, 2, 1}));
  }, 10);
  add("MatMulInteger int8 x uint8 batch broadcast", [=](OneNode& n) {
    set_op(n, "MatMulInteger").input(i8, {2, 1, 3, 5}).input(u8, {3, 5, 2});
  }, 10);
  add("QLinearMatMul uint8", [=](OneNode& n) {
    set_op(n, "QLinearMatMul").input(u8, {2, 4, 9}).constant(scalar(0.05f)).constant(zp(u8, {}, {1})).input(u8, {9, 3})
        .constant(scalar(0.1f)).constant(zp(u8, {}, {2})).constant(scalar(0.02f)).constant(zp(u8, {}, {100}));
  }, 10);
  add("QLinearMatMul int8 per row/column scales", [=](OneNode& n) {
    set_op(n, "QLinearMatMul").input(i8, {3, 5}).constant(fvec({0.1f, 0.2f, 0.3f})).constant(zp(i8, {3}, {0, 1, -1})).input(i8, {5, 2})
        .constant(fvec({0.5f, 0.05f})).constant(zp(i8, {2}, {1, 0})).constant(scalar(0.07f)).constant(zp(i8, {}, {-5}));
  }, 10);
  add("QLinearMatMul int8 float16 scales", [=](OneNode& n) {
    auto h = [](float v) { Tensor t(DType::kFloat16, {}); t.set(0, v); return t; };
    set_op(n, "QLinearMatMul").input(i8, {2, 3, 7}).constant(h(0.0537f)).constant(zp(i8, {}, {3})).input(i8, {7, 5})
        .constant(h(0.0213f)).constant(zp(i8, {}, {-2})).constant(h(0.0141f)).constant(zp(i8, {}, {1}));
  }, 21);
  add("ConvInteger pads strides group 2 per-channel w_zp", [=](OneNode& n) {
    set_op(n, "ConvInteger").input(u8, {2, 4, 5, 7}).input(u8, {6, 2, 3, 2}).constant(zp(u8, {}, {3})).constant(zp(u8, {6}, {0, 1, 2, 3, 2, 1}))
        .attr("pads", ints({1, 0, 2, 1})).attr("strides", ints({2, 1})).attr("group", one(2));
  }, 10);
  add("ConvInteger 1-D dilation no zero points", [=](OneNode& n) {
    set_op(n, "ConvInteger").input(i8, {1, 3, 11}).input(i8, {2, 3, 3}).attr("dilations", ints({2}));
  }, 10);
  add("QLinearConv uint8 bias per-channel scale", [=](OneNode& n) {
    set_op(n, "QLinearConv").input(u8, {1, 3, 6, 5}).constant(scalar(0.1f)).constant(zp(u8, {}, {2})).input(i8, {4, 3, 3, 3})
        .constant(fvec({0.1f, 0.2f, 0.05f, 0.3f})).constant(zp(i8, {}, {0})).constant(scalar(0.04f)).constant(zp(u8, {}, {90}))
        .constant(zp(i32, {4}, {10, -20, 0, 5})).attr("pads", ints({1, 1, 1, 1}));
  }, 10);
  // The internal int8 layers of opt/fuse_qdq on their direct kernels (the tensor-core kernel is a
  // library kernel: tests/gpu/gpu_int8_test.cc).
  auto internal = [](OneNode& n, const char* op) -> OneNode& {
    n.node.op_type = op;
    n.node.domain = "aotc";
    return n;
  };
  add("aotc.QLinearAdd int8 with a ReLU clamp", [=](OneNode& n) {
    internal(n, "QLinearAdd").input(i8, {2, 3, 17}).constant(scalar(0.021f)).constant(zp(i8, {}, {4})).input(i8, {2, 3, 17})
        .constant(scalar(0.013f)).absent().constant(scalar(0.03f)).constant(zp(i8, {}, {-7})).attr("qmin", one(-7));
  });
  add("aotc.QLinearAdd uint8", [=](OneNode& n) {
    internal(n, "QLinearAdd").input(u8, {5, 13}).constant(scalar(0.05f)).constant(zp(u8, {}, {128})).input(u8, {5, 13})
        .constant(scalar(0.02f)).constant(zp(u8, {}, {100})).constant(scalar(0.07f)).constant(zp(u8, {}, {120}));
  });
  // Counts that are multiples of 16: the 16-bytes-per-thread path (VEC 16).
  add("aotc.QLinearAdd int8 16-element vectors with a ReLU clamp", [=](OneNode& n) {
    internal(n, "QLinearAdd").input(i8, {2, 7, 3, 16}).constant(scalar(0.021f)).absent().input(i8, {2, 7, 3, 16})
        .constant(scalar(0.013f)).absent().constant(scalar(0.03f)).absent().attr("qmin", one(0));
  });
  add("aotc.QLinearAdd uint8 16-element vectors", [=](OneNode& n) {
    internal(n, "QLinearAdd").input(u8, {3, 32}).constant(scalar(0.05f)).constant(zp(u8, {}, {128})).input(u8, {3, 32})
        .constant(scalar(0.02f)).constant(zp(u8, {}, {100})).constant(scalar(0.07f)).constant(zp(u8, {}, {120}));
  });
  // Scales whose integer form is proven (the FIXED route, QuantKernels.QLinearAddInIntegers...).
  add("aotc.QLinearAdd int8 in integers with a ReLU clamp", [=](OneNode& n) {
    internal(n, "QLinearAdd").input(i8, {2, 3, 17}).constant(scalar(0.0529f)).constant(zp(i8, {}, {3})).input(i8, {2, 3, 17})
        .constant(scalar(0.0371f)).constant(zp(i8, {}, {-7})).constant(scalar(0.0611f)).constant(zp(i8, {}, {5})).attr("qmin", one(5));
  });
  add("aotc.QLinearAdd uint8 16-element vectors in integers", [=](OneNode& n) {
    internal(n, "QLinearAdd").input(u8, {3, 32}).constant(scalar(0.0529f)).constant(zp(u8, {}, {128})).input(u8, {3, 32})
        .constant(scalar(0.0371f)).constant(zp(u8, {}, {100})).constant(scalar(0.0611f)).constant(zp(u8, {}, {120}));
  });
  add("aotc.QLinearConv dequantized to float with bias", [=](OneNode& n) {
    internal(n, "QLinearConv").input(i8, {1, 4, 5, 6}).constant(scalar(0.02f)).absent().input(i8, {3, 4, 3, 3})
        .constant(fvec({0.01f, 0.003f, 0.02f})).absent().absent().absent().constant(zp(i32, {3}, {100, -2000, 7}))
        .attr("pads", ints({1, 1, 1, 1}));
  });
  // channels_last without epilogue words (opt/layout_nhwc's depthwise / grouped layers inside an
  // NHWC chain): the direct kernel on NHWC x / y and KRSC w.
  std::vector<float> s24;
  for (int i = 0; i < 24; ++i) s24.push_back(0.001f * static_cast<float>(i + 1));
  std::vector<int64_t> b24;
  for (int i = 0; i < 24; ++i) b24.push_back((i * 37) % 200 - 100);
  add("aotc.QLinearConv channels_last depthwise, uint8 with zero points, requantized", [=](OneNode& n) {
    internal(n, "QLinearConv").input(u8, {2, 5, 7, 24}).constant(scalar(0.03f)).constant(zp(u8, {}, {7})).input(i8, {24, 3, 3, 1})
        .constant(fvec(s24)).absent().constant(scalar(0.05f)).constant(zp(u8, {}, {3})).constant(zp(i32, {24}, b24))
        .attr("group", one(24)).attr("pads", ints({1, 1, 1, 1})).attr("strides", ints({2, 1})).attr("channels_last", one(1))
        .attr("qmin", one(3));
  });
  add("aotc.QLinearConv channels_last grouped, dequantized", [=](OneNode& n) {
    internal(n, "QLinearConv").input(i8, {1, 4, 5, 8}).constant(scalar(0.02f)).constant(zp(i8, {}, {-4})).input(i8, {6, 3, 3, 4})
        .constant(fvec({0.01f, 0.003f, 0.02f, 0.004f, 0.005f, 0.006f})).absent().attr("group", one(2))
        .attr("pads", ints({0, 1, 2, 1})).attr("channels_last", one(1));
  });
  add("aotc.QLinearMatMul requantized with bias and a Clip clamp", [=](OneNode& n) {
    internal(n, "QLinearMatMul").input(i8, {2, 3, 9}).constant(scalar(0.03f)).absent().input(i8, {9, 5})
        .constant(fvec({0.01f, 0.02f, 0.005f, 0.03f, 0.015f})).absent().constant(scalar(0.05f)).constant(zp(i8, {}, {-3}))
        .constant(zp(i32, {5}, {50, -60, 70, 0, 9})).attr("qmin", one(-3)).attr("qmax", one(40));
  });
  add("TfIdfVectorizer TF int64 rows", [=](OneNode& n) {
    set_op(n, "TfIdfVectorizer").input(DType::kInt64, {3, 13}).attr("mode", Attribute::of_string("TF"))
        .attr("min_gram_length", one(1)).attr("max_gram_length", one(3)).attr("max_skip_count", one(2))
        .attr("ngram_counts", ints({0, 3, 7})).attr("ngram_indexes", ints({4, 0, 1, 2, 3, 5, 6, 7}))
        .attr("pool_int64s", ints({-1, 2, 3, 0, 1, 2, 3, 1, 0, 1, 2, 0, 1, 2, 3, 1}));
  }, 9);
  add("TfIdfVectorizer TFIDF int32 1-D", [=](OneNode& n) {
    set_op(n, "TfIdfVectorizer").input(i32, {29}).attr("mode", Attribute::of_string("TFIDF"))
        .attr("min_gram_length", one(2)).attr("max_gram_length", one(2)).attr("max_skip_count", one(3))
        .attr("ngram_counts", ints({0, 2})).attr("ngram_indexes", ints({0, 1, 2, 3, 1}))
        .attr("pool_int64s", ints({1, 2, 0, 1, 1, -1, 2, 3})).attr("weights", Attribute::of_floats({0.5f, 2.f, 1.5f, 3.f}));
  }, 9);
  return c;
}

// Full 8-bit ranges (saturation and both signs occur), small other integers (so TfIdf pools match),
// floats in [-3, 3).
Tensor random_input(const Value& v, uint32_t seed) {
  Tensor t(v.dtype, v.shape);
  double lo = -2, hi = 4;
  if (v.dtype == DType::kUInt8) lo = 0, hi = 256;
  if (v.dtype == DType::kInt8) lo = -128, hi = 128;
  if (v.dtype == DType::kInt16) lo = -32768, hi = 32768;
  if (v.dtype == DType::kUInt16) lo = 0, hi = 65536;
  if (dtype_is_float(v.dtype)) lo = -3, hi = 3;
  std::vector<double> vals = test::lcg_values(t.numel(), lo, hi, seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype_is_float(v.dtype)) t.set(i, vals[static_cast<size_t>(i)]);
    else t.set_int(i, static_cast<int64_t>(std::floor(vals[static_cast<size_t>(i)])));
  }
  return t;
}

struct Built {
  std::string label;
  std::unique_ptr<OneNode> node;
  Lowering lowering;
};

std::vector<Built> build_all() {
  std::vector<Built> out;
  for (const Case& c : cases()) {
    auto n = std::make_unique<OneNode>("", c.opset);
    c.build(*n);
    Status s = n->build(c.outputs);
    EXPECT_TRUE(s.is_ok()) << c.label << ": " << s.message();
    if (!s.is_ok()) continue;
    const OpDef* def = default_registry().find(n->built().op_type, n->built().domain);
    EXPECT_NE(def, nullptr) << c.label;
    if (!def) continue;
    auto l = def->lower(n->built(), n->graph);
    EXPECT_TRUE(l.is_ok()) << c.label << ": " << l.status().message();
    if (!l.is_ok()) continue;
    out.push_back({c.label, std::move(n), *l});
  }
  return out;
}

// Runs every case through `runner` and compares each output with the CPU reference.
void check_all(std::vector<Built>& built, const std::function<Status(size_t, const Lowering&, std::map<ValueId, Tensor>&)>& runner) {
  uint32_t seed = 7;
  for (size_t r = 0; r < built.size(); ++r) {
    OneNode& g = *built[r].node;
    std::vector<Tensor> inputs;
    std::map<ValueId, Tensor> values;
    for (ValueId id : g.graph.inputs) {
      Tensor t = random_input(g.graph.value(id), seed++);
      inputs.push_back(t);
      values[id] = t;
    }
    for (const Value& v : g.graph.values)
      if (v.constant) values[g.graph.find_value(v.name)] = *v.constant;
    auto want = g.run(inputs);
    ASSERT_TRUE(want.is_ok()) << built[r].label << ": " << want.status().message();
    for (ValueId id : g.built().outputs) {
      Tensor poisoned(g.graph.value(id).dtype, g.graph.value(id).shape);
      std::memset(poisoned.raw(), 0xFF, static_cast<size_t>(poisoned.byte_size()));
      values[id] = poisoned;
    }
    Status s = runner(r, built[r].lowering, values);
    ASSERT_TRUE(s.is_ok()) << built[r].label << ": " << s.message();
    for (size_t i = 0; i < g.built().outputs.size(); ++i) {
      std::string mismatch = test::compare_tensors(values[g.built().outputs[i]], (*want)[i]);
      EXPECT_TRUE(mismatch.empty()) << built[r].label << " output " << i << ": " << mismatch;
    }
  }
}

// The CPU emulation shim launches kernels of at most 6 pointer parameters; the integer matmul/conv
// kernels take 10. For the emulation only, such a kernel is rendered as <name>_impl behind a
// 2-parameter wrapper <name>(packed, unused) whose first argument is an array of the 10 pointers
// (see pack_args); nvcc and the GPU get the kernels exactly as codegen emits them.
constexpr size_t kEmulatedMaxArgs = 6;
const char* const kPackedCall = R"(
#include <utility>
template <class... P, size_t... I>
void aotc_test_call_packed(void (*f)(P...), void** p, std::index_sequence<I...>) { f(static_cast<P>(p[I])...); }
template <class... P>
void aotc_test_call_packed(void (*f)(P...), void** p) { aotc_test_call_packed(f, p, std::index_sequence_for<P...>{}); }
)";

std::string kernel_source(const std::vector<Built>& built, std::set<std::string>* templates, bool emulated = false) {
  std::string source = emulated ? kPackedCall : "";
  for (size_t r = 0; r < built.size(); ++r)
    for (size_t i = 0; i < built[r].lowering.steps.size(); ++i) {
      const LoweredStep& step = built[r].lowering.steps[i];
      if (step.kind != LoweredStep::Kind::kKernel) continue;
      const std::string name = "c" + std::to_string(r) + "_k" + std::to_string(i);
      const bool packed = emulated && step.kernel.args.size() > kEmulatedMaxArgs;
      auto text = testing_util::render_kernel(step.kernel, packed ? name + "_impl" : name);
      EXPECT_TRUE(text.is_ok()) << built[r].label << ": " << text.status().message();
      if (text.is_ok()) source += *text + "\n";
      if (packed)
        source += "extern \"C\" __global__ void " + name + "(void* packed, void*) { aotc_test_call_packed(" + name +
                  "_impl, static_cast<void**>(packed)); }\n";
      if (templates) templates->insert(step.kernel.template_name);
    }
  return source;
}

// The lowering as the emulation sees it: a kernel with more than 6 arguments gets one value
// holding its argument pointers (stable: std::map nodes and tensor bytes do not move).
Lowering pack_args(const Lowering& l, std::map<ValueId, Tensor>& values) {
  Lowering out = l;
  ValueId next = 1000000;
  for (LoweredStep& step : out.steps) {
    if (step.kind != LoweredStep::Kind::kKernel || step.kernel.args.size() <= kEmulatedMaxArgs) continue;
    Tensor ptrs(DType::kInt64, {static_cast<int64_t>(step.kernel.args.size())});
    for (size_t j = 0; j < step.kernel.args.size(); ++j) {
      const ValueId id = step.kernel.args[j];
      ptrs.data<int64_t>()[j] = id == kNullArg ? 0 : static_cast<int64_t>(reinterpret_cast<intptr_t>(values.at(id).raw()));
    }
    values[next] = ptrs;
    step.kernel.args = {next, next};
    ++next;
  }
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(QuantKernels, AllTemplatesCompileWithNvcc) {
  std::vector<Built> built = build_all();
  std::set<std::string> used;
  std::string source = read_text(std::string(AOTC_SOURCE_DIR) + "/templates/common.cuh") + "\n" + kernel_source(built, &used);
  for (const char* t : {"quantize_linear", "dequantize_linear", "dynamic_quantize_linear", "integer_matmul", "integer_conv", "tfidf",
                        "qlinear_add"})
    EXPECT_TRUE(used.count(t)) << "template not exercised: " << t;
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no nvcc: rendered, not compiled";
  Status s = testing_util::nvcc_compile(source, "sm_90", false, "/tmp/aotc_ops_quant_" + std::to_string(getpid()) + ".o");
  EXPECT_TRUE(s.is_ok()) << s.message();
  std::remove(("/tmp/aotc_ops_quant_" + std::to_string(getpid()) + ".o").c_str());
}

// The requantization's route per GPU (int8_requant.cuh AOTC_REQUANT_FP64_POOR): the exact fp32 route
// where FP64 runs at 1/64 of the FP32 rate (Jetson Orin's sm_87, sm_86, sm_89), the double path on
// sm_80 / sm_90 / sm_100 - checked by compiling the header for each arch with nvcc, where a
// static_assert states the expected choice (the host side's is 0).
TEST(QuantKernels, RequantRouteFollowsTheArchitecturesFp64Rate) {
  static_assert(AOTC_REQUANT_FP64_POOR == 0, "the host takes the double path");
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no nvcc";
  const std::string source = R"(
#include "int8_requant.cuh"
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890
static_assert(AOTC_REQUANT_FP64_POOR == 1, "FP64-poor GPU: the fp32 route");
#elif __CUDA_ARCH__ == 800 || __CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000
static_assert(AOTC_REQUANT_FP64_POOR == 0, "fast FP64: the double path");
#else
#error "an architecture this test does not list"
#endif
#endif
extern "C" __global__ void requant_route_probe(int* out) { *out = AOTC_REQUANT_FP64_POOR; }
)";
  for (const char* arch : {"sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100"}) {
    const std::string out = "/tmp/aotc_requant_route_" + std::string(arch) + "_" + std::to_string(getpid()) + ".o";
    Status s = testing_util::nvcc_compile(source, arch, false, out);
    EXPECT_TRUE(s.is_ok()) << arch << ": " << s.message();
    std::remove(out.c_str());
    std::remove((out + ".cu").c_str());
    std::remove((out + ".log").c_str());
  }
}

// aotc.QLinearAdd divides by y_scale with the reciprocal and one FMA correction only where the
// lowering proved that exact for every pair of 8-bit inputs (the emulated and GPU runs above then
// compare that route with the reference's IEEE division): constant scales and zero points give
// the route for these scales; a y_scale that is a graph input (unknown at compile time) does not.
// The value of `hole` in the lowering of an int8 aotc.QLinearAdd [4, 16] with scales sa, sb and
// y_scale sy (a graph input where !constant_y_scale), y_zero_point -7 and clamp [qmin, 127].
std::string qlinear_add_hole(const std::string& hole, bool constant_y_scale, float sy, float sa, float sb,
                             int64_t qmin = -128) {
  OneNode n("QLinearAdd");
  n.node.domain = "aotc";
  n.input(DType::kInt8, {4, 16}).constant(test::make_tensor(DType::kFloat32, {}, {sa})).absent().input(DType::kInt8, {4, 16});
  n.constant(test::make_tensor(DType::kFloat32, {}, {sb})).absent();
  if (constant_y_scale) n.constant(test::make_tensor(DType::kFloat32, {}, {sy}));
  else n.input(DType::kFloat32, {});
  n.constant(test::make_tensor(DType::kInt8, {}, {-7}));
  n.node.attrs["qmin"] = Attribute::of_int(qmin);
  EXPECT_TRUE(n.build().is_ok());
  auto lowered = default_registry().find("QLinearAdd", "aotc")->lower(n.built(), n.graph);
  EXPECT_TRUE(lowered.is_ok());
  if (!lowered.is_ok()) return "(failed)";
  for (const auto& [name, text] : lowered->steps[0].kernel.holes)
    if (name == hole) return text;
  return "(none)";
}

TEST(QuantKernels, QLinearAddTakesTheReciprocalRouteOnlyWhereProvenExact) {
  auto route = [](bool constant_y_scale, float sy, float sa = 0.021f, float sb = 0.013f) {
    return qlinear_add_hole("RECIPROCAL", constant_y_scale, sy, sa, sb);
  };
  EXPECT_EQ(route(true, 0.03f), "true");
  EXPECT_EQ(route(true, 0.07f), "true");
  EXPECT_EQ(route(false, 0.03f), "false");
  EXPECT_EQ(route(true, 0.0f), "false");  // not a normal divisor
  // Layers of random scales in [1e-3, 0.2] (docs/perf_notes.md v48 cites this count): the route
  // applies to every one of them.
  std::mt19937 rng(48);
  std::uniform_real_distribution<float> scale(1e-3f, 0.2f);
  int taken = 0;
  for (int i = 0; i < 200; ++i) taken += route(true, scale(rng), scale(rng), scale(rng)) == "true" ? 1 : 0;
  EXPECT_EQ(taken, 200);
}

// The integer form (FIXED: floor((a va + b vb + c) / 2^k), int8_requant.cuh
// aotc_qlinear_add_fixed) only where the lowering proved it for every pair of 8-bit inputs: scales
// with arbitrary ratios get it, ratios that make exact halves (rint rounds them to even, a shift
// cannot) and a y_scale known only at run time do not. The kernels above that take it run against
// the reference in EmulatedOnCpuMatchReference / GpuMatchesReference.
TEST(QuantKernels, QLinearAddInIntegersOnlyWhereProvenExact) {
  auto route = [](bool constant_y_scale, float sy, float sa, float sb, int64_t qmin = -128) {
    return qlinear_add_hole("FIXED", constant_y_scale, sy, sa, sb, qmin);
  };
  EXPECT_EQ(route(true, 0.0611f, 0.0529f, 0.0371f), "true");
  EXPECT_EQ(route(true, 0.0611f, 0.0529f, 0.0371f, -7), "true");
  EXPECT_EQ(route(true, 1.0f, 0.5f, 0.5f), "false");     // (a + b) / 2: exact halves
  EXPECT_EQ(route(true, 0.04f, 0.05f, 0.03f), "false");  // 1.25 a + 0.75 b: exact halves too
  EXPECT_EQ(route(false, 0.0611f, 0.0529f, 0.0371f), "false");
  // Random scales in [1e-3, 0.2]: how many get constants is recorded as the test property
  // "proven" (--gtest_output=xml shows it; docs/perf_notes.md v54 gives the count).
  std::mt19937 rng(54);
  std::uniform_real_distribution<float> scale(1e-3f, 0.2f);
  int taken = 0;
  for (int i = 0; i < 100; ++i) taken += route(true, scale(rng), scale(rng), scale(rng)) == "true" ? 1 : 0;
  RecordProperty("proven", taken);
  EXPECT_GE(taken, 80);
}

// The proof's constants against an independent reference: aotc.QLinearAdd's CPU reference (a
// double rint of the float quotient, not int8_requant.cuh's) on all 256 x 256 pairs, int8 and
// uint8, with zero points and a clamp.
TEST(QuantKernels, QLinearAddIntegerFormMatchesTheReferenceOnEveryPair) {
  struct Case { DType ta, tb; float sa, za, sb, zb, sy; int zy, qmin, qmax; };
  const Case cases[] = {{DType::kInt8, DType::kInt8, 0.0529f, 3, 0.0371f, -7, 0.0611f, 5, 5, 127},
                        {DType::kUInt8, DType::kUInt8, 0.0529f, 128, 0.0371f, 100, 0.0611f, 120, 0, 255},
                        {DType::kUInt8, DType::kInt8, 0.0173f, 0, 0.0462f, -3, 0.0307f, 0, 2, 255}};
  for (const Case& c : cases) {
    const auto fx = qlinear_add_exact_fixed(c.sa, c.za, c.sb, c.zb, c.sy, c.zy, c.qmin, c.qmax, c.ta, c.tb);
    ASSERT_TRUE(fx.has_value()) << c.sa << " " << c.sb << " " << c.sy;
    const int a_lo = c.ta == DType::kInt8 ? -128 : 0, b_lo = c.tb == DType::kInt8 ? -128 : 0;
    Tensor a(c.ta, {65536}), b(c.tb, {65536}), y(c.qmin < 0 || c.qmax <= 127 ? DType::kInt8 : DType::kUInt8, {65536});
    for (int i = 0; i < 65536; ++i) {
      a.set_int(i, a_lo + i / 256);
      b.set_int(i, b_lo + i % 256);
    }
    Node n;
    n.op_type = "QLinearAdd";
    n.domain = "aotc";
    n.attrs["qmin"] = Attribute::of_int(c.qmin);
    n.attrs["qmax"] = Attribute::of_int(c.qmax);
    const Tensor sa = Tensor::from_floats({}, {c.sa}), sb = Tensor::from_floats({}, {c.sb}), sy = Tensor::from_floats({}, {c.sy});
    Tensor za(c.ta, {}), zb(c.tb, {}), zy(y.dtype(), {});
    za.set_int(0, static_cast<int64_t>(c.za));
    zb.set_int(0, static_cast<int64_t>(c.zb));
    zy.set_int(0, c.zy);
    std::vector<Tensor> out = {y};
    ASSERT_TRUE(default_registry().find("QLinearAdd", "aotc")->reference(n, {&a, &sa, &za, &b, &sb, &zb, &sy, &zy}, out).is_ok());
    int mismatches = 0;
    for (int i = 0; i < 65536; ++i) {
      const int32_t got = aotc_rq_clamp(aotc_qlinear_add_fixed(a_lo + i / 256, b_lo + i % 256, fx->a, fx->b, fx->c, fx->k),
                                        c.qmin, c.qmax);
      mismatches += got != out[0].get_int(i) ? 1 : 0;
    }
    EXPECT_EQ(mismatches, 0) << c.sa << " " << c.sb << " " << c.sy;
  }
  // The fused Adds' words carry the constants through the params builders (pack / unpack).
  aotc_fused_add_scalars s;
  s.t_scale = 0.0529f;
  s.r_scale = 0.0371f;
  s.out_scale = 0.0611f;
  s.fx_a = -123456789;
  s.fx_b = 987654;
  s.fx_c = -2000000000;
  s.fx_k = 23;
  s.add_qmin = -126;
  long long words[kAotcFusedAddArgs];
  aotc_fused_add_pack(s, words);
  const aotc_fused_add_scalars back = aotc_fused_add_unpack(words);
  EXPECT_EQ(back.t_scale, s.t_scale);
  EXPECT_EQ(back.out_scale, s.out_scale);
  EXPECT_EQ(back.fx_a, s.fx_a);
  EXPECT_EQ(back.fx_b, s.fx_b);
  EXPECT_EQ(back.fx_c, s.fx_c);
  EXPECT_EQ(back.fx_k, s.fx_k);
  EXPECT_EQ(back.add_qmin, s.add_qmin);
}

// QuantizeLinear takes 16 elements a thread only for a per-tensor 8-bit quantization of a float x
// whose count divides by 16 (the emulated / GPU runs above check the values).
TEST(QuantKernels, QuantizeLinearVectorsOnlyWhereTheyApply) {
  auto vec = [](DType x, Shape shape, std::vector<double> scales, DType q) {
    OneNode n("QuantizeLinear");
    n.input(x, shape).constant(test::make_tensor(DType::kFloat32, {static_cast<int64_t>(scales.size())}, scales));
    n.constant(Tensor(q, {static_cast<int64_t>(scales.size())}));
    if (scales.size() > 1) n.node.attrs["axis"] = Attribute::of_int(1);
    EXPECT_TRUE(n.build().is_ok());
    auto lowered = default_registry().find("QuantizeLinear")->lower(n.built(), n.graph);
    EXPECT_TRUE(lowered.is_ok());
    for (const auto& [hole, text] : lowered->steps[0].kernel.holes)
      if (hole == "VEC") return text;
    return std::string("(none)");
  };
  EXPECT_EQ(vec(DType::kFloat16, {2, 64}, {0.02f}, DType::kInt8), "16LL");
  EXPECT_EQ(vec(DType::kFloat32, {2, 64}, {0.02f}, DType::kUInt8), "16LL");
  EXPECT_EQ(vec(DType::kFloat16, {2, 63}, {0.02f}, DType::kInt8), "1LL");               // count
  EXPECT_EQ(vec(DType::kFloat16, {2, 2, 32}, {0.02f, 0.03f}, DType::kInt8), "1LL");    // per axis
  EXPECT_EQ(vec(DType::kFloat32, {2, 64}, {0.02f}, DType::kInt16), "1LL");             // 16-bit y
}

TEST(QuantKernels, EmulatedOnCpuMatchReference) {
  std::vector<Built> built = build_all();
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, kernel_source(built, nullptr, true));
  check_all(built, [&](size_t r, const Lowering& l, std::map<ValueId, Tensor>& values) {
    return testing_util::run_on_cpu(*handle, "c" + std::to_string(r) + "_", pack_args(l, values), values);
  });
}

TEST(QuantKernels, GpuMatchesReference) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  std::vector<Built> built = build_all();
  check_all(built, [&](size_t, const Lowering& l, std::map<ValueId, Tensor>& values) { return gpu->run(l, values); });
}

}  // namespace
}  // namespace aotc
