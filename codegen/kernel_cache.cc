// The nvcc output cache (see kernel_cache.h).
#include "codegen/kernel_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "codegen/sha256.h"

namespace aotc {
namespace fs = std::filesystem;

namespace {

// A name no other writer (thread or process) uses at the same time.
std::string unique_suffix() {
  static std::atomic<unsigned long> counter{0};
  return ".tmp-" + std::to_string(getpid()) + "-" +
         std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000000007UL) +
         "-" + std::to_string(counter++);
}

void add_field(Sha256& h, const std::string& s) {
  // Length-prefixed, so no two different field lists hash the same bytes.
  std::string len = std::to_string(s.size()) + ":";
  h.update(len.data(), len.size());
  h.update(s.data(), s.size());
}

}  // namespace

std::string default_kernel_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return (fs::path(xdg) / "aotc").string();
  const char* home = std::getenv("HOME");
  if (home && *home) return (fs::path(home) / ".cache" / "aotc").string();
  return "";
}

std::vector<std::string> default_kernel_library_dirs() {
  const char* env = std::getenv("AOTC_KERNEL_LIBRARY");
  if (env) {  // set (even empty: no library)
    std::vector<std::string> out;
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      size_t colon = s.find(':', start);
      if (colon == std::string::npos) colon = s.size();
      if (colon > start) out.push_back(s.substr(start, colon - start));
      start = colon + 1;
    }
    return out;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const fs::path lib = exe.parent_path().parent_path() / "share" / "aotc" / "kernels";
  if (fs::is_directory(lib, ec)) return {lib.string()};
  return {};
}

std::string kernel_cache_key(const std::string& source, const std::string& nvcc_version,
                             const std::vector<std::string>& nvcc_argv,
                             const std::string& headers_version) {
  Sha256 h;
  add_field(h, "aotc kernel cache v1");
  add_field(h, source);
  add_field(h, nvcc_version);
  add_field(h, headers_version);
  for (size_t i = 1; i + 1 < nvcc_argv.size(); ++i) {  // not argv[0], not the input file
    const std::string& a = nvcc_argv[i];
    if ((a == "-o" || a == "-I") && i + 2 < nvcc_argv.size()) {
      add_field(h, a);
      ++i;  // the path after it
      continue;
    }
    if (a.rfind("-I", 0) == 0) {
      add_field(h, "-I");
      continue;
    }
    add_field(h, a);
  }
  return h.hex_digest();
}

std::string KernelCache::path(const std::string& key) const {
  return (fs::path(dir_) / (key + ".fatbin")).string();
}

bool libraries_contain(const std::vector<std::string>& dirs, const std::string& key) {
  for (const std::string& d : dirs)
    if (KernelCache(d).contains(key)) return true;
  return false;
}

bool fetch_from_libraries(const std::vector<std::string>& dirs, const std::string& key, const std::string& dest) {
  for (const std::string& d : dirs)
    if (KernelCache(d).fetch(key, dest)) return true;
  return false;
}

bool KernelCache::contains(const std::string& key) const {
  if (dir_.empty()) return false;
  std::error_code ec;
  return fs::is_regular_file(path(key), ec) && fs::file_size(path(key), ec) > 0 && !ec;
}

bool KernelCache::fetch(const std::string& key, const std::string& dest) const {
  if (dir_.empty()) return false;
  std::error_code ec;
  if (!fs::is_regular_file(path(key), ec) || fs::file_size(path(key), ec) == 0 || ec) return false;
  std::string tmp = dest + unique_suffix();
  fs::copy_file(path(key), tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(tmp, dest, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return false;
  }
  return true;
}

Status KernelCache::store(const std::string& key, const std::string& src) const {
  if (dir_.empty()) return Status::ok();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  std::string tmp = path(key) + unique_suffix();
  if (!ec) fs::copy_file(src, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(tmp, path(key), ec);  // atomic on one file system: whole file or none
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return Status::error("kernel cache: cannot write " + path(key) + ": " + ec.message());
  }
  return Status::ok();
}

}  // namespace aotc
