// Template rendering with strict hole checking (see template_renderer.h).
#include "codegen/template_renderer.h"

#include <map>
#include <set>

namespace aotc {
namespace {

bool is_ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

// If a hole starts at `pos` ("{{name}}"), returns its length and sets `name`; else 0.
size_t hole_at(const std::string& text, size_t pos, std::string& name) {
  if (text.compare(pos, 2, "{{") != 0) return 0;
  size_t i = pos + 2;
  if (i >= text.size() || !is_ident_start(text[i])) return 0;
  while (i < text.size() && is_ident_char(text[i])) ++i;
  if (text.compare(i, 2, "}}") != 0) return 0;
  name = text.substr(pos + 2, i - pos - 2);
  return i + 2 - pos;
}

}  // namespace

std::vector<std::string> template_holes(const std::string& text) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  std::string name;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    size_t len = hole_at(text, pos, name);
    if (len == 0) continue;
    if (seen.insert(name).second) names.push_back(name);
    pos += len - 1;
  }
  return names;
}

Expected<std::string> render_template(const std::string& template_name, const std::string& text,
                                      const Holes& holes) {
  std::map<std::string, const std::string*> values;
  for (const auto& [key, value] : holes)
    if (!values.emplace(key, &value).second)
      return Status::error("template '" + template_name + "': hole '" + key + "' is given twice");
  std::set<std::string> used;
  std::string out;
  out.reserve(text.size() + 256);
  std::string name;
  for (size_t pos = 0; pos < text.size();) {
    size_t len = hole_at(text, pos, name);
    if (len == 0) {
      out += text[pos++];
      continue;
    }
    auto it = values.find(name);
    if (it == values.end())
      return Status::error("template '" + template_name + "': hole '" + name +
                           "' is used but not provided");
    out += *it->second;
    used.insert(name);
    pos += len;
  }
  for (const auto& [key, value] : holes)
    if (!used.count(key))
      return Status::error("template '" + template_name + "': hole '" + key +
                           "' is provided but the template does not use it");
  return out;
}

}  // namespace aotc
