// RNN, GRU and LSTM (ONNX opsets 7-14+): forward / reverse / bidirectional, activations with their
// alpha/beta, clip, GRU's linear_before_reset, LSTM's input_forget and peepholes, initial_h/c,
// sequence_lens (run-time or constant), layout 0/1, optional Y, Y_h, Y_c. One spec parser feeds
// shape inference, the CPU reference (double arithmetic) and the lowering: one kernel launch in
// which block (direction, batch) walks the time steps (templates/rnn.cu.in).
#include <algorithm>
#include <cctype>
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

enum class Cell { kRnn, kGru, kLstm };
enum class Act { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu,
                 kSoftsign, kSoftplus };

struct Activation {
  Act kind = Act::kTanh;
  float alpha = 0, beta = 0;
};

struct RnnSpec {
  Cell cell = Cell::kRnn;
  int64_t gates = 1, dirs = 1, seq = 0, batch = 0, input = 0, hidden = 0;
  bool layout_batch_first = false, reverse_only = false, has_clip = false;
  float clip = 0;
  bool linear_before_reset = false, input_forget = false;
  std::vector<Activation> acts;  // dirs * functions_per_cell, direction-major
};

Cell cell_of(const Node& node) {
  return node.op_type == "GRU" ? Cell::kGru : node.op_type == "LSTM" ? Cell::kLstm : Cell::kRnn;
}
int64_t functions_per_cell(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 2 : 3; }
int64_t gates_per_cell(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 3 : 4; }

struct ActInfo {
  const char* name;
  Act kind;
  int alphas, betas;  // how many of activation_alpha / activation_beta this function consumes
  float alpha, beta;  // the corresponding ONNX operators' defaults
};
const ActInfo kActs[] = {
    {"relu", Act::kRelu, 0, 0, 0, 0},           {"tanh", Act::kTanh, 0, 0, 0, 0},
    {"sigmoid", Act::kSigmoid, 0, 0, 0, 0},     {"affine", Act::kAffine, 1, 1, 1.0f, 0.0f},
    {"leakyrelu", Act::kLeakyRelu, 1, 0, 0.01f, 0}, {"thresholdedrelu", Act::kThresholdedRelu, 1, 0, 1.0f, 0},
    {"scaledtanh", Act::kScaledTanh, 1, 1, 1.0f, 1.0f}, {"hardsigmoid", Act::kHardSigmoid, 1, 1, 0.2f, 0.5f},
    {"elu", Act::kElu, 1, 0, 1.0f, 0},          {"softsign", Act::kSoftsign, 0, 0, 0, 0},
    {"softplus", Act::kSoftplus, 0, 0, 0, 0}};

// Activations: names case-insensitive; alphas/betas are consumed in order by the functions that
// take them (as ONNX Runtime does); one direction's list is repeated for a bidirectional node.
Status parse_activations(const Node& node, RnnSpec& s) {
  const int64_t nf = functions_per_cell(s.cell);
  std::vector<std::string> names;
  if (node.has_attr("activations")) names = node.attrs.at("activations").strings;
  if (names.empty()) {
    names = s.cell == Cell::kRnn ? std::vector<std::string>{"Tanh"}
            : s.cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                   : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  }
  if (static_cast<int64_t>(names.size()) == nf && s.dirs == 2) {
    const std::vector<std::string> one_direction = names;  // inserting a vector's own range is UB
    names.insert(names.end(), one_direction.begin(), one_direction.end());
  }
  if (static_cast<int64_t>(names.size()) != nf * s.dirs)
    return node_error(node, "activations has " + std::to_string(names.size()) + " entries, expected " +
                                std::to_string(nf * s.dirs));
  std::vector<float> alphas = node.attr_floats("activation_alpha"), betas = node.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  for (const std::string& raw : names) {
    std::string n;
    for (char ch : raw) n += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const ActInfo* info = nullptr;
    for (const ActInfo& a : kActs)
      if (n == a.name) info = &a;
    if (!info) return node_error(node, "activation '" + escape_for_message(raw, 40) + "' is not supported");
    Activation act{info->kind, info->alpha, info->beta};
    if (info->alphas && ai < alphas.size()) act.alpha = alphas[ai++];
    if (info->betas && bi < betas.size()) act.beta = betas[bi++];
    s.acts.push_back(act);
  }
  return Status::ok();
}

