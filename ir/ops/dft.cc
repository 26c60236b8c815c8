// DFT (opset 17: axis, inverse, onesided, optional constant dft_length; opset 20's constant axis
// input becomes the attribute at import; inverse + onesided is the real inverse of a one-sided
// spectrum, numpy's irfft), STFT (constant
// frame_step/frame_length, optional window, onesided) and MelWeightMatrix (all inputs constant,
// so it folds at import). Complex values are the trailing dim of 2 (real input: trailing 1).
// Reference and kernel (templates/dft.cu.in): a direct O(N^2) transform in double.
#include <algorithm>
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};
constexpr double kPi = 3.14159265358979323846;

Expected<int64_t> constant_scalar(const Node& node, const Graph& graph, size_t index, const char* what) {
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, index, {DType::kInt32, DType::kInt64}));
  if (input_value(graph, node, index).numel() != 1) return node_error(node, std::string(what) + " must be a scalar");
  Expected<const Tensor*> t = expect_constant(node, graph, index, std::string(what) + " decides the output shape");
  if (!t) return t.status();
  return (*t)->get_int(0);
}

// Geometry of a DFT node: x is [outer, len, inner, c] with the transformed axis in the middle.
struct DftPlan {
  int64_t axis = 1, outer = 1, len = 0, inner = 1, channels = 1, n = 0, out_len = 0;
  bool inverse = false, onesided = false;
  bool real_out() const { return inverse && onesided; }  // irfft: one-sided spectrum -> real signal
  // Input samples (bins) the transform reads: irfft uses the first n / 2 + 1 bins only.
  int64_t samples() const { return std::min(len, real_out() ? n / 2 + 1 : n); }
};

// DFT-20 takes the axis as input 2 (default -2; DFT-17's attribute defaulted to 1). The canonical
// form is DFT-17's: a constant axis becomes the attribute, so inference, reference and kernel are
// shared. A run-time axis is refused (it decides which dim the output changes).
Status dft_import(Node& node, Graph& graph, int64_t opset) {
  if (opset < 20) return Status::ok();
  if (node.has_attr("axis")) return node_error(node, "has an axis attribute; from opset 20 the axis is input 2");
  int64_t axis = -2;
  if (node.input(2) != kNoValue) {
    const Value& a = graph.value(node.inputs[2]);
    if (!a.is_constant())
      return node_error(node, "axis (input 2) is not known at compile time; aotc compiles DFT only with a constant "
                              "axis (it decides the output shape)");
    if (a.dtype != DType::kInt64 && a.dtype != DType::kInt32) return node_error(node, "axis must be int32 or int64");
    if (a.numel() != 1) return node_error(node, "axis must be a scalar");
    axis = a.constant->get_int(0);
  }
  if (node.inputs.size() > 2) node.inputs.resize(2);
  while (!node.inputs.empty() && node.inputs.back() == kNoValue && node.inputs.size() > 1) node.inputs.pop_back();
  node.attrs.emplace("axis", Attribute::of_int(axis));
  return Status::ok();
}

Expected<DftPlan> dft_plan(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  DftPlan p;
  const int64_t r = static_cast<int64_t>(x.shape.size());
  if (r < 2) return node_error(node, "input must have rank >= 2 ([..., signal, 1 or 2])");
  p.channels = x.shape.back();
  if (p.channels != 1 && p.channels != 2) return node_error(node, "the last dim must be 1 (real) or 2 (complex)");
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", 1), r);
  if (!axis) return axis.status();
  if (*axis == r - 1) return node_error(node, "axis must not be the last (complex) dim");
  p.axis = *axis;
  for (int64_t i = 0; i < p.axis; ++i) p.outer *= x.shape[i];
  p.len = x.shape[p.axis];
  for (int64_t i = p.axis + 1; i < r - 1; ++i) p.inner *= x.shape[i];
  p.inverse = node.attr_int("inverse", 0) != 0;
  p.onesided = node.attr_int("onesided", 0) != 0;
  if (p.real_out() && p.channels != 2)
    return node_error(node, "inverse with onesided needs a complex one-sided spectrum (last dim 2)");
  if (p.onesided && !p.inverse && p.channels != 1) return node_error(node, "onesided needs a real input (last dim 1)");
  p.n = p.real_out() ? 2 * (p.len - 1) : p.len;
  if (node.input(1) != kNoValue) {
    Expected<int64_t> n = constant_scalar(node, graph, 1, "dft_length");
    if (!n) return n.status();
    p.n = *n;
  }
  if (p.n < 1) return node_error(node, "dft_length must be >= 1");
  p.out_len = p.onesided && !p.inverse ? p.n / 2 + 1 : p.n;
  return p;
}

