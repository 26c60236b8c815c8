// Gemm, aotc.FusedGemm (Y = act(alpha * A'B' + beta * C + Residual)), MatMul (numpy semantics:
// 1-D operands, broadcast batch dims) and aotc.MatMulT (MatMul of operands stored with their last
// two axes swapped, attributes transA / transB: opt/fuse_matmul_transpose.cc absorbs a Transpose
// into cuBLASLt's operand layout that way). The product is a cuBLASLt call (MatmulStep, fp32 compute,
// no TF32) using its C / bias / ReLU epilogue where that is exact; what it cannot express (a
// broadcast C with beta != 1, a broadcast residual, other activations) runs in a small epilogue
// kernel (templates/gemm_epilogue.cu.in) over Y in place. Batched MatMul whose batch broadcast
// strides cannot express runs in one kernel (templates/gemm_batched_broadcast.cu.in) instead. A
// float GEMM of few rows (cuBLASLt's tiles would not fill the GPU; ir/ops/conv_configs.h
// simt_gemm_plan) runs on CUTLASS's SIMT GEMM with the whole epilogue (any activation) fused, split-K
// slices summed inside the kernel across a thread-block cluster (sm_90+) or by
// templates/gemm_splitk_reduce.cu.in (simt_gemm_lowering); a 16-bit one (tc_gemm_plan, sm_90+) on
// the same template's tensor-op form, always summed in a cluster.
#include <algorithm>

#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/epilogue.h"
#include "ir/ops/op_helpers.h"
#include "ir/parallel.h"

namespace aotc {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};
constexpr size_t kResidualInput = 3;

std::string compute_type(DType t) { return t == DType::kFloat64 ? "double" : "float"; }

// ---- Gemm / FusedGemm ----

struct GemmDims { int64_t m = 0, n = 0, k = 0; };

GemmDims gemm_dims(const Node& node, const Shape& a, const Shape& b) {
  GemmDims d;
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  d.m = ta ? a[1] : a[0];
  d.k = ta ? a[0] : a[1];
  d.n = tb ? b[0] : b[1];
  return d;
}

// aotc.FusedGemm attribute `output_dtype` (an ONNX float type number): Y's dtype when it differs
// from the inputs' (fp16 x fp16 -> fp32 Y: the fp32 accumulator rounded once, no Cast kernel).
DType gemm_output_dtype(const Node& node, DType input) {
  return node.domain == "aotc" && node.has_attr("output_dtype") ? static_cast<DType>(node.attr_int("output_dtype", 0))
                                                                : input;
}

// C (and Residual) must broadcast one way to [M, N]: rank <= 2, each right-aligned dim 1 or equal.
bool broadcasts_to(const Shape& s, int64_t m, int64_t n) {
  if (s.size() > 2) return false;
  int64_t rows = s.size() == 2 ? s[0] : 1, cols = s.empty() ? 1 : s.back();
  return (rows == 1 || rows == m) && (cols == 1 || cols == n);
}

Status gemm_import(Node& node, Graph&, int64_t opset) {
  // Gemm before opset 7 broadcast C only when broadcast=1; always broadcasting accepts every
  // valid old model with the same result.
  if (opset < 7) node.attrs.erase("broadcast");
  return Status::ok();
}

