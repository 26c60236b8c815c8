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
#include <functional>
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
    {"HammingWindow", {0}},  {"DFT", {1, 2}},          {"STFT", {1, 3}},
    {"MelWeightMatrix", {0, 1, 2, 3, 4}}, {"AffineGrid", {1}},
    // Loop's trip count and initial condition decide how many iterations run, so the length of
    // every scan output (issue 9: aotc unrolls a Loop whose end is known at compile time).
    {"Loop", {0, 1}},
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
    if (kRandomOps.count(op)) note(scan.random, op);
    if (kDataDependentOps.count(op)) note(scan.data_dependent, op);
    if (op.rfind("Sequence", 0) == 0 || op.rfind("Optional", 0) == 0 || op == "SplitToSequence" ||
        op == "ConcatFromSequence")
      note(scan.types, op);
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH) {
        // If / Loop / Scan are judged after the constant binding (static_control_flow).
        if (!kControlFlowOps.count(op)) note(scan.control_flow, op + " with a subgraph");
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

const onnx::GraphProto* graph_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name && a.type() == onnx::AttributeProto::GRAPH) return &a.g();
  return nullptr;
}

// Whether every If / Loop / Scan in `graph` is control flow aotc resolves at compile time (issue 9,
// frontend/onnx_control_flow.cc): an If whose condition, a Loop whose trip count and condition
// (and, with a condition, the body's condition output) are known at compile time; any Scan from
// opset 9. `known`: the names whose values are compile-time constants (initializers, bound inputs,
// Constant outputs, Shape / Size outputs, nodes of known inputs), grown by the names this graph
// makes known. Conservative: an If output is known when both branches make it known; Loop and
// Scan outputs are unknown. Returns "" or why not.
std::string static_control_flow(const onnx::GraphProto& graph, std::set<std::string>& known, int64_t opset) {
  for (const auto& init : graph.initializer()) known.insert(init.name());
  auto is_known = [&](const std::string& name) { return name.empty() || known.count(name) > 0; };
  for (const onnx::NodeProto& node : graph.node()) {
    const std::string& op = node.op_type();
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    if (default_domain && op == "If") {
      if (node.input_size() < 1 || !is_known(node.input(0)))
        return "If condition '" + (node.input_size() ? node.input(0) : std::string()) + "' is a run-time value";
      std::vector<std::set<std::string>> branch_known;
      for (const char* branch : {"then_branch", "else_branch"})
        if (const onnx::GraphProto* g = graph_attr(node, branch)) {
          branch_known.push_back(known);
          std::string why = static_control_flow(*g, branch_known.back(), opset);
          if (!why.empty()) return why;
          for (int k = 0; k < node.output_size() && k < g->output_size(); ++k)
            if (!branch_known.back().count(g->output(k).name())) branch_known.back().erase(node.output(k));
            else branch_known.back().insert(node.output(k));
        }
      if (branch_known.size() == 2)
        for (const auto& out : node.output())
          if (branch_known[0].count(out) && branch_known[1].count(out)) known.insert(out);
      continue;
    }
    if (default_domain && op == "Loop") {
      const bool has_m = node.input_size() > 0 && !node.input(0).empty();
      const bool has_cond = node.input_size() > 1 && !node.input(1).empty();
      if (has_m && !is_known(node.input(0))) return "Loop trip count '" + node.input(0) + "' is a run-time value";
      if (has_cond && !is_known(node.input(1))) return "Loop condition '" + node.input(1) + "' is a run-time value";
      if (!has_m && !has_cond) return "Loop without trip count or condition";
      const onnx::GraphProto* body = graph_attr(node, "body");
      if (!body || body->input_size() < 2 || body->output_size() < 1) return "Loop without a valid body";
      std::set<std::string> inner = known;
      for (const auto& in : body->input()) inner.erase(in.name());  // carried values: run-time
      inner.insert(body->input(0).name());  // the iteration number: a constant in each copy
      inner.insert(body->input(1).name());  // the condition: true while the loop runs
      std::string why = static_control_flow(*body, inner, opset);
      if (!why.empty()) return why;
      if (has_cond && !inner.count(body->output(0).name()))
        return "Loop body condition '" + body->output(0).name() + "' depends on run-time data";
      continue;
    }
    if (default_domain && op == "Scan") {
      if (opset < 9) return "Scan before opset 9 (batched, with sequence_lens)";
      if (const onnx::GraphProto* body = graph_attr(node, "body")) {
        std::set<std::string> inner = known;
        std::string why = static_control_flow(*body, inner, opset);
        if (!why.empty()) return why;
      }
      continue;
    }
    bool all = true;
    if (default_domain && (op == "Shape" || op == "Size" || op == "Constant")) all = true;
    else if (node.input_size() == 0 || kRandomOps.count(op)) all = false;
    else
      for (const auto& in : node.input()) all = all && is_known(in);
    if (all)
      for (const auto& out : node.output()) known.insert(out);
  }
  return "";
}

