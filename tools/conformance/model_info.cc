// Reads a node test's ModelProto directly (onnx_proto), so that classification and the op label
// do not depend on our frontend accepting the model. Also rewrites a model so that inputs whose
// values decide shapes become initializers: a static-shape compiler needs those values at compile
// time, exactly as it would get them from a real exported model.
#include "tools/conformance/model_info.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace aotc::conformance {
namespace {

// (op, input index) whose values decide the output shape or the op's structure (axes). A
// static-shape compiler needs them at compile time; real models carry them as constants.
const std::map<std::string, std::vector<int>> kShapeInputSlots = {
    {"Reshape", {1}},        {"Expand", {1}},          {"Tile", {1}},
    {"ConstantOfShape", {0}}, {"Range", {0, 1, 2}},     {"Slice", {1, 2, 3, 4}},
    {"Pad", {1, 3}},         {"Resize", {1, 2, 3}},    {"Upsample", {1}},
    {"TopK", {1}},           {"Squeeze", {1}},         {"Unsqueeze", {1}},
    {"Split", {1}},          {"CumSum", {1}},          {"CumProd", {1}},         {"OneHot", {1}},
    {"ReduceSum", {1}},      {"ReduceMean", {1}},      {"ReduceMax", {1}},
    {"ReduceMin", {1}},      {"ReduceProd", {1}},      {"ReduceL1", {1}},
    {"ReduceL2", {1}},       {"ReduceLogSum", {1}},    {"ReduceLogSumExp", {1}},
    {"ReduceSumSquare", {1}}, {"MaxUnpool", {2}},      {"CenterCropPad", {1}},
    {"Col2Im", {1, 2}},      {"BlackmanWindow", {0}},  {"HannWindow", {0}},
    {"HammingWindow", {0}},  {"DFT", {1}},             {"STFT", {1, 3}},
    {"MelWeightMatrix", {0, 1, 2, 3, 4}}, {"AffineGrid", {1}},
};

// (op, input index) read for the dtype only: bound as constants like the shape slots, so the
// compiled library has no such input (CastLike's `like` has data of shape [1] in the node tests
// although the model declares [3, 4]).
const std::map<std::string, std::vector<int>> kDtypeOnlyInputSlots = {{"CastLike", {1}}};

// (op, input index) that replaced an attribute in a newer opset. Ops may take them at run time,
// so they stay inputs unless the import refuses that; then the runner retries with them bound.
const std::map<std::string, std::vector<int>> kAttributeInputSlots = {
    {"Clip", {1, 2}},  {"Dropout", {1, 2}}, {"Pad", {2}},  {"OneHot", {2}}, {"Trilu", {1}},
    {"QuantizeLinear", {1, 2}}, {"DequantizeLinear", {1, 2}},
};

const std::set<std::string> kControlFlowOps = {"If", "Loop", "Scan"};
const std::set<std::string> kRandomOps = {"RandomNormal", "RandomNormalLike", "RandomUniform",
                                          "RandomUniformLike", "Multinomial", "Bernoulli"};
const std::set<std::string> kDataDependentOps = {"NonZero", "Unique", "NonMaxSuppression",
                                                 "Compress"};
const char kTrainingDomain[] = "ai.onnx.preview.training";

// "" for a dense non-string tensor type, else what makes it excluded ("sequence", "string", ...).
std::string unusual_type(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType:
      return type.tensor_type().elem_type() == onnx::TensorProto::STRING ? "string tensor" : "";
    case onnx::TypeProto::kSequenceType: return "sequence";
    case onnx::TypeProto::kOptionalType: return "optional";
    case onnx::TypeProto::kMapType: return "map";
    case onnx::TypeProto::kSparseTensorType: return "sparse tensor";
    default: return "";
  }
}

struct Scan {
  std::set<std::string> ops;
  std::string training, control_flow, types, random, data_dependent;
};

void note(std::string& slot, const std::string& what) {
  if (slot.empty()) slot = what;
}

