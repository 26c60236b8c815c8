// Sanitizers for model text placed into generated source (see identifiers.h).
#include "codegen/identifiers.h"

#include <cstdio>

namespace aotc {
namespace {

bool is_alnum_underscore(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

std::string sanitize_identifier(const std::string& text, size_t max_len) {
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= max_len) break;
    char keep = is_alnum_underscore(c) ? static_cast<char>(c) : '_';
    // No leading '_' and no "__": reserved in C and C++ when it follows our "k3_" style prefixes.
    if (keep == '_' && (out.empty() || out.back() == '_')) continue;
    out += keep;
  }
  if (out.empty()) out = "x";
  return out;
}

std::string sanitize_comment(const std::string& text, size_t max_len) {
  static const std::string kAllowed = " _.,:;=()[]+<>-";
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
    bool ok = is_alnum_underscore(c) || kAllowed.find(static_cast<char>(c)) != std::string::npos;
    out += ok ? static_cast<char>(c) : '_';
  }
  return out;
}

std::string c_string_literal(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (is_alnum_underscore(c)) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    }
  }
  out += '"';
  return out;
}

std::string abi_prefix(const std::string& text) {
  if (text.empty()) return "model";
  std::string id = sanitize_identifier(text, 64);
  if (id[0] >= '0' && id[0] <= '9') id = "_" + id;
  return id;
}

}  // namespace aotc
