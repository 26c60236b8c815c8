// layout_nhwc: moves convolution chains to channels-last storage. A Conv/FusedConv with an NHWC
// implementation for graph.target (ir/ops/conv_configs.h; the depthwise kernel) becomes a
// channels_last node with KRSC weights converted at compile time; the ops between such convs
// follow when they can run on NHWC data unchanged (elementwise ops on same-shaped activations,
// also with per-channel broadcast operands such as a squeeze-excitation scale; max/average/global
// pooling, which have channels_last kernels; a Concat along C of NHWC values, as a Concat along
// NHWC's last axis; a BatchNormalization no conv absorbed). A value goes back to NCHW only
// where a consumer needs it (one Transpose per value, or a view when H = W = 1), and a graph
// input enters NHWC through one Transpose (or one aotc.PackNhwc that also converts and pads).
// Input channels below the 16-byte alignment (the first conv's C = 3) are zero-padded, in the
// activation and in the weights, to a multiple of 8 (16-bit) or 4 (fp32); a stride-2 stem with
// C <= 4 instead reads a space-to-depth packing of its input (2x2 blocks -> 4*C channels) as a
// stride-1 convolution. fp32 chains run on fp32 kernels (cuBLASLt SGEMM, CUTLASS SIMT; no TF32)
// unless graph.target.conv_fp32_nhwc is off.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "ir/ops/conv_nhwc.h"
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/window.h"
#include "templates/int8_requant.cuh"
#include "opt/passes.h"

namespace aotc {
namespace {

// Most channels a space-to-depth stem packing may have (4*C after padding: C <= 4).
constexpr int64_t kStemSpaceToDepthMaxChannels = 16;

class LayoutRewriter {
 public:
  explicit LayoutRewriter(Graph& g) : g_(g), registry_(default_registry()) {}

  Expected<bool> run() {
    for (const Node& n : g_.nodes)
      for (ValueId v : n.inputs)
        if (v != kNoValue) readers_[v].push_back(n.qualified_op());
    std::vector<Node> nodes = std::move(g_.nodes);
    g_.nodes.clear();
    bool changed = false;
    for (Node& node : nodes) {
      Expected<bool> done = rewrite(node);
      if (!done) return done.status();
      if (*done) {
        changed = true;
        continue;
      }
      // An NCHW consumer: give it NCHW inputs.
      for (ValueId v : node.inputs)
        if (v != kNoValue) AOTC_RETURN_IF_ERROR(restore_nchw(v));
      g_.nodes.push_back(std::move(node));
    }
    for (ValueId v : g_.outputs) AOTC_RETURN_IF_ERROR(restore_nchw(v));
    return changed;
  }

 private:
  // Tries to emit `node` in NHWC; false when it stays as it is.
  Expected<bool> rewrite(const Node& node) {
    if (is_conv_node(node)) return rewrite_conv(node);
    if (node.op_type == "QLinearConv" && node.domain == "aotc") return rewrite_qconv(node);
    if (node.op_type == "QLinearMatMul" && node.domain == "aotc") return rewrite_qmatmul(node);
    const OpDef* def = registry_.find(node.op_type, node.domain);
    if (!def) return false;
    const bool window_pool = node.domain.empty() && (node.op_type == "MaxPool" || node.op_type == "AveragePool");
    const bool global_pool = node.domain.empty() && (node.op_type == "GlobalAveragePool" || node.op_type == "GlobalMaxPool");
    if (window_pool || global_pool) {
      if (node.outputs.size() != 1 || node.inputs.size() != 1 || !nhwc_.count(node.inputs[0])) return false;
      if (g_.value(node.inputs[0]).shape.size() != 4) return false;
      return emit_nhwc(node, {nhwc_.at(node.inputs[0])}, /*set_channels_last=*/true);
    }
    if (node.op_type == "Concat" && node.domain.empty()) return rewrite_channel_concat(node);
    if (node.op_type == "BatchNormalization" && node.domain.empty()) {
      // Per-channel scale and shift: the same parameters index NHWC's last dim (channels_last).
      if (node.inputs.size() != 5 || node.outputs.size() != 1 || !nhwc_.count(node.inputs[0]) ||
          g_.value(node.inputs[0]).shape.size() != 4 || node.attr_int("spatial", 1) == 0)
        return false;
      std::vector<ValueId> inputs = node.inputs;
      inputs[0] = nhwc_.at(node.inputs[0]);
      return emit_nhwc(node, inputs, /*set_channels_last=*/true);
    }
    if (def->traits.elementwise && node.outputs.size() == 1) {
      // Every non-scalar input must be an NHWC activation of the output's (logical) shape, or a
      // per-channel broadcast ([N or 1, C or 1, 1, 1], e.g. a squeeze-excitation scale or a
      // PRelu slope), which reads the same bytes as [N or 1, 1, 1, C or 1]; at least one input
      // is an activation.
      const Value& out = g_.value(node.outputs[0]);
      if (out.shape.size() != 4) return false;
      std::vector<ValueId> inputs = node.inputs;
      std::vector<size_t> per_channel;
      bool any = false;
      for (size_t i = 0; i < inputs.size(); ++i) {
        const ValueId v = inputs[i];
        if (v == kNoValue) continue;
        const Value& val = g_.value(v);
        if (val.numel() == 1 && val.shape.size() <= 4) continue;  // broadcast scalar
        if (nhwc_.count(v) && val.shape == out.shape) {
          inputs[i] = nhwc_.at(v);
          any = true;
        } else if (channel_broadcast(val.shape, out.shape)) {
          per_channel.push_back(i);
        } else {
          return false;
        }
      }
      if (!any) return false;
      for (size_t i : per_channel) {
        Expected<ValueId> view = channel_broadcast_nhwc(inputs[i]);
        if (!view) return view.status();
        inputs[i] = *view;
      }
      return emit_nhwc(node, inputs, /*set_channels_last=*/false);
    }
    return false;
  }