void scan_graph(const onnx::GraphProto& graph, Scan& scan) {
  for (const auto* list : {&graph.input(), &graph.output(), &graph.value_info()})
    for (const onnx::ValueInfoProto& vi : *list) {
      std::string t = unusual_type(vi.type());
      if (!t.empty()) note(scan.types, t + " value '" + vi.name() + "'");
    }
  for (const onnx::NodeProto& node : graph.node()) {
    const std::string& op = node.op_type();
    scan.ops.insert(op);
    if (node.domain() == kTrainingDomain) note(scan.training, op);
    if (op == "BatchNormalization")
      for (const auto& a : node.attribute())
        if (a.name() == "training_mode" && a.i() != 0) note(scan.training, "BatchNormalization training_mode=1");
    if (op == "Dropout" && node.input_size() >= 3 && !node.input(2).empty())
      note(scan.training, "Dropout with training_mode input");
    if (kControlFlowOps.count(op)) note(scan.control_flow, op);
    if (kRandomOps.count(op)) note(scan.random, op);
    if (kDataDependentOps.count(op)) note(scan.data_dependent, op);
    if (op.rfind("Sequence", 0) == 0 || op.rfind("Optional", 0) == 0 || op == "SplitToSequence" ||
        op == "ConcatFromSequence")
      note(scan.types, op);
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH) {
        note(scan.control_flow, op + " with a subgraph");
        scan_graph(a.g(), scan);
      }
      for (const onnx::GraphProto& g : a.graphs()) scan_graph(g, scan);
      if (a.type() == onnx::AttributeProto::TENSOR && a.t().data_type() == onnx::TensorProto::STRING)
        note(scan.types, "string constant");
      if (op == "Cast" && a.name() == "to" && a.i() == onnx::TensorProto::STRING)
        note(scan.types, "Cast to string");
    }
  }
}

bool read_model(const std::string& path, onnx::ModelProto& model) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream buf;
  buf << in.rdbuf();
  return model.ParseFromString(buf.str());
}