// Checks attributes and the shapes of X, W, R; everything else is checked against the spec.
Expected<RnnSpec> rnn_spec(const Node& node, const Shape& x, const Shape& w, const Shape& r) {
  RnnSpec s;
  s.cell = cell_of(node);
  s.gates = gates_per_cell(s.cell);
  const std::string dir = node.attr_string("direction", "forward");
  if (dir == "bidirectional") s.dirs = 2;
  else if (dir == "reverse") s.reverse_only = true;
  else if (dir != "forward") return node_error(node, "direction '" + escape_for_message(dir, 40) + "' is not one of forward, reverse, bidirectional");
  const int64_t layout = node.attr_int("layout", 0);
  if (layout != 0 && layout != 1) return node_error(node, "layout must be 0 or 1");
  s.layout_batch_first = layout == 1;
  if (x.size() != 3) return node_error(node, "input 0 (X) must have rank 3");
  s.seq = s.layout_batch_first ? x[1] : x[0];
  s.batch = s.layout_batch_first ? x[0] : x[1];
  s.input = x[2];
  if (r.size() != 3) return node_error(node, "input 2 (R) must have rank 3");
  s.hidden = node.attr_int("hidden_size", r[2]);
  if (s.hidden <= 0) return node_error(node, "hidden_size must be positive");
  // Bounded before the gate products below are formed (a fuzz find: hidden_size INT64_MAX, UBSan).
  if (s.hidden > (int64_t{1} << 40))
    return node_error(node, "hidden_size " + std::to_string(s.hidden) + " is over the limit of 2^40");
  const Shape w_want = {s.dirs, s.gates * s.hidden, s.input}, r_want = {s.dirs, s.gates * s.hidden, s.hidden};
  if (w != w_want) return node_error(node, "input 1 (W) has shape " + shape_str(w) + ", expected " + shape_str(w_want));
  if (r != r_want) return node_error(node, "input 2 (R) has shape " + shape_str(r) + ", expected " + shape_str(r_want));
  if (node.has_attr("clip")) {
    s.has_clip = true;
    s.clip = node.attr_float("clip", 0);
    if (!(s.clip >= 0)) return node_error(node, "clip must be a non-negative number");
  }
  s.linear_before_reset = node.attr_int("linear_before_reset", 0) != 0;
  s.input_forget = node.attr_int("input_forget", 0) != 0;
  AOTC_RETURN_IF_ERROR(parse_activations(node, s));
  return s;
}

const std::vector<DType> kRnnTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16};

Shape state_shape(const RnnSpec& s) {
  return s.layout_batch_first ? Shape{s.batch, s.dirs, s.hidden} : Shape{s.dirs, s.batch, s.hidden};
}

Status rnn_infer(Node& node, Graph& graph) {
  const bool lstm = cell_of(node) == Cell::kLstm;
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, lstm ? 8 : 6));
  const size_t max_outputs = lstm ? 3 : 2;
  if (node.outputs.empty() || node.outputs.size() > max_outputs)
    return node_error(node, "expects 1 to " + std::to_string(max_outputs) + " outputs");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kRnnTypes));
  const DType t = input_value(graph, node, 0).dtype;
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (node.inputs[i] == kNoValue) continue;
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, i == 4 ? std::vector<DType>{DType::kInt32} : std::vector<DType>{t}));
  }
  for (size_t i = 0; i < 3; ++i)
    if (node.inputs[i] == kNoValue) return node_error(node, "input " + std::to_string(i) + " is required");
  Expected<RnnSpec> spec = rnn_spec(node, input_value(graph, node, 0).shape, input_value(graph, node, 1).shape,
                                    input_value(graph, node, 2).shape);
  if (!spec) return spec.status();
  const RnnSpec& s = *spec;
  auto check = [&](size_t i, const Shape& want, const char* what) -> Status {
    if (node.input(i) == kNoValue) return Status::ok();
    const Shape& got = input_value(graph, node, i).shape;
    if (got != want)
      return node_error(node, "input " + std::to_string(i) + " (" + what + ") has shape " + shape_str(got) +
                                  ", expected " + shape_str(want));
    return Status::ok();
  };
  AOTC_RETURN_IF_ERROR(check(3, {s.dirs, 2 * s.gates * s.hidden}, "B"));
  AOTC_RETURN_IF_ERROR(check(4, {s.batch}, "sequence_lens"));
  AOTC_RETURN_IF_ERROR(check(5, state_shape(s), "initial_h"));
  AOTC_RETURN_IF_ERROR(check(6, state_shape(s), "initial_c"));
  AOTC_RETURN_IF_ERROR(check(7, {s.dirs, 3 * s.hidden}, "P"));
  const Shape y = s.layout_batch_first ? Shape{s.batch, s.seq, s.dirs, s.hidden} : Shape{s.seq, s.dirs, s.batch, s.hidden};
  for (size_t o = 0; o < node.outputs.size(); ++o)
    if (node.outputs[o] != kNoValue) set_output(graph, node, o, t, o == 0 ? y : state_shape(s));
  return Status::ok();
}

