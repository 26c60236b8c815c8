// Parser of the small textual IR used by pass tests (format in text_ir.h). Line based: every
// line is a header, an input, a const, a node or an output; errors say which line and why.
#include "ir/text_ir.h"

#include <cctype>
#include <cmath>
#include <map>
#include <sstream>

namespace aotc {

Tensor seeded_random_tensor(DType dtype, const Shape& shape, uint64_t seed, double lo, double hi) {
  Tensor t(dtype, shape);
  // splitmix64: tiny, well mixed and identical on every platform.
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
  auto next = [&state]() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  for (int64_t i = 0; i < t.numel(); ++i) {
    double u = static_cast<double>(next() >> 11) * 0x1.0p-53;  // [0, 1)
    if (dtype == DType::kBool) {
      t.set_int(i, u < 0.5 ? 0 : 1);
    } else if (dtype_is_integer(dtype)) {
      int64_t a = static_cast<int64_t>(std::floor(lo)), b = static_cast<int64_t>(std::floor(hi));
      int64_t span = b > a ? b - a : 1;
      t.set_int(i, a + static_cast<int64_t>(u * static_cast<double>(span)));
    } else {
      t.set(i, lo + u * (hi - lo));
    }
  }
  return t;
}

namespace {

// Cursor over one line (comment already removed).
class LineParser {
 public:
  LineParser(std::string text, int line_no) : s_(std::move(text)), line_(line_no) {}

  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool at_end() {
    skip_ws();
    return pos_ >= s_.size();
  }
  bool peek(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  bool accept_word(const std::string& w) {
    skip_ws();
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    size_t end = pos_ + w.size();
    if (end < s_.size() && is_word_char(s_[end])) return false;
    pos_ = end;
    return true;
  }
  Status expect(char c) {
    if (accept(c)) return Status::ok();
    return error(std::string("expected '") + c + "'");
  }
  Status error(const std::string& what) const {
    std::string near = pos_ < s_.size() ? s_.substr(pos_, 20) : "end of line";
    return Status::error("text IR line " + std::to_string(line_) + ": " + what + " near '" +
                         escape_for_message(near) + "'");
  }
  static bool is_word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '/';
  }
  // A bare word: letters, digits, '_', '.', '-', '/'.
  Expected<std::string> word(const std::string& what) {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && is_word_char(s_[pos_])) ++pos_;
    if (start == pos_) return error("expected " + what);
    return s_.substr(start, pos_ - start);
  }
  // "%name"
  Expected<std::string> value_name() {
    if (!accept('%')) return error("expected a %value");
    return word("a value name after '%'");
  }
  // A number token as text (sign, digits, '.', exponent, inf, nan).
  Expected<std::string> number_text() {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
                                s_[pos_] == '-' || s_[pos_] == '+'))
      ++pos_;
    if (start == pos_) return error("expected a number");
    return s_.substr(start, pos_ - start);
  }
  // "\"text\"" with \" and \\ escapes.
  Expected<std::string> quoted() {
    if (!accept('"')) return error("expected '\"'");
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) return error("unterminated string");
    ++pos_;
    return out;
  }

 private:
  std::string s_;
  size_t pos_ = 0;
  int line_;
};

bool looks_float(const std::string& t) {
  for (char c : t)
    if (c == '.' || c == 'e' || c == 'E' || c == 'i' || c == 'n') return true;  // inf, nan
  return false;
}

Expected<double> to_double(LineParser& p, const std::string& t) {
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return p.error("bad number '" + t + "'");
  return v;
}

Expected<int64_t> to_int(LineParser& p, const std::string& t) {
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || end != t.c_str() + t.size()) return p.error("bad integer '" + t + "'");
  return static_cast<int64_t>(v);
}

Expected<DType> parse_dtype(LineParser& p) {
  auto w = p.word("a dtype");
  if (!w) return w.status();
  for (int code = 1; code <= 26; ++code)  // through the sub-16-bit types (ir/small_dtypes.h)
    if (dtype_is_known(code) && dtype_name(static_cast<DType>(code)) == *w) return static_cast<DType>(code);
  return p.error("unknown dtype '" + *w + "'");
}

struct TypeSpec {
  DType dtype;
  Shape shape;
  bool known;
};

