// The ONNX model loader: file -> ModelProto -> Graph. One walk serves both load_onnx_model (stop at
// the first problem) and check_onnx_model (report every problem; values a failed node would have
// produced become "unknown" and nodes reading them are skipped quietly, so each cause is reported
// once). ONNX requires topological node order, so a name not yet defined is a dangling input or a cycle.
#include "frontend/onnx_loader.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sys/stat.h>
#include <unordered_map>
#include <unordered_set>

#include <fcntl.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>

#include "frontend/onnx_attributes.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_op_versions.h"
#include "frontend/tensor_proto.h"
#include "ir/constant_folding.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"

namespace aotc {

std::string quoted(const std::string& name) { return "'" + escape_for_message(name) + "'"; }

// The caps of ImportLimits, on the protobuf. Names are checked here, once, so that no later
// message, map key or generated identifier has to deal with megabyte names.
Status check_limits(const onnx::GraphProto& g, const ImportLimits& limits) {
  auto count = [](const char* what, int64_t n, int64_t cap) -> Status {
    if (n <= cap) return Status::ok();
    return Status::error("the model has " + std::to_string(n) + " " + what + "; aotc accepts at most " +
                         std::to_string(cap) + " (docs/reliability.md, Limits)");
  };
  AOTC_RETURN_IF_ERROR(count("nodes", g.node_size(), limits.max_nodes));
  AOTC_RETURN_IF_ERROR(count("graph inputs", g.input_size(), limits.max_graph_inputs));
  AOTC_RETURN_IF_ERROR(count("graph outputs", g.output_size(), limits.max_graph_outputs));
  auto name = [&](const std::string& what, const std::string& text) -> Status {
    if (text.size() <= limits.max_name_bytes) return Status::ok();
    return Status::error(what + " '" + escape_for_message(text, 60) + "' is " + std::to_string(text.size()) +
                         " bytes long; aotc accepts names of at most " + std::to_string(limits.max_name_bytes) +
                         " bytes (docs/reliability.md, Limits)");
  };
  AOTC_RETURN_IF_ERROR(name("the graph name", g.name()));
  int64_t values = static_cast<int64_t>(g.initializer_size()) + g.input_size();
  for (const auto& init : g.initializer()) AOTC_RETURN_IF_ERROR(name("initializer name", init.name()));
  for (const auto& info : g.input()) AOTC_RETURN_IF_ERROR(name("graph input name", info.name()));
  for (const auto& info : g.output()) AOTC_RETURN_IF_ERROR(name("graph output name", info.name()));
  for (const auto& info : g.value_info()) AOTC_RETURN_IF_ERROR(name("value_info name", info.name()));
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& proto = g.node(i);
    // Named by position until its own name is known to be of a sane length.
    const std::string where = "node #" + std::to_string(i);
    AOTC_RETURN_IF_ERROR(name(where + ": node name", proto.name()));
    const std::string node = "node '" + escape_for_message(proto.name()) + "' (" +
                             escape_for_message(proto.op_type().substr(0, 60), 60) + ")";
    AOTC_RETURN_IF_ERROR(name(node + ": op type", proto.op_type()));
    AOTC_RETURN_IF_ERROR(name(node + ": domain", proto.domain()));
    if (proto.input_size() > limits.max_node_inputs || proto.output_size() > limits.max_node_outputs)
      return Status::error(node + ": has " + std::to_string(proto.input_size()) + " inputs and " +
                           std::to_string(proto.output_size()) + " outputs; aotc accepts at most " +
                           std::to_string(limits.max_node_inputs) + " and " +
                           std::to_string(limits.max_node_outputs) + " (docs/reliability.md, Limits)");
    for (const std::string& in : proto.input()) AOTC_RETURN_IF_ERROR(name(node + ": input name", in));
    for (const std::string& out : proto.output()) AOTC_RETURN_IF_ERROR(name(node + ": output name", out));
    for (const auto& a : proto.attribute()) AOTC_RETURN_IF_ERROR(name(node + ": attribute name", a.name()));
    values += proto.output_size();
  }
  AOTC_RETURN_IF_ERROR(count("values (initializers, graph inputs and node outputs)", values, limits.max_values));
  return Status::ok();
}