// Every input name read by nodes of the subgraphs of `graph`'s nodes (outer-scope references
// included), recursively.
void subgraph_reads(const onnx::GraphProto& graph, std::set<std::string>& reads) {
  for (const onnx::NodeProto& node : graph.node())
    for (const auto& a : node.attribute()) {
      std::vector<const onnx::GraphProto*> gs;
      if (a.type() == onnx::AttributeProto::GRAPH) gs.push_back(&a.g());
      for (const auto& g : a.graphs()) gs.push_back(&g);
      for (const onnx::GraphProto* g : gs) {
        for (const onnx::NodeProto& n : g->node())
          for (const auto& in : n.input()) reads.insert(in);
        subgraph_reads(*g, reads);
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
  // An input read inside a subgraph (an outer-scope reference) is read as data there.
  std::set<std::string> read_in_subgraphs;
  subgraph_reads(graph, read_in_subgraphs);
  for (size_t i = 0; i < info.input_names.size(); ++i) {
    const std::string& name = info.input_names[i];
    bool used = read_in_subgraphs.count(name) > 0;
    bool shape_only = !outputs.count(name) && !used, slot_only = shape_only;
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
  // Nodes of subgraphs count too (an Expand inside an If branch reading the outer `size`); a
  // control-flow node's outputs come from its subgraphs' outputs, so those are its "inputs" here.
  std::vector<const onnx::NodeProto*> all_nodes;
  std::map<const onnx::NodeProto*, std::vector<std::string>> subgraph_outputs;
  std::function<void(const onnx::GraphProto&)> collect = [&](const onnx::GraphProto& g) {
    for (const onnx::NodeProto& node : g.node()) {
      all_nodes.push_back(&node);
      for (const auto& a : node.attribute())
        if (a.type() == onnx::AttributeProto::GRAPH) {
          for (const auto& out : a.g().output()) subgraph_outputs[&node].push_back(out.name());
          collect(a.g());
        }
    }
  };
  collect(graph);
  std::set<std::string> decides_shape;
  for (const onnx::NodeProto* node : all_nodes)
    for (int k = 0; k < node->input_size(); ++k)
      if (in_table(kShapeInputSlots, *node, k)) decides_shape.insert(node->input(k));
  for (bool grew = true; grew;) {
    grew = false;
    for (auto it = all_nodes.rbegin(); it != all_nodes.rend(); ++it) {
      const onnx::NodeProto& node = **it;
      if (node.domain().empty() && (node.op_type() == "Shape" || node.op_type() == "Size")) continue;
      bool feeds = false;
      for (const auto& out : node.output()) feeds = feeds || decides_shape.count(out);
      if (!feeds) continue;
      for (const auto& in : node.input())
        if (!in.empty() && decides_shape.insert(in).second) grew = true;
      auto sub = subgraph_outputs.find(&node);
      if (sub != subgraph_outputs.end())
        for (const auto& in : sub->second)
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

  // Control flow is excluded only when it is not resolved at compile time after the binding.
  if (scan.control_flow.empty()) {
    std::set<std::string> known;
    for (int i : info.constant_inputs) known.insert(info.input_names[static_cast<size_t>(i)]);
    int64_t opset = 0;
    for (const auto& entry : model.opset_import())
      if (entry.domain().empty() || entry.domain() == "ai.onnx") opset = entry.version();
    const std::string why = static_control_flow(graph, known, opset);
    if (!why.empty()) scan.control_flow = why;
  }
  if (!scan.training.empty()) info.exclusion = "training: " + scan.training;
  else if (!scan.control_flow.empty()) info.exclusion = "control flow: " + scan.control_flow;
  else if (!scan.types.empty()) info.exclusion = "sequence/optional/map/string types: " + scan.types;
  else if (!scan.random.empty()) info.exclusion = "random generator: " + scan.random;
  else if (!scan.data_dependent.empty())
    info.exclusion = "data-dependent output shape: " + scan.data_dependent;
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
