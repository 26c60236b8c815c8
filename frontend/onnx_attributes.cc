// AttributeProto -> Attribute, and Constant node values. Attribute kinds follow AttributeProto's
// `type`; very old writers left `type` unset, so then the kind is taken from the one field set.
#include "frontend/onnx_attributes.h"

#include "frontend/tensor_proto.h"

namespace aotc {
namespace {

using AttrProto = onnx::AttributeProto;

// The kind of an attribute whose `type` field is UNDEFINED, from the fields present.
AttrProto::AttributeType guess_type(const AttrProto& a) {
  if (a.has_f()) return AttrProto::FLOAT;
  if (a.has_i()) return AttrProto::INT;
  if (a.has_s()) return AttrProto::STRING;
  if (a.has_t()) return AttrProto::TENSOR;
  if (a.has_g()) return AttrProto::GRAPH;
  if (a.has_sparse_tensor()) return AttrProto::SPARSE_TENSOR;
  if (a.floats_size()) return AttrProto::FLOATS;
  if (a.ints_size()) return AttrProto::INTS;
  if (a.strings_size()) return AttrProto::STRINGS;
  if (a.tensors_size()) return AttrProto::TENSORS;
  if (a.graphs_size()) return AttrProto::GRAPHS;
  return AttrProto::UNDEFINED;
}

}  // namespace

// Attribute names whose type is the same in every ONNX op and opset that uses them (data). A model
// that gives one of them another type is refused: the accessors would otherwise read a string
// `axis` as 0 or an integer `epsilon` as 0.0 (found by the issue-10 probe). Names whose type
// differs between ops or opsets (Cast's `to`, Pad-2's `value`, ...) are not listed.
struct KnownAttributeKind {
  const char* name;
  Attribute::Kind kind;
};
const KnownAttributeKind kKnownAttributeKinds[] = {
    {"axis", Attribute::Kind::kInt},          {"keepdims", Attribute::Kind::kInt},
    {"group", Attribute::Kind::kInt},         {"transA", Attribute::Kind::kInt},
    {"transB", Attribute::Kind::kInt},        {"ceil_mode", Attribute::Kind::kInt},
    {"count_include_pad", Attribute::Kind::kInt}, {"storage_order", Attribute::Kind::kInt},
    {"blocksize", Attribute::Kind::kInt},     {"allowzero", Attribute::Kind::kInt},
    {"noop_with_empty_axes", Attribute::Kind::kInt}, {"select_last_index", Attribute::Kind::kInt},
    {"largest", Attribute::Kind::kInt},       {"sorted", Attribute::Kind::kInt},
    {"exclusive", Attribute::Kind::kInt},     {"reverse", Attribute::Kind::kInt},
    {"batch_dims", Attribute::Kind::kInt},    {"hidden_size", Attribute::Kind::kInt},
    {"exclude_outside", Attribute::Kind::kInt}, {"epsilon", Attribute::Kind::kFloat},
    {"momentum", Attribute::Kind::kFloat},    {"alpha", Attribute::Kind::kFloat},
    {"beta", Attribute::Kind::kFloat},        {"gamma", Attribute::Kind::kFloat},
    {"cubic_coeff_a", Attribute::Kind::kFloat}, {"extrapolation_value", Attribute::Kind::kFloat},
    {"perm", Attribute::Kind::kInts},         {"strides", Attribute::Kind::kInts},
    {"kernel_shape", Attribute::Kind::kInts}, {"dilations", Attribute::Kind::kInts},
    {"pads", Attribute::Kind::kInts},         {"output_padding", Attribute::Kind::kInts},
    {"output_shape", Attribute::Kind::kInts}, {"auto_pad", Attribute::Kind::kString},
    {"mode", Attribute::Kind::kString},       {"direction", Attribute::Kind::kString},
    {"coordinate_transformation_mode", Attribute::Kind::kString},
    {"nearest_mode", Attribute::Kind::kString}, {"approximate", Attribute::Kind::kString},
};

const char* kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::kInt: return "INT";
    case Attribute::Kind::kFloat: return "FLOAT";
    case Attribute::Kind::kString: return "STRING";
    case Attribute::Kind::kInts: return "INTS";
    case Attribute::Kind::kFloats: return "FLOATS";
    case Attribute::Kind::kStrings: return "STRINGS";
    case Attribute::Kind::kTensor: return "TENSOR";
    case Attribute::Kind::kGraph: return "GRAPH";
  }
  return "?";
}

