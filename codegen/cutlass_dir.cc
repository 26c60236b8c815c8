// Finding the CUTLASS headers (see cutlass_dir.h).
#include "codegen/cutlass_dir.h"

#include <cstdlib>
#include <filesystem>

#include "ir/graph.h"
#include "codegen/process.h"
#include "codegen/sha256.h"

namespace aotc {
namespace fs = std::filesystem;

std::string cutlass_include_dir_of(const std::string& dir) {
  if (dir.empty()) return "";
  std::error_code ec;
  for (const fs::path& p : {fs::path(dir), fs::path(dir) / "include"})
    if (fs::is_regular_file(p / "cutlass" / "cutlass.h", ec)) return p.string();
  return "";
}

Expected<std::string> find_cutlass_include_dir(const std::string& explicit_dir,
                                               const std::string& python) {
  if (!explicit_dir.empty()) {
    std::string inc = cutlass_include_dir_of(explicit_dir);
    if (inc.empty())
      return Status::error("--cutlass-dir '" + escape_for_message(explicit_dir) +
                           "' holds neither cutlass/cutlass.h nor include/cutlass/cutlass.h");
    return inc;
  }
  const char* env = std::getenv("CUTLASS_DIR");
  if (env && *env) {
    std::string inc = cutlass_include_dir_of(env);
    if (inc.empty())
      return Status::error("CUTLASS_DIR='" + escape_for_message(env) +
                           "' holds neither cutlass/cutlass.h nor include/cutlass/cutlass.h");
    return inc;
  }
  // pip install nvidia-cutlass: the headers ship inside the cutlass_library package.
  auto r = run_process({python, "-c",
                        "import importlib.util, os\n"
                        "s = importlib.util.find_spec('cutlass_library')\n"
                        "print(os.path.dirname(s.origin) if s and s.origin else '')\n"});
  if (!r.is_ok() || r->exit_code != 0) return std::string();
  std::string dir = r->output;
  while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
  if (dir.empty() || dir.find('\n') != std::string::npos) return std::string();
  return cutlass_include_dir_of((fs::path(dir) / "source" / "include").string());
}

std::string cutlass_headers_version(const std::string& include_dir) {
  if (include_dir.empty()) return "";
  auto h = sha256_file((fs::path(include_dir) / "cutlass" / "version.h").string());
  return h.is_ok() ? *h : "";
}

bool source_uses_cutlass(const std::string& text) {
  return text.find("#include \"cutlass/") != std::string::npos ||
         text.find("#include <cutlass/") != std::string::npos ||
         text.find("#include \"kernel_forward.h\"") != std::string::npos;
}

std::vector<std::string> cutlass_extra_include_dirs(const std::string& include_dir) {
  std::vector<std::string> dirs;
  if (include_dir.empty()) return dirs;
  const fs::path root = fs::path(include_dir).parent_path();
  // tools/util/include: cutlass/util/packed_stride.hpp, which CUTLASS 3.x's convolutions include.
  // examples/88_hopper_fmha: the sm_90a FMHA (templates/cutlass_fmha_sm90.cu.in).
  for (const char* sub : {"examples/41_fused_multi_head_attention", "examples/88_hopper_fmha", "tools/util/include"}) {
    std::error_code ec;
    const fs::path d = root / sub;
    if (fs::is_directory(d, ec)) dirs.push_back(d.string());
  }
  return dirs;
}

}  // namespace aotc
