// Attention (opset 23, 24; the window attributes of 25): softmax(softcap(Q K^T * scale) + bias) V
// per (batch, query head), K/V heads shared by q_num_heads / kv_num_heads query heads (GQA, MQA).
// Q/K/V are (B, H, S, D), or (B, S, H*D) with q_num_heads / kv_num_heads. The bias combines the
// attn_mask (bool: False = -inf; numbers: added; a last dim shorter than the keys is padded with
// -inf), is_causal (query i sees key j iff j <= i + offset, offset = past length, or
// nonpad_kv_seqlen[b] - Sq), the window bounds and nonpad_kv_seqlen (keys >= it are -inf). A query
// row whose bias is -inf everywhere outputs zeros. past_key/value are prepended to K/V
// (present_key/value = the concatenation). qk_matmul_output: mode 0 the scaled QK^T (the spec's
// wording; the ONNX Python reference writes the softcapped value when softcap is set), 1 after
// softcap, 2 with the bias, 3 the softmax. Reference in double; kernels: attention_kv_concat.cu.in
// (past + new -> present) and attention_rows.cu.in (online softmax, no score matrix).
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "ir/op_registry.h"
#include "ir/ops/attention.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kAttnTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};

enum Input { kQ = 0, kK, kV, kMask, kPastKey, kPastValue, kNonpad };
enum Output { kY = 0, kPresentKey, kPresentValue, kQk };

// The problem in (batch, head, position, dim) terms; strides are in elements.
struct Layout {
  int64_t b = 0, h = 0, s = 0;
};
struct AttnDims {
  bool three_d = false;
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, past = 0, total = 0, d = 0, dv = 0;
  Layout q, k, v, y;
  int64_t q_base = 0, k_base = 0, v_base = 0;  // element offsets of Q/K/V in their buffers (aotc.StridedAttention)
  bool has_mask = false, mask_bool = false;
  Layout mask;  // h/b/s strides of the mask over (batch, q head, query); 0 where it broadcasts
  int64_t mask_len = 0;
  bool has_past = false, has_nonpad = false, causal = false;
  int64_t left = -1, right = -1;
  double scale = 0;
  float softcap = 0;
  int64_t mode = 0;
};

bool present(const Node& node, size_t i) { return node.input(i) != kNoValue; }
bool has_output(const Node& node, size_t i) { return node.outputs.size() > i && node.outputs[i] != kNoValue; }