// Attribute names aotc's passes and shape inference set on standard ops to carry internal state:
// the NHWC layout (layout_nhwc), the depthwise input clamp (clip_into_depthwise), Softmax /
// Hardmax / LogSoftmax over every trailing dim (their opset < 13 form), and what fused nodes
// absorbed (ir/ops/epilogue.h: "activation" / "act.", "input_activation" / "in_act.", "pool" /
// "pool.", "quantize" / "quantize.", "depthwise" / "dw.", "next" / "next."; the readers of these
// look at any node's attributes). No ONNX op defines them; one given by a model would be read as
// that state and change what the node computes (a Conv with channels_last=1 read its input as
// NHWC), so a model may not carry them. Except where an ONNX op defines the name itself: among
// every schema of onnx 1.23.2 only CausalConvWithState's `activation` (its own attribute, read by
// its own reference and kernel, which no fused-node reader sees).
bool internal_attribute_name(const Node& node, const std::string& name) {
  if (node.domain.empty() && node.op_type == "CausalConvWithState" && name == "activation") return false;
  for (const char* exact : {"channels_last", "input_max", "reduce_trailing", "activation", "input_activation", "pool",
                            "quantize", "depthwise", "next"})
    if (name == exact) return true;
  for (const char* prefix : {"act.", "in_act.", "pool.", "quantize.", "dw.", "next."})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

Status convert_attributes(const onnx::NodeProto& proto, const std::string& base_dir, Node& node) {
  for (const AttrProto& a : proto.attribute()) {
    const std::string quoted = "attribute '" + escape_for_message(a.name(), 60) + "'";
    if (a.name().empty()) return node_error(node, "has an attribute without a name");
    if (internal_attribute_name(node, a.name()))
      return node_error(node, quoted + " is not an ONNX attribute: aotc uses the name internally");
    if (node.attrs.count(a.name())) return node_error(node, quoted + " is given twice");
    if (a.has_ref_attr_name())
      return node_error(node, quoted + " refers to a function attribute; functions are not supported");
    AttrProto::AttributeType type = a.type() == AttrProto::UNDEFINED ? guess_type(a) : a.type();
    Attribute out;
    switch (type) {
      case AttrProto::FLOAT: out = Attribute::of_float(a.f()); break;
      case AttrProto::INT: out = Attribute::of_int(a.i()); break;
      case AttrProto::STRING: out = Attribute::of_string(a.s()); break;
      case AttrProto::FLOATS: out = Attribute::of_floats({a.floats().begin(), a.floats().end()}); break;
      case AttrProto::INTS: out = Attribute::of_ints({a.ints().begin(), a.ints().end()}); break;
      case AttrProto::STRINGS:
        out = Attribute::of_strings({a.strings().begin(), a.strings().end()});
        break;
      case AttrProto::TENSOR: {
        auto t = tensor_from_proto(a.t(), base_dir, quoted);
        if (!t) return node_error(node, t.status().message());
        out = Attribute::of_tensor(std::move(*t));
        break;
      }
      case AttrProto::GRAPH:
      case AttrProto::GRAPHS:
        return node_error(node, quoted + " is a graph: only If, Loop and Scan take subgraphs in aotc "
                                        "(inlined at import, docs/conformance.md)");
      case AttrProto::SPARSE_TENSOR:
      case AttrProto::SPARSE_TENSORS:
        return node_error(node, quoted + " is a sparse tensor: sparse tensors are not supported");
      case AttrProto::TENSORS:
        return node_error(node, quoted + " is a list of tensors: not supported");
      case AttrProto::TYPE_PROTO:
      case AttrProto::TYPE_PROTOS:
        return node_error(node, quoted + " is a type: type attributes are not supported");
      default:
        return node_error(node, quoted + " has an unknown or missing type (" +
                                    std::to_string(static_cast<int>(a.type())) + ")");
    }
    for (const KnownAttributeKind& known : kKnownAttributeKinds)
      if (a.name() == known.name && out.kind != known.kind)
        return node_error(node, quoted + " has type " + kind_name(out.kind) + "; ONNX defines it as " +
                                    kind_name(known.kind));
    node.attrs.emplace(a.name(), std::move(out));
  }
  return Status::ok();
}

Expected<Tensor> constant_node_value(const Node& node) {
  if (node.attrs.size() != 1)
    return node_error(node, "expects exactly one attribute (value, value_float, value_floats, "
                            "value_int or value_ints), got " + std::to_string(node.attrs.size()));
  const std::string& key = node.attrs.begin()->first;
  const Attribute& a = node.attrs.begin()->second;
  auto expect_kind = [&](Attribute::Kind kind) -> Status {
    if (a.kind != kind)
      return node_error(node, "attribute '" + key + "' must be " + attribute_kind_name(kind) +
                                  ", got " + attribute_kind_name(a.kind));
    return Status::ok();
  };
  if (key == "value") {
    AOTC_RETURN_IF_ERROR(expect_kind(Attribute::Kind::kTensor));
    return *a.t;
  }
  if (key == "value_float") {
    AOTC_RETURN_IF_ERROR(expect_kind(Attribute::Kind::kFloat));
    return Tensor::scalar_float(a.f);
  }
  if (key == "value_floats") {
    AOTC_RETURN_IF_ERROR(expect_kind(Attribute::Kind::kFloats));
    return Tensor::from_floats({static_cast<int64_t>(a.floats.size())}, a.floats);
  }
  if (key == "value_int") {
    AOTC_RETURN_IF_ERROR(expect_kind(Attribute::Kind::kInt));
    return Tensor::scalar_int64(a.i);
  }
  if (key == "value_ints") {
    AOTC_RETURN_IF_ERROR(expect_kind(Attribute::Kind::kInts));
    return Tensor::from_int64s({static_cast<int64_t>(a.ints.size())}, a.ints);
  }
  if (key == "value_string" || key == "value_strings")
    return node_error(node, "string constants are not supported");
  return node_error(node, "unknown attribute '" + escape_for_message(key, 60) + "'");
}

}  // namespace aotc
