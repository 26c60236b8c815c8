// Integer matrix products: MatMulInteger and ConvInteger (int32 results of (a - a_zp) x (b - b_zp)),
// QLinearMatMul and QLinearConv (the same int32 sum, plus QLinearConv's int32 bias, requantized:
// saturate(rint(sum * (a_scale * b_scale / y_scale)) + y_zp), the multiplier in float and the product
// in double, as the ONNX reference computes it). Zero points and scales are per tensor, per row of A /
// per column of B (matmul) or per output channel (conv). Direct loops on the CPU and one thread per
// output element on the GPU (templates/integer_matmul.cu.in, integer_conv.cu.in): correctness first.
//
// The internal aotc.QLinearConv / aotc.QLinearMatMul (made by opt/fuse_qdq from DequantizeLinear ->
// Conv/MatMul/Gemm -> [Relu/Clip] -> QuantizeLinear, never read from a model) take the QLinear
// inputs with an int32 bias at index 8 for both, and either
//   - requantize (y_scale present) and clamp to the attributes qmin..qmax (a fused Relu or Clip in
//     the quantized domain; default: the output type's range), or
//   - dequantize (y_scale and y_zp absent): y = float(sum) * (x_scale * w_scale[c]) in float, the
//     output in x_scale's dtype -- a quantized layer whose consumers are not all quantized.
// A channels_last aotc.QLinearMatMul (opt/layout_nhwc) stores B as [N, K] (the KRSC filter of a 1x1
// convolution), reads input 9 likewise and runs on the same kernel, A's rows as pixels.
// A channels_last aotc.QLinearConv without input 9 (opt/layout_nhwc: a grouped or depthwise
// convolution inside an NHWC chain) runs the direct kernel on NHWC x / y and KRSC w.
// A channels_last aotc.QLinearConv (opt/layout_nhwc: NHWC x and y, KRSC w) with input 9 reads it,
// the per-channel epilogue words of the int8 tensor-core kernel (uint64: float multiplier, int32
// bias; built from inputs 1-8, which stay for the reference) and lowers to that kernel
// (templates/cutlass_conv2d_fprop_i8.cu.in), or on sm_90a to the int8 wgmma kernel
// (templates/cutlass_conv2d_fprop_sm90_i8.cu.in).
// A fused residual Add (opt/fuse_residual_qadd; requantizing channels_last convolutions with
// input 9): inputs 10-14 = r, r_scale, r_zero_point, y_scale, y_zero_point of the aotc.QLinearAdd
// it absorbed, attributes add_qmin / add_qmax its clamp. The output is that Add applied to the
// convolution's requantized value (rounded to the convolution's own int8 type first, clamped to
// qmin..qmax) and r: bit for bit the two nodes it replaces. Both int8 tensor-core kernels
// implement it (the Sm80 one only for r of the output's type: its epilogue source).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/parallel.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/window.h"
#include "templates/int8_requant.cuh"

namespace aotc {
namespace {

constexpr int kAbsent = -1;
constexpr std::size_t kEpilogueWordsInput = 9;  // channels_last aotc.QLinearConv (see above)
constexpr std::size_t kResidualInput = 10;      // a fused residual Add's r, then 4 more (see above)
constexpr std::size_t kResidualInputs = 5;

// Which input index plays which role, per op (kAbsent: the op has no such input).
struct Roles {
  int a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp, bias;
  bool quantized() const { return a_scale != kAbsent; }  // the QLinear family: scales, int8 or float out
};

bool internal(const Node& node) { return node.domain == "aotc"; }

Roles roles_of(const Node& node) {
  if (node.op_type == "MatMulInteger" || node.op_type == "ConvInteger")
    return Roles{0, kAbsent, 2, 1, kAbsent, 3, kAbsent, kAbsent, kAbsent};
  return Roles{0, 1, 2, 3, 4, 5, 6, 7, node.op_type == "QLinearConv" || internal(node) ? 8 : kAbsent};
}
bool is_conv(const Node& node) { return node.op_type == "ConvInteger" || node.op_type == "QLinearConv"; }

bool present(const Node& node, int index) { return index != kAbsent && node.input(static_cast<size_t>(index)) != kNoValue; }

bool has_fused_residual(const Node& node) { return node.input(kResidualInput) != kNoValue; }

// What the op stores: the int32 sum, the sum requantized to 8 bits, or the sum dequantized to float.
enum class OutMode { kInt32, kRequantize, kDequantize };
OutMode out_mode(const Node& node) {
  const Roles r = roles_of(node);
  if (!r.quantized()) return OutMode::kInt32;
  return present(node, r.y_scale) ? OutMode::kRequantize : OutMode::kDequantize;
}

std::pair<int64_t, int64_t> clamp_range(const Node& node, DType y) { return quantized_clamp(node, y, internal(node)); }

// A per-tensor or per-channel parameter: 0 absent, 1 scalar, 2 one value per channel.
int param_mode(const Node& node, int index, const Shape* shape) {
  if (!present(node, index) || !shape) return 0;
  return shape_numel(*shape) == 1 ? 1 : 2;
}

Status check_param(const Node& node, int index, const Shape& s, int64_t channels, const std::string& what) {
  if (shape_numel(s) == 1) return Status::ok();
  if (s.size() == 1 && s[0] == channels) return Status::ok();
  return node_error(node, "input " + std::to_string(index) + " has shape " + shape_str(s) + ", expected a scalar or " +
                              std::to_string(channels) + " values (one per " + what + ")");
}

struct IntMatmulDims {
  int64_t m = 1, n = 1, k = 0;
  Shape batch, a_strides, b_strides;  // per batch dim, element strides of A and B (0: broadcast)
  Shape out;
};

Expected<IntMatmulDims> matmul_dims(const Node& node, const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) return node_error(node, "operands must have rank >= 1");
  IntMatmulDims d;
  d.k = a.back();
  d.m = a.size() >= 2 ? a[a.size() - 2] : 1;
  d.n = b.size() >= 2 ? b.back() : 1;
  if ((b.size() >= 2 ? b[b.size() - 2] : b[0]) != d.k)
    return node_error(node, "inner dims differ: A " + shape_str(a) + " and B " + shape_str(b));
  Shape ab(a.begin(), a.end() - std::min<size_t>(a.size(), 2)), bb(b.begin(), b.end() - std::min<size_t>(b.size(), 2));
  auto batch = broadcast_shapes(node, ab, bb);
  if (!batch) return batch.status();
  d.batch = *batch;
  auto strides = [&](const Shape& ob, int64_t mat) {
    Shape padded(d.batch.size() - ob.size(), 1);
    padded.insert(padded.end(), ob.begin(), ob.end());
    Shape s(padded.size());
    for (size_t i = padded.size(); i-- > 0;) {
      s[i] = padded[i] == 1 ? 0 : mat;
      mat *= padded[i];
    }
    return s;
  };
  d.a_strides = strides(ab, d.m * d.k);
  d.b_strides = strides(bb, d.k * d.n);
  d.out = d.batch;
  if (a.size() >= 2) d.out.push_back(d.m);
  if (b.size() >= 2) d.out.push_back(d.n);
  return d;
}

struct IntConvDims {
  int64_t batch = 0, cin = 0, cout = 0, group = 1;
  WindowGeometry geo;  // rank 3
  Shape out;
};

Expected<IntConvDims> conv_dims(const Node& node, const Shape& x, const Shape& w) {
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size())
    return node_error(node, "X " + shape_str(x) + " and W " + shape_str(w) + " must have the same rank, 3 to 5");
  IntConvDims d;
  d.batch = x[0];
  d.cin = x[1];
  d.cout = w[0];
  d.group = node.attr_int("group", 1);
  if (d.group <= 0 || d.cin % d.group != 0 || d.cout % d.group != 0 || w[1] != d.cin / d.group)
    return node_error(node, "channels of X " + shape_str(x) + " and W " + shape_str(w) + " do not fit group " + std::to_string(d.group));
  std::vector<int64_t> in(x.begin() + 2, x.end()), kernel(w.begin() + 2, w.end());
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != kernel)
    return node_error(node, "kernel_shape attribute does not match W's spatial dims " + shape_str(kernel));
  auto geo = resolve_window(node, in, kernel, WindowOptions{});
  if (!geo) return geo.status();
  d.out = {d.batch, d.cout};
  d.out.insert(d.out.end(), geo->out.begin(), geo->out.end());
  d.geo = to_rank3(*geo);
  return d;
}