// Shapes of the inputs (nullptr when absent) -> the dims; every check of the op is here.
Expected<AttnDims> attention_dims(const Node& node, const std::vector<const Shape*>& in, DType mask_dtype, int64_t opset) {
  AttnDims a;
  const Shape &q = *in[kQ], &k = *in[kK], &v = *in[kV];
  if (q.size() != k.size() || q.size() != v.size() || (q.size() != 3 && q.size() != 4))
    return node_error(node, "Q, K and V must all have rank 3 or all rank 4, got " + shape_str(q) + ", " + shape_str(k) +
                                ", " + shape_str(v));
  const int64_t qh_attr = node.attr_int("q_num_heads", 0), kvh_attr = node.attr_int("kv_num_heads", 0);
  a.batch = q[0];
  if (k[0] != a.batch || v[0] != a.batch)
    return node_error(node, "Q, K and V have different batch sizes (" + shape_str(q) + ", " + shape_str(k) + ", " +
                                shape_str(v) + ")");
  if (q.size() == 4) {
    a.q_heads = q[1], a.kv_heads = k[1], a.q_len = q[2], a.kv_len = k[2], a.d = q[3], a.dv = v[3];
    if (v[1] != a.kv_heads || v[2] != a.kv_len || k[3] != a.d)
      return node_error(node, "K " + shape_str(k) + " and V " + shape_str(v) + " do not match Q " + shape_str(q) +
                                  " (K: (B, kv_heads, L, D), V: (B, kv_heads, L, Dv))");
    if ((qh_attr != 0 && qh_attr != a.q_heads) || (kvh_attr != 0 && kvh_attr != a.kv_heads))
      return node_error(node, "q_num_heads/kv_num_heads disagree with the 4-D inputs' head dims");
    a.q = {a.q_heads * a.q_len * a.d, a.q_len * a.d, a.d};
    a.k = {a.kv_heads * a.kv_len * a.d, a.kv_len * a.d, a.d};
    a.v = {a.kv_heads * a.kv_len * a.dv, a.kv_len * a.dv, a.dv};
  } else {
    a.three_d = true;
    if (qh_attr <= 0 || kvh_attr <= 0) return node_error(node, "3-D inputs need q_num_heads and kv_num_heads (> 0)");
    a.q_heads = qh_attr, a.kv_heads = kvh_attr, a.q_len = q[1], a.kv_len = k[1];
    if (q[2] % a.q_heads != 0 || v[2] % a.kv_heads != 0)
      return node_error(node, "hidden sizes " + shape_str(q) + " / " + shape_str(v) + " are not multiples of the head counts");
    a.d = q[2] / a.q_heads, a.dv = v[2] / a.kv_heads;
    if (k[2] != a.kv_heads * a.d || v[1] != a.kv_len)
      return node_error(node, "K " + shape_str(k) + " and V " + shape_str(v) + " do not match Q " + shape_str(q) +
                                  " with q_num_heads " + std::to_string(a.q_heads) + " and kv_num_heads " +
                                  std::to_string(a.kv_heads));
    a.q = {a.q_len * q[2], a.d, q[2]};
    a.k = {a.kv_len * k[2], a.d, k[2]};
    a.v = {a.kv_len * v[2], a.dv, v[2]};
  }
  if (a.kv_heads <= 0 || a.q_heads % a.kv_heads != 0)
    return node_error(node, "q_num_heads " + std::to_string(a.q_heads) + " is not a multiple of kv_num_heads " +
                                std::to_string(a.kv_heads));
  a.has_past = in[kPastKey] || in[kPastValue];
  if (a.has_past) {
    if (!in[kPastKey] || !in[kPastValue]) return node_error(node, "past_key and past_value must be given together");
    const Shape &pk = *in[kPastKey], &pv = *in[kPastValue];
    if (pk.size() != 4 || pv.size() != 4 || pk[0] != a.batch || pk[1] != a.kv_heads || pk[3] != a.d ||
        pv[0] != a.batch || pv[1] != a.kv_heads || pv[2] != pk[2] || pv[3] != a.dv)
      return node_error(node, "past_key " + shape_str(pk) + " / past_value " + shape_str(pv) + " must be (" +
                                  std::to_string(a.batch) + ", " + std::to_string(a.kv_heads) + ", P, " +
                                  std::to_string(a.d) + ") / (..., P, " + std::to_string(a.dv) + ")");
    a.past = pk[2];
  }
  a.total = a.past + a.kv_len;
  // The outputs mix dims of different inputs (Q's sequence, V's head size, the past length), so
  // their element counts are bounded here, before any layout multiplies them (a fuzz find:
  // Q [2, 3, 2^31, 8] with V [.., 2^31 - 1] overflowed Y's layout, UBSan, 2026-11-28).
  auto product_fits = [](std::initializer_list<int64_t> dims) {
    int64_t p = 1;
    for (int64_t d : dims)
      if (d < 0 || __builtin_mul_overflow(p, d, &p)) return false;
    return true;
  };
  if (!product_fits({a.batch, a.q_heads, a.q_len, a.dv}) || !product_fits({a.batch, a.q_heads, a.q_len, a.total}) ||
      !product_fits({a.batch, a.kv_heads, a.total, std::max(a.d, a.dv)}))
    return node_error(node, "output sizes overflow 64-bit element counts (Q " + shape_str(q) + ", K " + shape_str(k) +
                                ", V " + shape_str(v) + ")");
  a.has_nonpad = in.size() > kNonpad && in[kNonpad];
  if (a.has_nonpad) {
    if (opset < 24) return node_error(node, "input 6 (nonpad_kv_seqlen) needs opset 24, the model imports " + std::to_string(opset));
    if (a.has_past) return node_error(node, "nonpad_kv_seqlen cannot be combined with past_key/past_value");
    if (*in[kNonpad] != Shape{a.batch}) return node_error(node, "nonpad_kv_seqlen must have shape (" + std::to_string(a.batch) + ")");
  }
  a.y = a.three_d ? Layout{a.q_len * a.q_heads * a.dv, a.dv, a.q_heads * a.dv} : Layout{a.q_heads * a.q_len * a.dv, a.q_len * a.dv, a.dv};
  if (in[kMask]) {
    const Shape& m = *in[kMask];
    a.has_mask = true;
    a.mask_bool = mask_dtype == DType::kBool;
    if (m.empty() || m.size() > 4) return node_error(node, "attn_mask must have rank 1 to 4, got " + shape_str(m));
    if (m.back() > a.total)
      return node_error(node, "attn_mask's last dim " + std::to_string(m.back()) + " exceeds the " +
                                  std::to_string(a.total) + " keys");
    a.mask_len = m.back();
    const int64_t target[3] = {a.batch, a.q_heads, a.q_len};
    int64_t stride = m.back(), strides[3] = {0, 0, 0};
    for (int i = 2; i >= 0; --i) {
      const int64_t mi = static_cast<int64_t>(m.size()) - 1 - (3 - i);  // mask dim aligned with target[i]
      if (mi < 0) continue;
      const int64_t dim = m[static_cast<size_t>(mi)];
      if (dim != 1 && dim != target[i])
        return node_error(node, "attn_mask of shape " + shape_str(m) + " does not broadcast to (" + std::to_string(a.batch) +
                                    ", " + std::to_string(a.q_heads) + ", " + std::to_string(a.q_len) + ", " +
                                    std::to_string(a.total) + ")");
      strides[i] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
    a.mask = {strides[0], strides[1], strides[2]};
  }
  a.causal = node.attr_int("is_causal", 0) != 0;
  a.left = node.attr_int("left_window_size", -1);
  a.right = node.attr_int("right_window_size", -1);
  if (a.left < -1 || a.right < -1) return node_error(node, "left_window_size/right_window_size must be -1 or >= 0");
  a.scale = node.has_attr("scale") ? static_cast<double>(node.attr_float("scale", 1.0f))
                                   : 1.0 / std::sqrt(static_cast<double>(a.d));
  a.softcap = node.attr_float("softcap", 0.0f);
  a.mode = node.attr_int("qk_matmul_output_mode", 0);
  if (a.mode < 0 || a.mode > 3)
    return node_error(node, "qk_matmul_output_mode " + std::to_string(a.mode) + " is not one of 0, 1, 2, 3");
  if (node.has_attr("softmax_precision")) {
    const int64_t p = node.attr_int("softmax_precision", 1);
    if (p != 1 && p != 10 && p != 11 && p != 16)
      return node_error(node, "softmax_precision " + std::to_string(p) + " is not a float type (1, 10, 11, 16)");
  }
  return a;
}

bool is_strided(const Node& node) { return node.domain == "aotc"; }

// aotc.StridedAttention (opt/fuse_attention.cc's fuse_attention_operands): Q, K and V are read
// where their producers (a Split part, a strided copy) would have read them: attributes q_shape /
// k_shape / v_shape give the logical operand shapes (as the Attention op's inputs), q_view /
// k_view / v_view = [base, batch stride, head stride, row stride] their elements in the buffers
// inputs 0-2 (the last dim contiguous). `sources` are the buffers' shapes (the views must stay
// inside them).
Expected<AttnDims> strided_dims(const Node& node, const std::vector<const Shape*>& sources, DType mask_dtype,
                                int64_t opset) {
  if (sources.size() > kPastKey && (sources[kPastKey] || sources[kPastValue] || (sources.size() > kNonpad && sources[kNonpad])))
    return node_error(node, "StridedAttention takes no past_key / past_value / nonpad_kv_seqlen");
  std::vector<Shape> logical(3);
  const char* shape_attr[3] = {"q_shape", "k_shape", "v_shape"};
  const char* view_attr[3] = {"q_view", "k_view", "v_view"};
  for (int i = 0; i < 3; ++i) {
    if (!node.has_attr(shape_attr[i]) || node.attrs.at(shape_attr[i]).kind != Attribute::Kind::kInts ||
        !node.has_attr(view_attr[i]) || node.attrs.at(view_attr[i]).kind != Attribute::Kind::kInts ||
        node.attr_ints(view_attr[i]).size() != 4)
      return node_error(node, std::string("attributes ") + shape_attr[i] + " (ints) and " + view_attr[i] +
                                  " (4 ints) are required");
    logical[static_cast<size_t>(i)] = node.attr_ints(shape_attr[i]);
    for (int64_t d : logical[static_cast<size_t>(i)])
      if (d < 0) return node_error(node, std::string(shape_attr[i]) + " has a negative dim");
  }
  std::vector<const Shape*> in(7, nullptr);
  for (size_t i = 0; i < 3; ++i) in[i] = &logical[i];
  if (sources.size() > kMask) in[kMask] = sources[kMask];
  Expected<AttnDims> ad = attention_dims(node, in, mask_dtype, opset);
  if (!ad) return ad;
  AttnDims a = *ad;
  Layout* layouts[3] = {&a.q, &a.k, &a.v};
  int64_t* bases[3] = {&a.q_base, &a.k_base, &a.v_base};
  const int64_t heads[3] = {a.q_heads, a.kv_heads, a.kv_heads}, rows[3] = {a.q_len, a.kv_len, a.kv_len},
                dims[3] = {a.d, a.d, a.dv};
  for (int i = 0; i < 3; ++i) {
    const std::vector<int64_t> v = node.attr_ints(view_attr[i]);
    for (int64_t x : v)
      if (x < 0 || x > (int64_t{1} << 50)) return node_error(node, std::string(view_attr[i]) + " has an entry out of range");
    *layouts[i] = Layout{v[1], v[2], v[3]};
    *bases[i] = v[0];
    if (a.batch * heads[i] * rows[i] * dims[i] == 0) continue;
    const int64_t last = v[0] + (a.batch - 1) * v[1] + (heads[i] - 1) * v[2] + (rows[i] - 1) * v[3] + dims[i] - 1;
    if (!sources[static_cast<size_t>(i)] || last >= shape_numel(*sources[static_cast<size_t>(i)]))
      return node_error(node, std::string(view_attr[i]) + " reads past the end of input " + std::to_string(i));
  }
  return a;
}

Expected<AttnDims> dims_of_graph(const Node& node, const Graph& graph) {
  std::vector<const Shape*> in(7, nullptr);
  for (size_t i = 0; i < in.size(); ++i)
    if (present(node, i)) in[i] = &graph.value(node.inputs[i]).shape;
  const DType mask_dtype = present(node, kMask) ? graph.value(node.inputs[kMask]).dtype : DType::kUndefined;
  if (is_strided(node)) return strided_dims(node, in, mask_dtype, graph.opset);
  return attention_dims(node, in, mask_dtype, graph.opset);
}

Status attention_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, is_strided(node) ? 4 : 7));
  if (node.outputs.empty() || node.outputs.size() > (is_strided(node) ? 1u : 4u) || node.outputs[0] == kNoValue)
    return node_error(node, is_strided(node) ? "expects 1 output (Y)"
                                             : "expects 1 to 4 outputs (Y, present_key, present_value, qk_matmul_output), Y present");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, kQ, kAttnTypes));
  const DType t = input_value(graph, node, kQ).dtype;
  for (size_t i : {kK, kV, kPastKey, kPastValue})
    if (present(node, i)) AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {t}));
  if (present(node, kMask) && !(dtype_is_float(input_value(graph, node, kMask).dtype) ||
                                dtype_is_integer(input_value(graph, node, kMask).dtype) ||
                                input_value(graph, node, kMask).dtype == DType::kBool))
    return node_error(node, "attn_mask must be bool or numeric, got " + dtype_name(input_value(graph, node, kMask).dtype));
  if (present(node, kNonpad)) AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, kNonpad, {DType::kInt64}));
  Expected<AttnDims> a = dims_of_graph(node, graph);
  if (!a) return a.status();
  if (a->three_d) set_output(graph, node, kY, t, {a->batch, a->q_len, a->q_heads * a->dv});
  else set_output(graph, node, kY, t, {a->batch, a->q_heads, a->q_len, a->dv});
  if (has_output(node, kPresentKey)) set_output(graph, node, kPresentKey, t, {a->batch, a->kv_heads, a->total, a->d});
  if (has_output(node, kPresentValue)) set_output(graph, node, kPresentValue, t, {a->batch, a->kv_heads, a->total, a->dv});
  if (has_output(node, kQk)) set_output(graph, node, kQk, t, {a->batch, a->q_heads, a->q_len, a->total});
  return Status::ok();
}

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Whether key j is allowed for query i of batch b, and the additive bias (mask value) when it is.
bool key_allowed(const AttnDims& a, const Tensor* mask, const Tensor* nonpad, int64_t b, int64_t h, int64_t i, int64_t j,
                 double* bias) {
  *bias = 0;
  const int64_t offset = a.has_nonpad ? nonpad->get_int(b) - a.q_len : a.past;
  if (a.causal && j > i + offset) return false;
  if (a.left >= 0 && (i + offset) - j > a.left) return false;
  if (a.right >= 0 && j - (i + offset) > a.right) return false;
  if (a.has_nonpad && j >= nonpad->get_int(b)) return false;
  if (a.has_mask) {
    if (j >= a.mask_len) return false;
    const double m = mask->get(b * a.mask.b + h * a.mask.h + i * a.mask.s + j);
    if (a.mask_bool) return m != 0;
    if (m == kNegInf) return false;
    *bias = m;
  }
  return true;
}