std::string squash(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Expected<ModelInfo> read_model_info(const std::string& model_path) {
  onnx::ModelProto model;
  if (!read_model(model_path, model)) return Status::error("cannot read ModelProto " + model_path);
  const onnx::GraphProto& graph = model.graph();
  Scan scan;
  scan_graph(graph, scan);

  ModelInfo info;
  info.op_types.assign(scan.ops.begin(), scan.ops.end());
  if (!scan.training.empty()) info.exclusion = "training: " + scan.training;
  else if (!scan.control_flow.empty()) info.exclusion = "control flow: " + scan.control_flow;
  else if (!scan.types.empty()) info.exclusion = "sequence/optional/map/string types: " + scan.types;
  else if (!scan.random.empty()) info.exclusion = "random generator: " + scan.random;
  else if (!scan.data_dependent.empty())
    info.exclusion = "data-dependent output shape: " + scan.data_dependent;

  std::set<std::string> initializers;
  for (const auto& t : graph.initializer()) initializers.insert(t.name());
  for (const auto& vi : graph.input()) {
    if (initializers.count(vi.name())) continue;
    info.input_names.push_back(vi.name());
    bool is_static = vi.type().has_tensor_type() && vi.type().tensor_type().has_shape();
    if (is_static)
      for (const auto& d : vi.type().tensor_type().shape().dim())
        if (!d.has_dim_value()) is_static = false;
    info.input_static.push_back(is_static);
    info.input_elem_types.push_back(vi.type().has_tensor_type() ? vi.type().tensor_type().elem_type() : 0);
  }
  for (const auto& vi : graph.output()) {
    info.output_names.push_back(vi.name());
    info.output_elem_types.push_back(vi.type().has_tensor_type() ? vi.type().tensor_type().elem_type() : 0);
  }

  // An input becomes a constant only when every use is a listed slot, or it has no use (and it is
// no output).
  std::set<std::string> outputs(info.output_names.begin(), info.output_names.end());
  auto in_table = [](const std::map<std::string, std::vector<int>>& table, const onnx::NodeProto& node,
                     int k) {
    auto it = table.find(node.op_type());
    return node.domain().empty() && it != table.end() &&
           std::count(it->second.begin(), it->second.end(), k) > 0;
  };
  for (size_t i = 0; i < info.input_names.size(); ++i) {
    const std::string& name = info.input_names[i];
    bool used = false, shape_only = !outputs.count(name), slot_only = shape_only;
    for (const auto& node : graph.node())
      for (int k = 0; k < node.input_size(); ++k) {
        if (node.input(k) != name) continue;
        used = true;
        bool shape = in_table(kShapeInputSlots, node, k) || in_table(kDtypeOnlyInputSlots, node, k);
        if (!shape) shape_only = false;
        if (!shape && !in_table(kAttributeInputSlots, node, k)) slot_only = false;
      }
    // An unused input is bound too: nothing reads it, and its test data may contradict the declared
    // shape (CastLike's `like` in the *_expanded tests, whose body is a plain Cast).
    if ((used && shape_only) || (!used && !outputs.count(name))) info.constant_inputs.push_back(static_cast<int>(i));
    else if (used && slot_only) info.attribute_inputs.push_back(static_cast<int>(i));
  }

  // A small input (rank <= 1, at most 16 elements) whose value reaches a shape slot through other
  // nodes (a window length through Cast/Sub into Range's limit, a crop shape through arithmetic
  // into Pad's pads) decides an output shape as well: bound too. Values flow backwards from the
  // slots through every node except Shape and Size, which read only their input's shape.
  std::set<std::string> decides_shape;
  for (const auto& node : graph.node())
    for (int k = 0; k < node.input_size(); ++k)
      if (in_table(kShapeInputSlots, node, k)) decides_shape.insert(node.input(k));
  for (bool grew = true; grew;) {
    grew = false;
    for (int n = graph.node_size() - 1; n >= 0; --n) {
      const onnx::NodeProto& node = graph.node(n);
      if (node.domain().empty() && (node.op_type() == "Shape" || node.op_type() == "Size")) continue;
      bool feeds = false;
      for (const auto& out : node.output()) feeds = feeds || decides_shape.count(out);
      if (!feeds) continue;
      for (const auto& in : node.input())
        if (!in.empty() && decides_shape.insert(in).second) grew = true;
    }
  }
  std::set<int> bound(info.constant_inputs.begin(), info.constant_inputs.end());
  for (size_t i = 0; i < info.input_names.size(); ++i) {
    if (bound.count(static_cast<int>(i)) || !decides_shape.count(info.input_names[i]) || !info.input_static[i]) continue;
    const onnx::ValueInfoProto* vi = nullptr;
    for (const auto& v : graph.input())
      if (v.name() == info.input_names[i]) vi = &v;
    if (!vi) continue;
    const auto& dims = vi->type().tensor_type().shape().dim();
    if (dims.size() > 1 || (dims.size() == 1 && dims.Get(0).dim_value() > 16)) continue;
    info.constant_inputs.push_back(static_cast<int>(i));
    info.attribute_inputs.erase(std::remove(info.attribute_inputs.begin(), info.attribute_inputs.end(), static_cast<int>(i)),
                                info.attribute_inputs.end());
  }
  std::sort(info.constant_inputs.begin(), info.constant_inputs.end());
  info.expanded = model_path.find("_expanded") != std::string::npos;
  return info;
}

std::string primary_op(const std::string& test_name, const ModelInfo& info,
                       const std::set<std::string>& known_ops) {
  if (info.op_types.size() == 1) return info.op_types[0];
  std::string name = squash(test_name.rfind("test_", 0) == 0 ? test_name.substr(5) : test_name);
  std::string best;
  for (const std::string& op : known_ops) {
    std::string key = squash(op);
    if (key.size() > squash(best).size() && name.rfind(key, 0) == 0) best = op;
  }
  if (!best.empty()) return best;
  std::string joined;
  for (const std::string& op : info.op_types) joined += (joined.empty() ? "" : "+") + op;
  return joined.empty() ? "(no nodes)" : joined;
}

Tensor as_declared_bfloat16(Tensor t, int declared_elem_type) {
  if (declared_elem_type != onnx::TensorProto::BFLOAT16 || t.dtype() != DType::kUInt16) return t;
  Tensor r(DType::kBFloat16, t.shape());
  if (t.byte_size() > 0) std::memcpy(r.raw(), t.raw(), static_cast<size_t>(t.byte_size()));
  return r;
}

Status write_model_with_constants(const std::string& model_path, const std::vector<std::string>& inputs,
                                  const std::vector<std::string>& tensor_files,
                                  const std::string& out_path) {
  onnx::ModelProto model;
  if (!read_model(model_path, model)) return Status::error("cannot read ModelProto " + model_path);
  onnx::GraphProto* graph = model.mutable_graph();
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::ifstream in(tensor_files[i], std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    onnx::TensorProto t;
    if (!in || !t.ParseFromString(buf.str()))
      return Status::error("cannot read TensorProto " + tensor_files[i]);
    t.set_name(inputs[i]);
    auto* list = graph->mutable_input();
    for (int k = 0; k < list->size(); ++k)
      if (list->Get(k).name() == inputs[i]) {
        // uint16 data for a declared bfloat16 input: same bits (raw_data or int32_data alike).
        const auto& type = list->Get(k).type();
        if (type.has_tensor_type() && type.tensor_type().elem_type() == onnx::TensorProto::BFLOAT16 &&
            t.data_type() == onnx::TensorProto::UINT16)
          t.set_data_type(onnx::TensorProto::BFLOAT16);
        list->DeleteSubrange(k, 1);
        break;
      }
    *graph->add_initializer() = t;
  }
  std::ofstream out(out_path, std::ios::binary);
  if (!out || !model.SerializeToOstream(&out)) return Status::error("cannot write " + out_path);
  return Status::ok();
}

}  // namespace aotc::conformance