  // A Concat along the channels of 4-D values that all have NHWC forms (Inception / GoogLeNet
  // branches, SqueezeNet's fire modules) becomes a Concat along NHWC's last axis: the chain stays
  // channels-last (no Transpose back and forth around it), each input one slab of the output's
  // rows (which opt/concat_in_place may let its producer write). Only when every reader of the
  // Concat is a convolution, a pool, a BatchNormalization (which follows, channels_last: DenseNet)
  // or another Concat: where an NCHW op reads it, an NHWC Concat would be transposed back whole,
  // each time, where the NCHW Concat's inputs are transposed once each (DenseNet re-concatenates
  // every feature map in every later layer). Not for another axis, or when an input has no NHWC
  // form (a value an NCHW op wrote): a Transpose of that input would cost what the NCHW Concat's
  // Transposes do.
  Expected<bool> rewrite_channel_concat(const Node& node) {
    if (node.outputs.size() != 1 || node.outputs[0] == kNoValue || node.inputs.empty()) return false;
    if (g_.value(node.outputs[0]).shape.size() != 4 || g_.is_graph_output(node.outputs[0])) return false;
    static const std::set<std::string> kNhwcReaders = {"Conv",          "aotc.FusedConv",    "MaxPool",
                                                       "AveragePool",   "GlobalAveragePool", "GlobalMaxPool",
                                                       "Concat",        "BatchNormalization"};
    auto readers = readers_.find(node.outputs[0]);
    if (readers == readers_.end()) return false;
    for (const std::string& op : readers->second)
      if (!kNhwcReaders.count(op)) return false;
    int64_t axis = node.attr_int("axis", 0);
    if (axis < 0) axis += 4;
    if (axis != 1) return false;
    std::vector<ValueId> inputs;
    for (ValueId v : node.inputs) {
      if (v == kNoValue || !nhwc_.count(v) || g_.value(v).shape.size() != 4) return false;
      inputs.push_back(nhwc_.at(v));
    }
    Node c = node;
    c.attrs["axis"] = Attribute::of_int(3);
    return emit_nhwc(c, inputs, /*set_channels_last=*/false);
  }

  // `s` broadcasts against the 4-D `out` along H and W only (numpy rules, right-aligned): its
  // H and W are 1 and its N and C are 1 or out's. Such a value holds the same bytes in NCHW and
  // NHWC order.
  static bool channel_broadcast(const Shape& s, const Shape& out) {
    if (s.size() > 4) return false;
    const Shape p = rank4(s);
    return p[2] == 1 && p[3] == 1 && (p[0] == 1 || p[0] == out[0]) && (p[1] == 1 || p[1] == out[1]);
  }
  // `s` (rank <= 4) right-aligned to rank 4 with leading 1s, as numpy broadcasting reads it.
  static Shape rank4(const Shape& s) {
    Shape p(4 - s.size(), 1);
    p.insert(p.end(), s.begin(), s.end());
    return p;
  }

