// Constant: a node whose output is the tensor given in one of its attributes (value, value_float,
// value_floats, value_int, value_ints). The frontend normally turns these nodes into constants at
// load time; the op is registered so graphs built otherwise still infer and evaluate.
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const char* const kValueAttrs[] = {"value", "value_float", "value_floats", "value_int", "value_ints",
                                   "value_string", "value_strings", "sparse_value"};

// The tensor the node's one value attribute describes.
Expected<Tensor> constant_tensor(const Node& node) {
  const char* which = nullptr;
  for (const char* name : kValueAttrs) {
    if (!node.has_attr(name)) continue;
    if (which) return node_error(node, std::string("has both '") + which + "' and '" + name + "'");
    which = name;
  }
  if (!which) return node_error(node, "has no value attribute");
  const Attribute& a = node.attrs.at(which);
  std::string w = which;
  auto expect_kind = [&](Attribute::Kind k) -> Status {
    if (a.kind != k)
      return node_error(node, "attribute '" + w + "' has kind " + attribute_kind_name(a.kind) +
                                  ", expected " + attribute_kind_name(k));
    return Status::ok();
  };
  if (w == "value") {
    AOTC_RETURN_IF_ERROR(expect_kind(Attribute::Kind::kTensor));
    if (!a.t) return node_error(node, "attribute 'value' holds no tensor");
    if (a.t->dtype() == DType::kString) return node_error(node, "string constants are not supported");
    return *a.t;
  }
  if (w == "value_float") {
    AOTC_RETURN_IF_ERROR(expect_kind(Attribute::Kind::kFloat));
    return Tensor::scalar_float(a.f);
  }
  if (w == "value_floats") {
    AOTC_RETURN_IF_ERROR(expect_kind(Attribute::Kind::kFloats));
    return Tensor::from_floats({static_cast<int64_t>(a.floats.size())}, a.floats);
  }
  if (w == "value_int") {
    AOTC_RETURN_IF_ERROR(expect_kind(Attribute::Kind::kInt));
    return Tensor::scalar_int64(a.i);
  }
  if (w == "value_ints") {
    AOTC_RETURN_IF_ERROR(expect_kind(Attribute::Kind::kInts));
    return Tensor::from_int64s({static_cast<int64_t>(a.ints.size())}, a.ints);
  }
  return node_error(node, "attribute '" + w + "' is not supported (string and sparse constants)");
}

Status constant_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 0, 0));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  Expected<Tensor> t = constant_tensor(node);
  if (!t) return t.status();
  set_output(graph, node, 0, t->dtype(), t->shape());
  return Status::ok();
}

Status constant_reference(const Node& node, const std::vector<const Tensor*>&,
                          std::vector<Tensor>& outputs) {
  Expected<Tensor> t = constant_tensor(node);
  if (!t) return t.status();
  if (t->dtype() != outputs[0].dtype() || t->shape() != outputs[0].shape())
    return node_error(node, "output was inferred as a different tensor than the attribute holds");
  outputs[0] = std::move(*t);
  return Status::ok();
}

Expected<Lowering> constant_lower(const Node& node, const Graph&) {
  // Constants belong in the weight blob: fold_constants replaces this node before codegen.
  return node_error(node, "Constant node reached codegen; constant folding should have removed it");
}

}  // namespace

void register_constant_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Constant";
  def.infer = constant_infer;
  def.reference = constant_reference;
  def.lower = constant_lower;
  registry.add(def);
}

}  // namespace aotc