Status dft_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kFloatTypes));
  Expected<DftPlan> p = dft_plan(node, graph);
  if (!p) return p.status();
  Shape out = input_value(graph, node, 0).shape;
  out[p->axis] = p->out_len;
  out.back() = p->real_out() ? 1 : 2;
  set_output(graph, node, 0, input_value(graph, node, 0).dtype, out);
  return Status::ok();
}

// Transforms `in` (len complex samples, zero-padded/truncated to n) into out_len bins.
void dft_1d(const std::vector<double>& re, const std::vector<double>& im, int64_t n, int64_t out_len, bool inverse,
            std::vector<double>& out_re, std::vector<double>& out_im) {
  const int64_t len = std::min<int64_t>(static_cast<int64_t>(re.size()), n);
  const double sign = inverse ? 1.0 : -1.0;
  out_re.assign(static_cast<size_t>(out_len), 0.0);
  out_im.assign(static_cast<size_t>(out_len), 0.0);
  for (int64_t k = 0; k < out_len; ++k) {
    double sr = 0, si = 0;
    for (int64_t t = 0; t < len; ++t) {
      // (k * t) mod n keeps the angle small, so cos/sin stay exact for long signals.
      const double a = sign * 2.0 * kPi * static_cast<double>((k * t) % n) / static_cast<double>(n);
      const double c = std::cos(a), s = std::sin(a);
      sr += re[t] * c - im[t] * s;
      si += re[t] * s + im[t] * c;
    }
    if (inverse) { sr /= static_cast<double>(n); si /= static_cast<double>(n); }
    out_re[k] = sr;
    out_im[k] = si;
  }
}

// The real inverse of the first n / 2 + 1 bins of a Hermitian spectrum (numpy.fft.irfft): the
// imaginary parts of bin 0 and (n even) bin n / 2 do not contribute, the others count twice.
void irfft_1d(const std::vector<double>& re, const std::vector<double>& im, int64_t n, std::vector<double>& out) {
  const int64_t bins = std::min<int64_t>(static_cast<int64_t>(re.size()), n / 2 + 1);
  out.assign(static_cast<size_t>(n), 0.0);
  for (int64_t t = 0; t < n; ++t) {
    double sum = 0;
    for (int64_t k = 0; k < bins; ++k) {
      const double a = 2.0 * kPi * static_cast<double>((k * t) % n) / static_cast<double>(n);
      const double w = (k == 0 || 2 * k == n) ? 1.0 : 2.0;
      sum += w * (re[k] * std::cos(a) - im[k] * std::sin(a));
    }
    out[t] = sum / static_cast<double>(n);
  }
}

Status dft_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  DftPlan p;
  p.channels = x.shape().back();
  const int64_t r = x.rank();
  p.axis = node.attr_int("axis", 1);
  if (p.axis < 0) p.axis += r;
  for (int64_t i = 0; i < p.axis; ++i) p.outer *= x.shape()[i];
  p.len = x.shape()[p.axis];
  for (int64_t i = p.axis + 1; i < r - 1; ++i) p.inner *= x.shape()[i];
  p.inverse = node.attr_int("inverse", 0) != 0;
  p.onesided = node.attr_int("onesided", 0) != 0;
  p.out_len = y.shape()[p.axis];
  p.n = inputs.size() > 1 && inputs[1] ? inputs[1]->get_int(0) : p.real_out() ? 2 * (p.len - 1) : p.len;
  std::vector<double> re(p.len), im(p.len), ore, oim;
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t i = 0; i < p.inner; ++i) {
      for (int64_t t = 0; t < p.len; ++t) {
        const int64_t base = ((o * p.len + t) * p.inner + i) * p.channels;
        re[t] = x.get(base);
        im[t] = p.channels == 2 ? x.get(base + 1) : 0.0;
      }
      if (p.real_out()) {
        irfft_1d(re, im, p.n, ore);
        for (int64_t t = 0; t < p.out_len; ++t) y.set((o * p.out_len + t) * p.inner + i, ore[t]);
        continue;
      }
      dft_1d(re, im, p.n, p.out_len, p.inverse, ore, oim);
      for (int64_t k = 0; k < p.out_len; ++k) {
        const int64_t base = ((o * p.out_len + k) * p.inner + i) * 2;
        y.set(base, ore[k]);
        y.set(base + 1, oim[k]);
      }
    }
  return Status::ok();
}

