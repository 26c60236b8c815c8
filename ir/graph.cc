// Graph bookkeeping: value creation, lookup, producer/consumer maps and node errors.
#include "ir/graph.h"

#include <cstdio>
#include <unordered_set>

namespace aotc {

const char* attribute_kind_name(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::kInt: return "int";
    case Attribute::Kind::kFloat: return "float";
    case Attribute::Kind::kString: return "string";
    case Attribute::Kind::kTensor: return "tensor";
    case Attribute::Kind::kInts: return "ints";
    case Attribute::Kind::kFloats: return "floats";
    case Attribute::Kind::kStrings: return "strings";
    case Attribute::Kind::kGraph: return "graph";
  }
  return "?";
}

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? fallback : it->second.i;
}

float Node::attr_float(const std::string& key, float fallback) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? fallback : it->second.f;
}

std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? fallback : it->second.s;
}

std::vector<int64_t> Node::attr_ints(const std::string& key, std::vector<int64_t> fallback) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? fallback : it->second.ints;
}

std::vector<float> Node::attr_floats(const std::string& key, std::vector<float> fallback) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? fallback : it->second.floats;
}

int Node::num_present_inputs() const {
  int n = static_cast<int>(inputs.size());
  while (n > 0 && inputs[static_cast<size_t>(n - 1)] == kNoValue) --n;
  return n;
}

ValueId Graph::add_value(std::string value_name, DType dtype, Shape shape, bool shape_known) {
  Value v;
  v.name = std::move(value_name);
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.shape_known = shape_known;
  values.push_back(std::move(v));
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Graph::add_constant(std::string value_name, Tensor data) {
  DType dt = data.dtype();
  Shape sh = data.shape();
  ValueId id = add_value(std::move(value_name), dt, std::move(sh), true);
  values.back().constant = std::make_shared<const Tensor>(std::move(data));
  return id;
}

std::string Graph::unique_name(const std::string& base) const {
  std::unordered_set<std::string> taken;
  for (const Value& v : values) taken.insert(v.name);
  if (!taken.count(base)) return base;
  for (int i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!taken.count(candidate)) return candidate;
  }
}

ValueId Graph::find_value(const std::string& value_name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == value_name) return static_cast<ValueId>(i);
  return kNoValue;
}

std::vector<int> Graph::producers() const {
  std::vector<int> p(values.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n)
    for (ValueId out : nodes[n].outputs)
      if (out != kNoValue) p[static_cast<size_t>(out)] = static_cast<int>(n);
  return p;
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> c(values.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (ValueId in : nodes[n].inputs)
      if (in != kNoValue) {
        auto& list = c[static_cast<size_t>(in)];
        if (list.empty() || list.back() != static_cast<int>(n)) list.push_back(static_cast<int>(n));
      }
  return c;
}

int Graph::sole_reader(const std::vector<std::vector<int>>& consumers, ValueId v) const {
  if (v == kNoValue || is_graph_output(v)) return -1;
  const std::vector<int>& c = consumers[static_cast<size_t>(v)];
  return c.size() == 1 ? c[0] : -1;
}

void Graph::remove_nodes(const std::vector<bool>& drop) {
  std::vector<Node> kept;
  kept.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    if (i >= drop.size() || !drop[i]) kept.push_back(std::move(nodes[i]));
  nodes = std::move(kept);
}

int64_t Graph::row_stride(ValueId id) const {
  const ValueId host = value(id).stored_in;
  return host == kNoValue || value(host).shape.empty() ? 0 : value(host).shape.back();
}

bool Graph::is_graph_output(ValueId id) const {
  for (ValueId o : outputs)
    if (o == id) return true;
  return false;
}

bool Graph::is_graph_input(ValueId id) const {
  for (ValueId i : inputs)
    if (i == id) return true;
  return false;
}

std::string escape_for_message(const std::string& text, size_t max_len) {
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
    if (c == '\\' || c == '\'' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

Status node_error(const Node& node, const std::string& reason) {
  return Status::error("node '" + escape_for_message(node.name) + "' (" +
                       escape_for_message(node.op_type, 60) + "): " + reason);
}

}  // namespace aotc