Status integer_infer(Node& node, Graph& graph) {
  const Roles r = roles_of(node);
  const bool conv = is_conv(node);
  const bool nhwc = conv && channels_last(node);
  if (nhwc && !internal(node)) return node_error(node, "channels_last needs the internal op");
  if (internal(node)) {  // x, x_scale, w, w_scale; the zero points, y_scale/y_zp and bias are optional
    AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, channels_last(node) ? kResidualInput + kResidualInputs : 9));
    for (int i : {r.a_scale, r.b, r.b_scale})
      if (!present(node, i)) return node_error(node, "required input " + std::to_string(i) + " is missing");
  }
  else AOTC_RETURN_IF_ERROR(r.quantized() ? expect_inputs(node, 8, conv ? 9 : 8) : expect_inputs(node, 2, 4));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const std::vector<DType> k8 = {DType::kUInt8, DType::kInt8};
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, static_cast<size_t>(r.a), k8));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, static_cast<size_t>(r.b), k8));
  const Value& a = input_value(graph, node, static_cast<size_t>(r.a));
  const Value& b = input_value(graph, node, static_cast<size_t>(r.b));
  int64_t a_channels, b_channels;
  Shape out;
  if (conv) {
    auto d = nhwc ? conv_dims(node, nhwc_to_nchw(a.shape), nhwc_to_nchw(b.shape)) : conv_dims(node, a.shape, b.shape);
    if (!d) return d.status();
    a_channels = 1, b_channels = d->cout, out = nhwc ? nchw_to_nhwc(d->out) : d->out;
    if (nhwc && node.input(kEpilogueWordsInput) != kNoValue) {  // the tensor-core kernel's words
      AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, kEpilogueWordsInput, {DType::kUInt64}));
      const Shape& ws = input_value(graph, node, kEpilogueWordsInput).shape;
      if (ws.size() != 1 || ws[0] != d->cout) return node_error(node, "input 9 must hold one epilogue word per output channel");
    }
  } else {
    const bool bt = channels_last(node);  // B stored [N, K]
    if (bt && (!internal(node) || b.shape.size() != 2 || node.input(kEpilogueWordsInput) == kNoValue))
      return node_error(node, "channels_last needs the internal op, a 2-D B and its epilogue words (input 9)");
    auto d = matmul_dims(node, a.shape, bt ? Shape{b.shape[1], b.shape[0]} : b.shape);
    if (!d) return d.status();
    a_channels = d->m, b_channels = d->n, out = d->out;
    if (bt) {
      AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, kEpilogueWordsInput, {DType::kUInt64}));
      const Shape& ws = input_value(graph, node, kEpilogueWordsInput).shape;
      if (ws.size() != 1 || ws[0] != d->n) return node_error(node, "input 9 must hold one epilogue word per column of B");
    }
  }
  const std::string a_what = conv ? "tensor" : "row of A", b_what = conv ? "output channel" : "column of B";
  for (auto [idx, dt, ch, what] : {std::tuple{r.a_zp, a.dtype, a_channels, a_what}, std::tuple{r.b_zp, b.dtype, b_channels, b_what}})
    if (present(node, idx)) {
      AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, static_cast<size_t>(idx), {dt}));
      AOTC_RETURN_IF_ERROR(check_param(node, idx, input_value(graph, node, static_cast<size_t>(idx)).shape, ch, what));
    }
  DType y_type = DType::kInt32;
  if (r.quantized()) {
    const bool requant = out_mode(node) == OutMode::kRequantize;
    if (!requant && present(node, r.y_zp)) return node_error(node, "y_zero_point without y_scale");
    for (auto [idx, ch, what] : {std::tuple{r.a_scale, a_channels, a_what}, std::tuple{r.b_scale, b_channels, b_what},
                                 std::tuple{r.y_scale, int64_t{1}, std::string("tensor")}}) {
      if (idx == r.y_scale && !requant) continue;
      AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, static_cast<size_t>(idx), {DType::kFloat32, DType::kFloat16, DType::kBFloat16}));
      if (input_value(graph, node, static_cast<size_t>(idx)).dtype != input_value(graph, node, static_cast<size_t>(r.a_scale)).dtype)
        return node_error(node, "the three scales must share one dtype");
      AOTC_RETURN_IF_ERROR(check_param(node, idx, input_value(graph, node, static_cast<size_t>(idx)).shape, ch, what));
    }
    y_type = requant ? a.dtype : input_value(graph, node, static_cast<size_t>(r.a_scale)).dtype;
    if (present(node, r.y_zp)) {
      AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, static_cast<size_t>(r.y_zp), k8));
      AOTC_RETURN_IF_ERROR(check_param(node, r.y_zp, input_value(graph, node, static_cast<size_t>(r.y_zp)).shape, 1, "tensor"));
      y_type = input_value(graph, node, static_cast<size_t>(r.y_zp)).dtype;
    }
    if (present(node, r.bias)) {
      AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, static_cast<size_t>(r.bias), {DType::kInt32}));
      const Shape& bs = input_value(graph, node, static_cast<size_t>(r.bias)).shape;
      if (bs.size() != 1 || bs[0] != b_channels) return node_error(node, "bias B must have shape [" + std::to_string(b_channels) + "]");
    }
    if (requant && internal(node)) {
      const auto [lo, hi] = clamp_range(node, DType::kInt8 == y_type ? DType::kInt8 : DType::kUInt8);
      if (lo > hi) return node_error(node, "qmin " + std::to_string(lo) + " is above qmax " + std::to_string(hi));
    }
  }
  if (node.inputs.size() > kResidualInput) {  // a fused residual Add (see the top of the file)
    if (!nhwc || node.input(kEpilogueWordsInput) == kNoValue || out_mode(node) != OutMode::kRequantize || !has_fused_residual(node))
      return node_error(node, "a fused residual Add needs a requantizing channels_last convolution with its epilogue words and r (input 10)");
    const Value& rv = input_value(graph, node, kResidualInput);
    if (!(rv.dtype == DType::kInt8 || rv.dtype == DType::kUInt8) || rv.shape != out)
      return node_error(node, "the fused residual r must be int8 or uint8 of the output's shape " + shape_str(out));
    for (size_t i : {kResidualInput + 1, kResidualInput + 3}) {
      if (node.input(i) == kNoValue) return node_error(node, "required input " + std::to_string(i) + " is missing");
      AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {DType::kFloat32}));
      if (input_value(graph, node, i).numel() != 1) return node_error(node, "input " + std::to_string(i) + " must be one scale");
    }
    if (node.input(kResidualInput + 2) != kNoValue) {
      AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, kResidualInput + 2, {rv.dtype}));
      if (input_value(graph, node, kResidualInput + 2).numel() != 1) return node_error(node, "r's zero point must be one value");
    }
    y_type = DType::kUInt8;  // QLinearAdd's output type without a zero point
    if (node.input(kResidualInput + 4) != kNoValue) {
      y_type = input_value(graph, node, kResidualInput + 4).dtype;
      if (!(y_type == DType::kInt8 || y_type == DType::kUInt8) || input_value(graph, node, kResidualInput + 4).numel() != 1)
        return node_error(node, "the fused Add's y_zero_point must be one int8 or uint8");
    }
    if (!node.has_attr("add_qmin") || !node.has_attr("add_qmax") || node.attr_int("add_qmin", 0) > node.attr_int("add_qmax", 0))
      return node_error(node, "a fused residual Add needs add_qmin <= add_qmax");
  }
  set_output(graph, node, 0, y_type, out);
  return Status::ok();
}