namespace {

// Every opset is read; where an op's meaning changed between versions its importer
// (OpDef::import) resolves or refuses the old form (e.g. Add's opset-1 broadcast attribute).
constexpr int64_t kOldestOpset = 1;
// The newest default-domain opset of the ONNX release whose operators aotc implements (onnx 1.23.2,
// tools/install_deps.sh); a model claiming a later one is refused rather than read with old meanings.
constexpr int64_t kNewestOpset = 28;
// Protobuf messages nested deeper than this are refused while parsing (an If inside an If ... is
// three levels per If: about 32 Ifs).
constexpr int kMaxMessageNesting = 100;

// Parses a ModelProto from `stream`; `what` names the source in the one-line error.
Status parse_model(google::protobuf::io::ZeroCopyInputStream* raw, const std::string& what,
                   onnx::ModelProto* model) {
  bool parsed = false;
  {
    google::protobuf::io::CodedInputStream stream(raw);
    stream.SetTotalBytesLimit(INT_MAX);
    // The nesting cap (docs/reliability.md, Limits): protobuf's default, set here so it is ours.
    // Parsing recurses once per nested message; subgraphs (If/Loop) are refused after parsing.
    stream.SetRecursionLimit(kMaxMessageNesting);
    parsed = model->ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage();
  }
  if (!parsed)
    return Status::error(what + " is not a valid ONNX protobuf (truncated, corrupted, or messages nested deeper than " +
                         std::to_string(kMaxMessageNesting) + ")");
  if (!model->has_graph())
    return Status::error(what + " has no graph (not an ONNX model?)");
  return Status::ok();
}

// Reads and parses the file; every failure is a one-line Status naming the (escaped) path.
Status read_model(const std::string& path, onnx::ModelProto* model) {
  const std::string file = "model file " + quoted(path);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return Status::error("cannot open " + file + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::error(file + " is not a regular file");
  if (st.st_size == 0) return Status::error(file + " is empty");
  if (st.st_size > INT_MAX)
    return Status::error(file + " is larger than 2 GB, the protobuf limit; store the weights as "
                                "external data (onnx.save_model(..., save_as_external_data=True))");
  // Parse straight from the file: no second copy of a model that may be close to 2 GB.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error("cannot open " + file + ": " + std::strerror(errno));
  Status s = Status::ok();
  {
    google::protobuf::io::FileInputStream raw(fd);
    s = parse_model(&raw, file, model);
  }
  ::close(fd);
  return s;
}

// The in-memory twin of read_model.
Status read_model(const void* data, size_t size, onnx::ModelProto* model) {
  const std::string what = "model buffer";
  if (size == 0) return Status::error(what + " is empty");
  if (size > INT_MAX) return Status::error(what + " is larger than 2 GB, the protobuf limit");
  google::protobuf::io::ArrayInputStream raw(data, static_cast<int>(size));
  return parse_model(&raw, what, model);
}

}  // namespace

Status Importer::import_opset(const onnx::ModelProto& model) {
  int64_t opset = -1;
  std::unordered_set<std::string> domains;
  for (const auto& entry : model.opset_import()) {
    const bool default_domain = entry.domain().empty() || entry.domain() == "ai.onnx";
    // IR.md: one version per domain; two would leave the meaning of every op open.
    if (!domains.insert(default_domain ? std::string() : entry.domain()).second)
      return Status::error("opset_import lists domain " + quoted(default_domain ? "ai.onnx" : entry.domain()) +
                           " twice");
    if (default_domain) opset = entry.version();
  }
  if (opset < 0) {
    // Valid when no node uses the default domain (e.g. a model of training ops only): those
    // nodes are then refused one by one as unsupported ops, which says more.
    for (const auto& node : model.graph().node())
      if (node.domain().empty() || node.domain() == "ai.onnx")
        return Status::error("model imports no version of the default ONNX domain (opset_import)");
    graph_.opset = 0;
    return Status::ok();
  }
  if (opset < kOldestOpset)
    return Status::error("model uses opset " + std::to_string(opset) + "; aotc supports opset " +
                         std::to_string(kOldestOpset) + " and newer (convert it with "
                         "onnx.version_converter.convert_version)");
  if (opset > kNewestOpset)
    return Status::error("model uses opset " + std::to_string(opset) + "; the newest opset aotc knows is " +
                         std::to_string(kNewestOpset) + " (ONNX 1.23): the ops of a newer one may mean "
                         "something else");
  graph_.opset = opset;
  return Status::ok();
}

Status Importer::import_initializer(const onnx::TensorProto& proto, Scope& scope) {
  const std::string what = "initializer " + quoted(scope.prefix + proto.name());
  if (proto.name().empty()) return Status::error("an initializer has no name");
  if (scope.names.count(proto.name())) return Status::error(what + " is defined twice");
  auto tensor = tensor_from_proto(proto, base_dir_, what);
  if (!tensor) return tensor.status();
  const std::string name = scope.is_model_graph() ? proto.name() : fresh_name(scope.prefix + proto.name());
  define(scope, proto.name(), graph_.add_constant(name, std::move(*tensor)));
  return Status::ok();
}

Expected<Shape> Importer::input_shape(const onnx::ValueInfoProto& info, DType dtype) {
  const std::string& name = info.name();
  const std::string what = "graph input " + quoted(name);
  const std::string hint = "pass --input-shape " + escape_for_message(name) + ":AxBxC";
  const auto& type = info.type().tensor_type();
  auto given = options_.input_shapes.find(name);
  Shape shape;
  if (given != options_.input_shapes.end()) {
    shape = given->second;
    if (type.has_shape() && type.shape().dim_size() != static_cast<int>(shape.size()))
      return Status::error(what + ": --input-shape gives rank " + std::to_string(shape.size()) +
                           ", the model's input has rank " + std::to_string(type.shape().dim_size()));
  } else if (!type.has_shape()) {
    return Status::error(what + " has no shape in the model; " + hint);
  } else {
    for (int i = 0; i < type.shape().dim_size(); ++i) {
      const auto& dim = type.shape().dim(i);
      if (dim.has_dim_value()) {
        shape.push_back(dim.dim_value());
      } else if (i == 0) {
        if (options_.default_batch < 0)
          return Status::error(what + ": default batch " + std::to_string(options_.default_batch) +
                               " is negative");
        shape.push_back(options_.default_batch);
      } else {
        std::string param = dim.has_dim_param() ? " (" + quoted(dim.dim_param()) + ")" : "";
        return Status::error(what + ": dim " + std::to_string(i) + param + " is symbolic; " + hint);
      }
    }
  }
  auto numel = checked_numel(shape, dtype, what);
  if (!numel) return numel.status();
  return shape;
}

// A tensor given for an input in ImportOptions::constant_inputs must fit the declaration.
static Status check_constant_input(const onnx::ValueInfoProto& info, const Tensor& value) {
  const std::string what = "graph input " + quoted(info.name());
  const auto& type = info.type().tensor_type();
  if (type.elem_type() != static_cast<int32_t>(value.dtype()))
    return Status::error(what + ": the constant given for it is " + dtype_name(value.dtype()) +
                         ", the model declares element type " + std::to_string(type.elem_type()));
  if (!type.has_shape()) return Status::ok();
  if (type.shape().dim_size() != value.rank())
    return Status::error(what + ": the constant given for it has rank " + std::to_string(value.rank()) +
                         ", the model declares rank " + std::to_string(type.shape().dim_size()));
  for (int i = 0; i < type.shape().dim_size(); ++i)
    if (type.shape().dim(i).has_dim_value() && type.shape().dim(i).dim_value() != value.shape()[static_cast<size_t>(i)])
      return Status::error(what + ": the constant given for it has shape " + shape_str(value.shape()) +
                           ", which does not match the model's dim " + std::to_string(i));
  return Status::ok();
}

Status Importer::import_input(const onnx::ValueInfoProto& info) {
  const std::string& name = info.name();
  auto known = top_.names.find(name);
  auto fixed = options_.constant_inputs.find(name);
  // An input that is also an initializer is a constant with a default value: we fold it (or the
  // value the caller fixed for it).
  if (known != top_.names.end() && graph_.value(known->second).is_constant()) {
    if (fixed == options_.constant_inputs.end()) return Status::ok();
    AOTC_RETURN_IF_ERROR(check_constant_input(info, fixed->second));
    Value& v = graph_.value(known->second);
    v.dtype = fixed->second.dtype();
    v.shape = fixed->second.shape();
    v.constant = std::make_shared<const Tensor>(fixed->second);
    return Status::ok();
  }
  const std::string what = "graph input " + quoted(name);
  if (name.empty()) return Status::error("a graph input has no name");
  if (known != top_.names.end()) return Status::error(what + " is listed twice");
  if (!info.type().has_tensor_type())
    return Status::error(what + " is not a tensor (sequence, map and optional inputs are not supported)");
  const int32_t elem = info.type().tensor_type().elem_type();
  if (!dtype_is_known(elem) || elem == static_cast<int32_t>(DType::kString))
    return Status::error(what + " has unsupported element type " + std::to_string(elem) +
                         (elem == static_cast<int32_t>(DType::kString) ? " (string)" : ""));
  const DType dtype = static_cast<DType>(elem);
  if (fixed != options_.constant_inputs.end()) {
    AOTC_RETURN_IF_ERROR(check_constant_input(info, fixed->second));
    define(top_, name, graph_.add_constant(name, fixed->second));
    return Status::ok();
  }
  auto shape = input_shape(info, dtype);
  if (!shape) return shape.status();
  ValueId id = define(top_, name, graph_.add_value(name, dtype, *shape, true));
  graph_.inputs.push_back(id);
  return Status::ok();
}

void Importer::claim_name(const std::string& name) {
  auto it = invented_.find(name);
  if (it == invented_.end()) return;
  ValueId id = it->second;
  invented_.erase(it);
  std::string fresh = graph_.unique_name(name + ".aotc");
  graph_.value(id).name = fresh;
  invented_[fresh] = id;
}

void Importer::mark_outputs_unknown(const onnx::NodeProto& proto) {
  for (const std::string& out : proto.output())
    if (!out.empty() && !top_.names.count(out)) unknown_.insert(out);
}

std::string Importer::fresh_name(const std::string& base) {
  auto taken = [&](const std::string& n) { return top_.names.count(n) || invented_.count(n); };
  std::string name = base;
  for (int i = 1; taken(name); ++i) name = base + "_" + std::to_string(i);
  invented_[name] = static_cast<ValueId>(graph_.values.size());  // the value about to be added
  return name;
}

ValueId Importer::new_output_value(Scope& scope, const std::string& out) {
  if (scope.is_model_graph()) {
    claim_name(out);
    return graph_.add_value(out);
  }
  const std::string name = fresh_name(scope.prefix + out);
  return graph_.add_value(name);
}

Status Importer::add_node(Node node) {
  const OpDef* def = default_registry().find(node.op_type, node.domain);
  if (!def) return node_error(node, "internal: no op " + node.op_type);
  const size_t values_before = graph_.values.size();
  if (def->import) AOTC_RETURN_IF_ERROR(def->import(node, graph_, graph_.opset));
  for (size_t v = values_before; v < graph_.values.size(); ++v)
    invented_[graph_.values[v].name] = static_cast<ValueId>(v);
  AOTC_RETURN_IF_ERROR(infer_node(node, graph_));
  Expected<bool> folded = try_fold_node(node, graph_, default_registry(), /*importing=*/true);
  if (!folded) return node_error(node, folded.status().message());
  if (!*folded) graph_.nodes.push_back(std::move(node));
  return Status::ok();
}

Status Importer::import_node(const onnx::NodeProto& proto, Scope& scope) {
  Node node;
  // Inside a subgraph the node's name carries the control-flow node's (and iteration's) prefix:
  // messages say which copy, and generated identifiers stay distinct.
  node.name = scope.prefix + proto.name();
  node.op_type = proto.op_type();
  node.domain = proto.domain() == "ai.onnx" ? std::string() : proto.domain();
  for (int k = 0; k < proto.input_size(); ++k) {
    const std::string& in = proto.input(k);
    if (in.empty()) {
      node.inputs.push_back(kNoValue);
      continue;
    }
    ValueId id = scope.find(in);
    if (id == kNoValue && unknown_.count(in)) {  // its producer already failed and was reported
      if (!scope.is_model_graph())  // the subgraph's node fails with its control-flow node
        return node_error(node, "input " + std::to_string(k) + " (" + quoted(in) + ") comes from a node that failed");
      mark_outputs_unknown(proto);
      // An op we do not have is still worth naming: `aotc check` lists every one, also those
      // downstream of another problem.
      if (!default_registry().find(node.op_type, node.domain))
        return node_error(node, "unsupported op" + (node.domain.empty() ? std::string()
                                                                         : " in domain " + quoted(node.domain)));
      return Status::ok();
    }
    if (id == kNoValue)
      return node_error(node, "input " + std::to_string(k) + " (" + quoted(in) +
                                  ") is not produced by any earlier node or initializer");
    node.inputs.push_back(id);
  }
  std::unordered_set<std::string> outputs_seen;  // a set: a Split of 4096 outputs is 4096 lookups
  for (int k = 0; k < proto.output_size(); ++k) {
    const std::string& out = proto.output(k);
    if (!out.empty() && (scope.names.count(out) || (scope.is_model_graph() && unknown_.count(out))))
      return node_error(node, "output " + std::to_string(k) + " (" + quoted(out) + ") is already defined");
    if (!out.empty() && !outputs_seen.insert(out).second)
      return node_error(node, "output " + std::to_string(k) + " (" + quoted(out) + ") is listed twice");
  }
  if (node.domain.empty() && (node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan"))
    return import_control_flow(proto, node, scope);
  AOTC_RETURN_IF_ERROR(convert_attributes(proto, base_dir_, node));

  if (node.op_type == "Constant" && node.domain.empty()) {
    if (proto.output_size() != 1 || proto.output(0).empty())
      return node_error(node, "expects exactly 1 output");
    if (!node.inputs.empty()) return node_error(node, "takes no inputs");
    auto value = constant_node_value(node);
    if (!value) return value.status();
    ValueId id = new_output_value(scope, proto.output(0));
    Value& v = graph_.value(id);
    v.dtype = value->dtype();
    v.shape = value->shape();
    v.shape_known = true;
    v.constant = std::make_shared<const Tensor>(std::move(*value));
    define(scope, proto.output(0), id);
    return Status::ok();
  }

  // aotc.* ops (FusedConv, PackNhwc...) are what the passes create, with invariants the passes
  // guarantee; a model cannot use them (one with the wrong inputs crashed constant folding).
  if (node.domain == "aotc")
    return node_error(node, "domain 'aotc' is internal to the compiler; a model cannot use its ops");
  const OpDef* def = default_registry().find(node.op_type, node.domain);
  if (!def)
    return node_error(node, "unsupported op" + (node.domain.empty() ? std::string()
                                                                     : " in domain " + quoted(node.domain)));
  const int64_t first_opset = node.domain.empty() ? onnx_op_first_opset(node.op_type) : 0;
  if (first_opset > graph_.opset)
    return node_error(node, "is defined from opset " + std::to_string(first_opset) + "; the model imports opset " +
                                std::to_string(graph_.opset));
  if (proto.output_size() == 0) return node_error(node, "has no outputs");
  for (const std::string& out : proto.output()) {
    // An empty name after the first output means "optional output not requested" (kNoValue). The
    // first output is what every op computes, so an empty name there gets an unnamed internal
    // value nobody can read: shape inference, folding and the references always have output 0 to
    // write, and dead_code drops the node when nothing else is used.
    if (out.empty() && node.outputs.empty()) {
      node.outputs.push_back(graph_.add_value(graph_.unique_name("unnamed_output_of_" + node.op_type)));
      continue;
    }
    node.outputs.push_back(out.empty() ? kNoValue : new_output_value(scope, out));
  }
  const size_t values_before = graph_.values.size();
  if (def->import) AOTC_RETURN_IF_ERROR(def->import(node, graph_, graph_.opset));
  for (size_t v = values_before; v < graph_.values.size(); ++v)
    invented_[graph_.values[v].name] = static_cast<ValueId>(v);
  AOTC_RETURN_IF_ERROR(infer_node(node, graph_));
  // Shape subgraphs fold here, while importing: later nodes (Reshape, Expand, Slice...) need
  // their shape inputs as constants to infer at all. A folded node leaves only constants behind.
  Expected<bool> folded = try_fold_node(node, graph_, default_registry(), /*importing=*/true);
  if (!folded) return node_error(node, folded.status().message());
  // Only now are the outputs visible to later nodes: a failed node defines nothing.
  for (int k = 0; k < proto.output_size(); ++k)
    if (!proto.output(k).empty()) define(scope, proto.output(k), node.outputs[static_cast<size_t>(k)]);
  if (!*folded) graph_.nodes.push_back(std::move(node));
  return Status::ok();
}

Status Importer::import_output(const onnx::ValueInfoProto& info) {
  const std::string what = "graph output " + quoted(info.name());
  if (unknown_.count(info.name())) return Status::ok();  // its producer was reported
  auto it = top_.names.find(info.name());
  if (it == top_.names.end())
    return Status::error(what + " is not produced by any node, input or initializer");
  const Value& v = graph_.value(it->second);
  // A declared element type that disagrees with inference means an op's inference is wrong or
  // the model is inconsistent; either way the library would not be what the model says.
  const int32_t declared = info.type().has_tensor_type() ? info.type().tensor_type().elem_type() : 0;
  if (declared != 0 && declared != static_cast<int32_t>(v.dtype))
    return Status::error(what + " is declared as element type " + std::to_string(declared) +
                         " but inferred as " + dtype_name(v.dtype));
  graph_.outputs.push_back(it->second);
  return Status::ok();
}

// Appends the position of an unnamed node, so the message still points somewhere.
static Status with_node_position(const Status& s, const onnx::NodeProto& proto, size_t index) {
  if (!proto.name().empty()) return s;
  std::string where = " [node #" + std::to_string(index);
  if (proto.output_size() > 0) where += ", output " + quoted(proto.output(0));
  return Status::error(s.message() + where + "]");
}

Status Importer::run(onnx::ModelProto& model) {
  AOTC_RETURN_IF_ERROR(check_limits(model.graph(), options_.limits));
  graph_.max_folded_bytes_total = options_.limits.max_folded_bytes;
  graph_.max_fold_work_total = options_.limits.max_fold_work;
  AOTC_RETURN_IF_ERROR(import_opset(model));
  const onnx::GraphProto& g = model.graph();
  graph_.name = g.name();
  for (int i = 0; i < g.initializer_size(); ++i) {
    Status s = import_initializer(g.initializer(i), top_);
    if (!s.is_ok() && !record(s)) return s;
    // Peak memory ~ one copy of the weights, not two.
    std::string().swap(*model.mutable_graph()->mutable_initializer(i)->mutable_raw_data());
  }
  for (const auto& init : g.sparse_initializer()) {
    Status s = Status::error("sparse initializer " + quoted(init.values().name()) + " is not supported");
    if (!record(s)) return s;
  }
  std::unordered_set<std::string> input_names;
  for (const auto& info : g.input()) {
    Status s = import_input(info);
    input_names.insert(info.name());
    if (!s.is_ok()) {
      if (!record(s)) return s;
      if (!info.name().empty() && !top_.names.count(info.name())) unknown_.insert(info.name());
    }
  }
  for (const auto& kv : options_.input_shapes) {
    auto it = top_.names.find(kv.first);
    if (!input_names.count(kv.first) || options_.constant_inputs.count(kv.first) ||
        (it != top_.names.end() && graph_.value(it->second).is_constant())) {
      Status s = Status::error("--input-shape names " + quoted(kv.first) + ", which is not a runtime input of the model");
      if (!record(s)) return s;
    }
  }
  for (const auto& kv : options_.constant_inputs) {
    if (!input_names.count(kv.first)) {
      Status s = Status::error("a constant is given for " + quoted(kv.first) + ", which is not an input of the model");
      if (!record(s)) return s;
    }
  }
  for (size_t i = 0; i < static_cast<size_t>(g.node_size()); ++i) {
    const onnx::NodeProto& proto = g.node(static_cast<int>(i));
    Status s = import_node(proto, top_);
    if (!s.is_ok()) {
      if (!record(with_node_position(s, proto, i))) return problems_.back();
      mark_outputs_unknown(proto);
    }
  }
  if (g.output_size() == 0) {
    Status s = Status::error("the graph has no outputs");
    if (!record(s)) return s;
  }
  for (const auto& info : g.output()) {
    Status s = import_output(info);
    if (!s.is_ok() && !record(s)) return s;
  }
  if (problems_.empty()) {
    Status s = verify(graph_);
    if (!s.is_ok() && !record(s)) return s;
  }
  return Status::ok();
}

// The import proper, after the model was read by either read_model.
static Expected<Graph> load_parsed(onnx::ModelProto& model, const std::string& base_dir, const ImportOptions& options) {
  Importer importer(options, /*keep_going=*/false, base_dir);
  AOTC_RETURN_IF_ERROR(importer.run(model));
  return std::move(importer.graph());
}

static std::vector<Status> check_parsed(onnx::ModelProto& model, const std::string& base_dir, const ImportOptions& options) {
  Importer importer(options, /*keep_going=*/true, base_dir);
  Status fatal = importer.run(model);
  std::vector<Status> problems = std::move(importer.problems());
  if (!fatal.is_ok() && (problems.empty() || problems.back().message() != fatal.message()))
    problems.push_back(fatal);
  return problems;
}


Expected<Graph> load_onnx_model(const std::string& path, const ImportOptions& options) {
  onnx::ModelProto model;
  AOTC_RETURN_IF_ERROR(read_model(path, &model));
  return load_parsed(model, parent_dir(path), options);
}

std::vector<Status> check_onnx_model(const std::string& path, const ImportOptions& options) {
  onnx::ModelProto model;
  Status read = read_model(path, &model);
  if (!read.is_ok()) return {read};
  return check_parsed(model, parent_dir(path), options);
}

Expected<Graph> load_onnx_model_from_memory(const void* data, size_t size, const std::string& base_dir,
                                            const ImportOptions& options) {
  onnx::ModelProto model;
  AOTC_RETURN_IF_ERROR(read_model(data, size, &model));
  return load_parsed(model, base_dir, options);
}

std::vector<Status> check_onnx_model_from_memory(const void* data, size_t size, const std::string& base_dir,
                                                 const ImportOptions& options) {
  onnx::ModelProto model;
  Status read = read_model(data, size, &model);
  if (!read.is_ok()) return {read};
  return check_parsed(model, base_dir, options);
}

}  // namespace aotc