Status attention_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  // `inputs` may stop after the last present input.
  auto in = [&](size_t i) -> const Tensor* { return i < inputs.size() ? inputs[i] : nullptr; };
  std::vector<const Shape*> shapes(7, nullptr);
  for (size_t i = 0; i < shapes.size(); ++i)
    if (in(i)) shapes[i] = &in(i)->shape();
  // Opset checks ran in infer; 24 here only lets input 6 through.
  const DType mask_dtype = in(kMask) ? in(kMask)->dtype() : DType::kUndefined;
  Expected<AttnDims> ad = is_strided(node) ? strided_dims(node, shapes, mask_dtype, 24)
                                           : attention_dims(node, shapes, mask_dtype, 24);
  if (!ad) return ad.status();
  const AttnDims& a = *ad;
  const Tensor &q = *in(kQ), &k = *in(kK), &v = *in(kV);
  const Tensor* mask = in(kMask);
  const Tensor* nonpad = in(kNonpad);
  const Tensor* past_k = in(kPastKey);
  const Tensor* past_v = in(kPastValue);
  // Key/value element (b, kv head, position j of past + new, dim).
  auto key = [&](int64_t b, int64_t g, int64_t j, int64_t d) {
    return j < a.past ? past_k->get(((b * a.kv_heads + g) * a.past + j) * a.d + d)
                      : k.get(a.k_base + b * a.k.b + g * a.k.h + (j - a.past) * a.k.s + d);
  };
  auto value = [&](int64_t b, int64_t g, int64_t j, int64_t d) {
    return j < a.past ? past_v->get(((b * a.kv_heads + g) * a.past + j) * a.dv + d)
                      : v.get(a.v_base + b * a.v.b + g * a.v.h + (j - a.past) * a.v.s + d);
  };
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t g = 0; g < a.kv_heads; ++g)
      for (int64_t j = 0; j < a.total; ++j) {
        if (has_output(node, kPresentKey))
          for (int64_t d = 0; d < a.d; ++d) outputs[kPresentKey].set(((b * a.kv_heads + g) * a.total + j) * a.d + d, key(b, g, j, d));
        if (has_output(node, kPresentValue))
          for (int64_t d = 0; d < a.dv; ++d)
            outputs[kPresentValue].set(((b * a.kv_heads + g) * a.total + j) * a.dv + d, value(b, g, j, d));
      }
  const int64_t group = a.q_heads / a.kv_heads;
  std::vector<double> raw(static_cast<size_t>(a.total)), s(static_cast<size_t>(a.total));
  std::vector<char> allowed(static_cast<size_t>(a.total));
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.q_heads; ++h)
      for (int64_t i = 0; i < a.q_len; ++i) {
        const int64_t g = h / group;
        double m = kNegInf;
        bool any = false;
        for (int64_t j = 0; j < a.total; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < a.d; ++d) dot += q.get(a.q_base + b * a.q.b + h * a.q.h + i * a.q.s + d) * key(b, g, j, d);
          raw[j] = dot * a.scale;
          double capped = a.softcap > 0 ? a.softcap * std::tanh(raw[j] / a.softcap) : raw[j];
          double bias = 0;
          allowed[j] = key_allowed(a, mask, nonpad, b, h, i, j, &bias);
          s[j] = allowed[j] ? capped + bias : kNegInf;
          any = any || allowed[j];
          if (allowed[j]) m = std::max(m, s[j]);
          const int64_t qk_index = ((b * a.q_heads + h) * a.q_len + i) * a.total + j;
          if (has_output(node, kQk) && a.mode < 3) outputs[kQk].set(qk_index, a.mode == 0 ? raw[j] : a.mode == 1 ? capped : s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < a.total; ++j) {
          s[j] = allowed[j] ? std::exp(s[j] - m) : 0.0;
          sum += s[j];
        }
        for (int64_t j = 0; j < a.total; ++j) {
          const double p = any ? s[j] / sum : 0.0;  // a fully masked row is zeros
          s[j] = p;
          if (has_output(node, kQk) && a.mode == 3) outputs[kQk].set(((b * a.q_heads + h) * a.q_len + i) * a.total + j, p);
        }
        for (int64_t d = 0; d < a.dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < a.total; ++j) acc += s[j] * value(b, g, j, d);
          outputs[kY].set(b * a.y.b + h * a.y.h + i * a.y.s + d, acc);
        }
      }
  return Status::ok();
}