  // The NHWC form [N', 1, 1, C'] of a per-channel broadcast value [..., N', C', 1, 1]: the value
  // an NHWC producer already wrote, a reshaped constant, or a Reshape view (no data moves).
  Expected<ValueId> channel_broadcast_nhwc(ValueId v) {
    if (nhwc_.count(v)) return nhwc_.at(v);
    const Value src = g_.value(v);
    const Shape p = rank4(src.shape);
    const Shape target{p[0], 1, 1, p[1]};
    if (src.is_constant()) return g_.add_constant(g_.unique_name(src.name + "_nhwc"), src.constant->reshaped(target));
    const ValueId view = g_.add_value(g_.unique_name(src.name + "_nhwc"), src.dtype, target, true);
    AOTC_RETURN_IF_ERROR(add_reshape(v, view, src.name + "_as_nhwc"));
    return view;
  }

  Expected<bool> rewrite_conv(const Node& node) {
    const Value& x = g_.value(node.inputs[0]);
    const ValueId wid = node.input(1);
    if (x.shape.size() != 4 || wid == kNoValue || !g_.value(wid).is_constant() || channels_last(node)) return false;
    const Shape& ws = g_.value(wid).shape;
    const int64_t cin = x.shape[1], cout = ws[0], group = node.attr_int("group", 1);
    // The RGB stem on the direct stem kernel: channels padded to kStemChannels, no space-to-depth.
    const bool stem = ws.size() == 4 && conv_stem_applies(g_.target, x.dtype, group, cin, cout, {ws[2], ws[3]},
                                                          node.attr_ints("dilations", {1, 1}), node.input(3) != kNoValue);
    const int64_t padded = stem ? kStemChannels : conv_padded_channels(x.dtype, cin);
    const bool pad_small_c = group == 1 && cin < (stem ? kStemChannels : conv_channel_align(x.dtype));
    const bool implicit_gemm = stem || (conv_implicit_gemm_applies(g_.target, x.dtype, group, pad_small_c ? padded : cin, cout) &&
                                        ws.size() == 4 && ws[2] <= kImplicitGemmMaxWindow && ws[3] <= kImplicitGemmMaxWindow);
    const bool depthwise = conv_depthwise_nhwc_applies(g_.target, x.dtype, group, cin, cout);
    if (!implicit_gemm && !depthwise) return false;
    // Only convert a conv whose input is already NHWC, or that starts a chain worth converting
    // (an implicit-GEMM or stem conv: its speed pays for the one transpose).
    if (!implicit_gemm && !nhwc_.count(node.inputs[0])) return false;
    if (!stem && implicit_gemm && pad_small_c && !nhwc_.count(node.inputs[0])) {
      Expected<bool> s2d = rewrite_stem_space_to_depth(node);
      if (!s2d || *s2d) return s2d;
    }
    ValueId xin = kNoValue;
    if (implicit_gemm && pad_small_c && !nhwc_.count(node.inputs[0])) {
      xin = pack_input(node.inputs[0], padded);  // one kernel: (Cast +) transpose + channel padding
    } else {
      AOTC_RETURN_IF_ERROR(ensure_nhwc(node.inputs[0]));
      xin = nhwc_.at(node.inputs[0]);
      if (implicit_gemm && pad_small_c) xin = pad_channels(xin, padded);
    }
    Tensor w = permute_channels(*g_.value(wid).constant, /*to_nchw=*/false);  // OIHW -> KRSC
    if (implicit_gemm && pad_small_c) {
      Tensor wp(w.dtype(), {w.shape()[0], w.shape()[1], w.shape()[2], padded});
      const size_t es = static_cast<size_t>(dtype_size(w.dtype()));
      for (int64_t i = 0; i < w.numel() / cin; ++i)
        std::memcpy(wp.raw() + static_cast<size_t>(i * padded) * es, w.raw() + static_cast<size_t>(i * cin) * es,
                    static_cast<size_t>(cin) * es);
      w = std::move(wp);
    }
    std::vector<ValueId> inputs = node.inputs;
    inputs[0] = xin;
    inputs[1] = g_.add_constant(g_.unique_name(g_.value(wid).name + "_krsc"), std::move(w));
    if (node.input(3) != kNoValue) {
      AOTC_RETURN_IF_ERROR(ensure_nhwc(node.inputs[3]));
      inputs[3] = nhwc_.at(node.inputs[3]);
    }
    return emit_nhwc(node, inputs, /*set_channels_last=*/true);
  }