Status gemm_infer(Node& node, Graph& graph) {
  const bool fused = node.op_type == "FusedGemm";
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, fused ? 4 : 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kFloatTypes));
  DType t = input_value(graph, node, 0).dtype;
  const bool float_output = fused && node.has_attr("output_dtype");
  for (size_t i = 1; i < node.inputs.size(); ++i)
    if (node.input(i) != kNoValue)  // output_dtype float: C (a bias row) is in Y's type, float32
      AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {i == 2 && float_output ? DType::kFloat32 : t}));
  AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 0, 2));
  AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 1, 2));
  const Shape& a = input_value(graph, node, 0).shape;
  const Shape& b = input_value(graph, node, 1).shape;
  GemmDims d = gemm_dims(node, a, b);
  int64_t kb = node.attr_int("transB", 0) ? b[1] : b[0];
  if (kb != d.k)
    return node_error(node, "inner dims differ: A " + shape_str(a) + (node.attr_int("transA", 0) ? " (transposed)" : "") +
                                " and B " + shape_str(b) + (node.attr_int("transB", 0) ? " (transposed)" : ""));
  for (size_t i : {size_t{2}, kResidualInput})
    if (node.input(i) != kNoValue && !broadcasts_to(input_value(graph, node, i).shape, d.m, d.n))
      return node_error(node, std::string("input ") + std::to_string(i) + (i == 2 ? " (C)" : " (Residual)") +
                                  " of shape " + shape_str(input_value(graph, node, i).shape) +
                                  " does not broadcast to " + shape_str({d.m, d.n}));
  AOTC_RETURN_IF_ERROR(check_activation_known(node, node));
  DType out = t;
  if (float_output) {
    const int64_t o = node.attrs.at("output_dtype").kind == Attribute::Kind::kInt ? node.attr_int("output_dtype", 0) : -1;
    const ValueId c = node.input(2);
    const bool bias_row = c == kNoValue || (node.attr_float("beta", 1.0f) == 1.0f &&
                                            (graph.value(c).shape == Shape{d.n} || graph.value(c).shape == Shape{1, d.n}));
    if (o != static_cast<int64_t>(DType::kFloat32) || (t != DType::kFloat16 && t != DType::kBFloat16) || !bias_row ||
        node.input(kResidualInput) != kNoValue || has_activation(node))
      return node_error(node, "output_dtype must be float (1), for 16-bit inputs without residual or activation, and C "
                              "only as a float bias row [N] added with beta 1");
    out = DType::kFloat32;
  }
  // aotc.FusedGemm attribute `output_shape`: Y's rows [M, N] seen under another shape of the same
  // size and last dim (a reshape absorbed, so Y can be a graph output written in place).
  Shape y_shape = {d.m, d.n};
  if (fused && node.has_attr("output_shape")) {
    const Shape s = node.attr_ints("output_shape");
    bool ok = node.attrs.at("output_shape").kind == Attribute::Kind::kInts && !s.empty() && s.back() == d.n;
    for (int64_t x : s) ok = ok && x >= 0;
    if (!ok || shape_numel(s) != d.m * d.n)
      return node_error(node, "output_shape " + shape_str(s) + " must hold the " + shape_str(y_shape) +
                                  " rows with the same last dim");
    y_shape = s;
  }
  set_output(graph, node, 0, out, y_shape);
  return Status::ok();
}

// Flat index into a tensor of shape s (broadcast to [M, N]) for element (i, j).
int64_t broadcast_index(const Shape& s, int64_t i, int64_t j) {
  int64_t rows = s.size() == 2 ? s[0] : 1, cols = s.empty() ? 1 : s.back();
  return (rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j);
}

Status gemm_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  const Tensor* c = inputs.size() > 2 ? inputs[2] : nullptr;
  const Tensor* r = inputs.size() > kResidualInput ? inputs[kResidualInput] : nullptr;
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const double alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  GemmDims d = gemm_dims(node, a.shape(), b.shape());
  std::vector<double> ad = a.to_doubles(), bd = b.to_doubles();
  Tensor& y = outputs[0];
  parallel_for(d.m, d.n * d.k, [&](int64_t row_begin, int64_t row_end) {  // rows are independent
    for (int64_t i = row_begin; i < row_end; ++i)
      for (int64_t j = 0; j < d.n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < d.k; ++p)
          acc += ad[static_cast<size_t>(ta ? p * d.m + i : i * d.k + p)] * bd[static_cast<size_t>(tb ? j * d.k + p : p * d.n + j)];
        double v = alpha * acc;
        if (c) v += beta * c->get(broadcast_index(c->shape(), i, j));
        if (r) v += r->get(broadcast_index(r->shape(), i, j));
        y.set(i * d.n + j, v);
      }
  });
  return apply_activation_reference(node, y);
}

bool is_plain_relu(const Node& node) {
  if (!has_activation(node)) return false;
  Node act = load_activation(node);
  return act.op_type == "Relu" && act.attrs.empty();
}

// Gelu(approximate="tanh"): exactly the formula of cuBLASLt's GELU epilogue.
bool is_tanh_gelu(const Node& node) {
  if (!has_activation(node)) return false;
  Node act = load_activation(node);
  return act.op_type == "Gelu" && act.domain.empty() && act.attr_string("approximate", "none") == "tanh" &&
         act.attrs.size() == 1;
}

}  // namespace

