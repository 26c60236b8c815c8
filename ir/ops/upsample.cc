// Upsample (deprecated; opset 7: scales attribute, opset 9: scales input) is Resize-10 under
// another name: nearest (floor rounding) or linear, asymmetric coordinates. The importer
// rewrites the node into canonical Resize form [X, roi (absent), scales], so Resize's shape
// inference, reference and kernel (ir/ops/resize.cc) serve it; this file only translates.
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

Status upsample_import(Node& node, Graph& graph, int64_t) {
  std::string mode = node.attr_string("mode", "nearest");
  if (mode == "bilinear") mode = "linear";  // Upsample-7 spelling in some exporters
  if (mode != "nearest" && mode != "linear")
    return node_error(node, "mode '" + escape_for_message(mode) + "' is not supported (nearest, linear)");
  ValueId scales = kNoValue;
  if (node.has_attr("scales")) {  // opset 7
    if (node.inputs.size() != 1) return node_error(node, "with the scales attribute Upsample takes 1 input");
    const std::vector<float> s = node.attr_floats("scales");
    scales = graph.add_constant(graph.unique_name(node.name + "_scales"),
                                Tensor::from_floats({static_cast<int64_t>(s.size())}, s));
    node.attrs.erase("scales");
  } else {
    if (node.inputs.size() != 2 || node.inputs[1] == kNoValue)
      return node_error(node, "Upsample takes 2 inputs (X, scales) or the scales attribute");
    scales = node.inputs[1];
  }
  node.op_type = "Resize";
  node.inputs = {node.inputs[0], kNoValue, scales};
  node.attrs["mode"] = Attribute::of_string(mode);
  node.attrs["coordinate_transformation_mode"] = Attribute::of_string("asymmetric");
  node.attrs["nearest_mode"] = Attribute::of_string("floor");
  return Status::ok();
}

Status upsample_infer(Node& node, Graph&) {
  // Only reached for a node built without import (the importer renames every Upsample to Resize).
  return node_error(node, "Upsample must be imported (it is rewritten to Resize)");
}

}  // namespace

void register_upsample_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Upsample";
  def.import = upsample_import;
  def.infer = upsample_infer;
  def.reference = [](const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>&) {
    return node_error(node, "Upsample must be imported (it is rewritten to Resize)");
  };
  registry.add(def);
}

}  // namespace aotc
