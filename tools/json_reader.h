// A small JSON reader (RFC 8259 values: objects, arrays, strings with escapes, numbers, true,
// false, null) for files aotc writes and reads back, e.g. the calibration cache. Input may be
// hostile: depth and size are bounded, every error is a Status naming the byte offset.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/status.h"

namespace aotc {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;  // duplicate keys: an error

  const JsonValue* find(const std::string& key) const;  // nullptr if absent or not an object
};

Expected<JsonValue> parse_json(const std::string& text);

}  // namespace aotc