KernelStep matmul_reference_kernel(const MatmulStep& m, const std::string& comment) {
  using E = MatmulStep::Epilogue;
  const DType td = m.d_dtype == DType::kUndefined ? m.dtype : m.d_dtype;
  const int act = (m.epilogue == E::kRelu || m.epilogue == E::kBiasRelu)   ? 1
                  : (m.epilogue == E::kGelu || m.epilogue == E::kBiasGelu) ? 2
                                                                            : 0;
  KernelStep k;
  k.template_name = "gemm_reference";
  k.holes = {{"comment", comment},
             {"T", dtype_c_type(m.dtype)},
             {"TD", dtype_c_type(td)},
             {"ACC", compute_type(m.dtype)},
             {"M", int_literal(m.m)}, {"N", int_literal(m.n)}, {"K", int_literal(m.k)}, {"BATCH", int_literal(m.batch)},
             {"LDA", int_literal(m.lda)}, {"LDB", int_literal(m.ldb)}, {"LDC", int_literal(m.ldc)}, {"LDD", int_literal(m.ldd)},
             {"SA", int_literal(m.stride_a)}, {"SB", int_literal(m.stride_b)},
             {"SC", int_literal(m.stride_c)}, {"SD", int_literal(m.stride_d)},
             {"TRANS_A", m.trans_a ? "true" : "false"}, {"TRANS_B", m.trans_b ? "true" : "false"},
             {"HAS_C", m.c != kNullArg && m.beta != 0.0f ? "true" : "false"},
             {"HAS_BIAS", MatmulStep::has_bias(m.epilogue) ? "true" : "false"},
             {"ACT", std::to_string(act)},
             {"ALPHA", float_literal(m.alpha)}, {"BETA", float_literal(m.beta)}};
  k.args = {m.a, m.b, m.c, m.d, MatmulStep::has_bias(m.epilogue) ? m.bias : kNullArg};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(m.batch * m.m * m.n, 256);
  return k;
}

namespace {

LoweredStep matmul_step(MatmulStep m) {
  LoweredStep s;
  s.kind = LoweredStep::Kind::kMatmul;
  s.matmul = m;
  return s;
}

// The float GEMM `m` (one matrix, row-major A; its epilogue field is not read: bias is m.bias) on
// CUTLASS's SIMT GEMM (simt_gemm_plan), or the 16-bit one on its tensor-op form (tc_gemm_plan,
// always a cluster kernel): one library kernel whose epilogue computes
// act(alpha * AB + bias + beta * C) with `act` (a CUDA expression of v). When K is split: with a
// cluster (plan.cluster) still that one kernel, its CTAs summing their slices through distributed
// shared memory; else the kernel writing one fp32 partial product per slice to the node's scratch
// and the reduction kernel summing them and applying that epilogue.
Lowering simt_gemm_lowering(const MatmulStep& m, const SimtGemmPlan& plan, const std::string& act,
                            const std::string& comment) {
  const ConvKernelConfig& cfg = *plan.config;
  // The tensor-op form (16-bit operands, tc_gemm_plan) is always the cluster kernel.
  const bool tensor_op = cfg.math == ConvMath::kTensorOp;
  // K slices summed by the reduction kernel (no cluster): the GEMM writes bare partials to the
  // scratch and the reduction applies the epilogue. With a cluster the kernel does both.
  const bool reduce = plan.split > 1 && !plan.cluster;
  const bool has_bias = m.bias != kNullArg;
  const bool has_c = m.c != kNullArg && m.beta != 0.0f;
  KernelStep k;
  k.template_name = "cutlass_gemm";
  const std::string split_text = plan.split > 1 ? (plan.cluster ? " cluster split-K " : " split-K ") + std::to_string(plan.split) : "";
  k.holes = {{"comment", comment + " config " + cfg.name + split_text},
             {"ELEMENT", tensor_op ? cutlass_element(m.dtype) : "float"},
             {"TENSOR_OP", tensor_op ? "1" : "0"},
             {"CLUSTER", int_literal(plan.cluster ? plan.split : 1)},
             {"CLUSTER_DIMS", plan.cluster ? "__cluster_dims__(1, 1, " + std::to_string(plan.split) + ")" : ""},
             {"LAYOUT_B", m.trans_b ? "ColumnMajor" : "RowMajor"},
             {"OP_CLASS", tensor_op ? "cutlass::arch::OpClassTensorOp" : "cutlass::arch::OpClassSimt"},
             {"INSTRUCTION", tensor_op ? "16, 8, 16" : "1, 1, 1"},
             {"TB_M", int_literal(cfg.tb_m)}, {"TB_N", int_literal(cfg.tb_n)}, {"TB_K", int_literal(cfg.tb_k)},
             {"WARP_M", int_literal(cfg.warp_m)}, {"WARP_N", int_literal(cfg.warp_n)}, {"WARP_K", int_literal(cfg.warp_k)},
             {"STAGES", int_literal(cfg.stages)},
             {"ALIGN_A", tensor_op ? "8" : "1"},
             {"ALIGN_B", tensor_op ? "8" : "1"},
             // The slices write the bare product: one instantiation serves every activation.
             {"act_expr", reduce ? "v" : act}};
  k.library_params = true;
  k.builder_args = {m.m, m.n, m.k, m.lda, m.ldb, has_c ? m.ldc : 0, m.ldd, plan.split,
                    float_builder_arg(reduce ? 1.0f : m.alpha), float_builder_arg(reduce || !has_c ? 0.0f : m.beta)};
  k.args = {m.a, m.b, has_bias && !reduce ? m.bias : kNullArg, has_c && !reduce ? m.c : kNullArg,
            reduce ? kScratchArg : m.d};
  // Informative only: the builder reports the real launch shape.
  k.grid = Dim3{(m.m + cfg.tb_m - 1) / cfg.tb_m, (m.n + cfg.tb_n - 1) / cfg.tb_n, plan.split};
  k.block = Dim3{32 * (cfg.tb_m / cfg.warp_m) * (cfg.tb_n / cfg.warp_n), 1, 1};
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  if (!reduce) return l;
  l.scratch_bytes = plan.split * m.m * m.n * static_cast<int64_t>(sizeof(float));
  const int64_t vec = m.n % 4 == 0 ? 4 : 1;
  KernelStep r;
  r.template_name = "gemm_splitk_reduce";
  r.holes = {{"comment", comment + ": sum of the " + std::to_string(plan.split) + " split-K slices, epilogue"},
             {"T", "float"},
             {"M", int_literal(m.m)}, {"N", int_literal(m.n)},
             {"LDC", int_literal(has_c ? m.ldc : 0)}, {"LDD", int_literal(m.ldd)},
             {"SPLIT", int_literal(plan.split)}, {"VEC", int_literal(vec)},
             {"HAS_BIAS", has_bias ? "true" : "false"}, {"HAS_C", has_c ? "true" : "false"},
             {"ALPHA", float_literal(m.alpha)}, {"BETA", float_literal(has_c ? m.beta : 0.0f)},
             {"act_expr", act}};
  r.args = {kScratchArg, has_bias ? m.bias : kNullArg, has_c ? m.c : kNullArg, m.d};
  r.block = Dim3{256, 1, 1};
  r.grid = grid_for(m.m * m.n / vec, 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, r, {}});
  return l;
}