// Value of a per-tensor / per-channel parameter for channel c (0 when absent).
double param(const std::vector<const Tensor*>& in, int index, int64_t c) {
  if (index == kAbsent || static_cast<size_t>(index) >= in.size() || !in[static_cast<size_t>(index)]) return 0;
  const Tensor& t = *in[static_cast<size_t>(index)];
  return t.get(t.numel() == 1 ? 0 : c);
}

// Requantizes one int32 sum (QLinear ops) or stores it (integer ops).
void store_result(const Node& node, const std::vector<const Tensor*>& in, Tensor& y, int64_t yi, int64_t acc,
                  int64_t a_ch, int64_t b_ch) {
  const Roles r = roles_of(node);
  const OutMode mode = out_mode(node);
  if (mode == OutMode::kInt32) {
    y.set_int(yi, static_cast<int32_t>(acc));
    return;
  }
  if (mode == OutMode::kDequantize) {  // float arithmetic, as the kernel computes it
    const float s = static_cast<float>(param(in, r.a_scale, a_ch)) * static_cast<float>(param(in, r.b_scale, b_ch));
    y.set(yi, static_cast<double>(static_cast<float>(acc) * s));
    return;
  }
  // In float; 16-bit scales round the product and the quotient to their type (numpy's arithmetic
  // in that type, as the ONNX reference computes a_scale * b_scale / y_scale).
  const DType st = in[static_cast<size_t>(r.a_scale)]->dtype();
  auto round_scale = [st](float v) {
    if (st == DType::kFloat16) return half_to_float(float_to_half(v));
    if (st == DType::kBFloat16) return bfloat16_to_float(float_to_bfloat16(v));
    return v;
  };
  const float mult = round_scale(round_scale(static_cast<float>(param(in, r.a_scale, a_ch)) *
                                             static_cast<float>(param(in, r.b_scale, b_ch))) /
                                 static_cast<float>(param(in, r.y_scale, 0)));
  const auto [qlo, qhi] = clamp_range(node, y.dtype());
  const double lo = static_cast<double>(qlo), hi = static_cast<double>(qhi);
  const double v = std::nearbyint(static_cast<double>(acc) * static_cast<double>(mult)) + param(in, r.y_zp, 0);
  y.set_int(yi, static_cast<int64_t>(std::min(hi, std::max(lo, v))));
}

