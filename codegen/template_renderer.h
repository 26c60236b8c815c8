// The template renderer: replaces each `{{name}}` hole (name = [A-Za-z_][A-Za-z0-9_]*) with its
// value. Templates have no logic. Rendering fails on a hole the template uses but the caller did
// not provide, on a provided key the template never uses, and on a key given twice, so template and
// lowering cannot drift apart silently. Any other `{{` (e.g. `{{0}}` in CUDA code) is plain text.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"

namespace aotc {

using Holes = std::vector<std::pair<std::string, std::string>>;

// `template_name` only labels error messages.
Expected<std::string> render_template(const std::string& template_name, const std::string& text,
                                      const Holes& holes);

// The hole names a template uses, in first-use order (for tests and diagnostics).
std::vector<std::string> template_holes(const std::string& text);

}  // namespace aotc