std::string layout_comment(const AttnDims& a) {
  return "Attention B " + std::to_string(a.batch) + " heads " + std::to_string(a.q_heads) + "/" +
         std::to_string(a.kv_heads) + " Sq " + std::to_string(a.q_len) + " keys " + std::to_string(a.total) +
         " (past " + std::to_string(a.past) + ") D " + std::to_string(a.d) + " Dv " + std::to_string(a.dv) +
         (a.three_d ? " 3-D" : " 4-D") + (a.causal ? " causal" : "") + (a.has_mask ? " mask" : "");
}

// ---- the fused tensor-core strategy (templates/cutlass_fmha_forward.cu.in) ----
// It computes exactly what the op asks when: Q/K/V are 16-bit on Sm80+ tensor cores (or fp32 on
// FFMA, the kernel's SIMT configuration: IEEE fp32 products, no TF32), the query
// heads are a multiple of the K/V heads (a group of G query heads reads one K/V head in place:
// the kernel adds that head's offset itself), there is no past / nonpad / window / softcap / qk output, the mask
// (if any) is additive in the same dtype and covers every key, head dims are multiples of 8 up to
// 128, and the output rows are what the kernel writes: (B, Sq, H*Dv) for 3-D inputs, or (B, H,
// Sq, Dv) seen as B*H batches of one head (4-D inputs, where the mask's strides allow that).
struct FmhaConfig {
  int64_t queries, keys, max_k;
};
constexpr FmhaConfig kFmhaConfigs[] = {{64, 64, 64}, {32, 128, 128}};  // head dim <= 64, <= 128

// The first configuration whose head dim fits; with AttentionBlocks::kFillSms (the default), the
// 32-query one instead where 64-query blocks (batch x heads x query blocks) would not fill one wave
// of SMs; with k32, the 32-query one always.
const FmhaConfig* fmha_config(const AttnDims& a, const Target& target) {
  for (const FmhaConfig& c : kFmhaConfigs) {
    if (a.d > c.max_k || a.dv > c.max_k) continue;
    const int64_t blocks = a.batch * a.q_heads * ((a.q_len + c.queries - 1) / c.queries);
    const AttentionBlocks b = target.attention_blocks;
    if (c.queries == 64 && (b == AttentionBlocks::k32 || (b == AttentionBlocks::kFillSms && blocks < target.sm_count)))
      continue;
    return &c;
  }
  return nullptr;
}

