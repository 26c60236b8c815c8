// End to end: a tiny graph (x -> Relu -> Sigmoid -> y, with hostile names) compiled to a real .so
// with nvcc and cc. Checks what can be checked without a GPU (exported symbols, NEEDED entries, a C
// program linking against the generated header, ABI misuse, the emitted Makefile, atomic output)
// and, when a GPU is present, runs the library and compares with math done here in double.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include "codegen/codegen.h"
#include "codegen_test_util.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {
namespace fs = std::filesystem;
using test::read_file;

const Shape kShape = {2, 3, 7};  // 42 elements: not a multiple of anything convenient

struct Built {
  Status status = Status::ok();
  fs::path dir, lib, header, emit;
  bool tools = false;
};

Built& built() {
  static Built b = [] {
    Built r;
    r.tools = test::tool_runs(test::find_nvcc()) && test::tool_runs("cc");
    if (!r.tools) return r;
    r.dir = fs::temp_directory_path() / ("aotc-codegen-test-" + std::to_string(getpid()));
    fs::remove_all(r.dir);
    fs::create_directories(r.dir);
    test::remove_at_exit(r.dir);
    r.lib = r.dir / "libtiny.so";
    r.header = r.dir / "tiny.h";
    r.emit = r.dir / "src";
    Graph g = test::relu_sigmoid_graph(kShape, "in\"put*/", "mid\n#include <x>", "out'put",
                                       "relu */ #include", "sig\\moid");
    Status s = infer_shapes(g);
    if (!s.is_ok()) {
      r.status = s;
      return r;
    }
    MemoryPlan plan = test::linear_plan(g);
    CodegenOptions o;
    o.output_path = r.lib.string();
    o.emit_source_dir = r.emit.string();
    o.nvcc = test::find_nvcc();
    o.archs = {"sm_90", "sm_87"};
    o.aotc_version = "test";
    o.model_hash = "0123abcd";
    auto stats = compile_library(g, plan, o);
    r.status = stats.status();
    return r;
  }();
  return b;
}

#define REQUIRE_BUILT()                                                     \
  do {                                                                      \
    if (!built().tools) GTEST_SKIP() << "nvcc or cc not available";         \
    ASSERT_TRUE(built().status.is_ok()) << built().status.message();        \
  } while (0)

// Rendering alone (no nvcc): --arch must be sm_/compute_ with 2-3 digits and an optional a or f,
// --name a C identifier of at most 64 characters; anything else is refused before a file is written.
TEST(Library, ArchAndNameAreCheckedBeforeRendering) {
  Graph g = test::relu_sigmoid_graph(kShape);
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan = test::linear_plan(g);
  auto render = [&](std::vector<std::string> archs, std::string name) {
    CodegenOptions o;
    o.archs = std::move(archs);
    o.name = std::move(name);
    o.output_path = "libm.so";
    return render_library_sources(g, plan, o);
  };
  for (const char* arch : {"sm_87", "sm_90", "sm_90a", "sm_100f", "compute_87", "sm_120"})
    EXPECT_TRUE(render({arch}, "").is_ok()) << arch << ": " << render({arch}, "").status().message();
  for (const char* arch : {"", "sm_", "sm_9", "sm_9000", "sm_90b", "sm_90aa", "sm_a90", "SM_90", "sm90",
                           "compute_9", "compute_", "cm_90", "sm_90 ", " sm_90", "sm_+90", "sm_9a"}) {
    auto r = render({arch}, "");
    ASSERT_FALSE(r.is_ok()) << "'" << arch << "'";
    EXPECT_NE(r.status().message().find("is not of the form sm_XX"), std::string::npos) << r.status().message();
  }
  for (const char* name : {"m", "_", "model_1", "_9", "A"}) {
    auto r = render({"sm_90"}, name);
    ASSERT_TRUE(r.is_ok()) << name << ": " << r.status().message();
    EXPECT_EQ(r->prefix, name);
  }
  EXPECT_TRUE(render({"sm_90"}, std::string(64, 'x')).is_ok());
  for (std::string name : {std::string("9m"), std::string("a-b"), std::string("a b"), std::string("m\n"),
                           std::string("\xc3\xa9"), std::string(65, 'x'), std::string("a\0b", 3)}) {
    auto r = render({"sm_90"}, name);
    ASSERT_FALSE(r.is_ok()) << name;
    EXPECT_NE(r.status().message().find("is not a C identifier"), std::string::npos) << r.status().message();
  }
}