// float[1x3x8x8] | float[?] | float[scalar] | float[]
Expected<TypeSpec> parse_type(LineParser& p) {
  TypeSpec t{DType::kUndefined, {}, true};
  auto dt = parse_dtype(p);
  if (!dt) return dt.status();
  t.dtype = *dt;
  AOTC_RETURN_IF_ERROR(p.expect('['));
  if (p.accept('?')) {
    t.known = false;
  } else if (!p.peek(']')) {
    auto dims = p.word("dims like 1x3x8x8");
    if (!dims) return dims.status();
    if (*dims != "scalar") {
      std::stringstream ss(*dims);
      std::string d;
      while (std::getline(ss, d, 'x')) {
        auto v = to_int(p, d);
        if (!v) return v.status();
        if (*v < 0) return p.error("negative dim");
        t.shape.push_back(*v);
      }
    }
  }
  AOTC_RETURN_IF_ERROR(p.expect(']'));
  return t;
}

// [1, 2.5, -3] as number tokens
Expected<std::vector<std::string>> parse_number_list(LineParser& p) {
  std::vector<std::string> items;
  AOTC_RETURN_IF_ERROR(p.expect('['));
  if (p.accept(']')) return items;
  do {
    auto n = p.number_text();
    if (!n) return n.status();
    items.push_back(*n);
  } while (p.accept(','));
  AOTC_RETURN_IF_ERROR(p.expect(']'));
  return items;
}

Expected<Attribute> parse_attr_value(LineParser& p) {
  if (p.peek('"')) {
    auto s = p.quoted();
    if (!s) return s.status();
    return Attribute::of_string(*s);
  }
  if (p.peek('[')) {
    auto items = parse_number_list(p);
    if (!items) return items.status();
    bool floats = false;
    for (const auto& t : *items) floats = floats || looks_float(t);
    if (floats) {
      std::vector<float> v;
      for (const auto& t : *items) {
        auto d = to_double(p, t);
        if (!d) return d.status();
        v.push_back(static_cast<float>(*d));
      }
      return Attribute::of_floats(v);
    }
    std::vector<int64_t> v;
    for (const auto& t : *items) {
      auto i = to_int(p, t);
      if (!i) return i.status();
      v.push_back(*i);
    }
    return Attribute::of_ints(v);
  }
  auto t = p.number_text();
  if (!t) return t.status();
  if (looks_float(*t)) {
    auto d = to_double(p, *t);
    if (!d) return d.status();
    return Attribute::of_float(static_cast<float>(*d));
  }
  auto i = to_int(p, *t);
  if (!i) return i.status();
  return Attribute::of_int(*i);
}

// Everything before the first '#' outside a string; the rest (trimmed) goes to `comment`.
std::string split_comment(const std::string& line, std::string& comment) {
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (in_string && c == '\\') {
      ++i;
    } else if (c == '"') {
      in_string = !in_string;
    } else if (c == '#' && !in_string) {
      comment = line.substr(i + 1);
      size_t a = comment.find_first_not_of(" \t"), b = comment.find_last_not_of(" \t\r");
      comment = a == std::string::npos ? "" : comment.substr(a, b - a + 1);
      return line.substr(0, i);
    }
  }
  comment.clear();
  return line;
}

class TextIrParser {
 public:
  Expected<Graph> parse(const std::string& text) {
    std::stringstream ss(text);
    std::string line;
    int line_no = 0;
    while (std::getline(ss, line)) {
      ++line_no;
      std::string comment;
      LineParser p(split_comment(line, comment), line_no);
      if (p.at_end()) continue;
      AOTC_RETURN_IF_ERROR(parse_line(p, comment));
      if (!p.at_end()) return p.error("unexpected text");
    }
    return std::move(graph_);
  }

 private:
  Status parse_line(LineParser& p, const std::string& comment) {
    if (p.accept_word("graph")) {
      auto name = p.word("a graph name");
      if (!name) return name.status();
      graph_.name = *name;
      if (p.accept('(')) {
        if (!p.accept_word("opset")) return p.error("expected 'opset'");
        auto n = p.number_text();
        if (!n) return n.status();
        auto v = to_int(p, *n);
        if (!v) return v.status();
        graph_.opset = *v;
        AOTC_RETURN_IF_ERROR(p.expect(')'));
      }
      return Status::ok();
    }
    if (p.accept_word("input")) {
      auto id = define_typed(p);
      if (!id) return id.status();
      graph_.inputs.push_back(*id);
      return Status::ok();
    }
    if (p.accept_word("const")) return parse_const(p);
    if (p.accept_word("output")) {
      do {
        auto id = use(p);
        if (!id) return id.status();
        if (*id == kNoValue) return p.error("an output cannot be absent");
        graph_.outputs.push_back(*id);
      } while (p.accept(','));
      return Status::ok();
    }
    return parse_node(p, comment);
  }