bool fmha_applies(const Node& node, const Graph& graph, const AttnDims& a) {
  const DType t = input_value(graph, node, kQ).dtype;
  if (!graph.target.has_sm80_tensor_cores() || (t != DType::kFloat16 && t != DType::kBFloat16 && t != DType::kFloat32))
    return false;
  if (a.kv_heads <= 0 || a.q_heads % a.kv_heads != 0 || a.has_past || a.has_nonpad || a.left != -1 || a.right != -1 || a.softcap > 0 ||
      has_output(node, kQk) || has_output(node, kPresentKey) || has_output(node, kPresentValue))
    return false;
  if (a.d % 8 != 0 || a.dv % 8 != 0 || !fmha_config(a, graph.target)) return false;
  // 16-byte vectors from every row start; strides are checked by the params builder.
  if (a.q_base % 8 || a.k_base % 8 || a.v_base % 8) return false;
  if (a.q.b % 8 || a.q.h % 8 || a.q.s % 8 || a.k.b % 8 || a.k.h % 8 || a.k.s % 8 || a.v.b % 8 || a.v.h % 8 ||
      a.v.s % 8)
    return false;
  // 4-D inputs run as B*H batches of one head: each operand's batch stride must be H head strides
  // (grouped K/V heads are addressed by the kernel from their own strides).
  const bool grouped = a.q_heads != a.kv_heads;
  if (!a.three_d && a.batch > 1 && a.q_heads > 1 &&
      (a.q.b != a.q_heads * a.q.h || (!grouped && (a.k.b != a.q_heads * a.k.h || a.v.b != a.q_heads * a.v.h))))
    return false;
  if (a.batch * a.q_heads > 65535 || a.q_len > (int64_t{1} << 30) || a.kv_len > (int64_t{1} << 30)) return false;
  if (a.has_mask) {
    if (a.mask_bool || graph.value(node.inputs[kMask]).dtype != t || a.mask_len != a.total) return false;
    if (a.mask.b % 8 || a.mask.h % 8 || a.mask.s % 8) return false;
  }
  if (!a.three_d && a.has_mask && a.batch > 1 && a.q_heads > 1 && a.mask.b != a.q_heads * a.mask.h) return false;
  return true;
}

// Whether the mask is a constant in which every (batch, head, query) row keeps at least one key
// that is not -inf: then no row can be fully masked and the fused kernel needs no fix-up after it
// (a causal mask written with the dtype's lowest value instead of -inf, as HF GPT-2 writes it, for
// one; whether GPT-2's export folds it to a constant is not checked here; a
// 0 / -inf causal mask becomes is_causal in fuse_attention_operands). Rows the mask broadcasts over
// are checked once; a mask over kMaxCheckedMaskElements elements is not checked (the fix-up stays).
bool constant_mask_leaves_a_key_in_every_row(const Node& node, const Graph& graph, const AttnDims& a) {
  constexpr int64_t kMaxCheckedMaskElements = int64_t{1} << 26;
  const Value& mv = graph.value(node.inputs[kMask]);
  if (!mv.constant || a.mask_bool) return false;
  const int64_t nb = a.mask.b ? a.batch : 1, nh = a.mask.h ? a.q_heads : 1, ns = a.mask.s ? a.q_len : 1;
  if (nb * nh * ns * a.total > kMaxCheckedMaskElements) return false;
  const Tensor& m = *mv.constant;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t i = 0; i < ns; ++i) {
        const int64_t row = b * a.mask.b + h * a.mask.h + i * a.mask.s;
        bool any = false;
        for (int64_t j = 0; j < a.total && !any; ++j) {
          const double v = m.get(row + j);
          any = !(std::isinf(v) && v < 0);
        }
        if (!any) return false;
      }
  return true;
}

// A runtime mask, or a constant one with a row of -inf only, may disallow every key of a row: the
// fused kernels leave such rows undefined, and this step after them writes the op's zeros.
void add_masked_rows_fixup(const Node& node, const Graph& graph, const AttnDims& a, DType t, Lowering& l) {
  if (!a.has_mask || constant_mask_leaves_a_key_in_every_row(node, graph, a)) return;
  const Layout& m = a.mask;
  // One block per distinct mask row (broadcast dims counted once).
  const int64_t rows = (m.b ? a.batch : 1) * (m.h ? a.q_heads : 1) * (m.s ? a.q_len : 1);
  KernelStep z;
  z.template_name = "attention_zero_masked_rows";
  z.holes = {{"comment", "rows with every key masked -> zeros, after " + layout_comment(a)},
             {"T", dtype_c_type(t)},
             {"BATCH", int_literal(a.batch)},
             {"HEADS", int_literal(a.q_heads)},
             {"SQ", int_literal(a.q_len)},
             {"KEYS", int_literal(a.total)},
             {"DV", int_literal(a.dv)},
             {"MSB", int_literal(m.b)}, {"MSH", int_literal(m.h)}, {"MSS", int_literal(m.s)},
             {"YSB", int_literal(a.y.b)}, {"YSH", int_literal(a.y.h)}, {"YSS", int_literal(a.y.s)}};
  z.args = {node.inputs[kMask], node.outputs[kY]};
  z.block = Dim3{256, 1, 1};
  z.grid = Dim3{rows, 1, 1};
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, z, {}});
}