double apply(const Activation& a, double x) {
  switch (a.kind) {
    case Act::kRelu: return x < 0 ? 0.0 : x;
    case Act::kTanh: return std::tanh(x);
    case Act::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Act::kAffine: return double(a.alpha) * x + double(a.beta);
    case Act::kLeakyRelu: return x < 0 ? double(a.alpha) * x : x;
    case Act::kThresholdedRelu: return x > double(a.alpha) ? x : 0.0;
    case Act::kScaledTanh: return double(a.alpha) * std::tanh(double(a.beta) * x);
    case Act::kHardSigmoid: return std::max(0.0, std::min(1.0, double(a.alpha) * x + double(a.beta)));
    case Act::kElu: return x < 0 ? double(a.alpha) * std::expm1(x) : x;
    case Act::kSoftsign: return x / (1.0 + std::fabs(x));
    case Act::kSoftplus: return std::log1p(std::exp(x));
  }
  return x;
}

// CUDA expression of one activation applied to `x` (of compute type `c`).
std::string act_expr(const Activation& a, const std::string& c) {
  const std::string al = "((" + c + ")" + float_literal(a.alpha) + ")", be = "((" + c + ")" + float_literal(a.beta) + ")";
  const std::string one = "((" + c + ")1)", zero = "((" + c + ")0)";
  switch (a.kind) {
    case Act::kRelu: return "(x < " + zero + " ? " + zero + " : x)";
    case Act::kTanh: return "tanh(x)";
    case Act::kSigmoid: return "(" + one + " / (" + one + " + exp(-x)))";
    case Act::kAffine: return "(" + al + " * x + " + be + ")";
    case Act::kLeakyRelu: return "(x < " + zero + " ? " + al + " * x : x)";
    case Act::kThresholdedRelu: return "(x > " + al + " ? x : " + zero + ")";
    case Act::kScaledTanh: return "(" + al + " * tanh(" + be + " * x))";
    case Act::kHardSigmoid: return "fmax(" + zero + ", fmin(" + one + ", " + al + " * x + " + be + "))";
    case Act::kElu: return "(x < " + zero + " ? " + al + " * expm1(x) : x)";
    case Act::kSoftsign: return "(x / (" + one + " + fabs(x)))";
    case Act::kSoftplus: return "log1p(exp(x))";
  }
  return "x";
}

struct Layout {
  const RnnSpec& s;
  int64_t x(int64_t t, int64_t b, int64_t i) const {
    return (s.layout_batch_first ? b * s.seq + t : t * s.batch + b) * s.input + i;
  }
  int64_t y(int64_t t, int64_t d, int64_t b, int64_t j) const {
    return (s.layout_batch_first ? (b * s.seq + t) * s.dirs + d : (t * s.dirs + d) * s.batch + b) * s.hidden + j;
  }
  int64_t state(int64_t d, int64_t b, int64_t j) const {
    return (s.layout_batch_first ? b * s.dirs + d : d * s.batch + b) * s.hidden + j;
  }
};

