// Text dump of the IR (see dump.h for the format). Names are escaped; large tensors elided.
#include "ir/dump.h"

#include <sstream>

namespace aotc {

namespace {

std::string value_ref(const Graph& g, ValueId id) {
  if (id == kNoValue) return "_";
  return "%" + escape_for_message(g.value(id).name, 80);
}

std::string value_type(const Value& v) {
  return dtype_name(v.dtype) + "[" + (v.shape_known ? shape_str(v.shape) : "?") + "]";
}

std::string attr_text(const Attribute& a) {
  std::ostringstream os;
  auto list = [&](const auto& xs) {
    os << "[";
    for (size_t i = 0; i < xs.size(); ++i) os << (i ? "," : "") << xs[i];
    os << "]";
  };
  switch (a.kind) {
    case Attribute::Kind::kInt: os << a.i; break;
    case Attribute::Kind::kFloat: os << a.f; break;
    case Attribute::Kind::kString: os << '"' << escape_for_message(a.s, 60) << '"'; break;
    case Attribute::Kind::kInts: list(a.ints); break;
    case Attribute::Kind::kFloats: list(a.floats); break;
    case Attribute::Kind::kStrings: os << "[" << a.strings.size() << " strings]"; break;
    case Attribute::Kind::kTensor:
      os << "tensor " << (a.t ? dtype_name(a.t->dtype()) + "[" + shape_str(a.t->shape()) + "]" : "?");
      break;
    case Attribute::Kind::kGraph: os << "<graph>"; break;
  }
  return os.str();
}

}  // namespace

std::string dump_node(const Node& node, const Graph& g) {
  std::ostringstream os;
  os << "  ";
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (i) os << ", ";
    ValueId o = node.outputs[i];
    os << value_ref(g, o);
    if (o != kNoValue) os << " : " << value_type(g.value(o));
  }
  os << " = " << (node.domain.empty() ? "" : escape_for_message(node.domain) + ".")
     << escape_for_message(node.op_type) << "(";
  for (size_t i = 0; i < node.inputs.size(); ++i) os << (i ? ", " : "") << value_ref(g, node.inputs[i]);
  os << ")";
  if (!node.attrs.empty()) {
    os << " {";
    bool first = true;
    for (const auto& kv : node.attrs) {
      os << (first ? "" : ", ") << escape_for_message(kv.first) << "=" << attr_text(kv.second);
      first = false;
    }
    os << "}";
  }
  if (!node.name.empty()) os << "  # " << escape_for_message(node.name, 80);
  return os.str();
}

std::string dump_graph(const Graph& g) {
  std::ostringstream os;
  os << "graph " << escape_for_message(g.name) << " (opset " << g.opset << ")\n";
  for (ValueId id : g.inputs) os << "  input  " << value_ref(g, id) << " : " << value_type(g.value(id)) << "\n";
  std::vector<char> used(g.values.size(), 0);
  for (const Node& n : g.nodes)
    for (ValueId in : n.inputs)
      if (in != kNoValue) used[static_cast<size_t>(in)] = 1;
  for (ValueId id : g.outputs) used[static_cast<size_t>(id)] = 1;
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].is_constant() && used[i])
      os << "  const  " << value_ref(g, static_cast<ValueId>(i)) << " : " << value_type(g.values[i]) << "\n";
  for (const Node& n : g.nodes) os << dump_node(n, g) << "\n";
  for (ValueId id : g.outputs) os << "  output " << value_ref(g, id) << "\n";
  return os.str();
}

}  // namespace aotc