  // The int8 kernel's common conditions on an aotc.QLinearConv / QLinearMatMul: int8 or uint8
  // input with zero point 0 or one per-tensor zero point zx (opt/reencode_uint8 turns ONNX
  // Runtime's -128 into 0), a constant int8 weight of `weight_rank` dims with zero point 0,
  // constant fp32 scales (one for x and y), constant y zero point and bias; not yet moved. The
  // kernel has no zero-point term: where every output reads only real inputs (no padding),
  // sum((x - zx) w) = sum(x w) - zx sum(w) with a per-output-channel constant, which
  // epilogue_words folds into the int32 bias (MobileNetV2's expansions read a linear bottleneck at
  // zero point != 0); rewrite_qconv makes that hold for padded convolutions too.
  struct Int8Operands {
    const Tensor *w = nullptr, *xs = nullptr, *ws = nullptr, *ys = nullptr, *bias = nullptr;
    bool requant = false;
    int64_t xzp = 0;
  };
  bool int8_operands(const Node& node, size_t weight_rank, Int8Operands* o) const {
    auto constant = [&](size_t i) -> const Tensor* {
      const ValueId v = node.input(i);
      return v != kNoValue && g_.value(v).is_constant() ? g_.value(v).constant.get() : nullptr;
    };
    auto all_zero = [&](size_t i) {
      if (node.input(i) == kNoValue) return true;
      const Tensor* t = constant(i);
      if (!t) return false;
      for (int64_t k = 0; k < t->numel(); ++k)
        if (t->get(k) != 0) return false;
      return true;
    };
    const Value& x = g_.value(node.inputs[0]);
    o->w = constant(3);
    o->xs = constant(1);
    o->ws = constant(4);
    o->requant = node.input(6) != kNoValue;
    o->ys = o->requant ? constant(6) : nullptr;
    o->bias = constant(8);
    const Tensor* xz = constant(2);
    const bool x_zp_ok = all_zero(2) || (xz && xz->numel() == 1 && xz->dtype() == x.dtype);
    o->xzp = x_zp_ok && xz ? xz->get_int(0) : 0;
    return (x.dtype == DType::kInt8 || x.dtype == DType::kUInt8) && !x.shape.empty() && o->w && o->w->dtype() == DType::kInt8 &&
           o->w->shape().size() == weight_rank && o->xs && o->xs->numel() == 1 && o->xs->dtype() == DType::kFloat32 &&
           o->ws && o->ws->dtype() == DType::kFloat32 &&
           (!o->requant || (o->ys && o->ys->numel() == 1 && o->ys->dtype() == DType::kFloat32)) && x_zp_ok &&
           all_zero(5) && (!o->requant || node.input(7) == kNoValue || constant(7)) &&
           (node.input(8) == kNoValue || o->bias) && !channels_last(node) && g_.target.has_sm80_tensor_cores() &&
           (o->requant || g_.value(node.outputs[0]).dtype == DType::kFloat32);
  }

  // aotc.QLinearConv (opt/fuse_qdq) on the int8 tensor-core kernel: one group, 2-D, symmetric
  // int8 weights, constant per-tensor scales. The weights go to KRSC and the epilogue's
  // per-channel words are built here, in the reference's float arithmetic: m = x_scale *
  // w_scale[k] (/ y_scale when requantizing) and the int32 bias (minus zx sum(w)). A layer that
  // reads padding at a nonzero zx (the spec pads x - zx with zeros; the kernel's zero fill would
  // give -zx), or whose input channels are not a multiple of 16 (ONNX Runtime's QDQ RGB stem),
  // reads its NHWC input through one Pad node instead: the spatial padding and the channels up to
  // 16 filled with zx, the convolution itself unpadded over weights zero-padded to the new
  // channels, so the zero point folds exactly. Anything else goes to rewrite_qconv_direct.
  Expected<bool> rewrite_qconv(const Node& node) {
    Int8Operands o;
    const Value x = g_.value(node.inputs[0]);
    if (x.shape.size() != 4) return false;
    if (!int8_operands(node, 4, &o)) return rewrite_qconv_direct(node);
    const Shape wsh = o.w->shape();
    const int64_t cin = x.shape[1], cout = wsh[0], group = node.attr_int("group", 1);
    const int64_t align = conv_channel_align(DType::kInt8);
    const int64_t cpad = (cin + align - 1) / align * align;
    auto geo = resolve_window(node, {x.shape[2], x.shape[3]}, {wsh[2], wsh[3]}, WindowOptions{});
    if (!geo || wsh[1] * group != cin || !conv_implicit_gemm_applies(g_.target, DType::kInt8, group, cpad, cout) ||
        wsh[2] > kImplicitGemmMaxWindow || wsh[3] > kImplicitGemmMaxWindow)
      return rewrite_qconv_direct(node);
    auto nonzero = [](const std::vector<int64_t>& v) { return std::any_of(v.begin(), v.end(), [](int64_t p) { return p != 0; }); };
    const bool pad_input = cpad != cin || (o.xzp != 0 && (nonzero(geo->pad_begin) || nonzero(geo->pad_end)));
    Tensor w(DType::kInt8, {cout, cpad, wsh[2], wsh[3]});  // zeros in any added channels
    const int64_t plane = wsh[2] * wsh[3];
    for (int64_t k = 0; k < cout; ++k)
      std::memcpy(w.raw() + k * cpad * plane, o.w->raw() + k * cin * plane, static_cast<size_t>(cin * plane));
    bool fits = true;
    Tensor words = epilogue_words(*o.xs, *o.ws, o.requant ? o.ys : nullptr, o.bias, cout, o.xzp, w, /*k_major=*/true, &fits);
    if (!fits) return rewrite_qconv_direct(node);
    AOTC_RETURN_IF_ERROR(ensure_nhwc(node.inputs[0]));
    Node n = node;
    std::vector<ValueId> inputs = node.inputs;
    inputs.resize(10, kNoValue);
    inputs[0] = nhwc_.at(node.inputs[0]);
    if (pad_input) {
      const std::vector<int64_t> pads = {0, geo->pad_begin[0], geo->pad_begin[1], 0,
                                         0, geo->pad_end[0],   geo->pad_end[1],   cpad - cin};
      inputs[0] = pad_nhwc(inputs[0], pads, o.xzp != 0 ? node.input(2) : kNoValue);
      n.attrs.erase("auto_pad");
      n.attrs["pads"] = Attribute::of_ints({0, 0, 0, 0});
    }
    inputs[3] = g_.add_constant(g_.unique_name(g_.value(node.inputs[3]).name + "_krsc"), permute_channels(w, false));
    inputs[9] = g_.add_constant(g_.unique_name(node.name + "_epilogue_words"), std::move(words));
    return emit_nhwc(n, inputs, /*set_channels_last=*/true);
  }

