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

Status convert_attributes(const onnx::NodeProto& proto, const std::string& base_dir, Node& node) {
  for (const AttrProto& a : proto.attribute()) {
    const std::string quoted = "attribute '" + escape_for_message(a.name(), 60) + "'";
    if (a.name().empty()) return node_error(node, "has an attribute without a name");
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
        return node_error(node, quoted + " is a graph: subgraphs are not supported");
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