Lowering fmha_lowering(const Node& node, const Graph& graph, const AttnDims& a) {
  const DType t = input_value(graph, node, kQ).dtype;
  const FmhaConfig& c = *fmha_config(a, graph.target);
  // 4-D: B*H batches of one head, so Y's (B, H, Sq, Dv) is the kernel's (batch, query, Dv) rows.
  const bool collapse = !a.three_d;
  const int64_t batches = collapse ? a.batch * a.q_heads : a.batch, heads = collapse ? 1 : a.q_heads;
  auto batch_stride = [&](const Layout& l) {
    return collapse ? (a.q_heads == 1 ? l.b : l.h) : l.b;
  };
  // Grouped-query heads: the params get K/V batch and head strides of 0 and the kernel adds the
  // offset of (batch, query head / group) itself; its blockIdx is (query block, head, batch), or
  // (query block, 0, batch * H + head) when 4-D inputs run as B*H batches.
  const int64_t group = a.q_heads / a.kv_heads;
  const bool grouped = group > 1;
  const std::string hq = std::to_string(a.q_heads);
  KernelStep k;
  k.template_name = "cutlass_fmha_forward";
  k.holes = {{"comment", "fused attention " + layout_comment(a) + " " + dtype_name(t)},
             {"ELEMENT", t == DType::kFloat32    ? "float"
                         : t == DType::kBFloat16 ? "cutlass::bfloat16_t"
                                                 : "cutlass::half_t"},
             // fp32: the kernel's Sm75 configuration, FFMA (SIMT) with IEEE fp32 products and sums;
             // its Sm80 one would run float on tensor cores as 3xTF32 (OpMultiplyAddFastF32).
             {"ARCH", t == DType::kFloat32 ? "cutlass::arch::Sm75" : "cutlass::arch::Sm80"},
             {"QPB", int_literal(c.queries)},
             {"KPB", int_literal(c.keys)},
             {"MAX_K", int_literal(c.max_k)},
             {"Q_OFFSET", int_literal(a.q_base)},
             {"K_OFFSET", int_literal(a.k_base)},
             {"V_OFFSET", int_literal(a.v_base)},
             {"KV_GROUP", int_literal(group)},
             {"KV_BATCH", collapse ? "z / " + hq : "z"},
             {"KV_HEAD", collapse ? "z % " + hq : "y"},
             {"K_SB", int_literal(grouped ? a.k.b : 0)},
             {"K_SH", int_literal(grouped ? a.k.h : 0)},
             {"V_SB", int_literal(grouped ? a.v.b : 0)},
             {"V_SH", int_literal(grouped ? a.v.h : 0)}};
  k.library_params = true;
  const Layout m = a.has_mask ? a.mask : Layout{0, 0, 0};
  k.builder_args = {batches, heads, a.q_len, a.kv_len, a.d, a.dv,
                    batch_stride(a.q), collapse ? 0 : a.q.h, a.q.s,
                    grouped ? 0 : batch_stride(a.k), grouped || collapse ? 0 : a.k.h, a.k.s,
                    grouped ? 0 : batch_stride(a.v), grouped || collapse ? 0 : a.v.h, a.v.s,
                    a.y.s, a.has_mask ? 1 : 0,
                    a.has_mask ? (collapse ? (a.q_heads == 1 ? m.b : m.h) : m.b) : 0, collapse ? 0 : m.h, m.s,
                    float_builder_arg(static_cast<float>(a.scale)), a.causal ? 1 : 0};
  k.args = {node.inputs[kQ], node.inputs[kK], node.inputs[kV], a.has_mask ? node.inputs[kMask] : kNullArg,
            node.outputs[kY]};
  k.grid = Dim3{(a.q_len + c.queries - 1) / c.queries, heads, batches};  // informative
  k.block = Dim3{32, 4, 1};
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  add_masked_rows_fixup(node, graph, a, t, l);
  return l;
}

// ---- the Hopper strategy (templates/cutlass_fmha_sm90.cu.in) ----
// CUTLASS's sm_90a FMHA (examples/88_hopper_fmha, its TMA schedule: TMA tile loads, wgmma) computes
// exactly what the op asks when: every target is sm_90, Q/K/V are fp16 with D == Dv == the tile's
// head dim (64), each query head has its own K/V head, there is no past, nonpad, window, softcap or
// extra output (causal only with Sq == Sk and no past: CUTLASS's CausalFusion masks key j > query
// i, the op's upper-left diagonal), a mask (not with causal) is additive fp16 over every key with a
// positive finite scale (the template's MaskFusion adds mask / scale to the raw products; rows
// with every key at -inf are zeroed by the fix-up step after it, as for the Sm80 kernel), every
// stride and base offset is a multiple of 8 elements (16-byte TMA rows), and Q, K, V and Y have
// addresses fixed at create (the TMA descriptors hold them). Any query count: CUTLASS's
// can_implement asks Sq % 8 == 0, but the Q loads, Y stores (tensor maps) and log-sum-exp stores
// are bounded by Sq, so the builder asks it about Sq rounded up (ViT's 197 tokens: v61's GPU test,
// and 6-10% faster than the Sm80 kernel once fuse_attention fired for it, v62). Keys past a
// multiple of the 128-key tile are masked by CUTLASS's ResidualFusion (and by MaskFusion).
// Measured against the Sm80 kernel in docs/perf_notes.md v61, v62.
constexpr int64_t kSm90FmhaTileQ = 64, kSm90FmhaTileK = 128, kSm90FmhaHeadDim = 64;

bool sm90_fmha_applies(const Node& node, const Graph& graph, const AttnDims& a) {
  const Target& target = graph.target;
  if (!target.attention_sm90 || !target.all_sm90()) return false;
  if (input_value(graph, node, kQ).dtype != DType::kFloat16) return false;
  if (a.d != kSm90FmhaHeadDim || a.dv != kSm90FmhaHeadDim || a.q_heads != a.kv_heads) return false;
  if (a.has_past || a.has_nonpad || a.left != -1 || a.right != -1 || a.softcap > 0 || has_output(node, kQk) ||
      has_output(node, kPresentKey) || has_output(node, kPresentValue))
    return false;
  if (a.causal && a.q_len != a.kv_len) return false;
  if (a.has_mask) {
    if (a.causal || a.mask_bool || graph.value(node.inputs[kMask]).dtype != DType::kFloat16 || a.mask_len != a.total)
      return false;
    if (!(a.scale > 0) || !std::isfinite(1.0 / a.scale)) return false;
    if (a.mask.b < 0 || a.mask.h < 0 || a.mask.s < 0) return false;
  }
  if (a.batch > 65535 || a.q_heads > 65535) return false;
  for (int64_t v : {a.q_base, a.k_base, a.v_base, a.q.b, a.q.h, a.q.s, a.k.b, a.k.h, a.k.s, a.v.b, a.v.h, a.v.s,
                    a.y.b, a.y.h, a.y.s})
    if (v % 8 != 0 || v < 0 || v > 0x7fffffffLL) return false;
  return fixed_address(graph, node.inputs[kQ]) && fixed_address(graph, node.inputs[kK]) &&
         fixed_address(graph, node.inputs[kV]) && fixed_address(graph, node.outputs[kY]);
}

