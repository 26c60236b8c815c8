// Cast and CastLike between every numeric dtype and bool (float16 and bfloat16 included).
// Rules, identical on the host and the GPU: float -> integer truncates toward zero, NaN gives 0 and
// out-of-range values saturate (ONNX leaves them undefined); integer -> integer wraps; anything ->
// bool is x != 0; to float16/bfloat16 rounds through float. The sub-16-bit types (float8, float4,
// int4/uint4/int2/uint2; ir/small_dtypes.h) convert on the CPU reference only: float -> small int
// truncates toward zero and keeps the low bits (what the onnx reference's ml_dtypes does), float ->
// small float follows the Cast tables with the `saturate` and `round_mode` attributes; the GPU
// lowering refuses them. String, complex and float6 are refused by name.
#include <cmath>
#include <type_traits>

#include "ir/op_registry.h"
#include "ir/small_dtypes.h"
#include "ir/ops/elementwise_common.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kCastTypes = {
    DType::kBool,  DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16, DType::kInt8,
    DType::kInt16, DType::kInt32,   DType::kInt64,   DType::kUInt8,   DType::kUInt16,   DType::kUInt32,
    DType::kUInt64, DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2,
    DType::kFloat8E5M2FNUZ, DType::kFloat8E8M0, DType::kFloat4E2M1, DType::kInt4, DType::kUInt4,
    DType::kInt2, DType::kUInt2};

bool castable(DType t) {
  for (DType c : kCastTypes)
    if (c == t) return true;
  return false;
}

// ONNX TensorProto.DataType by name (Cast-1..5 spell `to` as a string).
int64_t dtype_from_name(const std::string& name) {
  static const std::pair<const char*, int64_t> kNames[] = {
      {"FLOAT", 1},  {"UINT8", 2},  {"INT8", 3},      {"UINT16", 4},  {"INT16", 5},  {"INT32", 6},
      {"INT64", 7},  {"STRING", 8}, {"BOOL", 9},      {"FLOAT16", 10}, {"DOUBLE", 11}, {"UINT32", 12},
      {"UINT64", 13}, {"COMPLEX64", 14}, {"COMPLEX128", 15}, {"BFLOAT16", 16}};
  for (const auto& n : kNames)
    if (name == n.first) return n.second;
  return -1;
}

// A readable reason why ONNX type number `t` cannot be a Cast target, or "" if it can.
std::string refuse_reason(int64_t t) {
  if (t == 8) return "casts to or from string are not supported";
  if (t == 14 || t == 15) return "complex types are not supported";
  if (t == 27 || t == 28) return "float6 types are not supported";
  if (!dtype_is_known(static_cast<int32_t>(t)) || !castable(static_cast<DType>(t)))
    return "unknown target type " + std::to_string(t);
  return "";
}

Expected<E8M0Rounding> e8m0_rounding(const Node& node) {
  const std::string mode = node.attr_string("round_mode", "up");
  if (mode == "up") return E8M0Rounding::kUp;
  if (mode == "down") return E8M0Rounding::kDown;
  if (mode == "nearest") return E8M0Rounding::kNearest;
  return node_error(node, "round_mode '" + escape_for_message(mode) + "' is not one of up, down, nearest");
}

Status cast_import(Node& node, Graph&, int64_t) {
  // `saturate` and `round_mode` only change conversions to float8 / float8e8m0; kept for those.
  if (node.has_attr("round_mode")) {
    auto r = e8m0_rounding(node);
    if (!r) return r.status();
  }
  if (node.op_type == "CastLike") return Status::ok();
  if (!node.has_attr("to")) return node_error(node, "missing attribute 'to'");
  const Attribute& to = node.attrs.at("to");
  int64_t t = to.kind == Attribute::Kind::kString ? dtype_from_name(to.s) : to.i;
  if (to.kind != Attribute::Kind::kString && to.kind != Attribute::Kind::kInt)
    return node_error(node, "attribute 'to' must be an int");
  std::string why = refuse_reason(t);
  if (!why.empty()) return node_error(node, why);
  node.attrs["to"] = Attribute::of_int(t);
  return Status::ok();
}

Status cast_infer(Node& node, Graph& graph) {
  bool like = node.op_type == "CastLike";
  AOTC_RETURN_IF_ERROR(expect_inputs(node, like ? 2 : 1, like ? 2 : 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& x = input_value(graph, node, 0);
  if (!castable(x.dtype)) return node_error(node, "input dtype " + dtype_name(x.dtype) + " cannot be cast by aotc");
  DType to;
  if (like) {
    to = input_value(graph, node, 1).dtype;
    if (!castable(to)) return node_error(node, "target_type dtype " + dtype_name(to) + " is not supported");
  } else {
    std::string why = refuse_reason(node.attr_int("to", 0));
    if (!why.empty()) return node_error(node, why);
    to = static_cast<DType>(node.attr_int("to", 0));
  }
  set_output(graph, node, 0, to, x.shape);
  return Status::ok();
}

// Casts where the input or the output is a sub-16-bit type, element by element through
// small_dtypes.h: a float source is read as its exact double, an integer source as int64.
Status cast_small_reference(const Node& node, const Tensor& x, Tensor& y) {
  auto rounding = e8m0_rounding(node);
  if (!rounding) return rounding.status();
  const bool saturate = node.attr_int("saturate", 1) != 0;
  const DType from = x.dtype(), to = y.dtype();
  const bool float_source = dtype_is_float(from) || dtype_is_small_float(from);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (dtype_is_small_float(to)) {
      y.data<uint8_t>()[i] = small_float_encode(to, x.get(i), saturate, *rounding);
    } else if (dtype_is_small_int(to)) {
      const int64_t v = float_source ? saturating_float_to_int<int64_t>(x.get(i)) : x.get_int(i);
      y.data<uint8_t>()[i] = static_cast<uint8_t>(small_int_wrap(to, v));
    } else {  // a small source into a standard type, by the rules of the standard conversions
      const bool ok = visit_numeric_or_bool(to, [&](auto dst) {
        using D = decltype(dst);
        if (float_source) D::store(y, i, convert_value<typename D::Compute>(x.get(i)));
        else D::store(y, i, convert_value<typename D::Compute>(x.get_int(i)));
      });
      if (!ok) return node_error(node, "no reference for " + dtype_name(from) + " -> " + dtype_name(to));
    }
  }
  return Status::ok();
}

Status cast_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  if (dtype_is_small(x.dtype()) || dtype_is_small(y.dtype())) return cast_small_reference(node, x, y);
  bool ok = true;
  visit_numeric_or_bool(x.dtype(), [&](auto src) {
    using S = decltype(src);
    ok = visit_numeric_or_bool(y.dtype(), [&](auto dst) {
      using D = decltype(dst);
      for (int64_t i = 0; i < x.numel(); ++i)
        D::store(y, i, convert_value<typename D::Compute>(S::load(x, i)));
    });
  });
  if (!ok) return node_error(node, "no reference for " + dtype_name(x.dtype()) + " -> " + dtype_name(y.dtype()));
  return Status::ok();
}