// The 16-bit GEMM `m` (row-major A, no C) on CUTLASS 3.x's sm_90a GEMM
// (templates/cutlass_gemm_sm90.cu.in): one library kernel whose epilogue computes
// act(alpha * AB + bias) with `act` (a CUDA expression of v); its params are built at compile
// time (KernelStep::host_params), with the target's SM count for the persistent grid.
Lowering wgmma_gemm_lowering(const MatmulStep& m, const GemmWgmmaConfig& cfg, const Target& target,
                             const std::string& act, const std::string& comment) {
  const bool has_bias = m.bias != kNullArg;
  KernelStep k;
  k.template_name = "cutlass_gemm_sm90";
  k.holes = {{"comment", comment + " config " + cfg.name},
             {"ELEMENT", cutlass_element(m.dtype)},
             {"LAYOUT_B", m.trans_b ? "ColumnMajor" : "RowMajor"},
             {"TILE_M", int_literal(cfg.tb_m)}, {"TILE_N", int_literal(cfg.tb_n)}, {"TILE_K", int_literal(cfg.tb_k)},
             {"PINGPONG", cfg.pingpong ? "true" : "false"},
             {"act_expr", act}};
  k.library_params = true;
  k.host_params = true;
  k.builder_args = {m.m, m.n, m.k, m.lda, m.ldb, m.ldd, has_bias ? 1 : 0, target.sm_count, float_builder_arg(m.alpha)};
  k.args = {m.a, m.b, has_bias ? m.bias : kNullArg, m.d};
  // Informative only: the compile-time builder reports the real launch shape (persistent: at most
  // one CTA an SM).
  k.grid = Dim3{std::min<int64_t>(gemm_wgmma_tiles(cfg, m.m, m.n), target.sm_count), 1, 1};
  k.block = Dim3{384, 1, 1};
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

Expected<Lowering> gemm_lower(const Node& node, const Graph& graph) {
  AOTC_RETURN_IF_ERROR(check_activation_lowerable(node, node));
  const Value& av = input_value(graph, node, 0);
  const Value& bv = input_value(graph, node, 1);
  if (av.dtype == DType::kFloat64)
    return node_error(node, "double Gemm is not supported on the GPU (the cuBLASLt path takes float and float16)");
  GemmDims d = gemm_dims(node, av.shape, bv.shape);
  Lowering l;
  if (d.m * d.n == 0) return l;  // nothing to write
  if (d.k == 0) return node_error(node, "a Gemm with inner dimension 0 is not supported on the GPU");
  const float beta = node.attr_float("beta", 1.0f);
  const ValueId c = node.input(2), r = node.input(kResidualInput);
  const Shape full = {d.m, d.n};

  MatmulStep mm;
  mm.dtype = av.dtype;
  mm.a = node.inputs[0];
  mm.b = node.inputs[1];
  mm.d = node.outputs[0];
  mm.m = d.m; mm.n = d.n; mm.k = d.k;
  mm.trans_a = node.attr_int("transA", 0) != 0;
  mm.trans_b = node.attr_int("transB", 0) != 0;
  mm.lda = mm.trans_a ? d.m : d.k;
  mm.ldb = mm.trans_b ? d.k : d.n;
  const DType out_t = gemm_output_dtype(node, av.dtype);
  if (out_t != av.dtype) mm.d_dtype = out_t;
  mm.ldc = d.n;
  mm.ldd = d.n;
  mm.alpha = node.attr_float("alpha", 1.0f);
  mm.beta = 0.0f;

  bool kernel_c = false, kernel_r = false, bias = false;
  if (c != kNoValue) {
    const Shape& cs = graph.value(c).shape;
    if (cs == full) {
      mm.c = c;
      mm.beta = beta;
    } else if (beta == 1.0f && (cs == Shape{d.n} || cs == Shape{1, d.n})) {
      mm.bias = c;  // a row vector added to every row: cuBLASLt's bias epilogue, exactly
      bias = true;
    } else {
      kernel_c = true;
    }
  }
  if (r != kNoValue) {
    if (graph.value(r).shape == full && mm.c == kNullArg) {
      mm.c = r;
      mm.beta = 1.0f;
    } else {
      kernel_r = true;
    }
  }
  // cuBLASLt applies its epilogue activation to alpha*AB + beta*C + bias: ReLU and the tanh GELU
  // go there unless a C or residual needs the epilogue kernel anyway.
  const bool gelu = is_tanh_gelu(node);
  const bool kernel_act = has_activation(node) && (kernel_c || kernel_r || !(is_plain_relu(node) || gelu));
  const bool act_in_matmul = has_activation(node) && !kernel_act;
  using E = MatmulStep::Epilogue;
  if (!kernel_c && !kernel_r && mm.c == kNullArg && !mm.trans_a && mm.trans_b &&
      gemv_applies(graph.target, av.dtype, d.m, d.n, d.k)) {
    // One row against a [N][K] weight: the warp-per-column kernel, every activation in it.
    KernelStep k;
    k.template_name = "gemv_rows";
    k.holes = {{"comment", node.op_type + " " + shape_str(full) + " K " + std::to_string(d.k) + " as a GEMV"},
               {"T", dtype_c_type(av.dtype)},
               {"TD", dtype_c_type(out_t)},
               {"TBIAS", dtype_c_type(bias ? graph.value(c).dtype : av.dtype)},
               {"M", int_literal(d.m)}, {"N", int_literal(d.n)}, {"K", int_literal(d.k)},
               {"HAS_BIAS", bias ? "1" : "0"},
               {"ALPHA", float_literal(mm.alpha)},
               {"act_expr", has_activation(node) ? activation_expr(node, graph, "v") : "v"}};
    k.args = {mm.a, mm.b, bias ? mm.bias : kNullArg, mm.d};
    k.block = Dim3{256, 1, 1};
    k.grid = Dim3{(d.n + 7) / 8, 1, 1};
    l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
    return l;
  }
  if (!kernel_c && !kernel_r && !mm.trans_a && out_t == av.dtype) {
    // Few rows: float on the SIMT GEMM, 16-bit on its tensor-op form; every activation in the
    // epilogue.
    auto plan = simt_gemm_plan(graph.target, av.dtype, d.m, d.n, d.k);
    if (!plan) plan = tc_gemm_plan(graph.target, av.dtype, d.m, d.n, d.k, mm.trans_b);
    if (plan)
      return simt_gemm_lowering(mm, *plan, activation_expr(node, graph, "v"),
                                node.op_type + " " + shape_str(full) + " K " + std::to_string(d.k));
  }
  // An activation cuBLASLt's epilogue lacks, on a GEMM that fills the GPU: CUTLASS 3.x's sm_90a
  // GEMM with bias and activation in its epilogue (no epilogue kernel). Its TMA descriptors hold
  // the operands' addresses: only operands fixed at create.
  if (kernel_act && !kernel_c && !kernel_r && mm.c == kNullArg && !mm.trans_a && out_t == av.dtype &&
      (!bias || graph.value(c).dtype == av.dtype) && fixed_address(graph, mm.a) && fixed_address(graph, mm.b) &&
      fixed_address(graph, mm.d)) {
    if (auto cfg = gemm_wgmma_config(graph.target, av.dtype, d.m, d.n, d.k))
      return wgmma_gemm_lowering(mm, *cfg, graph.target, activation_expr(node, graph, "v"),
                                 node.op_type + " " + shape_str(full) + " K " + std::to_string(d.k));
  }
  mm.epilogue = !act_in_matmul ? (bias ? E::kBias : E::kNone)
                : gelu         ? (bias ? E::kBiasGelu : E::kGelu)
                               : (bias ? E::kBiasRelu : E::kRelu);
  l.steps.push_back(matmul_step(mm));
  if (!kernel_c && !kernel_r && !kernel_act) return l;
  if (out_t != av.dtype) return node_error(node, "output_dtype needs an epilogue cuBLASLt runs (no epilogue kernel)");

  auto strides = [](const Shape& s) {
    int64_t rows = s.size() == 2 ? s[0] : 1, cols = s.empty() ? 1 : s.back();
    return std::make_pair(rows == 1 ? int64_t{0} : cols, cols == 1 ? int64_t{0} : int64_t{1});
  };
  auto cst = kernel_c ? strides(graph.value(c).shape) : std::make_pair(int64_t{0}, int64_t{0});
  auto rst = kernel_r ? strides(graph.value(r).shape) : std::make_pair(int64_t{0}, int64_t{0});
  KernelStep k;
  k.template_name = "gemm_epilogue";
  k.holes = {{"comment", node.op_type + " epilogue over " + shape_str(full) + (kernel_c ? " +beta*C" : "") +
                             (kernel_r ? " +residual" : "") + (kernel_act ? " act " + load_activation(node).op_type : "")},
             {"T", dtype_c_type(av.dtype)},
             {"ACC", compute_type(av.dtype)},
             {"M", int_literal(d.m)},
             {"N", int_literal(d.n)},
             {"HAS_C", kernel_c ? "1" : "0"},
             {"C_RS", int_literal(cst.first)},
             {"C_CS", int_literal(cst.second)},
             {"BETA", float_literal(beta)},
             {"HAS_R", kernel_r ? "1" : "0"},
             {"R_RS", int_literal(rst.first)},
             {"R_CS", int_literal(rst.second)},
             {"act_expr", kernel_act ? activation_expr(node, graph, "v") : "v"}};
  // Activation alone over a 16-bit output (buffers are 256-byte aligned, docs/abi.md): 8 elements
  // per 16-byte access.
  const bool vec = !kernel_c && !kernel_r && dtype_size(av.dtype) == 2 && (d.m * d.n) % 8 == 0;
  k.holes.push_back({"VEC", vec ? "8" : "1"});
  // Two 16-byte vectors a thread (templates/gemm_epilogue.cu.in).
  constexpr int64_t kEpilogueUnroll = 2;
  k.holes.push_back({"UNROLL", int_literal(kEpilogueUnroll)});
  k.args = {node.outputs[0], kernel_c ? c : kNullArg, kernel_r ? r : kNullArg};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(vec ? (d.m * d.n / 8 + kEpilogueUnroll - 1) / kEpilogueUnroll : d.m * d.n, 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

// ---- MatMul, aotc.MatMulT ----

// transA / transB of aotc.MatMulT (the standard MatMul has none).
bool matmul_trans(const Node& node, const char* attr) { return node.domain == "aotc" && node.attr_int(attr, 0) != 0; }

Shape swap_last_two(Shape s) {
  if (s.size() >= 2) std::swap(s[s.size() - 2], s[s.size() - 1]);
  return s;
}

struct MatmulDims {
  int64_t m = 1, n = 1, k = 0;
  Shape batch;            // broadcast batch dims of the output
  Shape a_batch, b_batch; // operands' batch dims, left-padded with 1 to batch's rank
  Shape out;
};

// Dims of the product of the operands as stored: `a` and `b` are the operands' shapes, read with
// their last two axes swapped where the node says transA / transB.
Expected<MatmulDims> matmul_dims(const Node& node, const Shape& stored_a, const Shape& stored_b) {
  if (stored_a.empty() || stored_b.empty())
    return node_error(node, "MatMul operands must have rank >= 1 (got " + shape_str(stored_a) + " and " + shape_str(stored_b) + ")");
  for (const char* t : {"transA", "transB"})
    if (matmul_trans(node, t) && (std::string(t) == "transA" ? stored_a : stored_b).size() < 2)
      return node_error(node, std::string(t) + " needs an operand of rank >= 2");
  const Shape a = matmul_trans(node, "transA") ? swap_last_two(stored_a) : stored_a;
  const Shape b = matmul_trans(node, "transB") ? swap_last_two(stored_b) : stored_b;
  MatmulDims d;
  d.k = a.back();
  d.m = a.size() >= 2 ? a[a.size() - 2] : 1;
  const int64_t kb = b.size() >= 2 ? b[b.size() - 2] : b[0];
  d.n = b.size() >= 2 ? b.back() : 1;
  if (kb != d.k) return node_error(node, "inner dims differ: A " + shape_str(a) + " and B " + shape_str(b));
  Shape ab(a.begin(), a.end() - std::min<size_t>(a.size(), 2)), bb(b.begin(), b.end() - std::min<size_t>(b.size(), 2));
  auto batch = broadcast_shapes(node, ab, bb);
  if (!batch) return batch.status();
  d.batch = *batch;
  d.a_batch = Shape(d.batch.size() - ab.size(), 1);
  d.a_batch.insert(d.a_batch.end(), ab.begin(), ab.end());
  d.b_batch = Shape(d.batch.size() - bb.size(), 1);
  d.b_batch.insert(d.b_batch.end(), bb.begin(), bb.end());
  d.out = d.batch;
  if (a.size() >= 2) d.out.push_back(d.m);
  if (b.size() >= 2) d.out.push_back(d.n);
  return d;
}

Status matmul_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kFloatTypes));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {input_value(graph, node, 0).dtype}));
  for (const char* t : {"transA", "transB"})
    if (node.domain == "aotc" && (node.attr_int(t, 0) < 0 || node.attr_int(t, 0) > 1))
      return node_error(node, std::string("attribute ") + t + " must be 0 or 1");
  auto d = matmul_dims(node, input_value(graph, node, 0).shape, input_value(graph, node, 1).shape);
  if (!d) return d.status();
  set_output(graph, node, 0, input_value(graph, node, 0).dtype, d->out);
  return Status::ok();
}