TEST(Library, IsProducedWithHeaderAndSources) {
  REQUIRE_BUILT();
  EXPECT_TRUE(fs::exists(built().lib));
  EXPECT_TRUE(fs::exists(built().header));
  for (const char* f : {"tiny_dev0.cu", "tiny_model.c", "tiny.h", "tiny_blobs.S", "tiny_weights.bin",
                        "tiny_dev0.fatbin", "Makefile", "aotc_rt_create.c", "aotc_rt_driver.c",
                        "aotc_rt_launch.c", "aotc_rt_graph.c", "aotc_rt_profile.c", "aotc_rt_check.c", "aotc_rt_internal.h",
                        "aotc_runtime.h", "aotc_cuda_api.h", "library_params.cuh"})
    EXPECT_TRUE(fs::exists(built().emit / f)) << f;
  // No temp file left next to the output.
  for (const auto& e : fs::directory_iterator(built().dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

TEST(Library, ExportsOnlyPrefixedSymbols) {
  REQUIRE_BUILT();
  auto nm = run_process({"nm", "-D", "--defined-only", built().lib.string()});
  ASSERT_TRUE(nm.is_ok());
  ASSERT_EQ(nm->exit_code, 0) << nm->output;
  int count = 0;
  std::istringstream lines(nm->output);
  for (std::string line; std::getline(lines, line);) {
    std::string sym = line.substr(line.find_last_of(' ') + 1);
    EXPECT_EQ(sym.rfind("tiny_", 0), 0u) << "unprefixed export: " << line;
    ++count;
  }
  EXPECT_EQ(count, 25);  // create destroy run run_host last_error, 2 counts, 2x5 io, 2 sizes, 6 profile
}

TEST(Library, NeedsNothingFromCudaOrTheCompiler) {
  REQUIRE_BUILT();
  auto re = run_process({"readelf", "-d", built().lib.string()});
  ASSERT_TRUE(re.is_ok());
  ASSERT_EQ(re->exit_code, 0) << re->output;
  std::istringstream lines(re->output);
  int needed = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    ++needed;
    for (const char* bad : {"cuda", "cublas", "protobuf", "onnx", "stdc++", "nvrtc"})
      EXPECT_EQ(line.find(bad), std::string::npos) << line;
  }
  EXPECT_GE(needed, 1);  // libc at least
}

TEST(Library, CProgramLinksAgainstTheHeader) {
  REQUIRE_BUILT();
  const fs::path src = built().dir / "main.c";
  std::ofstream(src) << R"C(
#include <stdio.h>
#include <string.h>
#include "tiny.h"
int main(void) {
  int bad = 0;
  if (tiny_num_inputs() != 1 || tiny_num_outputs() != 1) bad |= 1;
  if (strcmp(tiny_input_name(0), "in\"put*/") != 0) bad |= 2;
  if (strcmp(tiny_output_name(0), "out'put") != 0) bad |= 4;
  if (tiny_input_dtype(0) != 1 || tiny_input_rank(0) != 3) bad |= 8;
  const long long* s = tiny_output_shape(0);
  if (!s || s[0] != 2 || s[1] != 3 || s[2] != 7) bad |= 16;
  if (tiny_input_bytes(0) != 168 || tiny_output_bytes(0) != 168) bad |= 32;
  if (tiny_input_name(1) || tiny_output_name(-1) || tiny_input_rank(5) != -1 ||
      tiny_output_bytes(3) != 0 || tiny_input_shape(1)) bad |= 64;
  if (tiny_arena_bytes() != 256 || tiny_weight_bytes() != 0) bad |= 128;
  tiny_model* m = 0;
  int rc = tiny_create(&m, 0, 0, 0);
  if (rc == AOTC_OK) tiny_destroy(m);
  else if (rc != AOTC_ERROR_NO_DRIVER || m || !tiny_last_error(0)[0]) bad |= 256;
  printf("create=%d bad=%d msg=%s\n", rc, bad, tiny_last_error(0));
  return bad;
}
)C";
  const fs::path exe = built().dir / "main";
  auto cc = run_process({"cc", "-std=c11", "-Wall", "-Werror", "-I", built().dir.string(), src.string(),
                         "-L", built().dir.string(), "-ltiny", "-o", exe.string()});
  ASSERT_TRUE(cc.is_ok());
  ASSERT_EQ(cc->exit_code, 0) << cc->output;
  auto env_run = run_process({"env", "LD_LIBRARY_PATH=" + built().dir.string(), exe.string()});
  ASSERT_TRUE(env_run.is_ok());
  EXPECT_EQ(env_run->exit_code, 0) << env_run->output;
}

// The ABI through dlopen, as an application loading a model at run time would use it.
struct Abi {
  void* lib = nullptr;
  int (*create)(void**, int, void*, const void*) = nullptr;
  void (*destroy)(void*) = nullptr;
  int (*run)(void*, const void* const*, void* const*, void*) = nullptr;
  int (*run_host)(void*, const void* const*, void* const*) = nullptr;
  const char* (*last_error)(const void*) = nullptr;
  bool load(const fs::path& path, const std::string& p) {
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    *reinterpret_cast<void**>(&create) = dlsym(lib, (p + "_create").c_str());
    *reinterpret_cast<void**>(&destroy) = dlsym(lib, (p + "_destroy").c_str());
    *reinterpret_cast<void**>(&run) = dlsym(lib, (p + "_run").c_str());
    *reinterpret_cast<void**>(&run_host) = dlsym(lib, (p + "_run_host").c_str());
    *reinterpret_cast<void**>(&last_error) = dlsym(lib, (p + "_last_error").c_str());
    return create && destroy && run && run_host && last_error;
  }
};

TEST(Library, AbiMisuseReturnsStatusCodes) {
  REQUIRE_BUILT();
  Abi abi;
  ASSERT_TRUE(abi.load(built().lib, "tiny")) << dlerror();
  EXPECT_EQ(abi.create(nullptr, 0, nullptr, nullptr), 1);
  EXPECT_NE(std::string(abi.last_error(nullptr)).find("NULL"), std::string::npos);
  void* m = reinterpret_cast<void*>(1);
  EXPECT_EQ(abi.create(&m, 0, reinterpret_cast<void*>(0x1001), nullptr), 1);  // misaligned
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::string(abi.last_error(nullptr)).find("aligned"), std::string::npos);
  float in[42] = {}, out[42] = {};
  const void* ins[] = {in};
  void* outs[] = {out};
  EXPECT_EQ(abi.run(nullptr, ins, outs, nullptr), 1);
  EXPECT_EQ(abi.run_host(nullptr, ins, outs), 1);
  abi.destroy(nullptr);  // a no-op
  std::string why;
  if (!test::have_gpu(&why)) {
    EXPECT_EQ(abi.create(&m, 0, nullptr, nullptr), 2) << abi.last_error(nullptr);
    EXPECT_EQ(m, nullptr);
    GTEST_SKIP() << "no CUDA GPU: " << why << " (misuse of a live handle not tested)";
  }
  ASSERT_EQ(abi.create(&m, 0, nullptr, nullptr), 0) << abi.last_error(nullptr);
  EXPECT_EQ(abi.run(m, nullptr, outs, nullptr), 1);
  EXPECT_EQ(abi.run(m, ins, nullptr, nullptr), 1);
  const void* null_in[] = {nullptr};
  EXPECT_EQ(abi.run(m, null_in, outs, nullptr), 1);
  EXPECT_NE(std::string(abi.last_error(m)).find("input 0 is NULL"), std::string::npos);
  EXPECT_EQ(abi.create(&m, 99, nullptr, nullptr), 1);
  abi.destroy(m);
}