  // "%name : type" -> a new value.
  Expected<ValueId> define_typed(LineParser& p) {
    auto name = p.value_name();
    if (!name) return name.status();
    if (ids_.count(*name)) return p.error("value %" + *name + " is defined twice");
    AOTC_RETURN_IF_ERROR(p.expect(':'));
    auto type = parse_type(p);
    if (!type) return type.status();
    ValueId id = graph_.add_value(*name, type->dtype, type->shape, type->known);
    ids_[*name] = id;
    return id;
  }

  // "%name" of a defined value, or "_" for absent.
  Expected<ValueId> use(LineParser& p) {
    if (p.accept('_')) return kNoValue;
    auto name = p.value_name();
    if (!name) return name.status();
    auto it = ids_.find(*name);
    if (it == ids_.end()) return p.error("value %" + *name + " is used before it is defined");
    return it->second;
  }

  Status parse_const(LineParser& p) {
    auto id = define_typed(p);
    if (!id) return id.status();
    Value& v = graph_.value(*id);
    if (!v.shape_known) return p.error("a const needs a known shape");
    AOTC_RETURN_IF_ERROR(p.expect('='));
    Tensor data;
    if (p.accept_word("random")) {
      AOTC_RETURN_IF_ERROR(p.expect('('));
      std::vector<double> args;
      do {
        auto n = p.number_text();
        if (!n) return n.status();
        auto d = to_double(p, *n);
        if (!d) return d.status();
        args.push_back(*d);
      } while (p.accept(','));
      AOTC_RETURN_IF_ERROR(p.expect(')'));
      if (args.size() != 1 && args.size() != 3) return p.error("random takes (seed) or (seed, lo, hi)");
      bool integer = dtype_is_integer(v.dtype);
      double lo = args.size() == 3 ? args[1] : (integer ? 0 : -1);
      double hi = args.size() == 3 ? args[2] : (integer ? 10 : 1);
      data = seeded_random_tensor(v.dtype, v.shape, static_cast<uint64_t>(args[0]), lo, hi);
    } else if (p.peek('[')) {
      auto items = parse_number_list(p);
      if (!items) return items.status();
      data = Tensor(v.dtype, v.shape);
      if (static_cast<int64_t>(items->size()) != data.numel())
        return p.error("literal has " + std::to_string(items->size()) + " elements, shape needs " +
                       std::to_string(data.numel()));
      for (size_t i = 0; i < items->size(); ++i) {
        if (dtype_is_float(v.dtype)) {
          auto d = to_double(p, (*items)[i]);
          if (!d) return d.status();
          data.set(static_cast<int64_t>(i), *d);
        } else {
          auto n = to_int(p, (*items)[i]);
          if (!n) return n.status();
          data.set_int(static_cast<int64_t>(i), *n);
        }
      }
    } else {
      return p.error("expected random(...) or a [literal] list");
    }
    v.constant = std::make_shared<const Tensor>(std::move(data));
    return Status::ok();
  }

  Status parse_node(LineParser& p, const std::string& comment) {
    Node node;
    node.name = comment;
    do {
      if (p.accept('_')) {
        node.outputs.push_back(kNoValue);
        continue;
      }
      auto id = define_typed(p);
      if (!id) return id.status();
      node.outputs.push_back(*id);
    } while (p.accept(','));
    AOTC_RETURN_IF_ERROR(p.expect('='));
    auto op = p.word("an op type");
    if (!op) return op.status();
    size_t dot = op->rfind('.');
    if (dot != std::string::npos) {
      node.domain = op->substr(0, dot);
      node.op_type = op->substr(dot + 1);
    } else {
      node.op_type = *op;
    }
    AOTC_RETURN_IF_ERROR(p.expect('('));
    if (!p.accept(')')) {
      do {
        auto id = use(p);
        if (!id) return id.status();
        node.inputs.push_back(*id);
      } while (p.accept(','));
      AOTC_RETURN_IF_ERROR(p.expect(')'));
    }
    if (p.accept('{')) {
      if (!p.accept('}')) {
        do {
          auto key = p.word("an attribute name");
          if (!key) return key.status();
          AOTC_RETURN_IF_ERROR(p.expect('='));
          auto a = parse_attr_value(p);
          if (!a) return a.status();
          node.attrs[*key] = *a;
        } while (p.accept(','));
        AOTC_RETURN_IF_ERROR(p.expect('}'));
      }
    }
    graph_.nodes.push_back(std::move(node));
    return Status::ok();
  }

  Graph graph_;
  std::map<std::string, ValueId> ids_;
};

}  // namespace

Expected<Graph> parse_text_ir(const std::string& text) { return TextIrParser().parse(text); }

}  // namespace aotc
