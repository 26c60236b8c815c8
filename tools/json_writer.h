// A small JSON writer for the compile report and aotc-run's results. Strings from models are
// hostile: every string is escaped (quotes, backslashes, control bytes, invalid UTF-8 -> \u00XX),
// and non-finite numbers become null, so the output always parses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"

namespace aotc {

std::string json_escape(const std::string& text);  // with the surrounding quotes

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(const std::string& k);  // inside an object, before each value
  JsonWriter& value(const std::string& v);
  JsonWriter& value(const char* v) { return value(std::string(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(int64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(bool v);
  JsonWriter& null();
  JsonWriter& int_array(const std::vector<int64_t>& values);
  const std::string& str() const { return out_; }

 private:
  void separator();
  void indent();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

// Writes `text` to `path` through a temporary file and rename, so readers never see half a file.
Status write_file_atomically(const std::string& path, const std::string& text);

}  // namespace aotc
