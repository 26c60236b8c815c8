// Lookup over the generated table of embedded files (see embedded_files.h).
#include "codegen/embedded_files.h"

namespace aotc {

const EmbeddedFile* find_embedded_file(const std::string& path) {
  for (const EmbeddedFile& f : embedded_files())
    if (path == f.path) return &f;
  return nullptr;
}

}  // namespace aotc
