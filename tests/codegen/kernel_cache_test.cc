// The nvcc output cache (codegen/kernel_cache.h) and CUTLASS discovery (codegen/cutlass_dir.h):
// the key follows source, nvcc version, flags and CUTLASS version but not file paths; concurrent
// writers and readers never see a partial entry; compile_library skips nvcc on a hit (a fake nvcc
// counts its runs), compiles again when flags change or the cache is off; a template that
// includes CUTLASS fails in one line without the headers and gets -I<dir> with them.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <thread>

#include "codegen/codegen.h"
#include "codegen/cutlass_dir.h"
#include "codegen/embedded_files.h"
#include "codegen/kernel_cache.h"
#include "codegen_test_util.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {
namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("aotc-kcache-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

int count_lines(const fs::path& p) {
  std::string text = test::read_file(p);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

TEST(KernelCache, KeyFollowsSourceVersionAndFlagsButNotPaths) {
  const std::vector<std::string> argv = {"/usr/local/cuda/bin/nvcc", "--fatbin", "-O3", "-I/x/cutlass",
                                         "-gencode", "arch=compute_90,code=sm_90", "-o",
                                         "m_dev0.fatbin", "m_dev0.cu"};
  const std::string key = kernel_cache_key("src", "nvcc 13.0", argv, "");
  EXPECT_EQ(key.size(), 64u);
  std::vector<std::string> moved = argv;
  moved[0] = "/opt/cuda/bin/nvcc";
  moved[3] = "-I/elsewhere";
  moved[7] = "other_dev3.fatbin";
  moved[8] = "other_dev3.cu";
  EXPECT_EQ(kernel_cache_key("src", "nvcc 13.0", moved, ""), key);
  std::vector<std::string> arch = argv;
  arch[5] = "arch=compute_87,code=sm_87";
  EXPECT_NE(kernel_cache_key("src", "nvcc 13.0", arch, ""), key);
  std::vector<std::string> opt = argv;
  opt[2] = "-O2";
  EXPECT_NE(kernel_cache_key("src", "nvcc 13.0", opt, ""), key);
  std::vector<std::string> no_include = argv;
  no_include.erase(no_include.begin() + 3);
  EXPECT_NE(kernel_cache_key("src", "nvcc 13.0", no_include, ""), key);
  EXPECT_NE(kernel_cache_key("src2", "nvcc 13.0", argv, ""), key);
  EXPECT_NE(kernel_cache_key("src", "nvcc 13.1", argv, ""), key);
  EXPECT_NE(kernel_cache_key("src", "nvcc 13.0", argv, "cutlass 4.2"), key);
  // Fields are delimited: moving bytes between source and version changes the key.
  EXPECT_NE(kernel_cache_key("srcn", "vcc 13.0", argv, ""), kernel_cache_key("src", "nvcc 13.0", argv, ""));
}

// A fatbin depends on library_params.cuh when its source includes it: the header's text is part
// of the key, so an aotc with another version of it never reuses the old fatbin.
TEST(KernelCache, KeyCoversTheDeviceHeadersTheSourceIncludes) {
  const std::string with = "// x\n#include \"library_params.cuh\"\n__global__ void k() {}\n";
  const std::string part = included_device_headers(with);
  const EmbeddedFile* header = find_embedded_file("templates/library_params.cuh");
  ASSERT_NE(header, nullptr);
  EXPECT_NE(part.find(header->text()), std::string::npos);
  EXPECT_EQ(included_device_headers("__global__ void k() {}\n"), "");
  const std::vector<std::string> argv = {"nvcc", "--fatbin", "-o", "a.fatbin", "a.cu"};
  EXPECT_NE(kernel_cache_key(with, "nvcc 13.0", argv, part),
            kernel_cache_key(with, "nvcc 13.0", argv, part + "// changed"));
}

TEST(KernelCache, DefaultDirFollowsXdgThenHome) {
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  const char* old_home = std::getenv("HOME");
  std::string saved_xdg = old_xdg ? old_xdg : "", saved_home = old_home ? old_home : "";
  setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(default_kernel_cache_dir(), "/x/cache/aotc");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(default_kernel_cache_dir(), "/home/u/.cache/aotc");
  unsetenv("HOME");
  EXPECT_EQ(default_kernel_cache_dir(), "");
  if (old_xdg) setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  if (old_home) setenv("HOME", saved_home.c_str(), 1);
}

// $AOTC_KERNEL_LIBRARY's folders where it is set (set and empty: none); else the folder beside
// the executable's, only where it exists (this test binary has none beside it).
TEST(KernelCache, DefaultKernelLibraryDirs) {
  const char* old = std::getenv("AOTC_KERNEL_LIBRARY");
  const std::string saved = old ? old : "";
  setenv("AOTC_KERNEL_LIBRARY", "/a/lib::/b/lib", 1);
  EXPECT_EQ(default_kernel_library_dirs(), (std::vector<std::string>{"/a/lib", "/b/lib"}));
  setenv("AOTC_KERNEL_LIBRARY", "", 1);
  EXPECT_TRUE(default_kernel_library_dirs().empty());
  unsetenv("AOTC_KERNEL_LIBRARY");
  std::error_code ec;
  const fs::path beside = fs::read_symlink("/proc/self/exe", ec).parent_path().parent_path() / "share" / "aotc" / "kernels";
  EXPECT_EQ(default_kernel_library_dirs().empty(), !fs::is_directory(beside, ec));
  if (old) setenv("AOTC_KERNEL_LIBRARY", saved.c_str(), 1);
}

TEST(KernelCache, ContainsOnlyNonEmptyEntries) {
  fs::path dir = fresh_dir("contains");
  KernelCache cache((dir / "cache").string());
  EXPECT_FALSE(cache.contains("k"));
  std::ofstream(dir / "src", std::ios::binary) << "fatbin";
  ASSERT_TRUE(cache.store("k", (dir / "src").string()).is_ok());
  EXPECT_TRUE(cache.contains("k"));
  EXPECT_FALSE(cache.contains("other"));
  std::ofstream(dir / "cache" / "empty.fatbin", std::ios::binary);
  EXPECT_FALSE(cache.contains("empty"));
  EXPECT_FALSE(KernelCache("").contains("k"));
}

TEST(KernelCache, ConcurrentWritersAndReadersSeeWholeEntries) {
  fs::path dir = fresh_dir("concurrent");
  const size_t kBytes = 1 << 20;
  for (char c : {'A', 'B'}) std::ofstream(dir / std::string(1, c), std::ios::binary) << std::string(kBytes, c);
  KernelCache cache((dir / "cache").string());
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, fetched{0};
  std::vector<std::thread> writers;
  for (char c : {'A', 'B'})
    writers.emplace_back([&, c] {
      for (int i = 0; i < 40; ++i)
        if (!cache.store("k", (dir / std::string(1, c)).string()).is_ok()) ++bad;
    });
  std::thread reader([&] {
    fs::path dest = dir / "fetched";
    while (!stop) {
      if (!cache.fetch("k", dest.string())) continue;
      std::string got = test::read_file(dest);
      if (got.size() != kBytes || (got != std::string(kBytes, 'A') && got != std::string(kBytes, 'B'))) ++bad;
      ++fetched;
    }
  });
  for (std::thread& t : writers) t.join();
  stop = true;
  reader.join();
  EXPECT_EQ(bad, 0);
  EXPECT_GT(fetched, 0);
  for (const auto& e : fs::directory_iterator(dir / "cache"))  // only the entry, no temp files
    EXPECT_EQ(e.path().filename().string(), "k.fatbin");
  fs::remove_all(dir);
}

// A fake nvcc: `--version` prints a version; otherwise it logs its arguments and writes -o.
fs::path write_fake_nvcc(const fs::path& dir, const std::string& version = "fake nvcc 1.0") {
  fs::path script = dir / "fake_nvcc";
  std::ofstream(script) << "#!/bin/sh\n"
                           "if [ \"$1\" = --version ]; then echo '" << version << "'; exit 0; fi\n"
                           "echo \"$@\" >> '" << (dir / "nvcc_calls").string() << "'\n"
                           "out=; prev=\n"
                           "for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
                           "printf 'FATBIN-%s' \"$#\" > \"$out\"\n";
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

TEST(KernelCache, CompileLibrarySkipsNvccOnHits) {
  if (!test::tool_runs("cc")) GTEST_SKIP() << "cc not available";
  fs::path dir = fresh_dir("compile");
  Graph g = test::relu_sigmoid_graph({5, 3});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan = test::linear_plan(g);
  CodegenOptions o;
  o.output_path = (dir / "libcached.so").string();
  o.nvcc = write_fake_nvcc(dir).string();
  o.kernel_cache_dir = (dir / "cache").string();
  std::vector<std::string> lines;
  o.progress = [&](const std::string& l) { lines.push_back(l); };
  auto first = compile_library(g, plan, o);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  EXPECT_TRUE(first->cache_enabled);
  EXPECT_EQ(first->cache_hits, 0);
  EXPECT_EQ(first->cache_misses, 1);
  EXPECT_EQ(count_lines(dir / "nvcc_calls"), 1);
  fs::remove(o.output_path);
  lines.clear();
  auto second = compile_library(g, plan, o);
  ASSERT_TRUE(second.is_ok()) << second.status().message();
  EXPECT_EQ(second->cache_hits, 1);
  EXPECT_EQ(second->cache_misses, 0);
  EXPECT_EQ(count_lines(dir / "nvcc_calls"), 1) << "nvcc ran on a cache hit";
  EXPECT_TRUE(fs::exists(o.output_path));
  bool reported = false;
  for (const std::string& l : lines) reported |= l.find("kernel cache: 1 hit(s), 0 miss(es)") != std::string::npos;
  EXPECT_TRUE(reported);
  // Other flags: a miss.
  o.archs = {"sm_87"};
  auto other = compile_library(g, plan, o);
  ASSERT_TRUE(other.is_ok());
  EXPECT_EQ(other->cache_misses, 1);
  EXPECT_EQ(count_lines(dir / "nvcc_calls"), 2);
  // Another nvcc version: a miss.
  o.nvcc = write_fake_nvcc(dir, "fake nvcc 2.0").string();
  auto newer = compile_library(g, plan, o);
  ASSERT_TRUE(newer.is_ok());
  EXPECT_EQ(newer->cache_misses, 1);
  EXPECT_EQ(count_lines(dir / "nvcc_calls"), 3);
  // --no-cache: nvcc always runs, the cache is not consulted.
  o.kernel_cache_dir.clear();
  auto off = compile_library(g, plan, o);
  ASSERT_TRUE(off.is_ok());
  EXPECT_FALSE(off->cache_enabled);
  EXPECT_EQ(off->cache_hits + off->cache_misses, 0);
  EXPECT_EQ(count_lines(dir / "nvcc_calls"), 4);
  fs::remove_all(dir);
}

Expected<Lowering> cutlass_lower(const Node& node, const Graph&) {
  KernelStep k;
  k.template_name = "test_uses_cutlass";
  k.holes = {{"comment", "cutlass user"}};
  k.args = {node.inputs[0], node.outputs[0]};
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

TEST(KernelCache, CutlassTemplatesNeedTheHeadersAndKeyOnTheirVersion) {
  if (!test::tool_runs("cc")) GTEST_SKIP() << "cc not available";
  fs::path dir = fresh_dir("cutlass");
  OpRegistry reg;
  auto built_graph = test::one_test_op_graph(reg, "UsesCutlass", cutlass_lower, "c");
  ASSERT_TRUE(built_graph.is_ok()) << built_graph.status().message();
  Graph& g = *built_graph;
  CodegenOptions o;
  o.output_path = (dir / "libcut.so").string();
  o.nvcc = write_fake_nvcc(dir).string();
  o.registry = &reg;
  o.kernel_cache_dir = (dir / "cache").string();
  o.extra_templates = {{"test_uses_cutlass",
                        "// {{comment}}\n#include \"cutlass/cutlass.h\"\n"
                        "extern \"C\" __global__ void {{kernel_name}}(const float* x, float* y) {}\n"}};
  auto missing = compile_library(g, test::linear_plan(g), o);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().message(),
            "this model needs CUTLASS headers for template test_uses_cutlass; install nvidia-cutlass "
            "(pip) or pass --cutlass-dir");
  EXPECT_FALSE(fs::exists(dir / "nvcc_calls"));

  fs::path cutlass = dir / "cutlass-src";
  fs::create_directories(cutlass / "include" / "cutlass");
  std::ofstream(cutlass / "include" / "cutlass" / "cutlass.h") << "#pragma once\n";
  std::ofstream(cutlass / "include" / "cutlass" / "version.h") << "#define CUTLASS_MAJOR 4\n";
  auto found = find_cutlass_include_dir(cutlass.string());
  ASSERT_TRUE(found.is_ok()) << found.status().message();
  EXPECT_EQ(*found, (cutlass / "include").string());
  o.cutlass_include_dir = *found;
  auto built = compile_library(g, test::linear_plan(g), o);
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  EXPECT_NE(test::read_file(dir / "nvcc_calls").find("-I" + found.value()), std::string::npos);
  EXPECT_NE(test::read_file(dir / "nvcc_calls").find("--expt-relaxed-constexpr"), std::string::npos);
  auto again = compile_library(g, test::linear_plan(g), o);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->cache_hits, 1);
  // Another CUTLASS version behind the same path: a miss.
  std::ofstream(cutlass / "include" / "cutlass" / "version.h") << "#define CUTLASS_MAJOR 5\n";
  auto upgraded = compile_library(g, test::linear_plan(g), o);
  ASSERT_TRUE(upgraded.is_ok());
  EXPECT_EQ(upgraded->cache_misses, 1);
  EXPECT_EQ(count_lines(dir / "nvcc_calls"), 2);
  fs::remove_all(dir);
}

TEST(CutlassDir, ExplicitThenEnvironmentThenPip) {
  fs::path dir = fresh_dir("find");
  fs::create_directories(dir / "inc" / "cutlass");
  std::ofstream(dir / "inc" / "cutlass" / "cutlass.h") << "\n";
  const char* old_env = std::getenv("CUTLASS_DIR");
  std::string saved = old_env ? old_env : "";
  unsetenv("CUTLASS_DIR");
  EXPECT_EQ(*find_cutlass_include_dir((dir / "inc").string()), (dir / "inc").string());
  auto bad = find_cutlass_include_dir((dir / "nothing").string());
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("--cutlass-dir"), std::string::npos);
  setenv("CUTLASS_DIR", (dir / "inc").string().c_str(), 1);
  EXPECT_EQ(*find_cutlass_include_dir("", "/nonexistent/python3"), (dir / "inc").string());
  setenv("CUTLASS_DIR", (dir / "nothing").string().c_str(), 1);
  ASSERT_FALSE(find_cutlass_include_dir("").is_ok());
  unsetenv("CUTLASS_DIR");
  EXPECT_EQ(*find_cutlass_include_dir("", "/nonexistent/python3"), "");
  // The pip package, when installed (tools/install_deps.sh installs it).
  auto pip = find_cutlass_include_dir("");
  ASSERT_TRUE(pip.is_ok());
  if (pip->empty()) {
    if (old_env) setenv("CUTLASS_DIR", saved.c_str(), 1);
    fs::remove_all(dir);
    GTEST_SKIP() << "nvidia-cutlass is not installed (pip install nvidia-cutlass)";
  }
  EXPECT_NE(pip->find("cutlass_library"), std::string::npos) << *pip;
  EXPECT_TRUE(fs::exists(fs::path(*pip) / "cutlass" / "version.h"));
  EXPECT_EQ(cutlass_headers_version(*pip).size(), 64u);
  if (old_env) setenv("CUTLASS_DIR", saved.c_str(), 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace aotc