Lowering sm90_fmha_lowering(const Node& node, const Graph& graph, const AttnDims& a) {
  struct FusionChoice {
    const char* type;
    const char* note;
  };
  const FusionChoice fusion =
      a.has_mask ? FusionChoice{"MaskFusion", "the additive mask read per key, keys past Sk masked (MaskFusion)"}
      : a.causal ? FusionChoice{"cutlass::fmha::collective::CausalFusion", "causal: key j > query i masked (CausalFusion)"}
      : a.kv_len % kSm90FmhaTileK != 0
          ? FusionChoice{"cutlass::fmha::collective::ResidualFusion",
                         "keys past the last whole 128-key tile masked (ResidualFusion)"}
          : FusionChoice{"cutlass::fmha::collective::DefaultFusion", "no mask (DefaultFusion)"};
  const Layout& m = a.mask;  // {0, 0, 0} without a mask
  KernelStep k;
  k.template_name = "cutlass_fmha_sm90";
  k.holes = {{"comment", "fused attention (sm_90a) " + layout_comment(a) + " float16"},
             {"ELEMENT", "cutlass::half_t"},
             {"TILE_Q", int_literal(kSm90FmhaTileQ)},
             {"TILE_K", int_literal(kSm90FmhaTileK)},
             {"TILE_D", int_literal(kSm90FmhaHeadDim)},
             {"FUSION", fusion.type},
             {"FUSION_NOTE", fusion.note},
             {"MSB", int_literal(m.b)},
             {"MSH", int_literal(m.h)},
             {"MSS", int_literal(m.s)},
             {"INV_SCALE", a.has_mask ? float_literal(static_cast<float>(1.0 / a.scale)) : "1.0f"},
             // The mask row pointer's slot in front of CUTLASS's shared storage (aligned as the base).
             {"SMEM_HEAD", a.has_mask ? "1024" : "0"}};
  k.library_params = true;
  k.host_params = true;
  k.builder_args = {a.batch, a.q_heads, a.q_len, a.kv_len, a.d, a.q.s, a.q.b, a.q.h, a.k.s, a.k.b, a.k.h,
                    a.v.s, a.v.b, a.v.h, a.y.s, a.y.b, a.y.h, float_builder_arg(static_cast<float>(a.scale)),
                    a.has_mask ? 1 : 0, a.q_len % 8 != 0 ? 1 : 0};
  k.args = {node.inputs[kQ], node.inputs[kK], node.inputs[kV], node.outputs[kY], kScratchArg};
  if (a.has_mask) k.args.push_back(node.inputs[kMask]);
  // Q/K/V may start inside their buffers (aotc.StridedAttention over a packed QKV matrix): the
  // pointers themselves carry the offsets, so the TMA descriptors start there.
  k.arg_byte_offsets = {2 * a.q_base, 2 * a.k_base, 2 * a.v_base, 0, 0};
  if (a.has_mask) k.arg_byte_offsets.push_back(0);
  k.grid = Dim3{(a.q_len + kSm90FmhaTileQ - 1) / kSm90FmhaTileQ, a.q_heads, a.batch};  // informative
  k.block = Dim3{128, 1, 1};
  Lowering l;
  l.scratch_bytes = a.batch * a.q_heads * a.q_len * 4;  // the rows' log-sum-exp (fp32)
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  add_masked_rows_fixup(node, graph, a, DType::kFloat16, l);
  return l;
}

// The fused strategies in order of preference; kNone: the row-tile kernel.
enum class AttentionStrategy { kNone, kSm90, kSm80 };
AttentionStrategy fused_attention_strategy(const Node& node, const Graph& graph, const AttnDims& a) {
  if (a.batch * a.q_heads * a.q_len <= 0 || !graph.target.attention_fused) return AttentionStrategy::kNone;
  if (sm90_fmha_applies(node, graph, a)) return AttentionStrategy::kSm90;
  return fmha_applies(node, graph, a) ? AttentionStrategy::kSm80 : AttentionStrategy::kNone;
}