// STFT: signal [batch, length, 1|2] -> [batch, frames, bins, 2].
Status stft_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 4));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kFloatTypes));
  const Value& x = input_value(graph, node, 0);
  if (x.shape.size() != 3 || (x.shape[2] != 1 && x.shape[2] != 2))
    return node_error(node, "signal must be [batch, length, 1 or 2], it is " + shape_str(x.shape));
  Expected<int64_t> step = constant_scalar(node, graph, 1, "frame_step");
  if (!step) return step.status();
  if (*step < 1) return node_error(node, "frame_step must be >= 1");
  int64_t frame_length = x.shape[1];
  if (node.input(2) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {x.dtype}));
    AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 2, 1));
    frame_length = input_value(graph, node, 2).shape[0];
  }
  if (node.input(3) != kNoValue) {
    Expected<int64_t> fl = constant_scalar(node, graph, 3, "frame_length");
    if (!fl) return fl.status();
    if (node.input(2) != kNoValue && *fl != frame_length) return node_error(node, "frame_length differs from the window's length");
    frame_length = *fl;
  }
  if (frame_length < 1 || frame_length > x.shape[1])
    return node_error(node, "frame_length " + std::to_string(frame_length) + " must be in [1, signal length]");
  const bool onesided = node.attr_int("onesided", 1) != 0;
  if (onesided && x.shape[2] != 1) return node_error(node, "onesided needs a real signal (last dim 1)");
  const int64_t frames = 1 + (x.shape[1] - frame_length) / *step;
  const int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;
  set_output(graph, node, 0, x.dtype, {x.shape[0], frames, bins, 2});
  return Status::ok();
}

Status stft_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  const int64_t step = inputs[1]->get_int(0);
  const Tensor* window = inputs.size() > 2 ? inputs[2] : nullptr;
  const int64_t batch = y.shape()[0], frames = y.shape()[1], bins = y.shape()[2];
  const int64_t length = x.shape()[1], c = x.shape()[2];
  int64_t fl = window ? window->numel() : (inputs.size() > 3 && inputs[3] ? inputs[3]->get_int(0) : length);
  (void)node;
  std::vector<double> re(fl), im(fl), ore, oim;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t t = 0; t < fl; ++t) {
        const double w = window ? window->get(t) : 1.0;
        const int64_t base = (b * length + f * step + t) * c;
        re[t] = x.get(base) * w;
        im[t] = c == 2 ? x.get(base + 1) * w : 0.0;
      }
      dft_1d(re, im, fl, bins, false, ore, oim);
      for (int64_t k = 0; k < bins; ++k) {
        const int64_t base = ((b * frames + f) * bins + k) * 2;
        y.set(base, ore[k]);
        y.set(base + 1, oim[k]);
      }
    }
  return Status::ok();
}


KernelStep dft_kernel(const Node& node, DType t, const std::string& what) {
  KernelStep k;
  k.template_name = "dft";
  k.holes = {{"comment", what + " " + dtype_name(t)}, {"T", dtype_c_type(t)},
             {"ACC", t == DType::kFloat64 ? "double" : "float"}};
  k.block = Dim3{128, 1, 1};
  (void)node;
  return k;
}

