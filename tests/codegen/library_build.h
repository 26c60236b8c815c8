// Test helper shared by the codegen tests that compile a whole library with nvcc: build `g` into a
// temporary folder and return the generated .cu sources (empty when compile_library failed; the
// failure and a missing .so are recorded as test failures).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen_test_util.h"

namespace aotc {
namespace test {

inline std::string compile_block_sources(Graph& g, const MemoryPlan& plan, const std::vector<std::string>& archs,
                                         const std::string& cutlass_include, const std::string& tag) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("aotc-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  CodegenOptions o;
  o.name = "block";
  o.output_path = (dir / "libblock.so").string();
  o.emit_source_dir = (dir / "src").string();
  o.nvcc = find_nvcc();
  o.archs = archs;
  o.aotc_version = "test";
  o.cutlass_include_dir = cutlass_include;
  auto stats = compile_library(g, plan, o);
  EXPECT_TRUE(stats.is_ok()) << stats.status().message();
  EXPECT_TRUE(fs::exists(dir / "libblock.so"));
  std::string sources;
  if (stats.is_ok())
    for (const auto& e : fs::directory_iterator(dir / "src"))
      if (e.path().extension() == ".cu") sources += read_file(e.path());
  fs::remove_all(dir);
  return sources;
}

// `g`'s library sources rendered for sm_90 with CUTLASS's headers at `cutlass_include` (nothing
// compiled but the compile-time params builder, whose program is cached in a fresh folder that is
// removed before returning): what the host-params tests inspect.
inline Expected<LibrarySources> render_sm90_sources(const Graph& g, const MemoryPlan& plan,
                                                    const std::string& cutlass_include, const std::string& tag) {
  namespace fs = std::filesystem;
  const fs::path cache = fs::temp_directory_path() / ("aotc-" + tag + "-cache-" + std::to_string(getpid()));
  CodegenOptions o;
  o.name = "block";
  o.archs = {"sm_90"};
  o.nvcc = find_nvcc();
  o.cutlass_include_dir = cutlass_include;
  o.kernel_cache_dir = cache.string();
  auto src = render_library_sources(g, plan, o);
  fs::remove_all(cache);
  return src;
}

}  // namespace test
}  // namespace aotc
