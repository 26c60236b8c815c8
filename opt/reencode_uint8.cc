// reencode_uint8: int8 activations with zero point -128 stored as uint8 with zero point 0 (issue 8).
// ONNX Runtime's quantize_static (asymmetric activations, the default) gives every ReLU output the
// range [0, max], i.e. int8 zero point -128. The int8 tensor-core convolution needs zero point 0:
// zero padding must mean the real value 0, and it has no zero-point correction. The same real
// values in uint8 with zero point 0 are the same bytes with the top bit flipped (u = s + 128), so:
// every value whose producer and readers all agree on int8 zero point -128, per tensor, and are
// ops that read and write it only through that zero point (QuantizeLinear, DequantizeLinear,
// aotc.QLinearConv / QLinearMatMul's x and y, aotc.QLinearAdd's a, b and y) or commute with the
// shift (MaxPool), becomes uint8 with zero point 0; a fused Relu / Clip bound (attributes qmin /
// qmax) moves by 128 with it. Exact: each op computes (q - zp) and saturates to the type's range,
// and clamp(r - 128, -128, 127) + 128 = clamp(r, 0, 255). Graph inputs, outputs and constants keep
// their type. Then opt/layout_nhwc puts the convolutions reading such values on the u8 x s8
// tensor-core kernel (templates/cutlass_conv2d_fprop_i8.cu.in).
#include <set>

#include "ir/op_registry.h"
#include "ir/shape_inference.h"
#include "opt/passes.h"

namespace aotc {
namespace {

constexpr int64_t kShift = 128;

bool aotc_op(const Node& n, const char* type) { return n.domain == "aotc" && n.op_type == type; }
bool qlinear_mm(const Node& n) { return aotc_op(n, "QLinearConv") || aotc_op(n, "QLinearMatMul"); }

class Reencoder {
 public:
  explicit Reencoder(Graph& g) : g_(g), producers_(g.producers()), consumers_(g.consumers()) {}

  Expected<bool> run() {
    std::set<ValueId> chosen;
    for (ValueId v = 0; v < static_cast<ValueId>(g_.values.size()); ++v)
      if (candidate(v)) chosen.insert(v);
    // A MaxPool's input and output change together: drop pairs until every link is inside.
    for (bool again = true; again;) {
      again = false;
      for (auto it = chosen.begin(); it != chosen.end();) {
        if (!pool_links_inside(*it, chosen)) {
          it = chosen.erase(it);
          again = true;
        } else {
          ++it;
        }
      }
    }
    if (chosen.empty()) return false;
    for (ValueId v : chosen) {
      const int p = producers_[static_cast<size_t>(v)];
      Node& prod = g_.nodes[static_cast<size_t>(p)];
      if (prod.op_type != "MaxPool") {
        set_zero_point(prod, prod.op_type == "QuantizeLinear" ? 2 : 7);
        for (const char* key : {"qmin", "qmax"})
          if (prod.has_attr(key)) prod.attrs[key] = Attribute::of_int(prod.attr_int(key, 0) + kShift);
      }
      for (int c : consumers_[static_cast<size_t>(v)]) {
        Node& n = g_.nodes[static_cast<size_t>(c)];
        for (size_t i = 0; i < n.inputs.size(); ++i)
          if (n.inputs[i] == v && n.op_type != "MaxPool") set_zero_point(n, aotc_op(n, "QLinearAdd") && i == 3 ? 5 : 2);
      }
      g_.value(v).dtype = DType::kUInt8;
    }
    AOTC_RETURN_IF_ERROR(infer_shapes(g_));
    return true;
  }

 private:
  // A constant scalar int8 zero point of -128 at input i of n.
  bool zp_is_minus_128(const Node& n, size_t i) const {
    const ValueId z = n.input(i);
    if (z == kNoValue) return false;
    const Value& v = g_.value(z);
    return v.is_constant() && v.dtype == DType::kInt8 && v.numel() == 1 && v.constant->get_int(0) == -kShift;
  }

  bool candidate(ValueId v) const {
    const Value& val = g_.value(v);
    if (val.dtype != DType::kInt8 || val.is_constant() || g_.is_graph_input(v) || g_.is_graph_output(v)) return false;
    const int p = producers_[static_cast<size_t>(v)];
    if (p < 0) return false;
    const Node& prod = g_.nodes[static_cast<size_t>(p)];
    if (prod.outputs.size() != 1 && prod.op_type != "MaxPool") return false;
    bool ok = false;
    if (prod.op_type == "QuantizeLinear" && prod.domain.empty())
      ok = zp_is_minus_128(prod, 2) && g_.value(prod.inputs[1]).numel() == 1 && !prod.has_attr("output_dtype");
    else if ((qlinear_mm(prod) && prod.input(6) != kNoValue) || aotc_op(prod, "QLinearAdd"))
      ok = zp_is_minus_128(prod, 7);
    else if (prod.op_type == "MaxPool" && prod.domain.empty())
      ok = prod.outputs[0] == v && (prod.outputs.size() == 1 || prod.outputs[1] == kNoValue);
    if (!ok) return false;
    const std::vector<int>& readers = consumers_[static_cast<size_t>(v)];
    if (readers.empty()) return false;
    for (int c : readers) {
      const Node& n = g_.nodes[static_cast<size_t>(c)];
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (n.inputs[i] != v) continue;
        bool fine = false;
        if (qlinear_mm(n)) fine = i == 0 && zp_is_minus_128(n, 2);
        else if (aotc_op(n, "QLinearAdd")) fine = (i == 0 || i == 3) && zp_is_minus_128(n, i + 2);
        else if (n.op_type == "DequantizeLinear" && n.domain.empty())
          fine = i == 0 && zp_is_minus_128(n, 2) && g_.value(n.inputs[1]).numel() == 1;
        else if (n.op_type == "MaxPool" && n.domain.empty())
          fine = i == 0 && (n.outputs.size() == 1 || n.outputs[1] == kNoValue);
        if (!fine) return false;
      }
    }
    return true;
  }

  // The other ends of the MaxPools that v enters or leaves must change with it.
  bool pool_links_inside(ValueId v, const std::set<ValueId>& chosen) const {
    const int p = producers_[static_cast<size_t>(v)];
    if (p >= 0) {
      const Node& prod = g_.nodes[static_cast<size_t>(p)];
      if (prod.op_type == "MaxPool" && !chosen.count(prod.inputs[0])) return false;
    }
    for (int c : consumers_[static_cast<size_t>(v)]) {
      const Node& n = g_.nodes[static_cast<size_t>(c)];
      if (n.op_type == "MaxPool" && !chosen.count(n.outputs[0])) return false;
    }
    return true;
  }

  // Input i of n becomes a uint8 zero point of 0 of the same shape (a fresh constant: the int8
  // one may be shared with nodes that keep it).
  void set_zero_point(Node& n, size_t i) {
    const Shape shape = g_.value(n.inputs[i]).shape;
    n.inputs[i] = g_.add_constant(g_.unique_name(g_.value(n.inputs[i]).name + "_uint8"), Tensor(DType::kUInt8, shape));
  }

  Graph& g_;
  std::vector<int> producers_;
  std::vector<std::vector<int>> consumers_;
};

}  // namespace

Expected<bool> reencode_uint8(Graph& graph) { return Reencoder(graph).run(); }

}  // namespace aotc