TEST(Library, MakefileRebuildsTheLibrary) {
  REQUIRE_BUILT();
  if (!test::tool_runs("make")) GTEST_SKIP() << "make not available";
  auto clean = run_process({"make", "-C", built().emit.string(), "clean"});
  ASSERT_TRUE(clean.is_ok());
  auto make = run_process({"make", "-C", built().emit.string()});
  ASSERT_TRUE(make.is_ok());
  ASSERT_EQ(make->exit_code, 0) << make->output;
  EXPECT_TRUE(fs::exists(built().emit / "tiny_dev0.fatbin"));
  EXPECT_TRUE(fs::exists(built().emit / "libtiny.so"));
  EXPECT_NE(make->output.find("-gencode arch=compute_87,code=sm_87"), std::string::npos) << make->output;
  EXPECT_NE(make->output.find("-gencode arch=compute_90,code=compute_90"), std::string::npos);
  EXPECT_EQ(make->output.find("fast_math"), std::string::npos);
}

TEST(Library, RunsOnGpuAndMatchesReference) {
  REQUIRE_BUILT();
  std::string why;
  if (!test::have_gpu(&why)) GTEST_SKIP() << "no CUDA GPU: " << why;
  Abi abi;
  ASSERT_TRUE(abi.load(built().lib, "tiny")) << dlerror();
  void* m = nullptr;
  ASSERT_EQ(abi.create(&m, 0, nullptr, nullptr), 0) << abi.last_error(nullptr);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-6.f, 6.f);
  std::vector<float> x(42), y(42, NAN);  // poisoned
  for (float& v : x) v = dist(rng);
  x[0] = -0.f;
  x[1] = NAN;
  x[2] = INFINITY;
  x[3] = -INFINITY;
  const void* ins[] = {x.data()};
  void* outs[] = {y.data()};
  for (int round = 0; round < 2; ++round) {  // the second run reuses the staging buffers
    ASSERT_EQ(abi.run_host(m, ins, outs), 0) << abi.last_error(m);
    for (size_t i = 0; i < x.size(); ++i) {
      double r = x[i] < 0 ? 0.0 : static_cast<double>(x[i]);
      double ref = 1.0 / (1.0 + std::exp(-r));
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(y[i])) << i;
        continue;
      }
      EXPECT_NEAR(y[i], ref, 1e-5 + 1e-4 * std::fabs(ref)) << "element " << i << " x=" << x[i];
    }
    std::fill(y.begin(), y.end(), NAN);
  }
  // A second handle sharing the weights runs too.
  void* m2 = nullptr;
  ASSERT_EQ(abi.create(&m2, 0, nullptr, m), 0) << abi.last_error(nullptr);
  ASSERT_EQ(abi.run_host(m2, ins, outs), 0) << abi.last_error(m2);
  EXPECT_NEAR(y[10], 1.0 / (1.0 + std::exp(-(x[10] < 0 ? 0.0 : x[10]))), 1e-5);
  abi.destroy(m2);
  abi.destroy(m);
}