  // A grouped or depthwise aotc.QLinearConv whose input is already channels_last (MobileNet's
  // depthwise between two tensor-core 1x1 convolutions) stays in the chain on the direct kernel
  // reading NHWC / KRSC (templates/integer_conv.cu.in, kNhwc) instead of a Transpose on each
  // side; any zero points and scales (the direct kernel's arithmetic is the reference's).
  Expected<bool> rewrite_qconv_direct(const Node& node) {
    const ValueId wv = node.input(3);
    if (node.attr_int("group", 1) <= 1 || !nhwc_.count(node.inputs[0]) || channels_last(node) || wv == kNoValue ||
        !g_.value(wv).is_constant() || g_.value(wv).shape.size() != 4)
      return false;
    std::vector<ValueId> inputs = node.inputs;
    inputs[0] = nhwc_.at(node.inputs[0]);
    inputs[3] = g_.add_constant(g_.unique_name(g_.value(wv).name + "_krsc"), permute_channels(*g_.value(wv).constant, false));
    return emit_nhwc(node, inputs, /*set_channels_last=*/true);
  }

  // The per-channel epilogue words of the int8 kernel: m = x_scale * w_scale[k] (/ y_scale when
  // requantizing) in the reference's float arithmetic, the int32 bias in the high half.
  // With an x zero point zx the bias word holds bias - zx * sum_c w[k, c] (w [K, ...] when k_major,
  // else a matrix B [C, K]); int64 arithmetic; *fits false where that leaves int32.
  Tensor epilogue_words(const Tensor& xs, const Tensor& ws, const Tensor* ys, const Tensor* bias, int64_t cout, int64_t xzp,
                        const Tensor& w, bool k_major, bool* fits) {
    *fits = true;
    Tensor words(DType::kUInt64, {cout});
    const int64_t per_k = w.numel() / cout;
    for (int64_t k = 0; k < cout; ++k) {
      float m = static_cast<float>(xs.get(0)) * static_cast<float>(ws.get(ws.numel() == 1 ? 0 : k));
      if (ys) m = m / static_cast<float>(ys->get(0));
      int64_t wsum = 0;
      if (xzp != 0)
        for (int64_t c = 0; c < per_k; ++c) wsum += w.get_int(k_major ? k * per_k + c : c * cout + k);
      const int64_t b64 = (bias ? bias->get_int(k) : 0) - xzp * wsum;
      if (b64 < INT32_MIN || b64 > INT32_MAX) *fits = false;
      const uint64_t word = aotc_epilogue_word(m, static_cast<int32_t>(b64));
      std::memcpy(words.raw() + k * 8, &word, 8);
    }
    return words;
  }

