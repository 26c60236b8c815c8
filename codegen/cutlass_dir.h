// Where the CUTLASS headers come from (for library-kernel templates that include "cutlass/..."):
// --cutlass-dir, else $CUTLASS_DIR, else the installed PyPI package nvidia-cutlass
// (cutlass_library/source/include, found with python3's importlib without importing it). A
// directory is accepted as the include dir itself (DIR/cutlass/cutlass.h) or a CUTLASS checkout
// (DIR/include/cutlass/cutlass.h).
#pragma once

#include <string>
#include <vector>

#include "ir/status.h"

namespace aotc {

// DIR or DIR/include, whichever holds cutlass/cutlass.h; "" when neither does.
std::string cutlass_include_dir_of(const std::string& dir);

// An explicit or $CUTLASS_DIR directory without the headers is an error naming it; no CUTLASS
// anywhere is "" (codegen then fails only for a model whose templates need it).
Expected<std::string> find_cutlass_include_dir(const std::string& explicit_dir,
                                               const std::string& python = "python3");

// SHA-256 of <include>/cutlass/version.h (a cache-key ingredient); "" when unreadable.
std::string cutlass_headers_version(const std::string& include_dir);

// True when a template's text includes CUTLASS headers (or CUTLASS's attention example kernel).
bool source_uses_cutlass(const std::string& text);

// Folders next to the headers that some templates include from: the fused multi-head attention
// kernel of CUTLASS's examples (examples/41_fused_multi_head_attention: kernel_forward.h), which
// the PyPI package ships beside include/, and tools/util/include (cutlass/util/packed_stride.hpp,
// included by CUTLASS 3.x's convolutions). Only those that exist.
std::vector<std::string> cutlass_extra_include_dirs(const std::string& include_dir);

}  // namespace aotc
