// JSON writing (see json_writer.h): two-space indentation, one key per line, so reports diff well.
#include "tools/json_writer.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ir/graph.h"

namespace aotc {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid.
size_t utf8_sequence_length(const std::string& s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return 0;
  }
  if (len == 2 && c < 0xc2) return 0;  // overlong
  if (len == 3) {
    unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
    if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0)) return 0;  // overlong, surrogates
  }
  if (len == 4) {
    unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
    if ((c == 0xf0 && c1 < 0x90) || c > 0xf4 || (c == 0xf4 && c1 >= 0x90)) return 0;
  }
  return len;
}

}  // namespace

std::string json_escape(const std::string& text) {
  std::string out = "\"";
  char buf[8];
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"') { out += "\\\""; ++i; continue; }
    if (c == '\\') { out += "\\\\"; ++i; continue; }
    if (c == '\n') { out += "\\n"; ++i; continue; }
    if (c == '\t') { out += "\\t"; ++i; continue; }
    if (c == '\r') { out += "\\r"; ++i; continue; }
    size_t len = utf8_sequence_length(text, i);
    if (c < 0x20 || c == 0x7f || len == 0) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      ++i;
      continue;
    }
    out.append(text, i, len);
    i += len;
  }
  return out + "\"";
}

void JsonWriter::indent() {
  out_ += '\n';
  out_.append(2 * first_.size(), ' ');
}

void JsonWriter::separator() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    indent();
  }
}

JsonWriter& JsonWriter::begin_object() {
  separator();
  out_ += '{';
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) indent();
  out_ += '}';
  if (first_.empty()) out_ += '\n';
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separator();
  out_ += '[';
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) indent();
  out_ += ']';
  if (first_.empty()) out_ += '\n';
  return *this;
}

JsonWriter& JsonWriter::key(const std::string& k) {
  separator();
  out_ += json_escape(k) + ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& v) {
  separator();
  out_ += json_escape(v);
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  separator();
  if (!std::isfinite(v)) {
    out_ += "null";
    return *this;
  }
  // The shortest of %.15g / %.17g that reads back as the same double (2.1e-06, not 2.1059999e-06).
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.15g", v);
  if (std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof(buf), "%.17g", v);
  out_ += buf;
  return *this;
}

JsonWriter& JsonWriter::value(int64_t v) {
  separator();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  separator();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  separator();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::int_array(const std::vector<int64_t>& values) {
  separator();
  out_ += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out_ += ", ";
    out_ += std::to_string(values[i]);
  }
  out_ += ']';
  return *this;
}

Status write_file_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status::error("cannot write '" + escape_for_message(path) + "'");
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::error("cannot write '" + escape_for_message(path) + "'");
  }
  return Status::ok();
}

}  // namespace aotc