  // aotc.QLinearMatMul by a constant B [K, N] as a 1x1 convolution on the int8 kernel (A's rows are
  // the pixels, already "NHWC"): B stored [N, K], the epilogue words as input 9, channels_last set;
  // the same conditions as rewrite_qconv, K a multiple of 16 and N of the output access (8 int8 /
  // 4 float). The output keeps its layout, so nothing else changes.
  Expected<bool> rewrite_qmatmul(const Node& node) {
    Int8Operands o;
    if (!int8_operands(node, 2, &o)) return false;
    const Value& a = g_.value(node.inputs[0]);
    const Tensor* b = o.w;
    const int64_t k = b->shape()[0], n = b->shape()[1];
    if (a.shape.back() != k || k % kInt8ChannelAlign != 0 || n % (o.requant ? 8 : 4) != 0) return false;
    bool fits = true;
    Tensor words = epilogue_words(*o.xs, *o.ws, o.ys, o.bias, n, o.xzp, *b, /*k_major=*/false, &fits);
    if (!fits) return false;
    for (ValueId v : node.inputs)
      if (v != kNoValue) AOTC_RETURN_IF_ERROR(restore_nchw(v));
    Tensor bt(DType::kInt8, {n, k});
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < n; ++c) bt.set_int(c * k + r, b->get_int(r * n + c));
    Node m = node;
    m.inputs.resize(10, kNoValue);
    m.inputs[3] = g_.add_constant(g_.unique_name(g_.value(node.inputs[3]).name + "_nk"), std::move(bt));
    m.inputs[9] = g_.add_constant(g_.unique_name(node.name + "_epilogue_words"), std::move(words));
    m.attrs["channels_last"] = Attribute::of_int(1);
    AOTC_RETURN_IF_ERROR(registry_.find(m.op_type, m.domain)->infer(m, g_));
    g_.nodes.push_back(std::move(m));
    return true;
  }

  // The strided RGB stem (C = 3, stride 2, ResNet's 7x7) as a stride-1 convolution over a
  // space-to-depth packing of the input: the implicit GEMM walks the window one tap at a time,
  // each tap's channels padded to its K tile, so 7x7 taps of 8 (padded) channels cost 49 K
  // iterations while ceil(7/2)^2 = 16 taps of 4*3 -> 16 channels cost 16 (fp32, SIMT K tile 8:
  // 49 taps of 4 channels -> 49 iterations, 16 taps of 12 channels -> 32). aotc.PackNhwc does the
  // packing (with the Cast and the zero padding) in its one pass over the input; the weights are
  // rearranged at compile time (taps past the window are zero).
  Expected<bool> rewrite_stem_space_to_depth(const Node& node) {
    const Value& x = g_.value(node.inputs[0]);
    const Tensor& w = *g_.value(node.input(1)).constant;
    const Shape& ws = w.shape();
    const std::vector<int64_t> strides = node.attr_ints("strides", {1, 1});
    const std::vector<int64_t> dil = node.attr_ints("dilations", {1, 1});
    const std::vector<int64_t> pads = node.attr_ints("pads", {0, 0, 0, 0});
    const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
    const int64_t b = strides.size() == 2 ? strides[0] : 0, cin = x.shape[1];
    if (b != 2 || strides[1] != b || dil != std::vector<int64_t>{1, 1} || pads.size() != 4 ||
        (auto_pad != "NOTSET" && auto_pad != "VALID") || node.attr_int("group", 1) != 1 ||
        cin * b * b > kStemSpaceToDepthMaxChannels || ws.size() != 4 || ws[2] < b || ws[3] < b)
      return false;
    const Shape& out = g_.value(node.outputs[0]).shape;
    const int64_t r2 = (ws[2] + b - 1) / b, s2 = (ws[3] + b - 1) / b;
    const int64_t channels = conv_padded_channels(x.dtype, cin * b * b);
    if (!conv_implicit_gemm_applies(g_.target, x.dtype, 1, channels, ws[0])) return false;
    // The packed input: rows 0 .. out_h + r2 - 2 of blocks, so every tap of every output exists.
    const ValueId packed = pack_input(node.inputs[0], channels, b, {pads[0], pads[1]},
                                      {out[2] + r2 - 1, out[3] + s2 - 1});
    Tensor wp(w.dtype(), {ws[0], r2, s2, channels});  // KRSC, zero-filled
    for (int64_t k = 0; k < ws[0]; ++k)
      for (int64_t c = 0; c < cin; ++c)
        for (int64_t r = 0; r < ws[2]; ++r)
          for (int64_t q = 0; q < ws[3]; ++q)
            wp.set(((k * r2 + r / b) * s2 + q / b) * channels + ((r % b) * b + q % b) * cin + c,
                   w.get(((k * cin + c) * ws[2] + r) * ws[3] + q));
    Node n = node;
    n.attrs.erase("auto_pad");
    n.attrs["kernel_shape"] = Attribute::of_ints({r2, s2});
    n.attrs["strides"] = Attribute::of_ints({1, 1});
    n.attrs["pads"] = Attribute::of_ints({0, 0, 0, 0});
    n.attrs["dilations"] = Attribute::of_ints({1, 1});
    std::vector<ValueId> inputs = node.inputs;
    inputs[0] = packed;
    inputs[1] = g_.add_constant(g_.unique_name(g_.value(node.input(1)).name + "_s2d_krsc"), std::move(wp));
    if (node.input(3) != kNoValue) {
      AOTC_RETURN_IF_ERROR(ensure_nhwc(node.inputs[3]));
      inputs[3] = nhwc_.at(node.inputs[3]);
    }
    return emit_nhwc(n, inputs, /*set_channels_last=*/true);
  }