// CUDA text of convert_value for x of `from`'s compute type.
std::string cast_expr(DType from, DType to) {
  if (to == DType::kBool) return "(x != 0)";
  std::string x = from == DType::kBool ? "(x ? 1 : 0)" : "x";
  if (dtype_is_integer(to) && dtype_is_float(from)) return saturating_int_expr(x, to);
  if (to == DType::kFloat16 || to == DType::kBFloat16) return "(float)" + x;
  return x;
}

// A Cast with a sub-16-bit side (templates/cast_small.cu.in): the operations of
// cast_small_reference, on device copies of ir/small_dtypes.cc's encode/decode.
Expected<Lowering> cast_small_lower(const Node& node, const Value& x, const Value& y) {
  auto rounding = e8m0_rounding(node);
  if (!rounding) return rounding.status();
  const bool saturate = node.attr_int("saturate", 1) != 0;
  const DType from = x.dtype, to = y.dtype;
  const std::string from_id = std::to_string(static_cast<int>(from)), to_id = std::to_string(static_cast<int>(to));
  // Values are double when the source is a float (or the target a small float, as the reference
  // reads x.get(i)), long long when an integer goes to an integer or a standard type.
  const bool float_source = dtype_is_float(from) || dtype_is_small_float(from);
  const bool as_double = float_source || dtype_is_small_float(to);
  std::string load;
  if (dtype_is_small_float(from)) load = "aotc_sf_decode(" + from_id + ", in[i])";
  else if (from == DType::kBool) load = as_double ? "(in[i] ? 1.0 : 0.0)" : "(in[i] ? 1LL : 0LL)";
  else if (dtype_is_small_int(from) || dtype_is_integer(from)) load = as_double ? "(double)in[i]" : "(long long)in[i]";
  else load = "(double)static_cast<" + elementwise_compute_type(from) + ">(in[i])";
  std::string store;
  if (dtype_is_small_float(to)) {
    const int r = *rounding == E8M0Rounding::kUp ? 0 : *rounding == E8M0Rounding::kDown ? 1 : 2;
    store = "aotc_sf_encode(" + to_id + ", (double)x, " + (saturate ? "true" : "false") + ", " + std::to_string(r) + ")";
  } else if (dtype_is_small_int(to)) {
    store = "static_cast<" + dtype_c_type(to) + ">(aotc_si_wrap(" + to_id + ", " +
            (as_double ? "aotc_saturate_ll(x)" : "x") + "))";
  } else {
    store = "static_cast<" + dtype_c_type(to) + ">(" + cast_expr(as_double ? DType::kFloat64 : DType::kInt64, to) + ")";
  }
  Lowering l;
  if (x.numel() == 0) return l;
  KernelStep k;
  k.template_name = "cast_small";
  k.holes = {{"T", dtype_c_type(from)},
             {"TO", dtype_c_type(to)},
             {"CT", as_double ? "double" : "long long"},
             {"numel", int_literal(x.numel())},
             {"load", load},
             {"store", store},
             {"comment", node.op_type + " " + shape_str(x.shape) + " " + dtype_name(from) + " -> " + dtype_name(to)}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(x.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

Expected<Lowering> cast_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  if (dtype_is_small(x.dtype) || dtype_is_small(y.dtype)) return cast_small_lower(node, x, y);
  Lowering l;
  if (x.numel() == 0) return l;
  KernelStep k;
  k.template_name = "unary_convert";
  k.holes = {{"T", dtype_c_type(x.dtype)},
             {"TO", dtype_c_type(y.dtype)},
             {"CT", elementwise_compute_type(x.dtype)},
             {"numel", int_literal(x.numel())},
             {"expr", cast_expr(x.dtype, y.dtype)},
             {"comment", node.op_type + " " + shape_str(x.shape) + " " + dtype_name(x.dtype) + " -> " +
                             dtype_name(y.dtype)}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(x.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_cast_ops(OpRegistry& registry) {
  for (const char* op : {"Cast", "CastLike"}) {
    OpDef def;
    def.op_type = op;
    def.traits.elementwise = true;
    def.traits.gpu_small_dtypes = true;
    def.import = cast_import;
    def.infer = cast_infer;
    def.reference = cast_reference;
    def.lower = cast_lower;
    registry.add(def);
  }
}

}  // namespace aotc