Status rnn_reference(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  Expected<RnnSpec> spec = rnn_spec(node, in[0]->shape(), in[1]->shape(), in[2]->shape());
  if (!spec) return spec.status();
  const RnnSpec& s = *spec;
  const Layout lay{s};
  const int64_t H = s.hidden, G = s.gates, I = s.input, nf = functions_per_cell(s.cell);
  auto opt = [&](size_t i) -> const Tensor* { return i < in.size() ? in[i] : nullptr; };
  const Tensor &X = *in[0], &W = *in[1], &R = *in[2];
  const Tensor *B = opt(3), *L = opt(4), *H0 = opt(5), *C0 = opt(6), *P = opt(7);
  Tensor* Y = out.size() > 0 && out[0].numel() > 0 ? &out[0] : nullptr;
  Tensor* YH = out.size() > 1 && out[1].numel() > 0 ? &out[1] : nullptr;
  Tensor* YC = out.size() > 2 && out[2].numel() > 0 ? &out[2] : nullptr;
  auto clip = [&](double v) { return s.has_clip ? std::max(-double(s.clip), std::min(double(s.clip), v)) : v; };
  std::vector<double> h(H), c(H), hn(H), reset(H), xw(G * H), hr(G * H);
  for (int64_t d = 0; d < s.dirs; ++d) {
    const bool reverse = s.reverse_only || d == 1;
    const Activation* act = &s.acts[static_cast<size_t>(d * nf)];
    for (int64_t b = 0; b < s.batch; ++b) {
      int64_t len = s.seq;
      if (L) {
        len = L->get_int(b);
        if (len < 0 || len > s.seq)
          return node_error(node, "sequence_lens[" + std::to_string(b) + "] = " + std::to_string(len) +
                                      " is outside [0, " + std::to_string(s.seq) + "]");
      }
      for (int64_t j = 0; j < H; ++j) {
        h[j] = H0 ? H0->get(lay.state(d, b, j)) : 0.0;
        c[j] = C0 ? C0->get(lay.state(d, b, j)) : 0.0;
      }
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = reverse ? len - 1 - step : step;
        // xw = W x + Wb, hr = R h + Rb, per gate row.
        for (int64_t g = 0; g < G * H; ++g) {
          double a = B ? B->get(d * 2 * G * H + g) : 0.0, r = B ? B->get(d * 2 * G * H + G * H + g) : 0.0;
          for (int64_t i = 0; i < I; ++i) a += W.get((d * G * H + g) * I + i) * X.get(lay.x(t, b, i));
          for (int64_t k = 0; k < H; ++k) r += R.get((d * G * H + g) * H + k) * h[k];
          xw[g] = a;
          hr[g] = r;
        }
        if (s.cell == Cell::kGru)  // every unit's reset gate, before any candidate
          for (int64_t k = 0; k < H; ++k) reset[k] = apply(act[0], clip(xw[H + k] + hr[H + k]));
        for (int64_t j = 0; j < H; ++j) {
          if (s.cell == Cell::kRnn) {
            hn[j] = apply(act[0], clip(xw[j] + hr[j]));
          } else if (s.cell == Cell::kGru) {  // gates z, r, h
            const double z = apply(act[0], clip(xw[j] + hr[j]));
            const double rr = reset[j];
            double rec;
            if (s.linear_before_reset) {
              rec = rr * hr[2 * H + j];
            } else {
              rec = B ? B->get(d * 2 * G * H + G * H + 2 * H + j) : 0.0;
              for (int64_t k = 0; k < H; ++k) rec += R.get((d * G * H + 2 * H + j) * H + k) * (reset[k] * h[k]);
            }
            const double hh = apply(act[1], clip(xw[2 * H + j] + rec));
            hn[j] = (1.0 - z) * hh + z * h[j];
          } else {  // gates i, o, f, c; peepholes i, o, f
            const double pi = P ? P->get(d * 3 * H + j) : 0.0, po = P ? P->get(d * 3 * H + H + j) : 0.0,
                         pf = P ? P->get(d * 3 * H + 2 * H + j) : 0.0;
            const double ig = apply(act[0], clip(xw[j] + hr[j] + pi * c[j]));
            const double fg = s.input_forget ? 1.0 - ig : apply(act[0], clip(xw[2 * H + j] + hr[2 * H + j] + pf * c[j]));
            const double cc = apply(act[1], clip(xw[3 * H + j] + hr[3 * H + j]));
            c[j] = fg * c[j] + ig * cc;  // c[j] is read only for unit j, so updating in place is safe
            const double og = apply(act[0], clip(xw[H + j] + hr[H + j] + po * c[j]));
            hn[j] = og * apply(act[2], c[j]);
          }
        }
        h = hn;
        if (Y)
          for (int64_t j = 0; j < H; ++j) Y->set(lay.y(t, d, b, j), h[j]);
      }
      // Y past a sequence's end stays zero (outputs are zero-filled); the final states are the last
      // valid step's, and zero for an empty sequence (as ONNX Runtime does; the spec is silent).
      for (int64_t j = 0; j < H; ++j) {
        if (YH) YH->set(lay.state(d, b, j), len == 0 ? 0.0 : h[j]);
        if (YC) YC->set(lay.state(d, b, j), len == 0 ? 0.0 : c[j]);
      }
    }
  }
  return Status::ok();
}