  // Emits a copy of `node` reading `inputs` and writing a new NHWC value for its output 0.
  Expected<bool> emit_nhwc(const Node& node, const std::vector<ValueId>& inputs, bool set_channels_last) {
    Node n = node;
    n.inputs = inputs;
    if (set_channels_last) n.attrs["channels_last"] = Attribute::of_int(1);
    const ValueId orig = node.outputs[0];
    const Value ov = g_.value(orig);
    n.outputs[0] = g_.add_value(g_.unique_name(ov.name + "_nhwc"), ov.dtype, nchw_to_nhwc(ov.shape), true);
    const OpDef* def = registry_.find(n.op_type, n.domain);
    AOTC_RETURN_IF_ERROR(def->infer(n, g_));
    if (g_.value(n.outputs[0]).shape != nchw_to_nhwc(ov.shape))
      return node_error(node, "layout: NHWC shape mismatch (internal)");
    nhwc_[orig] = n.outputs[0];
    moved_.insert({orig, false});
    g_.nodes.push_back(std::move(n));
    return true;
  }

  // Makes nhwc_[v] exist for an NCHW value v (one Transpose, shared by every consumer).
  Status ensure_nhwc(ValueId v) {
    if (nhwc_.count(v)) return Status::ok();
    const Value src = g_.value(v);
    if (src.is_constant()) {
      nhwc_[v] = g_.add_constant(g_.unique_name(src.name + "_nhwc"), permute_channels(*src.constant, false));
      return Status::ok();
    }
    const ValueId out = g_.add_value(g_.unique_name(src.name + "_nhwc"), src.dtype, nchw_to_nhwc(src.shape), true);
    AOTC_RETURN_IF_ERROR(add_transpose(v, out, {0, 2, 3, 1}));
    nhwc_[v] = out;
    return Status::ok();
  }

  // A value whose producer now writes NHWC gets its NCHW bytes back (once) before an NCHW reader.
  Status restore_nchw(ValueId v) {
    auto it = moved_.find(v);
    if (it == moved_.end() || it->second) return Status::ok();
    it->second = true;
    const Value& dst = g_.value(v);
    if (dst.shape.size() == 4 && dst.shape[2] == 1 && dst.shape[3] == 1) {
      // [N, 1, 1, C] and [N, C, 1, 1] hold the same bytes: a view.
      return add_reshape(nhwc_.at(v), v, dst.name + "_to_nchw");
    }
    return add_transpose(nhwc_.at(v), v, {0, 3, 1, 2});
  }

  // A Reshape view of `from` as `to` (to's shape), named after `name`.
  Status add_reshape(ValueId from, ValueId to, const std::string& name) {
    const Shape shape = g_.value(to).shape;
    Node r;
    r.name = g_.unique_name(name);
    r.op_type = "Reshape";
    r.inputs = {from, g_.add_constant(g_.unique_name(name + "_shape"), Tensor::from_int64s({static_cast<int64_t>(shape.size())}, shape))};
    r.outputs = {to};
    AOTC_RETURN_IF_ERROR(registry_.find("Reshape")->infer(r, g_));
    g_.nodes.push_back(std::move(r));
    return Status::ok();
  }

  Status add_transpose(ValueId from, ValueId to, std::vector<int64_t> perm) {
    Node t;
    t.name = g_.unique_name(g_.value(to).name + "_transpose");
    t.op_type = "Transpose";
    t.inputs = {from};
    t.outputs = {to};
    t.attrs["perm"] = Attribute::of_ints(std::move(perm));
    AOTC_RETURN_IF_ERROR(registry_.find("Transpose")->infer(t, g_));
    g_.nodes.push_back(std::move(t));
    return Status::ok();
  }