// The reference of the tiny model, in double: sigmoid(relu(x)).
double tiny_reference(float x) {
  double r = x < 0 ? 0.0 : static_cast<double>(x);
  return 1.0 / (1.0 + std::exp(-r));
}

std::vector<float> tiny_input(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-6.f, 6.f);
  std::vector<float> x(42);
  for (float& v : x) v = dist(rng);
  return x;
}

// The optional profiling extension: prefixed, introspectable without a GPU (labels sanitized from
// the hostile node names, kinds, compile-time FLOPs and bytes), misuse returns status codes, and on
// a GPU profile_run gives a time per step and the same results as run().
TEST(Library, ProfileExtensionIsExported) {
  REQUIRE_BUILT();
  void* lib = dlopen(built().lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto sym = [&](const char* name) { return dlsym(lib, (std::string("tiny_") + name).c_str()); };
  auto num_steps = reinterpret_cast<int (*)()>(sym("profile_num_steps"));
  auto label = reinterpret_cast<const char* (*)(int)>(sym("profile_step_label"));
  auto kind = reinterpret_cast<const char* (*)(int)>(sym("profile_step_kind"));
  auto flops = reinterpret_cast<unsigned long long (*)(int)>(sym("profile_step_flops"));
  auto bytes = reinterpret_cast<unsigned long long (*)(int)>(sym("profile_step_bytes"));
  auto profile_run = reinterpret_cast<int (*)(void*, const void* const*, void* const*, void*, float*)>(
      sym("profile_run"));
  ASSERT_TRUE(num_steps && label && kind && flops && bytes && profile_run);
  ASSERT_EQ(num_steps(), 2);  // Relu, Sigmoid
  for (int i = 0; i < 2; ++i) {
    std::string l = label(i);
    EXPECT_EQ(l.rfind("k" + std::to_string(i) + "_", 0), 0u) << l;
    for (char c : l) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '_') << l;
    EXPECT_STREQ(kind(i), "kernel");
    EXPECT_EQ(flops(i), 0u);
    EXPECT_EQ(bytes(i), 2u * 168u);  // reads 42 floats, writes 42 floats
  }
  EXPECT_EQ(label(2), nullptr);
  EXPECT_EQ(kind(-1), nullptr);
  EXPECT_EQ(bytes(5), 0u);
  float ms[2] = {-1.f, -1.f};
  EXPECT_EQ(profile_run(nullptr, nullptr, nullptr, nullptr, ms), 1);
  std::string why;
  if (!test::have_gpu(&why)) GTEST_SKIP() << "no CUDA GPU: " << why << " (profile_run not run)";
  Abi abi;
  ASSERT_TRUE(abi.load(built().lib, "tiny")) << dlerror();
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(cuda, nullptr);
  using Ptr = unsigned long long;
  auto alloc = reinterpret_cast<int (*)(Ptr*, size_t)>(dlsym(cuda, "cuMemAlloc_v2"));
  auto release = reinterpret_cast<int (*)(Ptr)>(dlsym(cuda, "cuMemFree_v2"));
  auto htod = reinterpret_cast<int (*)(Ptr, const void*, size_t)>(dlsym(cuda, "cuMemcpyHtoD_v2"));
  auto dtoh = reinterpret_cast<int (*)(void*, Ptr, size_t)>(dlsym(cuda, "cuMemcpyDtoH_v2"));
  auto retain = reinterpret_cast<int (*)(void**, int)>(dlsym(cuda, "cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<int (*)(void*)>(dlsym(cuda, "cuCtxSetCurrent"));
  ASSERT_TRUE(alloc && release && htod && dtoh && retain && set_current);
  void* ctx = nullptr;
  ASSERT_EQ(retain(&ctx, 0), 0);
  ASSERT_EQ(set_current(ctx), 0);
  void* m = nullptr;
  ASSERT_EQ(abi.create(&m, 0, nullptr, nullptr), 0) << abi.last_error(nullptr);
  std::vector<float> x = tiny_input(11), y(42, NAN);
  Ptr in = 0, out = 0;
  ASSERT_EQ(alloc(&in, 168), 0);
  ASSERT_EQ(alloc(&out, 168), 0);
  ASSERT_EQ(htod(in, x.data(), 168), 0);
  const void* ins[] = {reinterpret_cast<const void*>(in)};
  void* outs[] = {reinterpret_cast<void*>(out)};
  EXPECT_EQ(profile_run(m, ins, outs, nullptr, nullptr), 1);  // step_ms NULL
  for (int round = 0; round < 3; ++round) {  // events created once, reused
    ASSERT_EQ(profile_run(m, ins, outs, nullptr, ms), 0) << abi.last_error(m);
    EXPECT_GT(ms[0], 0.f);
    EXPECT_GT(ms[1], 0.f);
    EXPECT_LT(ms[0] + ms[1], 100.f);
  }
  ASSERT_EQ(dtoh(y.data(), out, 168), 0);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(y[i], tiny_reference(x[i]), 1e-5 + 1e-4 * std::fabs(tiny_reference(x[i]))) << i;
  abi.destroy(m);
  release(in);
  release(out);
}

TEST(Library, HandlesRunConcurrentlyFromThreads) {
  REQUIRE_BUILT();
  std::string why;
  if (!test::have_gpu(&why)) GTEST_SKIP() << "no CUDA GPU: " << why;
  Abi abi;
  ASSERT_TRUE(abi.load(built().lib, "tiny")) << dlerror();
  void* owner = nullptr;
  ASSERT_EQ(abi.create(&owner, 0, nullptr, nullptr), 0) << abi.last_error(nullptr);
  constexpr int kThreads = 4, kRuns = 25;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      void* m = nullptr;  // one handle per thread, weights shared with `owner`
      if (abi.create(&m, 0, nullptr, owner) != 0) {
        failures[static_cast<size_t>(t)] = -1;
        return;
      }
      for (int r = 0; r < kRuns; ++r) {
        std::vector<float> x = tiny_input(static_cast<unsigned>(100 * t + r)), y(42, NAN);
        const void* ins[] = {x.data()};
        void* outs[] = {y.data()};
        if (abi.run_host(m, ins, outs) != 0) {
          ++failures[static_cast<size_t>(t)];
          continue;
        }
        for (size_t i = 0; i < x.size(); ++i) {
          double ref = tiny_reference(x[i]);
          if (!(std::fabs(y[i] - ref) <= 1e-5 + 1e-4 * std::fabs(ref))) ++failures[static_cast<size_t>(t)];
        }
      }
      abi.destroy(m);
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[static_cast<size_t>(t)], 0) << "thread " << t;
  abi.destroy(owner);
}

// run() with device pointers and a caller-owned workspace, through the driver API directly.
TEST(Library, RunsWithDevicePointersAndCallerWorkspace) {
  REQUIRE_BUILT();
  std::string why;
  if (!test::have_gpu(&why)) GTEST_SKIP() << "no CUDA GPU: " << why;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(cuda, nullptr);
  using Ptr = unsigned long long;
  auto fn = [&](const char* name) { return dlsym(cuda, name); };
  auto retain = reinterpret_cast<int (*)(void**, int)>(fn("cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<int (*)(void*)>(fn("cuCtxSetCurrent"));
  auto alloc = reinterpret_cast<int (*)(Ptr*, size_t)>(fn("cuMemAlloc_v2"));
  auto release = reinterpret_cast<int (*)(Ptr)>(fn("cuMemFree_v2"));
  auto htod = reinterpret_cast<int (*)(Ptr, const void*, size_t)>(fn("cuMemcpyHtoD_v2"));
  auto dtoh = reinterpret_cast<int (*)(void*, Ptr, size_t)>(fn("cuMemcpyDtoH_v2"));
  auto sync = reinterpret_cast<int (*)()>(fn("cuCtxSynchronize"));
  auto memset8 = reinterpret_cast<int (*)(Ptr, unsigned char, size_t)>(fn("cuMemsetD8_v2"));
  ASSERT_TRUE(retain && set_current && alloc && release && htod && dtoh && sync && memset8);
  void* ctx = nullptr;
  ASSERT_EQ(retain(&ctx, 0), 0);
  ASSERT_EQ(set_current(ctx), 0);
  Ptr in = 0, out = 0, ws = 0;
  ASSERT_EQ(alloc(&in, 168), 0);
  ASSERT_EQ(alloc(&out, 168), 0);
  ASSERT_EQ(alloc(&ws, 256), 0);  // tiny_arena_bytes() is 256 (checked by the C program)
  ASSERT_EQ(memset8(out, 0xFF, 168), 0);  // poison: NaN
  std::vector<float> x = tiny_input(3), y(42, 0.f);
  ASSERT_EQ(htod(in, x.data(), 168), 0);
  Abi abi;
  ASSERT_TRUE(abi.load(built().lib, "tiny")) << dlerror();
  void* m = nullptr;
  ASSERT_EQ(memset8(ws, 0xAB, 256), 0);
  ASSERT_EQ(abi.create(&m, 0, reinterpret_cast<void*>(ws), nullptr), 0) << abi.last_error(nullptr);
  // create() never writes a caller's workspace (another handle may be using it).
  std::vector<unsigned char> ws_bytes(256, 0);
  ASSERT_EQ(dtoh(ws_bytes.data(), ws, 256), 0);
  for (size_t i = 0; i < ws_bytes.size(); ++i) ASSERT_EQ(ws_bytes[i], 0xAB) << i;
  const void* ins[] = {reinterpret_cast<const void*>(in)};
  void* outs[] = {reinterpret_cast<void*>(out)};
  ASSERT_EQ(abi.run(m, ins, outs, nullptr), 0) << abi.last_error(m);
  ASSERT_EQ(sync(), 0);
  ASSERT_EQ(dtoh(y.data(), out, 168), 0);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(y[i], tiny_reference(x[i]), 1e-5 + 1e-4 * tiny_reference(x[i])) << i;
  abi.destroy(m);
  release(in);
  release(out);
  release(ws);
}

TEST(Library, FailedBuildLeavesNothingAtTheOutputPath) {
  if (!test::tool_runs("cc")) GTEST_SKIP() << "cc not available";
  fs::path dir = fs::temp_directory_path() / ("aotc-codegen-fail-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Graph g = test::relu_sigmoid_graph({4});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan = test::linear_plan(g);
  CodegenOptions o;
  o.output_path = (dir / "libbroken.so").string();
  o.nvcc = "/bin/false";  // a compiler that always fails
  auto r = compile_library(g, plan, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("nvcc failed"), std::string::npos) << r.status().message();
  EXPECT_FALSE(fs::exists(dir / "libbroken.so"));
  EXPECT_FALSE(fs::exists(dir / "broken.h"));
  EXPECT_TRUE(fs::is_empty(dir));
  o.nvcc = (dir / "no_such_nvcc").string();
  r = compile_library(g, plan, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("cannot run"), std::string::npos) << r.status().message();
  o.archs = {"sm90; rm -rf /"};
  r = compile_library(g, plan, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("sm_XX"), std::string::npos);
  o.archs = {"sm_90"};
  o.name = "bad name";
  r = compile_library(g, plan, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// A lowering whose code does not compile: nvcc's own error text must reach the Status.
Expected<Lowering> broken_lower(const Node& node, const Graph& graph) {
  const Value& x = graph.value(node.inputs[0]);
  KernelStep k;
  k.template_name = "unary_elementwise";
  k.holes = {{"T", "float"}, {"CT", "float"}, {"numel", std::to_string(x.numel()) + "LL"},
             {"expr", "no_such_function_xyz(x)"}, {"comment", "broken"}};
  k.args = {node.inputs[0], node.outputs[0]};
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

TEST(Library, NvccErrorTextIsInTheStatus) {
  if (!test::tool_runs(test::find_nvcc())) GTEST_SKIP() << "nvcc not available";
  OpRegistry reg;
  auto built_graph = test::one_test_op_graph(reg, "TestBroken", broken_lower, "b");
  ASSERT_TRUE(built_graph.is_ok()) << built_graph.status().message();
  Graph& g = *built_graph;
  fs::path dir = fs::temp_directory_path() / ("aotc-codegen-nvccerr-" + std::to_string(getpid()));
  fs::create_directories(dir);
  CodegenOptions o;
  o.output_path = (dir / "libbroken.so").string();
  o.nvcc = test::find_nvcc();
  o.registry = &reg;
  auto r = compile_library(g, test::linear_plan(g), o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("no_such_function_xyz"), std::string::npos) << r.status().message();
  EXPECT_FALSE(fs::exists(dir / "libbroken.so"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// A kernel that traps: after it, the CUDA context is unusable and every call must say so.
Expected<Lowering> trap_lower(const Node& node, const Graph& graph) {
  const Value& x = graph.value(node.inputs[0]);
  KernelStep k;
  k.template_name = "unary_elementwise";
  k.holes = {{"T", "float"}, {"CT", "float"}, {"numel", std::to_string(x.numel()) + "LL"},
             {"expr", "(__trap(), x)"}, {"comment", "traps"}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.grid = Dim3{1, 1, 1};
  k.block = Dim3{32, 1, 1};
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

TEST(Library, StickyFaultIsReportedOnEveryLaterCall) {
  if (!test::tool_runs(test::find_nvcc()) || !test::tool_runs("cc"))
    GTEST_SKIP() << "nvcc or cc not available";
  OpRegistry reg;
  auto built_graph = test::one_test_op_graph(reg, "TestTrap", trap_lower, "t");
  ASSERT_TRUE(built_graph.is_ok()) << built_graph.status().message();
  Graph& g = *built_graph;
  fs::path dir = fs::temp_directory_path() / ("aotc-codegen-trap-" + std::to_string(getpid()));
  fs::create_directories(dir);
  test::remove_at_exit(dir);  // also when the test skips after building (no GPU here)
  CodegenOptions o;
  o.output_path = (dir / "libtrap.so").string();
  o.nvcc = test::find_nvcc();
  o.registry = &reg;
  auto built_trap = compile_library(g, test::linear_plan(g), o);
  ASSERT_TRUE(built_trap.is_ok()) << built_trap.status().message();
  // The fault poisons the process's context, so it runs in its own program.
  std::ofstream(dir / "main.c") << R"C(
#include <stdio.h>
#include <string.h>
#include "trap.h"
int main(void) {
  trap_model* m = 0;
  int rc = trap_create(&m, 0, 0, 0);
  if (rc == AOTC_ERROR_NO_DRIVER) { printf("no GPU\n"); return 77; }
  if (rc != AOTC_OK) { printf("create %d %s\n", rc, trap_last_error(0)); return 1; }
  float x[4] = {1, 2, 3, 4}, y[4];
  const void* in[] = {x};
  void* out[] = {y};
  int first = trap_run_host(m, in, out);
  printf("first=%d (%s)\n", first, trap_last_error(m));
  int second = trap_run_host(m, in, out);
  int third = trap_run(m, in, out, 0);
  printf("second=%d third=%d (%s)\n", second, third, trap_last_error(m));
  int bad = first != AOTC_ERROR_STICKY || second != AOTC_ERROR_STICKY || third != AOTC_ERROR_STICKY ||
            strstr(trap_last_error(m), "CUDA_ERROR_") == 0;
  trap_destroy(m);
  return bad;
}
)C";
  auto cc = run_process({"cc", "-std=c11", "-I", dir.string(), (dir / "main.c").string(), "-L",
                         dir.string(), "-ltrap", "-o", (dir / "main").string()});
  ASSERT_TRUE(cc.is_ok());
  ASSERT_EQ(cc->exit_code, 0) << cc->output;
  std::string why;
  if (!test::have_gpu(&why)) GTEST_SKIP() << "no CUDA GPU: " << why << " (library built, not run)";
  auto run = run_process({"env", "LD_LIBRARY_PATH=" + dir.string(), (dir / "main").string()});
  ASSERT_TRUE(run.is_ok());
  EXPECT_EQ(run->exit_code, 0) << run->output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace aotc