Expected<Lowering> dft_lower(const Node& node, const Graph& graph) {
  Expected<DftPlan> p = dft_plan(node, graph);
  if (!p) return p.status();
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  KernelStep k = dft_kernel(node, x.dtype, std::string(p->inverse ? "inverse " : "") + "DFT axis " +
                                               std::to_string(p->axis) + " n=" + std::to_string(p->n) + " " + shape_str(x.shape));
  k.holes.insert(k.holes.end(), {{"OUTER", int_literal(p->outer)}, {"LEN", int_literal(p->len)},
                                 {"INNER", int_literal(p->inner)}, {"C", int_literal(p->channels)},
                                 {"FRAMES", int_literal(1)}, {"FRAME_STEP", int_literal(0)},
                                 {"N", int_literal(p->n)}, {"OUT_LEN", int_literal(p->out_len)},
                                 {"SAMPLES", int_literal(p->samples())},
                                 {"INVERSE", p->inverse ? "true" : "false"}, {"HAS_WINDOW", "false"},
                                 {"REAL_OUT", p->real_out() ? "true" : "false"}});
  k.args = {node.inputs[0], kNullArg, node.outputs[0]};
  k.grid = grid_for(y.numel() / (p->real_out() ? 1 : 2), 128);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

Expected<Lowering> stft_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  const Value& step = input_value(graph, node, 1);
  if (!step.constant) return node_error(node, "frame_step must be a constant");
  const bool has_window = node.input(2) != kNoValue;
  int64_t fl = x.shape[1];
  if (has_window) fl = input_value(graph, node, 2).shape[0];
  else if (node.input(3) != kNoValue) fl = input_value(graph, node, 3).constant->get_int(0);
  KernelStep k = dft_kernel(node, x.dtype, "STFT frame " + std::to_string(fl) + " " + shape_str(x.shape));
  k.holes.insert(k.holes.end(), {{"OUTER", int_literal(y.shape[0] * y.shape[1])}, {"LEN", int_literal(x.shape[1])},
                                 {"INNER", int_literal(1)}, {"C", int_literal(x.shape[2])},
                                 {"FRAMES", int_literal(y.shape[1])}, {"FRAME_STEP", int_literal(step.constant->get_int(0))},
                                 {"N", int_literal(fl)}, {"OUT_LEN", int_literal(y.shape[2])},
                                 {"SAMPLES", int_literal(fl)}, {"INVERSE", "false"},
                                 {"HAS_WINDOW", has_window ? "true" : "false"}, {"REAL_OUT", "false"}});
  k.args = {node.inputs[0], has_window ? node.inputs[2] : kNullArg, node.outputs[0]};
  k.grid = grid_for(y.numel() / 2, 128);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

// MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangular filters (onnx reference maths).
Status mel_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 5, 5));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  Expected<int64_t> mel = constant_scalar(node, graph, 0, "num_mel_bins");
  if (!mel) return mel.status();
  Expected<int64_t> dft = constant_scalar(node, graph, 1, "dft_length");
  if (!dft) return dft.status();
  Expected<int64_t> rate = constant_scalar(node, graph, 2, "sample_rate");
  if (!rate) return rate.status();
  for (size_t i = 3; i < 5; ++i) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, kFloatTypes));
    Expected<const Tensor*> t = expect_constant(node, graph, i, "the filter edges are computed at compile time");
    if (!t) return t.status();
    if ((*t)->numel() != 1) return node_error(node, "input " + std::to_string(i) + " must be a scalar");
  }
  if (*mel < 1 || *dft < 1 || *rate < 1) return node_error(node, "num_mel_bins, dft_length and sample_rate must be >= 1");
  const int64_t dt = node.attr_int("output_datatype", 1);
  bool allowed = false;
  for (DType t : kFloatTypes) allowed = allowed || static_cast<int64_t>(t) == dt;
  if (!allowed) return node_error(node, "output_datatype " + std::to_string(dt) + " is not supported (float types only)");
  set_output(graph, node, 0, static_cast<DType>(dt), {*dft / 2 + 1, *mel});
  return Status::ok();
}

Status mel_reference(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& outputs) {
  Tensor& y = outputs[0];
  const int64_t mel = in[0]->get_int(0), dft = in[1]->get_int(0), rate = in[2]->get_int(0);
  const double lo = in[3]->get(0), hi = in[4]->get(0);
  const int64_t rows = y.shape()[0];
  const double lo_mel = 2595.0 * std::log10(1.0 + lo / 700.0), hi_mel = 2595.0 * std::log10(1.0 + hi / 700.0);
  // The spec (and onnx/reference/ops/op_mel_weight_matrix.py) divide by num_mel_bins + 2 points.
  const double step = (hi_mel - lo_mel) / static_cast<double>(mel + 2);
  std::vector<int64_t> bins(static_cast<size_t>(mel + 2));
  for (int64_t i = 0; i < mel + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + lo_mel) / 2595.0) - 1.0);
    bins[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate)));
  }
  for (int64_t i = 0; i < mel; ++i) {
    const int64_t l = bins[i], c = bins[i + 1], h = bins[i + 2];
    auto put = [&](int64_t row, double v) {
      if (row < 0 || row >= rows) return;  // the reference would index out of range; keep it in bounds
      y.set(row * mel + i, v);
    };
    if (c == l) put(c, 1.0);
    else for (int64_t j = l; j <= c; ++j) put(j, static_cast<double>(j - l) / static_cast<double>(c - l));
    if (h > c) for (int64_t j = c; j < h; ++j) put(j, static_cast<double>(h - j) / static_cast<double>(h - c));
  }
  (void)node;
  return Status::ok();
}

}  // namespace

void register_dft_ops(OpRegistry& registry) {
  OpDef dft;
  dft.op_type = "DFT";
  dft.import = dft_import;
  dft.infer = dft_infer;
  dft.reference = dft_reference;
  dft.lower = dft_lower;
  registry.add(dft);
  OpDef stft;
  stft.op_type = "STFT";
  stft.infer = stft_infer;
  stft.reference = stft_reference;
  stft.lower = stft_lower;
  registry.add(stft);
  OpDef mel;
  mel.op_type = "MelWeightMatrix";
  mel.infer = mel_infer;
  mel.reference = mel_reference;  // all inputs constant: folds at import, no kernel
  registry.add(mel);
}

}  // namespace aotc