Status integer_reference(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Roles r = roles_of(node);
  if (is_conv(node) && has_fused_residual(node)) {
    // The convolution alone into its own int8 type, then aotc.QLinearAdd's reference on it and r.
    if (in.size() < kResidualInput + kResidualInputs) return node_error(node, "a fused residual Add needs inputs 10-14");
    Node conv = node;
    conv.inputs.resize(kResidualInput);
    conv.attrs.erase("add_qmin");
    conv.attrs.erase("add_qmax");
    const DType t = in[static_cast<size_t>(r.y_zp)] ? in[static_cast<size_t>(r.y_zp)]->dtype() : in[static_cast<size_t>(r.a)]->dtype();
    std::vector<Tensor> tmp;
    tmp.emplace_back(t, out[0].shape());
    AOTC_RETURN_IF_ERROR(integer_reference(conv, std::vector<const Tensor*>(in.begin(), in.begin() + kResidualInput), tmp));
    Node add;
    add.op_type = "QLinearAdd";
    add.domain = "aotc";
    add.name = node.name;
    add.attrs["qmin"] = Attribute::of_int(node.attr_int("add_qmin", 0));
    add.attrs["qmax"] = Attribute::of_int(node.attr_int("add_qmax", 0));
    const OpDef* def = default_registry().find("QLinearAdd", "aotc");
    if (!def || !def->reference) return node_error(node, "aotc.QLinearAdd has no reference");
    const std::vector<const Tensor*> args = {&tmp[0], in[static_cast<size_t>(r.y_scale)], in[static_cast<size_t>(r.y_zp)],
                                             in[kResidualInput], in[kResidualInput + 1], in[kResidualInput + 2],
                                             in[kResidualInput + 3], in[kResidualInput + 4]};
    return def->reference(add, args, out);
  }
  const Tensor& a = *in[static_cast<size_t>(r.a)];
  const Tensor& b = *in[static_cast<size_t>(r.b)];
  if (!is_conv(node) && channels_last(node)) {  // B stored [N, K]: the plain computation on B^T
    Node plain = node;
    plain.attrs.erase("channels_last");
    plain.inputs.resize(kEpilogueWordsInput, kNoValue);  // drops the epilogue words; pads absent inputs
    const int64_t n = b.shape()[0], k = b.shape()[1];
    Tensor bt(b.dtype(), {k, n});
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c) bt.set_int(c * n + r, b.get_int(r * k + c));
    std::vector<const Tensor*> args(in.begin(), in.begin() + static_cast<long>(std::min(in.size(), kEpilogueWordsInput)));
    args[static_cast<size_t>(r.b)] = &bt;
    return integer_reference(plain, args, out);
  }
  if (!is_conv(node)) {
    auto d = matmul_dims(node, a.shape(), b.shape());
    if (!d) return d.status();
    // Zero-point-shifted copies of A (per row) and B (per column), then each row of the product
    // with the innermost loop along B's row; integer sums are exact, so rows run in parallel.
    const int64_t batches = shape_numel(d->batch), m = d->m, n = d->n, k = d->k;
    std::vector<int32_t> as(static_cast<size_t>(a.numel())), bs(static_cast<size_t>(b.numel()));
    for (int64_t i = 0; i < a.numel(); ++i)
      as[static_cast<size_t>(i)] = static_cast<int32_t>(a.get_int(i) - static_cast<int64_t>(param(in, r.a_zp, (i / k) % m)));
    for (int64_t i = 0; i < b.numel(); ++i)
      bs[static_cast<size_t>(i)] = static_cast<int32_t>(b.get_int(i) - static_cast<int64_t>(param(in, r.b_zp, i % n)));
    std::vector<int64_t> bias(static_cast<size_t>(n), 0);
    if (present(node, r.bias))
      for (int64_t j = 0; j < n; ++j) bias[static_cast<size_t>(j)] = in[static_cast<size_t>(r.bias)]->get_int(j);
    parallel_for(batches * m, k * n, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> acc;
      for (int64_t row = begin; row < end; ++row) {
        const int64_t bi = row / m, i = row % m;
        int64_t oa = 0, ob = 0, rest = bi;
        for (size_t ax = d->batch.size(); ax-- > 0;) {
          oa += (rest % d->batch[ax]) * d->a_strides[ax];
          ob += (rest % d->batch[ax]) * d->b_strides[ax];
          rest /= d->batch[ax];
        }
        acc = bias;
        const int32_t* arow = &as[static_cast<size_t>(oa + i * k)];
        for (int64_t p = 0; p < k; ++p) {
          const int64_t av = arow[p];
          const int32_t* brow = &bs[static_cast<size_t>(ob + p * n)];
          for (int64_t j = 0; j < n; ++j) acc[static_cast<size_t>(j)] += av * brow[j];
        }
        for (int64_t j = 0; j < n; ++j) store_result(node, in, out[0], row * n + j, acc[static_cast<size_t>(j)], i, j);
      }
    });
    return Status::ok();
  }
  if (channels_last(node)) {  // the NCHW computation on permuted copies
    Node plain = node;
    plain.attrs.erase("channels_last");
    plain.inputs.resize(kEpilogueWordsInput, kNoValue);  // drops the epilogue words; pads absent inputs
    const Tensor x = permute_channels(a, /*to_nchw=*/true), w = permute_channels(b, /*to_nchw=*/true);
    std::vector<const Tensor*> args(in.begin(), in.begin() + static_cast<long>(std::min(in.size(), kEpilogueWordsInput)));
    args[static_cast<size_t>(r.a)] = &x;
    args[static_cast<size_t>(r.b)] = &w;
    std::vector<Tensor> nchw;
    nchw.emplace_back(out[0].dtype(), nhwc_to_nchw(out[0].shape()));
    AOTC_RETURN_IF_ERROR(integer_reference(plain, args, nchw));
    out[0] = permute_channels(nchw[0], /*to_nchw=*/false);
    return Status::ok();
  }
  auto d = conv_dims(node, a.shape(), b.shape());
  if (!d) return d.status();
  const WindowGeometry& g = d->geo;
  const int64_t cin_g = d->cin / d->group, cout_g = d->cout / d->group;
  const int64_t in_sp = g.in[0] * g.in[1] * g.in[2], k_sp = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const int64_t out_sp = g.out[0] * g.out[1] * g.out[2];
  // The zero-point-shifted operands once (padding then contributes 0: the spec pads the shifted
  // input), then each output plane (n, oc) as the float reference accumulates it; integer sums are
  // exact, so the order does not matter and the planes run in parallel.
  const int64_t xzp = static_cast<int64_t>(param(in, r.a_zp, 0));
  std::vector<int32_t> xs(static_cast<size_t>(a.numel())), ws(static_cast<size_t>(b.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) xs[static_cast<size_t>(i)] = static_cast<int32_t>(a.get_int(i) - xzp);
  for (int64_t oc = 0; oc < d->cout; ++oc) {
    const int64_t wzp = static_cast<int64_t>(param(in, r.b_zp, oc));
    for (int64_t i = oc * cin_g * k_sp; i < (oc + 1) * cin_g * k_sp; ++i)
      ws[static_cast<size_t>(i)] = static_cast<int32_t>(b.get_int(i) - wzp);
  }
  parallel_for(d->batch * d->cout, cin_g * k_sp * out_sp, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> plane(static_cast<size_t>(out_sp));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / d->cout, oc = item % d->cout;
      const int64_t ic0 = (oc / cout_g) * cin_g;
      std::fill(plane.begin(), plane.end(), present(node, r.bias) ? in[static_cast<size_t>(r.bias)]->get_int(oc) : 0);
      for (int64_t ic = 0; ic < cin_g; ++ic)
        accumulate_conv_channel(g, &xs[static_cast<size_t>((n * d->cin + ic0 + ic) * in_sp)],
                                &ws[static_cast<size_t>((oc * cin_g + ic) * k_sp)], plane.data());
      for (int64_t o = 0; o < out_sp; ++o)
        store_result(node, in, out[0], (n * d->cout + oc) * out_sp + o, plane[static_cast<size_t>(o)], 0, oc);
    }
  });
  return Status::ok();
}