// Per output-batch-dim element strides of an operand (0 where it broadcasts).
std::vector<int64_t> batch_strides(const Shape& operand_batch, int64_t matrix_size) {
  std::vector<int64_t> s(operand_batch.size());
  int64_t step = matrix_size;
  for (size_t i = operand_batch.size(); i-- > 0;) {
    s[i] = operand_batch[i] == 1 ? 0 : step;
    step *= operand_batch[i];
  }
  return s;
}

Status matmul_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  auto d = matmul_dims(node, inputs[0]->shape(), inputs[1]->shape());
  if (!d) return d.status();
  std::vector<double> ad = inputs[0]->to_doubles(), bd = inputs[1]->to_doubles();
  std::vector<int64_t> sa = batch_strides(d->a_batch, d->m * d->k), sb = batch_strides(d->b_batch, d->k * d->n);
  const int64_t batches = shape_numel(d->batch);
  // Element strides of A's rows/columns and B's rows/columns within one stored matrix.
  const bool ta = matmul_trans(node, "transA"), tb = matmul_trans(node, "transB");
  const int64_t a_rs = ta ? 1 : d->k, a_cs = ta ? d->m : 1, b_rs = tb ? 1 : d->n, b_cs = tb ? d->k : 1;
  // Rows of all batch matrices are independent: they run in parallel (same sums, same order).
  parallel_for(batches * d->m, d->n * d->k, [&](int64_t row_begin, int64_t row_end) {
    for (int64_t row = row_begin; row < row_end; ++row) {
      const int64_t bi = row / d->m, i = row % d->m;
      int64_t oa = 0, ob = 0, rest = bi;
      for (size_t t = d->batch.size(); t-- > 0;) {
        int64_t idx = rest % d->batch[t];
        rest /= d->batch[t];
        oa += idx * sa[t];
        ob += idx * sb[t];
      }
      for (int64_t j = 0; j < d->n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < d->k; ++p)
          acc += ad[static_cast<size_t>(oa + i * a_rs + p * a_cs)] * bd[static_cast<size_t>(ob + p * b_rs + j * b_cs)];
        outputs[0].set((bi * d->m + i) * d->n + j, acc);
      }
    }
  });
  return Status::ok();
}

