// A cache of nvcc's output (fatbins) keyed by what determines it: SHA-256 over the rendered .cu
// source, the `nvcc --version` text, nvcc's arguments without file paths, the version of the
// CUTLASS headers when the source uses them, and the text of the headers aotc writes beside the
// source that it includes (codegen.h: included_device_headers). Entries are files <dir>/<key>.fatbin. Safe under
// concurrent aotc runs: an entry is written to a temp file in the cache directory and renamed into
// place, so a reader sees a whole file or none. A cache that cannot be read or written only costs
// a compile (misses), never a failed build.
#pragma once

#include <string>
#include <vector>

#include "ir/status.h"

namespace aotc {

// $XDG_CACHE_HOME/aotc, else $HOME/.cache/aotc; "" when neither variable is set.
std::string default_kernel_cache_dir();

// The kernel libraries aotc reads by default (CodegenOptions::kernel_library_dirs; the same
// format as the cache): $AOTC_KERNEL_LIBRARY's colon-separated folders where it is set (set and
// empty: none), else <the folder of aotc's executable>/../share/aotc/kernels where that exists
// (tools/build_kernel_library.sh installs it there).
std::vector<std::string> default_kernel_library_dirs();

// The key (64 hex digits). `nvcc_argv` is the full command: argv[0], the `-o` value, the input
// file (the last argument) and the values of -I are left out (paths differ between runs; what is
// behind an -I is covered by `headers_version`).
std::string kernel_cache_key(const std::string& source, const std::string& nvcc_version,
                             const std::vector<std::string>& nvcc_argv,
                             const std::string& headers_version);

class KernelCache {
 public:
  explicit KernelCache(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }
  // Copies the entry to `dest` (through a temp file next to it); false on a miss or any error.
  bool fetch(const std::string& key, const std::string& dest) const;
  // Whether an entry for `key` is there (a non-empty file); a later fetch may still miss.
  bool contains(const std::string& key) const;
  // Stores `src` under `key`: temp file in the cache dir, then rename(). Creates the directory.
  Status store(const std::string& key, const std::string& src) const;

 private:
  std::string path(const std::string& key) const;
  std::string dir_;
};

// The kernel libraries (read-only caches, CodegenOptions::kernel_library_dirs), in order: whether
// one holds `key`, and the first one's entry copied to `dest` (false when none has it).
bool libraries_contain(const std::vector<std::string>& dirs, const std::string& key);
bool fetch_from_libraries(const std::vector<std::string>& dirs, const std::string& key, const std::string& dest);

}  // namespace aotc