// The holes and arguments both templates share: element types, parameter modes, requantization.
void common_holes(const Node& node, const Graph& graph, KernelStep& k) {
  const Roles r = roles_of(node);
  auto type_of = [&](int idx) { return dtype_c_type(input_value(graph, node, static_cast<size_t>(idx)).dtype); };
  auto mode = [&](int idx) {
    return std::to_string(param_mode(node, idx, present(node, idx) ? &input_value(graph, node, static_cast<size_t>(idx)).shape : nullptr));
  };
  const DType y = output_value(graph, node, 0).dtype;
  const DType st = r.quantized() ? input_value(graph, node, static_cast<size_t>(r.a_scale)).dtype : DType::kFloat32;
  const OutMode om = out_mode(node);
  const auto [qlo, qhi] = om == OutMode::kRequantize ? clamp_range(node, y) : std::pair<int64_t, int64_t>{0, 0};
  k.holes.insert(k.holes.end(), {{"TS", dtype_c_type(st)},{"TA", type_of(r.a)}, {"TB", type_of(r.b)}, {"TY", dtype_c_type(y)},
                                 {"a_zp_mode", mode(r.a_zp)}, {"b_zp_mode", mode(r.b_zp)},
                                 {"quantized", om == OutMode::kRequantize ? "true" : "false"},
                                 {"dequantized", om == OutMode::kDequantize ? "true" : "false"},
                                 {"a_scale_mode", r.quantized() ? mode(r.a_scale) : "0"},
                                 {"b_scale_mode", r.quantized() ? mode(r.b_scale) : "0"},
                                 {"has_y_zp", present(node, r.y_zp) ? "true" : "false"},
                                 {"has_bias", present(node, r.bias) ? "true" : "false"},
                                 {"qmin", std::to_string(qlo) + ".0"}, {"qmax", std::to_string(qhi) + ".0"}});
  auto arg = [&](int idx) { return present(node, idx) ? node.inputs[static_cast<size_t>(idx)] : kNullArg; };
  k.args = {arg(r.a), arg(r.b), arg(r.a_zp), arg(r.b_zp), arg(r.a_scale), arg(r.b_scale), arg(r.y_scale), arg(r.y_zp),
            arg(r.bias), node.outputs[0]};
  k.block = Dim3{128, 1, 1};
}

// The int8 epilogues' REQUANT_ROUTE (templates/int8_requant.cuh aotc_requant_fragment, for
// cutlass_conv2d_fprop_i8.cu.in and _sm90_i8.cu.in): kAotcRequantFp32 (--int8-requant fp32),
// kAotcRequantAuto (the double path, or the fp32 route on FP64-poor GPUs: --int8-requant double,
// and the default's fallback) or, by default, kAotcRequantDmagic - only where every per-channel
// multiplier in the node's constant epilogue words is finite with |m| < 0.5
// (aotc_requant_dmagic_applies; FP64-poor GPUs take the fp32 route there too) - and its one-FMA
// form kAotcRequantDfma where every output's p = acc + b is also proven under 2^29 in magnitude
// (dfma_bound_holds; --int8-requant dmagic keeps dmagic).
// True where |acc[n] + b[n]| < 2^29 for every 8-bit input: acc[n] = sum_j x_j * w[n][j] over the
// constant int8 weights of the two CUTLASS int8 kernels (rows of the output channel n first: KRSC,
// or [N, K] for a matrix product; zero point 0, the activations' own zero point folded into b),
// |x_j| <= 255 (uint8) or 128 (int8).
bool dfma_bound_holds(const Graph& graph, const Node& node, const uint64_t* words, int64_t channels) {
  const Roles r = roles_of(node);
  const Value& wv = input_value(graph, node, static_cast<size_t>(r.b));
  const Value& xv = input_value(graph, node, static_cast<size_t>(r.a));
  if (!wv.is_constant() || wv.dtype != DType::kInt8 || wv.shape.empty() || wv.shape[0] != channels || channels <= 0)
    return false;
  const int64_t xmax = xv.dtype == DType::kUInt8 ? 255 : xv.dtype == DType::kInt8 ? 128 : 0;
  if (xmax == 0) return false;
  const int8_t* w = wv.constant->data<int8_t>();
  const int64_t per = wv.constant->numel() / channels;
  for (int64_t n = 0; n < channels; ++n) {
    int64_t sum = 0;
    for (int64_t j = 0; j < per; ++j) sum += std::abs(static_cast<int64_t>(w[n * per + j]));
    const int64_t bound = xmax * sum + std::abs(static_cast<int64_t>(aotc_epilogue_word_bias(words[n])));
    if (bound >= kAotcRequantDfmaBound) return false;
  }
  return true;
}

// The persistent int8 GEMM's epilogue subtile (the template's EPI_TILE): the configuration's
// epi_n channels, or Target::int8_epilogue_tile_n's where set, by the schedule's rows (128
// cooperative, 64 ping-pong: one consumer warp group's); CUTLASS's own choice where neither is set
// or the width does not divide the tile's.
std::string epilogue_tile(const Target& target, const ConvKernelConfig& tile, bool coop) {
  const int n = target.int8_epilogue_tile_n > 0 ? target.int8_epilogue_tile_n : tile.epi_n;
  if (n <= 0 || tile.tb_n % n != 0) return "cutlass::epilogue::collective::EpilogueTileAuto";
  return "cute::Shape<cute::Int<" + std::to_string(coop ? std::min(128, tile.tb_m) : std::min(64, tile.tb_m)) +
         ">, cute::Int<" + std::to_string(n) + ">>";
}