Expected<Lowering> matmul_lower(const Node& node, const Graph& graph) {
  const Value& av = input_value(graph, node, 0);
  auto dd = matmul_dims(node, av.shape, input_value(graph, node, 1).shape);
  if (!dd) return dd.status();
  const MatmulDims& d = *dd;
  Lowering l;
  const int64_t batches = shape_numel(d.batch);
  if (batches * d.m * d.n == 0) return l;
  if (d.k == 0) return node_error(node, "a MatMul with inner dimension 0 is not supported on the GPU");
  const bool a_full = d.a_batch == d.batch, b_full = d.b_batch == d.batch;
  const bool a_one = shape_numel(d.a_batch) == 1, b_one = shape_numel(d.b_batch) == 1;
  // cuBLASLt (through codegen) takes fp32 and fp16; fp64 products use the kernel below.
  const bool cublas_dtype = av.dtype != DType::kFloat64;
  const bool ta = matmul_trans(node, "transA"), tb = matmul_trans(node, "transB");
  if (cublas_dtype && (a_full || a_one) && (b_full || b_one)) {
    MatmulStep mm;
    mm.dtype = av.dtype;
    mm.a = node.inputs[0];
    mm.b = node.inputs[1];
    mm.d = node.outputs[0];
    mm.m = d.m; mm.n = d.n; mm.k = d.k;
    mm.trans_a = ta;
    mm.trans_b = tb;
    mm.lda = ta ? d.m : d.k; mm.ldb = tb ? d.k : d.n; mm.ldc = d.n; mm.ldd = d.n;
    if (b_one && batches > 1 && !ta) {
      mm.m = batches * d.m;  // A's matrices are consecutive rows: one GEMM with B shared
    } else {
      mm.batch = batches;
      mm.stride_a = a_one ? 0 : d.m * d.k;
      mm.stride_b = b_one ? 0 : d.k * d.n;
      mm.stride_c = mm.stride_d = d.m * d.n;
    }
    auto plan = mm.batch == 1 && !ta ? simt_gemm_plan(graph.target, av.dtype, mm.m, mm.n, mm.k) : std::nullopt;
    if (!plan && mm.batch == 1 && !ta) plan = tc_gemm_plan(graph.target, av.dtype, mm.m, mm.n, mm.k, tb);
    if (plan)
      return simt_gemm_lowering(mm, *plan, "v", node.op_type + " [" + std::to_string(mm.m) + "x" +
                                                    std::to_string(mm.n) + "] K " + std::to_string(mm.k));
    l.steps.push_back(matmul_step(mm));
    return l;
  }
  // Partly broadcast batch dims (e.g. [2,1,M,K] x [3,K,N]), or fp64: per-dim strides in one
  // kernel (an unbatched product is a batch of one).
  const Shape batch = d.batch.empty() ? Shape{1} : d.batch;
  const Shape a_batch = d.batch.empty() ? Shape{1} : d.a_batch, b_batch = d.batch.empty() ? Shape{1} : d.b_batch;
  KernelStep k;
  k.template_name = "gemm_batched_broadcast";
  k.holes = {{"comment", node.op_type + " " + shape_str(av.shape) + (ta ? "^T" : "") + " x " +
                             shape_str(input_value(graph, node, 1).shape) + (tb ? "^T" : "") + " (broadcast batch dims)"},
             {"T", dtype_c_type(av.dtype)},
             {"ACC", compute_type(av.dtype)},
             {"M", int_literal(d.m)}, {"N", int_literal(d.n)}, {"K", int_literal(d.k)},
             {"RANK", int_literal(static_cast<int64_t>(batch.size()))},
             {"OUT_DIMS", dims_literal(batch)},
             {"A_STRIDES", dims_literal(batch_strides(a_batch, d.m * d.k))},
             {"B_STRIDES", dims_literal(batch_strides(b_batch, d.k * d.n))},
             {"A_RS", int_literal(ta ? 1 : d.k)}, {"A_CS", int_literal(ta ? d.m : 1)},
             {"B_RS", int_literal(tb ? 1 : d.n)}, {"B_CS", int_literal(tb ? d.k : 1)}};
  k.args = {node.inputs[0], node.inputs[1], node.outputs[0]};
  k.block = Dim3{16, 16, 1};
  k.grid = Dim3{(d.n + 15) / 16, (d.m + 15) / 16, batches};
  if (k.grid.y > 65535 || k.grid.z > 65535)
    return node_error(node, "broadcast batched MatMul too large for one launch");
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_gemm_ops(OpRegistry& registry) {
  for (const char* domain : {"", "aotc"}) {
    OpDef def;
    def.op_type = std::string(domain).empty() ? "Gemm" : "FusedGemm";
    def.domain = domain;
    if (def.domain.empty()) def.import = gemm_import;
    def.infer = gemm_infer;
    def.reference = gemm_reference;
    def.lower = gemm_lower;
    registry.add(def);
  }
  for (const char* domain : {"", "aotc"}) {
    OpDef mm;
    mm.op_type = std::string(domain).empty() ? "MatMul" : "MatMulT";
    mm.domain = domain;
    mm.infer = matmul_infer;
    mm.reference = matmul_reference;
    mm.lower = matmul_lower;
    registry.add(mm);
  }
}

}  // namespace aotc
