#include "tools/json_reader.h"

#include <cmath>
#include <cstdlib>

namespace aotc {
namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(const std::string& t) : t_(t) {}

  Expected<JsonValue> document() {
    JsonValue v;
    AOTC_RETURN_IF_ERROR(value(v, 0));
    skip_ws();
    if (i_ != t_.size()) return fail("trailing characters");
    return v;
  }

 private:
  Status fail(const std::string& what) const {
    return Status::error("JSON: " + what + " at byte " + std::to_string(i_));
  }
  void skip_ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool take(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (t_.compare(i_, n, word) != 0) return false;
    i_ += n;
    return true;
  }
  Status value(JsonValue& v, int depth) {
    if (depth > kMaxDepth) return fail("nesting deeper than " + std::to_string(kMaxDepth));
    skip_ws();
    if (i_ >= t_.size()) return fail("unexpected end");
    char c = t_[i_];
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v.kind = JsonValue::Kind::kString;
      return string(v.string);
    }
    if (take("true")) { v.kind = JsonValue::Kind::kBool; v.boolean = true; return Status::ok(); }
    if (take("false")) { v.kind = JsonValue::Kind::kBool; v.boolean = false; return Status::ok(); }
    if (take("null")) { v.kind = JsonValue::Kind::kNull; return Status::ok(); }
    return number(v);
  }
  Status number(JsonValue& v) {
    size_t start = i_;
    if (i_ < t_.size() && t_[i_] == '-') ++i_;
    auto digits = [&]() {
      size_t s = i_;
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
      return i_ > s;
    };
    if (!digits()) return fail("expected a value");
    if (i_ < t_.size() && t_[i_] == '.') {
      ++i_;
      if (!digits()) return fail("digits expected after '.'");
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (!digits()) return fail("digits expected in the exponent");
    }
    v.kind = JsonValue::Kind::kNumber;
    v.number = std::strtod(t_.substr(start, i_ - start).c_str(), nullptr);
    if (!std::isfinite(v.number)) return fail("number out of range");
    return Status::ok();
  }
  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  Status hex4(unsigned* out) {
    if (i_ + 4 > t_.size()) return fail("short \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = t_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else return fail("bad \\u escape");
    }
    *out = v;
    return Status::ok();
  }
  Status string(std::string& out) {
    ++i_;  // the opening quote
    out.clear();
    while (true) {
      if (i_ >= t_.size()) return fail("unterminated string");
      char c = t_[i_++];
      if (c == '"') return Status::ok();
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= t_.size()) return fail("unterminated escape");
      char e = t_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = 0;
          AOTC_RETURN_IF_ERROR(hex4(&cp));
          if (cp >= 0xD800 && cp < 0xDC00 && t_.compare(i_, 2, "\\u") == 0) {
            i_ += 2;
            unsigned lo = 0;
            AOTC_RETURN_IF_ERROR(hex4(&lo));
            if (lo < 0xDC00 || lo >= 0xE000) return fail("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: return fail("bad escape");
      }
    }
  }
  Status array(JsonValue& v, int depth) {
    ++i_;
    v.kind = JsonValue::Kind::kArray;
    skip_ws();
    if (i_ < t_.size() && t_[i_] == ']') { ++i_; return Status::ok(); }
    while (true) {
      v.array.emplace_back();
      AOTC_RETURN_IF_ERROR(value(v.array.back(), depth + 1));
      skip_ws();
      if (i_ < t_.size() && t_[i_] == ',') { ++i_; continue; }
      if (i_ < t_.size() && t_[i_] == ']') { ++i_; return Status::ok(); }
      return fail("expected ',' or ']'");
    }
  }
  Status object(JsonValue& v, int depth) {
    ++i_;
    v.kind = JsonValue::Kind::kObject;
    skip_ws();
    if (i_ < t_.size() && t_[i_] == '}') { ++i_; return Status::ok(); }
    while (true) {
      skip_ws();
      if (i_ >= t_.size() || t_[i_] != '"') return fail("expected a key");
      std::string key;
      AOTC_RETURN_IF_ERROR(string(key));
      skip_ws();
      if (i_ >= t_.size() || t_[i_] != ':') return fail("expected ':'");
      ++i_;
      JsonValue item;
      AOTC_RETURN_IF_ERROR(value(item, depth + 1));
      if (!v.object.emplace(key, std::move(item)).second) return fail("duplicate key");
      skip_ws();
      if (i_ < t_.size() && t_[i_] == ',') { ++i_; continue; }
      if (i_ < t_.size() && t_[i_] == '}') { ++i_; return Status::ok(); }
      return fail("expected ',' or '}'");
    }
  }

  const std::string& t_;
  size_t i_ = 0;
};

}  // namespace

const JsonValue* JsonValue::find(const std::string& key) const {
  if (kind != Kind::kObject) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &it->second;
}

Expected<JsonValue> parse_json(const std::string& text) {
  if (text.size() > (size_t{1} << 30)) return Status::error("JSON: input over 1 GiB");
  return Parser(text).document();
}

}  // namespace aotc
