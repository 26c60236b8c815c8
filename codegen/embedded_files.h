// The template and runtime files compiled into the aotc binary (templates/*.cu.in, templates/*.cuh,
// runtime/*), so that an installed aotc needs only nvcc and a host C compiler. The table is
// generated at build time by codegen/embed_files.cmake.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace aotc {

struct EmbeddedFile {
  const char* path;  // relative to the source root, e.g. "templates/unary_elementwise.cu.in"
  const unsigned char* data;
  size_t size;
  std::string text() const { return std::string(reinterpret_cast<const char*>(data), size); }
};

const std::vector<EmbeddedFile>& embedded_files();
// nullptr when no such file was embedded.
const EmbeddedFile* find_embedded_file(const std::string& path);

}  // namespace aotc