  // aotc.PackNhwc of an NCHW value into NHWC with `channels` channels. When the value is only a
  // Cast of a float value read by nothing else (the precision pass's input cast), the pack reads
  // the Cast's input and converts on the way, and the Cast goes.
  // With block > 1: space-to-depth (see aotc.PackNhwc), begin pads `pads`, output `spatial`.
  ValueId pack_input(ValueId v, int64_t channels, int64_t block = 1, std::vector<int64_t> pads = {},
                     std::vector<int64_t> spatial = {}) {
    const Value src = g_.value(v);
    ValueId from = v;
    int cast_at = -1;
    for (int i = static_cast<int>(g_.nodes.size()) - 1; i >= 0; --i) {
      const Node& p = g_.nodes[static_cast<size_t>(i)];
      if (p.outputs.size() != 1 || p.outputs[0] != v) continue;
      const DType in = p.inputs.empty() ? DType::kUndefined : g_.value(p.inputs[0]).dtype;
      if (p.op_type == "Cast" && p.domain.empty() && readers_[v].size() == 1 && !g_.is_graph_output(v) &&
          (in == DType::kFloat32 || in == DType::kFloat16 || in == DType::kBFloat16)) {
        from = p.inputs[0];
        cast_at = i;
      }
      break;
    }
    if (spatial.empty()) spatial = {src.shape[2], src.shape[3]};
    const ValueId out = g_.add_value(g_.unique_name(src.name + (block > 1 ? "_s2d_packed" : "_nhwc_packed")), src.dtype,
                                     {src.shape[0], spatial[0], spatial[1], channels}, true);
    Node pack;
    pack.name = g_.unique_name(src.name + "_pack_nhwc");
    pack.op_type = "PackNhwc";
    pack.domain = "aotc";
    pack.inputs = {from};
    pack.outputs = {out};
    pack.attrs["to"] = Attribute::of_int(static_cast<int64_t>(src.dtype));
    pack.attrs["channels"] = Attribute::of_int(channels);
    if (block > 1) {
      pack.attrs["block"] = Attribute::of_int(block);
      pack.attrs["pads"] = Attribute::of_ints(pads);
      pack.attrs["spatial"] = Attribute::of_ints(spatial);
    }
    Status st = registry_.find("PackNhwc", "aotc")->infer(pack, g_);
    (void)st;  // float input of rank 4 and channels >= C, checked by the caller: cannot fail
    if (cast_at >= 0) g_.nodes.erase(g_.nodes.begin() + cast_at);
    g_.nodes.push_back(std::move(pack));
    return out;
  }

  // Zero-pads the channel axis of an NHWC value to `channels` (one Pad node).
  ValueId pad_channels(ValueId v, int64_t channels) {
    return pad_nhwc(v, {0, 0, 0, 0, 0, 0, 0, channels - g_.value(v).shape[3]}, kNoValue);
  }

  // Pads a 4-D value by ONNX Pad's `pads` (begins, then ends) with `fill` (a constant scalar of
  // the value's dtype; kNoValue: zeros): one Pad node.
  ValueId pad_nhwc(ValueId v, const std::vector<int64_t>& pads, ValueId fill) {
    const Value src = g_.value(v);
    Shape s = src.shape;
    for (size_t d = 0; d < 4; ++d) s[d] += pads[d] + pads[d + 4];
    const ValueId out = g_.add_value(g_.unique_name(src.name + "_padded"), src.dtype, s, true);
    Node p;
    p.name = g_.unique_name(src.name + "_pad");
    p.op_type = "Pad";
    p.inputs = {v, g_.add_constant(g_.unique_name(src.name + "_pads"), Tensor::from_int64s({8}, pads))};
    if (fill != kNoValue) p.inputs.push_back(fill);
    p.outputs = {out};
    p.attrs["mode"] = Attribute::of_string("constant");
    Status st = registry_.find("Pad")->infer(p, g_);
    (void)st;  // constant pads of a known shape and a scalar fill of the value's dtype: cannot fail
    g_.nodes.push_back(std::move(p));
    return out;
  }

  Graph& g_;
  const OpRegistry& registry_;
  std::map<ValueId, ValueId> nhwc_;  // NCHW value -> the value holding the same data in NHWC
  std::map<ValueId, bool> moved_;    // values whose producer now writes NHWC -> restored yet?
  // The op type of each node input reading a value in the original graph ("aotc.X" for internal ops).
  std::map<ValueId, std::vector<std::string>> readers_;
};

}  // namespace

Expected<bool> layout_nhwc(Graph& graph) {
  if (!graph.target.has_sm80_tensor_cores()) return false;
  return LayoutRewriter(graph).run();
}

}  // namespace aotc