int requant_route(const Graph& graph, const Node& node) {
  if (graph.target.int8_requant == Int8Requant::kFp32) return kAotcRequantFp32;
  if (graph.target.int8_requant == Int8Requant::kDouble) return kAotcRequantAuto;
  const Value& words = input_value(graph, node, kEpilogueWordsInput);
  if (!words.is_constant() || words.dtype != DType::kUInt64) return kAotcRequantAuto;
  const uint64_t* w = words.constant->data<uint64_t>();
  const int64_t channels = words.constant->numel();
  for (int64_t i = 0; i < channels; ++i)
    if (!aotc_requant_dmagic_applies(aotc_epilogue_word_multiplier(w[i]))) return kAotcRequantAuto;
  if (graph.target.int8_requant != Int8Requant::kDmagic && dfma_bound_holds(graph, node, w, channels))
    return kAotcRequantDfma;
  return kAotcRequantDmagic;
}

// The int8 tensor-core implicit GEMM of a channels_last aotc.QLinearConv (a library kernel: its
// params are built on the device at create), configuration picked for graph.target from the int8
// rows of ir/ops/conv_configs.h.
Expected<Lowering> lower_qconv_nhwc(const Node& node, const Graph& graph) {
  const Roles r = roles_of(node);
  const Value& x = input_value(graph, node, static_cast<size_t>(r.a));
  const Value& y = output_value(graph, node, 0);
  IntConvDims conv_shape;
  if (is_conv(node)) {
    auto d = conv_dims(node, nhwc_to_nchw(x.shape), nhwc_to_nchw(input_value(graph, node, static_cast<size_t>(r.b)).shape));
    if (!d) return d.status();
    conv_shape = *d;
  } else {  // A [..., M, K] x B^T ([N, K]): a 1x1 convolution over rows(A) "pixels" of K channels
    const Shape& bs = input_value(graph, node, static_cast<size_t>(r.b)).shape;
    conv_shape.batch = 1;
    conv_shape.cin = bs[1];
    conv_shape.cout = bs[0];
    const int64_t rows = x.numel() / bs[1];
    conv_shape.geo.in = {1, rows, 1};
    conv_shape.geo.kernel = {1, 1, 1};
    conv_shape.geo.strides = {1, 1, 1};
    conv_shape.geo.dilations = {1, 1, 1};
    conv_shape.geo.pad_begin = {0, 0, 0};
    conv_shape.geo.pad_end = {0, 0, 0};
    conv_shape.geo.out = {1, rows, 1};
  }
  const IntConvDims* d = &conv_shape;
  const WindowGeometry& g = d->geo;
  if (g.in[0] != 1 || g.kernel[0] != 1) return node_error(node, "the int8 tensor-core convolution is 2-D only");
  const OutMode om = out_mode(node);
  const int64_t gemm_m = d->batch * g.out[1] * g.out[2];
  const ConvKernelConfig& cfg = pick_conv_config(graph.target, ConvMath::kTensorOpInt8, gemm_m, d->cout);
  // The convolution's own requantized type: y's, or with a fused residual Add the type of its
  // y_zero_point (else x's), the Add's output being y.
  const DType conv_y = !(is_conv(node) && has_fused_residual(node)) ? y.dtype
                       : present(node, r.y_zp)                      ? input_value(graph, node, static_cast<size_t>(r.y_zp)).dtype
                                                                    : x.dtype;
  const auto [qlo, qhi] = om == OutMode::kRequantize ? clamp_range(node, conv_y) : std::pair<int64_t, int64_t>{0, 0};
  int64_t zp = 0;
  if (om == OutMode::kRequantize && present(node, r.y_zp)) {
    const Value& z = input_value(graph, node, static_cast<size_t>(r.y_zp));
    if (!z.is_constant()) return node_error(node, "the int8 tensor-core convolution needs a constant y_zero_point");
    zp = static_cast<int64_t>(z.constant->get(0));
  }
  const bool requant = om == OutMode::kRequantize;
  const bool residual = is_conv(node) && has_fused_residual(node);
  if (residual && !requant) return node_error(node, "a fused residual Add needs a requantizing convolution");
  std::vector<int64_t> sm80_res_args;  // the fused Add's arguments for the Sm80 kernel below
  bool sm80_add_reciprocal = false, sm80_add_fixed = false;
  if (requant) {
    // sm_90a: the int8 wgmma kernel where it applies; its params (TMA descriptors) are built at
    // compile time, so its operands must live at addresses fixed at create.
    const std::vector<int64_t> pads = {g.pad_begin[1], g.pad_begin[2], g.pad_end[1], g.pad_end[2]};
    auto wg = conv_wgmma_int8_config(graph.target, 1, d->cin, d->cout, {g.kernel[1], g.kernel[2]},
                                     {g.strides[1], g.strides[2]}, {g.dilations[1], g.dilations[2]}, pads, gemm_m);
    // A fused residual Add's scalars are compile-time arguments: constants only.
    std::vector<int64_t> res_args;
    bool res_ok = !residual, add_reciprocal = false, add_fixed = false;
    if (residual) {
      auto scalar = [&](size_t i, double absent) { return constant_scalar(graph, node, i, absent); };
      const auto ts = scalar(static_cast<size_t>(r.y_scale), 1), tz = scalar(static_cast<size_t>(r.y_zp), 0),
                 rs = scalar(kResidualInput + 1, 1), rz = scalar(kResidualInput + 2, 0),
                 os = scalar(kResidualInput + 3, 1), oz = scalar(kResidualInput + 4, 0);
      if (ts && tz && rs && rz && os && oz) {
        aotc_fused_add_scalars add;
        add.t_scale = static_cast<float>(*ts);
        add.t_zp = static_cast<float>(*tz);
        add.r_scale = static_cast<float>(*rs);
        add.r_zp = static_cast<float>(*rz);
        add.out_scale = static_cast<float>(*os);
        add.out_zp = static_cast<int>(*oz);
        add.add_qmin = static_cast<int>(node.attr_int("add_qmin", 0));
        add.add_qmax = static_cast<int>(node.attr_int("add_qmax", 0));
        // The division as a corrected reciprocal product where that is proven exact for every
        // pair of 8-bit t and r (t of the convolution's own type, r of the residual's).
        add.rcp = qlinear_add_exact_reciprocal(add.t_scale, add.t_zp, add.r_scale, add.r_zp, add.out_scale, conv_y,
                                               input_value(graph, node, kResidualInput).dtype)
                      .value_or(0.0f);
        add_reciprocal = add.rcp != 0.0f;
        // The integer form where it is proven for every pair (ADD_FIXED; the kernels' cheapest).
        if (const auto fx = qlinear_add_exact_fixed(add.t_scale, add.t_zp, add.r_scale, add.r_zp, add.out_scale,
                                                    add.out_zp, add.add_qmin, add.add_qmax, conv_y,
                                                    input_value(graph, node, kResidualInput).dtype)) {
          add.fx_a = fx->a;
          add.fx_b = fx->b;
          add.fx_c = fx->c;
          add.fx_k = fx->k;
          add_fixed = true;
        }
        long long words[kAotcFusedAddArgs];
        aotc_fused_add_pack(add, words);
        res_args.assign(words, words + kAotcFusedAddArgs);
        res_ok = true;
      }
    }
    if (residual && !res_ok) return node_error(node, "a fused residual Add needs constant scales and zero points");
    if (wg && fixed_address(graph, node.inputs[static_cast<size_t>(r.a)]) && fixed_address(graph, node.outputs[0]) &&
        (!residual || fixed_address(graph, node.inputs[kResidualInput]))) {
      // --conv-gemm-int8 on|coop: a pointwise layer as the template's GEMM mode (conv_gemm_int8_config).
      const auto gm = conv_gemm_int8_config(graph.target, d->cin, d->cout, {g.kernel[1], g.kernel[2]},
                                            {g.strides[1], g.strides[2]}, pads, gemm_m);
      const bool as_gemm = gm.has_value();
      ConvKernelConfig tile = as_gemm ? *gm : *wg;
      // The cooperative schedule for --conv-gemm-int8 coop, and for a layer with a fused residual
      // Add under ping-pong too: measured on an H200 (ResNet-50 int8 bs32, docs/perf_notes.md v53),
      // ping-pong with the fused Add took 93 us for layer1's conv3 where the unfused conv3 + Add
      // took 26 + 27 (1.178 ms in all), the cooperative one with it 0.936 ms.
      const bool coop = graph.target.conv_gemm_int8 == ConvGemmInt8::kCooperative || (as_gemm && residual);
      // 128 x 256 tiles for a cooperative GEMM-mode layer where they cost no wave quantisation
      // (int8_gemm_tile_n). Ping-pong cannot: one warp group holds a whole tile's accumulators.
      if (as_gemm && coop) tile.tb_n = tile.warp_n = static_cast<int>(int8_gemm_tile_n(graph.target, tile, gemm_m, d->cout));
      // --int8-conv-cluster 2 (for measuring): the convolution mode only (the GEMM mode's grid is
      // persistent).
      const int cluster_m = as_gemm ? 1 : conv_cluster_m(graph.target.int8_conv_cluster_m, tile, gemm_m);
      KernelStep k;
      k.template_name = "cutlass_conv2d_fprop_sm90_i8";
      k.holes = {{"comment", std::string(is_conv(node) ? "aotc.QLinearConv NHWC " : "aotc.QLinearMatMul as a 1x1 convolution ") +
                                 shape_str(x.shape) + " -> " + shape_str(y.shape) + " config " + tile.name + " requantized"},
                 {"ELEMENT_A", x.dtype == DType::kUInt8 ? "uint8_t" : "int8_t"},
                 {"ELEMENT_OUT", y.dtype == DType::kUInt8 ? "uint8_t" : "int8_t"},
                 {"HAS_RESIDUAL", residual ? "true" : "false"},
                 {"REQUANT_ROUTE", std::to_string(requant_route(graph, node))},
                 {"ADD_RECIPROCAL", add_reciprocal ? "true" : "false"},
                 {"ADD_FIXED", add_fixed ? "true" : "false"},
                 {"ELEMENT_C", !residual ? "void"
                               : input_value(graph, node, kResidualInput).dtype == DType::kUInt8 ? "uint8_t" : "int8_t"},
                 {"TILE_M", int_literal(tile.tb_m)}, {"TILE_N", int_literal(tile.tb_n)}, {"TILE_K", int_literal(tile.tb_k)},
                 {"STAGES", wg->stages > 0 ? "cutlass::conv::collective::StageCount<" + std::to_string(wg->stages) + ">"
                                           : "cutlass::conv::collective::StageCountAutoCarveout<(int)sizeof(typename "
                                             "Epilogue::SharedStorage)>"},
                 {"STAGES_NOTE", as_gemm ? "as many stages as fit"
                                 : wg->stages > 0 ? std::to_string(wg->stages) + " stages" : "as many stages as fit"},
                 {"MIN_BLOCKS", int_literal(as_gemm ? 1 : conv_wgmma_min_blocks(*wg))},
                 {"AS_GEMM", as_gemm ? "1" : "0"},
                 {"PINGPONG", as_gemm && !coop ? "true" : "false"},
                 {"SCHEDULE_NOTE", coop ? "cooperative" : "ping-pong"},
                 {"EPI_TILE", as_gemm ? epilogue_tile(graph.target, tile, coop)
                                      : "cutlass::epilogue::collective::EpilogueTileAuto"},
                 {"CLUSTER_M", std::to_string(cluster_m)},
                 {"CLUSTER_DIMS", cluster_dims_attribute(cluster_m)}};
      if (as_gemm)
        k.holes[0].second += " as a GEMM (" + std::to_string(tile.tb_m) + "x" + std::to_string(tile.tb_n) + "x" +
                             std::to_string(tile.tb_k) + (coop ? " cooperative)" : " ping-pong)");
      k.library_params = true;
      k.host_params = true;
      if (as_gemm)
        k.builder_args = {gemm_m, d->cout, d->cin, zp, qlo, qhi, graph.target.sm_count};
      else
        k.builder_args = {d->batch, g.in[1], g.in[2], d->cin, d->cout, g.kernel[1], g.kernel[2], g.pad_begin[1],
                          g.pad_begin[2], g.pad_end[1], g.pad_end[2], g.strides[1], g.strides[2], g.dilations[1],
                          g.dilations[2], zp, qlo, qhi};
      k.builder_args.insert(k.builder_args.end(), res_args.begin(), res_args.end());
      k.args = {node.inputs[static_cast<size_t>(r.a)], node.inputs[static_cast<size_t>(r.b)],
                node.inputs[kEpilogueWordsInput], residual ? node.inputs[kResidualInput] : kNullArg, node.outputs[0]};
      if (residual) k.holes[0].second += " + the residual aotc.QLinearAdd";
      // Informative only: the compile-time builder reports the real launch shape (GEMM mode:
      // persistent, at most one CTA an SM; one producer and two consumer warp groups).
      const int64_t tiles = conv_config_tiles(tile, gemm_m, d->cout);
      k.grid = Dim3{as_gemm ? std::min<int64_t>(tiles, graph.target.sm_count) : tiles, 1, 1};
      k.block = Dim3{as_gemm ? 384 : 256, 1, 1};
      Lowering l;
      l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
      return l;
    }
    // The Sm80 kernel reads the residual as its epilogue's source, which has the output's type.
    if (residual && input_value(graph, node, kResidualInput).dtype != y.dtype)
      return node_error(node, "a fused residual Add on the Sm80 int8 kernel needs r of the output's type");
    sm80_res_args = res_args;
    sm80_add_reciprocal = add_reciprocal;
    sm80_add_fixed = add_fixed;
  }
  KernelStep k;
  k.template_name = "cutlass_conv2d_fprop_i8";
  k.holes = {{"comment", std::string(is_conv(node) ? "aotc.QLinearConv NHWC " : "aotc.QLinearMatMul as a 1x1 convolution ") +
                             shape_str(x.shape) + " -> " + shape_str(y.shape) + " config " + cfg.name +
                             (requant ? " requantized" : " dequantized")},
             {"ELEMENT_A", x.dtype == DType::kUInt8 ? "uint8_t" : "int8_t"},
             {"ELEMENT_OUT", requant ? (y.dtype == DType::kUInt8 ? "uint8_t" : "int8_t") : "float"},
             {"REQUANTIZE", requant ? "true" : "false"},
             {"REQUANT_ROUTE", std::to_string(requant ? requant_route(graph, node) : kAotcRequantAuto)},
             {"HAS_RESIDUAL", residual ? "true" : "false"},
             {"ADD_RECIPROCAL", sm80_add_reciprocal ? "true" : "false"},
             {"ADD_FIXED", sm80_add_fixed ? "true" : "false"},
             {"ALIGN_C", requant ? "8" : "4"},
             {"TB_M", int_literal(cfg.tb_m)}, {"TB_N", int_literal(cfg.tb_n)}, {"TB_K", int_literal(cfg.tb_k)},
             {"WARP_M", int_literal(cfg.warp_m)}, {"WARP_N", int_literal(cfg.warp_n)}, {"WARP_K", int_literal(cfg.warp_k)},
             {"STAGES", int_literal(cfg.stages)}};
  k.library_params = true;
  k.builder_args = {d->batch, g.in[1], g.in[2], d->cin, d->cout, g.kernel[1], g.kernel[2], g.out[1], g.out[2],
                    g.pad_begin[1], g.pad_begin[2], g.strides[1], g.strides[2], g.dilations[1], g.dilations[2],
                    zp, qlo, qhi};
  k.builder_args.insert(k.builder_args.end(), sm80_res_args.begin(), sm80_res_args.end());
  k.args = {node.inputs[static_cast<size_t>(r.a)], node.inputs[static_cast<size_t>(r.b)], node.inputs[kEpilogueWordsInput],
            residual ? node.inputs[kResidualInput] : kNullArg, node.outputs[0]};
  if (residual) k.holes[0].second += " + the residual aotc.QLinearAdd";
  // Informative only: the builder reports the real launch shape.
  k.grid = Dim3{conv_config_tiles(cfg, gemm_m, d->cout), 1, 1};
  k.block = Dim3{32 * (cfg.tb_m / cfg.warp_m) * (cfg.tb_n / cfg.warp_n), 1, 1};
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

Expected<Lowering> integer_lower(const Node& node, const Graph& graph) {
  // channels_last with epilogue words: the tensor-core kernel; without (a grouped or depthwise
  // convolution in an NHWC chain, opt/layout_nhwc): the direct kernel reading NHWC / KRSC.
  if (channels_last(node) && (!is_conv(node) || node.input(kEpilogueWordsInput) != kNoValue))
    return lower_qconv_nhwc(node, graph);
  const Roles r = roles_of(node);
  const Shape& as = input_value(graph, node, static_cast<size_t>(r.a)).shape;
  const Shape& bs = input_value(graph, node, static_cast<size_t>(r.b)).shape;
  const int64_t total = output_value(graph, node, 0).numel();
  Lowering l;
  if (total == 0) return l;
  KernelStep k;
  const std::string comment = (internal(node) ? "aotc." : "") + node.op_type + " " + shape_str(as) + " x " + shape_str(bs);
  if (!is_conv(node)) {
    auto d = matmul_dims(node, as, bs);
    if (!d) return d.status();
    Shape batch = d->batch, sa = d->a_strides, sb = d->b_strides;
    if (batch.empty()) batch = {1}, sa = {0}, sb = {0};  // no zero-length arrays in the kernel
    k.template_name = "integer_matmul";
    k.holes = {{"m", int_literal(d->m)}, {"n", int_literal(d->n)}, {"k", int_literal(d->k)},
               {"batch_rank", int_literal(static_cast<int64_t>(batch.size()))}, {"batch_dims", dims_literal(batch)},
               {"a_strides", dims_literal(sa)}, {"b_strides", dims_literal(sb)}, {"total", int_literal(total)},
               {"comment", comment}};
  } else {
    const bool nhwc = channels_last(node);
    auto d = nhwc ? conv_dims(node, nhwc_to_nchw(as), nhwc_to_nchw(bs)) : conv_dims(node, as, bs);
    if (!d) return d.status();
    const WindowGeometry& g = d->geo;
    k.template_name = "integer_conv";
    k.holes = {{"cin", int_literal(d->cin)}, {"cout", int_literal(d->cout)}, {"group", int_literal(d->group)},
               {"in_dims", dims_literal(g.in)}, {"kernel_dims", dims_literal(g.kernel)}, {"strides", dims_literal(g.strides)},
               {"dilations", dims_literal(g.dilations)}, {"pad_begin", dims_literal(g.pad_begin)}, {"out_dims", dims_literal(g.out)},
               {"total", int_literal(total)}, {"comment", comment}, {"nhwc", nhwc ? "true" : "false"}};
  }
  common_holes(node, graph, k);
  k.grid = grid_for(total, 128);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_integer_matmul_ops(OpRegistry& registry) {
  for (const char* op : {"MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv"}) {
    OpDef def;
    def.op_type = op;
    def.infer = integer_infer;
    def.reference = integer_reference;
    def.lower = integer_lower;
    registry.add(def);
  }
  for (const char* op : {"QLinearMatMul", "QLinearConv"}) {
    OpDef def;
    def.op_type = op;
    def.domain = "aotc";
    def.infer = integer_infer;
    def.reference = integer_reference;
    def.lower = integer_lower;
    registry.add(def);
  }
}

}  // namespace aotc