std::string compute_type(DType t) { return t == DType::kFloat64 ? "double" : "float"; }

// Block (direction, batch) keeps h, c and two gate buffers of `hidden` elements in shared memory.
constexpr int64_t kMaxSharedBytes = 48 * 1024;

Expected<Lowering> rnn_lower(const Node& node, const Graph& graph) {
  const Value& xv = input_value(graph, node, 0);
  Expected<RnnSpec> spec = rnn_spec(node, xv.shape, input_value(graph, node, 1).shape, input_value(graph, node, 2).shape);
  if (!spec) return spec.status();
  const RnnSpec& s = *spec;
  Lowering l;
  if (s.batch == 0) return l;
  const std::string c = compute_type(xv.dtype);
  const int64_t shared = 5 * s.hidden * (c == "double" ? 8 : 4);
  if (shared > kMaxSharedBytes)
    return node_error(node, "hidden_size " + std::to_string(s.hidden) + " needs " + std::to_string(shared) +
                                " bytes of shared memory per block, more than " + std::to_string(kMaxSharedBytes));
  const int64_t nf = functions_per_cell(s.cell);
  auto act = [&](int64_t d, int64_t k) { return act_expr(s.acts[static_cast<size_t>(d * nf + std::min(k, nf - 1))], c); };
  auto has_in = [&](size_t i) { return node.input(i) != kNoValue; };
  auto has_out = [&](size_t i) { return node.outputs.size() > i && node.outputs[i] != kNoValue; };
  auto arg_in = [&](size_t i) { return has_in(i) ? node.inputs[i] : kNullArg; };
  auto arg_out = [&](size_t i) { return has_out(i) ? node.outputs[i] : kNullArg; };
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  KernelStep k;
  k.template_name = "rnn";
  k.holes = {{"T", dtype_c_type(xv.dtype)},
             {"C", c},
             {"cell", s.cell == Cell::kRnn ? "0" : s.cell == Cell::kGru ? "1" : "2"},
             {"seq", int_literal(s.seq)},
             {"batch", int_literal(s.batch)},
             {"input", int_literal(s.input)},
             {"hidden", int_literal(s.hidden)},
             {"dirs", int_literal(s.dirs)},
             {"reverse_only", b(s.reverse_only)},
             {"batch_first", b(s.layout_batch_first)},
             {"has_clip", b(s.has_clip)},
             {"clip", "((" + c + ")" + float_literal(s.clip) + ")"},
             {"linear_before_reset", b(s.linear_before_reset)},
             {"input_forget", b(s.input_forget)},
             {"has_b", b(has_in(3))},
             {"has_seq", b(has_in(4))},
             {"has_h0", b(has_in(5))},
             {"has_c0", b(has_in(6))},
             {"has_p", b(has_in(7))},
             {"has_y", b(has_out(0))},
             {"has_yh", b(has_out(1))},
             {"has_yc", b(has_out(2))},
             {"f0", act(0, 0)}, {"g0", act(0, 1)}, {"h0", act(0, 2)},
             {"f1", act(s.dirs - 1, 0)}, {"g1", act(s.dirs - 1, 1)}, {"h1", act(s.dirs - 1, 2)},
             {"comment", node.op_type + " X " + shape_str(xv.shape) + " hidden " + std::to_string(s.hidden) +
                             " dirs " + std::to_string(s.dirs) + " " + dtype_name(xv.dtype)}};
  k.args = {node.inputs[0], node.inputs[1], node.inputs[2], arg_in(3), arg_in(4), arg_in(5), arg_in(6), arg_in(7),
            arg_out(0),     arg_out(1),     arg_out(2)};
  int64_t threads = std::min<int64_t>(256, (s.hidden + 31) / 32 * 32);
  k.block = Dim3{threads, 1, 1};
  k.grid = Dim3{s.dirs * s.batch, 1, 1};
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_rnn_ops(OpRegistry& registry) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    OpDef def;
    def.op_type = op;
    def.infer = rnn_infer;
    def.reference = rnn_reference;
    def.lower = rnn_lower;
    registry.add(def);
  }
}

}  // namespace aotc
