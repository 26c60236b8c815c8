// Turning text from a model (node names, value names, op types) into something safe to place in
// generated C/CUDA: identifiers reduced to [A-Za-z0-9_], comment text reduced to a harmless
// character set, and C string literals with every other byte escaped. Nothing from a model reaches
// generated source except through these functions.
#pragma once

#include <cstddef>
#include <string>

namespace aotc {

// Every byte outside [A-Za-z0-9_] becomes '_', runs of '_' collapse, leading '_' are dropped, at
// most `max_len` characters; never empty ("x" when nothing is left). May start with a digit:
// callers add a prefix.
std::string sanitize_identifier(const std::string& text, size_t max_len = 40);

// Text safe inside a // or /* */ comment: [A-Za-z0-9 _.,:;=()[]+<>-] kept, anything else (newline,
// backslash, '*', '/', '?', quotes, '#', non-ASCII) becomes '_'; at most `max_len` characters.
std::string sanitize_comment(const std::string& text, size_t max_len = 160);

// A C string literal (with the quotes) holding exactly `text`'s bytes: letters, digits and '_' as
// is, every other byte as a three-digit octal escape (cannot merge with following characters and
// cannot form trigraphs).
std::string c_string_literal(const std::string& text);

// A valid C identifier for an ABI prefix: sanitize_identifier, with a leading '_' when it would
// start with a digit. Empty input gives "model".
std::string abi_prefix(const std::string& text);

}  // namespace aotc