Expected<Lowering> attention_lower(const Node& node, const Graph& graph) {
  Expected<AttnDims> ad = dims_of_graph(node, graph);
  if (!ad) return ad.status();
  const AttnDims& a = *ad;
  switch (fused_attention_strategy(node, graph, a)) {
    case AttentionStrategy::kSm90: return sm90_fmha_lowering(node, graph, a);
    case AttentionStrategy::kSm80: return fmha_lowering(node, graph, a);
    case AttentionStrategy::kNone: break;
  }
  const DType t = input_value(graph, node, kQ).dtype;
  const std::string ct = t == DType::kFloat64 ? "double" : "float";
  const int64_t ct_size = t == DType::kFloat64 ? 8 : 4;
  Lowering l;
  // Present K/V (past + new, (B, kv heads, total, D)): into the outputs, or scratch when only the
  // attention reads them. Without a past the kernel reads K/V where they are.
  ValueId k_arg = node.inputs[kK], v_arg = node.inputs[kV];
  Layout k_layout = a.k, v_layout = a.v;
  int64_t k_base = a.k_base, v_base = a.v_base;
  const int64_t pk_elems = a.batch * a.kv_heads * a.total * a.d, pv_elems = a.batch * a.kv_heads * a.total * a.dv;
  for (int which = 0; which < 2; ++which) {
    const bool is_k = which == 0;
    const size_t out = is_k ? kPresentKey : kPresentValue;
    if (!has_output(node, out) && !a.has_past) continue;
    const int64_t dim = is_k ? a.d : a.dv, elems = is_k ? pk_elems : pv_elems;
    if (elems == 0) continue;
    ValueId dst = kScratchArg;
    int64_t offset = 0;
    if (has_output(node, out)) dst = node.outputs[out];
    else {
      offset = l.scratch_bytes / dtype_size(t);
      l.scratch_bytes += elems * dtype_size(t);
    }
    const Layout src = is_k ? a.k : a.v;
    KernelStep c;
    c.template_name = "attention_kv_concat";
    c.holes = {{"comment", std::string(is_k ? "present_key" : "present_value") + " of " + layout_comment(a)},
               {"T", dtype_c_type(t)},
               {"N", int_literal(elems)},
               {"HEADS", int_literal(a.kv_heads)},
               {"TOTAL", int_literal(a.total)},
               {"PAST", int_literal(a.past)},
               {"DIM", int_literal(dim)},
               {"SB", int_literal(src.b)},
               {"SH", int_literal(src.h)},
               {"SS", int_literal(src.s)},
               {"DST_OFFSET", int_literal(offset)}};
    c.args = {a.has_past ? node.inputs[is_k ? kPastKey : kPastValue] : kNullArg, node.inputs[is_k ? kK : kV], dst};
    c.block = Dim3{256, 1, 1};
    c.grid = grid_for(elems, 256);
    l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, c, {}});
    if (a.has_past) {
      (is_k ? k_arg : v_arg) = dst;
      (is_k ? k_layout : v_layout) = Layout{a.kv_heads * a.total * dim, a.total * dim, dim};
      (is_k ? k_base : v_base) = offset;
    }
  }
  if (a.batch * a.q_heads * a.q_len == 0) return l;
  // Tiles: QT query rows x KT keys per step, everything in static shared memory (<= 48 KiB).
  int64_t qt = 16, kt = 16;
  auto shared_bytes = [&](int64_t q_rows, int64_t keys) {
    return ct_size * (q_rows * a.d + keys * a.d + keys * a.dv + q_rows * a.dv + q_rows * keys + 3 * q_rows);
  };
  while (shared_bytes(qt, kt) > 48 * 1024 && qt > 1) qt /= 2, kt /= 2;
  if (shared_bytes(qt, kt) > 48 * 1024)
    return node_error(node, "head sizes D " + std::to_string(a.d) + " / Dv " + std::to_string(a.dv) +
                                " do not fit the attention kernel's shared memory");
  if (a.q_heads > 65535 || a.batch > 65535)
    return node_error(node, "batch " + std::to_string(a.batch) + " or heads " + std::to_string(a.q_heads) +
                                " exceed the attention kernel's grid (65535)");
  const DType mask_t = a.has_mask ? graph.value(node.inputs[kMask]).dtype : DType::kFloat32;
  KernelStep k;
  k.template_name = "attention_rows";
  k.holes = {{"comment", layout_comment(a) + " " + dtype_name(t)},
             {"T", dtype_c_type(t)},
             {"CT", ct},
             {"MT", dtype_c_type(mask_t)},
             {"HQ", int_literal(a.q_heads)},
             {"GROUP", int_literal(a.q_heads / a.kv_heads)},
             {"SQ", int_literal(a.q_len)},
             {"TK", int_literal(a.total)},
             {"D", int_literal(a.d)},
             {"DV", int_literal(a.dv)},
             {"QSB", int_literal(a.q.b)}, {"QSH", int_literal(a.q.h)}, {"QSS", int_literal(a.q.s)},
             {"KSB", int_literal(k_layout.b)}, {"KSH", int_literal(k_layout.h)}, {"KSS", int_literal(k_layout.s)},
             {"VSB", int_literal(v_layout.b)}, {"VSH", int_literal(v_layout.h)}, {"VSS", int_literal(v_layout.s)},
             {"YSB", int_literal(a.y.b)}, {"YSH", int_literal(a.y.h)}, {"YSS", int_literal(a.y.s)},
             {"Q_BASE", int_literal(a.q_base)},
             {"K_BASE", int_literal(k_base)},
             {"V_BASE", int_literal(v_base)},
             {"HAS_MASK", a.has_mask ? "true" : "false"},
             {"MASK_BOOL", a.mask_bool ? "true" : "false"},
             {"MSB", int_literal(a.mask.b)}, {"MSH", int_literal(a.mask.h)}, {"MSS", int_literal(a.mask.s)},
             {"MASK_LEN", int_literal(a.mask_len)},
             {"CAUSAL", a.causal ? "true" : "false"},
             {"PAST", int_literal(a.past)},
             {"HAS_NONPAD", a.has_nonpad ? "true" : "false"},
             {"LEFT", int_literal(a.left)},
             {"RIGHT", int_literal(a.right)},
             {"SCALE", float_literal(static_cast<float>(a.scale))},
             {"SOFTCAP", float_literal(a.softcap > 0 ? a.softcap : 0.0f)},
             {"QK_MODE", has_output(node, kQk) ? std::to_string(a.mode) : "-1"},
             {"QT", std::to_string(qt)},
             {"KT", std::to_string(kt)},
             {"THREADS", "128"}};
  k.args = {node.inputs[kQ], k_arg, v_arg, a.has_mask ? node.inputs[kMask] : kNullArg,
            a.has_nonpad ? node.inputs[kNonpad] : kNullArg, node.outputs[kY],
            has_output(node, kQk) ? node.outputs[kQk] : kNullArg};
  k.block = Dim3{128, 1, 1};
  k.grid = Dim3{(a.q_len + qt - 1) / qt, a.q_heads, a.batch};
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_attention_ops(OpRegistry& registry) {
  for (const char* domain : {"", "aotc"}) {
    OpDef def;
    def.op_type = std::string(domain).empty() ? "Attention" : "StridedAttention";
    def.domain = domain;
    def.infer = attention_infer;
    def.reference = attention_reference;
    def.lower = attention_lower;
    registry.add(def);
  }
}

bool attention_runs_fused(const Node& node, const Graph& graph) {
  Expected<AttnDims> ad = dims_of_graph(node, graph);
  return ad && fused_attention_strategy(node, graph, *ad) != AttentionStrategy::kNone;
}

}  // namespace aotc
