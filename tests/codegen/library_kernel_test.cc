// A library kernel step end to end, with a small kernel written for the test
// (templates/test_scale_library.cu.in here, not CUTLASS): x -> ScaleA (x 2) -> Relu -> ScaleB
// (x -0.5, 64 KiB of dynamic shared memory) -> y. ScaleA and ScaleB render identically, so they
// share one __global__ and its params builder while keeping their own builder args. Without a GPU:
// the launch program, the host tables (kBuilderArgs), the generated host C under -Wall -Werror, and
// an nvcc build of the library. With a GPU: results, graphs on and off, changing pointers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "codegen/codegen.h"
#include "codegen/device_source.h"
#include "codegen/embedded_files.h"
#include "codegen/host_source.h"
#include "codegen/launch_program.h"
#include "codegen_test_util.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {
namespace fs = std::filesystem;

constexpr int64_t kN = 1000;  // not a multiple of the 128-thread block; 4 blocks loop over it

std::string scale_template() {
  return test::read_file(std::string(AOTC_TEST_SOURCE_DIR) + "/templates/test_scale_library.cu.in");
}

Expected<Lowering> scale_lower(const Node& node, const Graph& graph, int64_t micro, int64_t shared) {
  KernelStep k;
  k.template_name = "test_scale_library";
  k.holes = {{"offset", "0.0f"}, {"comment", "test library kernel"}};
  k.args = {node.inputs[0], node.outputs[0], kNullArg};
  k.library_params = true;
  k.builder_args = {graph.value(node.inputs[0]).numel(), micro, shared, 0};
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}
Expected<Lowering> scale_a(const Node& n, const Graph& g) { return scale_lower(n, g, 2000000, 0); }
Expected<Lowering> scale_b(const Node& n, const Graph& g) { return scale_lower(n, g, -500000, 65536); }

Expected<Lowering> with_builder_args_only(const Node& node, const Graph&) {
  KernelStep k;
  k.template_name = "unary_elementwise";
  k.args = {node.inputs[0], node.outputs[0]};
  k.builder_args = {1};  // but not a library kernel
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}
Expected<Lowering> too_many_builder_args(const Node& node, const Graph& graph) {
  auto l = scale_lower(node, graph, 1, 0);
  l->steps[0].kernel.builder_args.assign(kLibraryMaxBuilderArgs + 1, 7);
  return l;
}
Expected<Lowering> too_many_pointers(const Node& node, const Graph& graph) {
  auto l = scale_lower(node, graph, 1, 0);
  l->steps[0].kernel.args.assign(kLibraryMaxPointerArgs + 1, node.inputs[0]);
  return l;
}

void add_op(OpRegistry& reg, const char* type, Expected<Lowering> (*lower)(const Node&, const Graph&)) {
  OpDef def;
  def.op_type = type;
  def.domain = "test";
  def.infer = [](Node& n, Graph& g) -> Status {
    set_output(g, n, 0, DType::kFloat32, g.value(n.inputs[0]).shape);
    return Status::ok();
  };
  def.reference = [](const Node&, const std::vector<const Tensor*>&, std::vector<Tensor>&) {
    return Status::ok();
  };
  def.lower = lower;
  reg.add(def);
}

const OpRegistry& registry() {
  static const OpRegistry reg = [] {
    OpRegistry r;
    register_all_ops(r);
    add_op(r, "ScaleA", scale_a);
    add_op(r, "ScaleB", scale_b);
    add_op(r, "BuilderArgsOnly", with_builder_args_only);
    add_op(r, "TooManyBuilderArgs", too_many_builder_args);
    add_op(r, "TooManyPointers", too_many_pointers);
    return r;
  }();
  return reg;
}

Graph scale_graph() {
  Graph g;
  g.name = "scale_library";
  g.opset = 17;
  ValueId x = g.add_value("x", DType::kFloat32, {kN}, true);
  ValueId a = g.add_value("a");
  ValueId r = g.add_value("r");
  ValueId y = g.add_value("y");
  g.inputs = {x};
  g.outputs = {y};
  g.nodes.push_back(Node{"scale_a", "ScaleA", "test", {x}, {a}, {}});
  g.nodes.push_back(Node{"relu", "Relu", "", {a}, {r}, {}});
  g.nodes.push_back(Node{"scale_b", "ScaleB", "test", {r}, {y}, {}});
  Status s = infer_shapes(g, registry());
  EXPECT_TRUE(s.is_ok()) << s.message();
  return g;
}

TEST(LibraryKernel, ProgramCarriesBuilderArgsAndSharesTheFunction) {
  Graph g = scale_graph();
  MemoryPlan plan = test::linear_plan(g);
  auto program = build_launch_program(g, plan, registry());
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  ASSERT_EQ(program->kernels.size(), 3u);
  const ProgramKernel& a = program->kernels[0];
  const ProgramKernel& b = program->kernels[2];
  EXPECT_TRUE(a.library_params);
  EXPECT_FALSE(program->kernels[1].library_params);
  EXPECT_EQ(a.builder_args, (std::vector<int64_t>{kN, 2000000, 0, 0}));
  EXPECT_EQ(b.builder_args, (std::vector<int64_t>{kN, -500000, 65536, 0}));
  ASSERT_EQ(a.args.size(), 3u);
  EXPECT_EQ(a.args[0].space, Location::Space::kInput);
  EXPECT_EQ(a.args[1].space, Location::Space::kArena);
  EXPECT_EQ(a.args[2].space, Location::Space::kNull);

  std::map<std::string, std::string> extra = {{"test_scale_library", scale_template()}};
  auto device = render_device_sources(*program, g, {"test", "hash", g.name, &extra, PdlMode::kWait});
  ASSERT_TRUE(device.is_ok()) << device.status().message();
  EXPECT_EQ(program->kernels[0].function, program->kernels[2].function);  // one instantiation
  EXPECT_NE(program->kernels[0].function, program->kernels[1].function);
  std::string cu;
  for (const std::string& s : *device) cu += s;
  const std::string builder = "void " + a.function + "_params(";
  ASSERT_NE(cu.find(builder), std::string::npos) << cu;
  EXPECT_EQ(cu.find(builder, cu.find(builder) + 1), std::string::npos) << "builder emitted twice";
  EXPECT_NE(cu.find("#include \"library_params.cuh\""), std::string::npos);

  HostSources host = render_host_sources(*program, g, {"scale", {"sm_90"}, "test", "hash", g.name, 1});
  const std::string& c = host.model_c;
  EXPECT_NE(c.find("static const long long kBuilderArgs[] = {"), std::string::npos) << c;
  EXPECT_NE(c.find(" 1000LL, 2000000LL, 0LL, 0LL,"), std::string::npos) << c;
  EXPECT_NE(c.find(" 1000LL, -500000LL, 65536LL, 0LL,"), std::string::npos) << c;
  // Kernel rows: ..., first_arg, num_args, library, first_builder_arg, num_builder_args, pdl (the
  // test's library template has no AOTC_PDL_ENTER, the Relu template has), then no prebuilt
  // params (device builders), no tensor maps and no cluster size said.
  EXPECT_NE(c.find(", 0, 3, 1, 0, 4, 0, 0, 0u, 0, 0, 0u},"), std::string::npos) << c;
  EXPECT_NE(c.find(", 3, 2, 0, 4, 0, 1, 0, 0u, 0, 0, 0u},"), std::string::npos) << c;
  EXPECT_NE(c.find(", 5, 3, 1, 4, 4, 0, 0, 0u, 0, 0, 0u},"), std::string::npos) << c;
  EXPECT_NE(c.find("    kBuilderArgs, 8, 0 /* time cuBLASLt candidates at create */,\n    LT_AUX_WORKSPACE_OFFSET, kTensorMaps, 0};"), std::string::npos) << c;
}

TEST(LibraryKernel, GeneratedHostCodeCompilesWithWarningsAsErrors) {
  if (!test::tool_runs("cc")) GTEST_SKIP() << "cc not available";
  fs::path dir = fs::temp_directory_path() / ("aotc-libkernel-cc-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Graph g = scale_graph();
  MemoryPlan plan = test::linear_plan(g);
  auto program = build_launch_program(g, plan, registry());
  ASSERT_TRUE(program.is_ok());
  std::map<std::string, std::string> extra = {{"test_scale_library", scale_template()}};
  ASSERT_TRUE(render_device_sources(*program, g, {"test", "hash", g.name, &extra}).is_ok());
  HostSources host = render_host_sources(*program, g, {"scale", {"sm_90"}, "test", "hash", g.name, 1});
  std::ofstream(dir / "scale_model.c") << host.model_c;
  std::ofstream(dir / "scale.h") << host.header;
  std::vector<std::string> argv = {"cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden",
                                   "-fPIC", "-c", "-I", dir.string()};
  for (const EmbeddedFile& f : embedded_files()) {
    std::string path = f.path;
    if (path.rfind("runtime/", 0) != 0) continue;
    fs::path out = dir / fs::path(path).filename();
    std::ofstream(out, std::ios::binary).write(reinterpret_cast<const char*>(f.data),
                                               static_cast<std::streamsize>(f.size));
    if (out.extension() == ".c") argv.push_back(out.string());
  }
  argv.push_back((dir / "scale_model.c").string());
  auto cc = run_process(argv, dir.string());
  ASSERT_TRUE(cc.is_ok());
  EXPECT_EQ(cc->exit_code, 0) << cc->output;
  fs::remove_all(dir);
}

TEST(LibraryKernel, LaunchProgramRejectsMalformedLibrarySteps) {
  for (const char* op : {"BuilderArgsOnly", "TooManyBuilderArgs", "TooManyPointers"}) {
    Graph g;
    ValueId x = g.add_value("x", DType::kFloat32, {4}, true);
    ValueId y = g.add_value("y");
    g.inputs = {x};
    g.outputs = {y};
    g.nodes.push_back(Node{"n", op, "test", {x}, {y}, {}});
    ASSERT_TRUE(infer_shapes(g, registry()).is_ok());
    auto program = build_launch_program(g, test::linear_plan(g), registry());
    ASSERT_FALSE(program.is_ok()) << op;
    const std::string m = program.status().message();
    EXPECT_TRUE(m.find("builder args") != std::string::npos || m.find("pointer args") != std::string::npos)
        << op << ": " << m;
  }
}

// Built once: libscale.so through compile_library (nvcc compiles the kernel and its builder).
struct BuiltScale {
  Status status = Status::ok();
  fs::path dir, lib, emit;
  bool tools = false;
};

BuiltScale& built_scale() {
  static BuiltScale b = [] {
    BuiltScale r;
    r.tools = test::tool_runs(test::find_nvcc()) && test::tool_runs("cc");
    if (!r.tools) return r;
    r.dir = fs::temp_directory_path() / ("aotc-libkernel-" + std::to_string(getpid()));
    fs::remove_all(r.dir);
    fs::create_directories(r.dir);
    test::remove_at_exit(r.dir);
    r.lib = r.dir / "libscale.so";
    r.emit = r.dir / "src";
    Graph g = scale_graph();
    CodegenOptions o;
    o.output_path = r.lib.string();
    o.emit_source_dir = r.emit.string();
    o.nvcc = test::find_nvcc();
    o.archs = {"sm_90"};
    o.aotc_version = "test";
    o.registry = &registry();
    o.extra_templates = {{"test_scale_library", scale_template()}};
    r.status = compile_library(g, test::linear_plan(g), o).status();
    return r;
  }();
  return b;
}

TEST(LibraryKernel, LibraryBuildsWithNvcc) {
  if (!built_scale().tools) GTEST_SKIP() << "nvcc or cc not available";
  ASSERT_TRUE(built_scale().status.is_ok()) << built_scale().status.message();
  EXPECT_TRUE(fs::exists(built_scale().lib));
  EXPECT_TRUE(fs::exists(built_scale().emit / "library_params.cuh"));
  EXPECT_GT(fs::file_size(built_scale().emit / "scale_dev0.fatbin"), 0u);
  std::string cu = test::read_file(built_scale().emit / "scale_dev0.cu");
  EXPECT_NE(cu.find("_params(unsigned char* out, aotc_builder_args a)"), std::string::npos);
}

// The driver calls the GPU tests need, through dlopen.
struct Driver {
  using Ptr = unsigned long long;
  void* lib = nullptr;
  int (*retain)(void**, int) = nullptr;
  int (*set_current)(void*) = nullptr;
  int (*alloc)(Ptr*, size_t) = nullptr;
  int (*free_)(Ptr) = nullptr;
  int (*htod)(Ptr, const void*, size_t) = nullptr;
  int (*dtoh)(void*, Ptr, size_t) = nullptr;
  int (*memset8)(Ptr, unsigned char, size_t) = nullptr;
  int (*stream_create)(void**, unsigned) = nullptr;
  int (*stream_sync)(void*) = nullptr;
  int (*stream_destroy)(void*) = nullptr;
  bool load() {
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    auto get = [&](auto& fn, const char* name) { *reinterpret_cast<void**>(&fn) = dlsym(lib, name); };
    get(retain, "cuDevicePrimaryCtxRetain");
    get(set_current, "cuCtxSetCurrent");
    get(alloc, "cuMemAlloc_v2");
    get(free_, "cuMemFree_v2");
    get(htod, "cuMemcpyHtoD_v2");
    get(dtoh, "cuMemcpyDtoH_v2");
    get(memset8, "cuMemsetD8_v2");
    get(stream_create, "cuStreamCreate");
    get(stream_sync, "cuStreamSynchronize");
    get(stream_destroy, "cuStreamDestroy_v2");
    void* ctx = nullptr;
    return retain && set_current && alloc && free_ && htod && dtoh && memset8 && stream_create &&
           stream_sync && stream_destroy && retain(&ctx, 0) == 0 && set_current(ctx) == 0;
  }
};

struct ScaleAbi {
  int (*create)(void**, int, void*, const void*) = nullptr;
  void (*destroy)(void*) = nullptr;
  int (*run)(void*, const void* const*, void* const*, void*) = nullptr;
  int (*run_host)(void*, const void* const*, void* const*) = nullptr;
  const char* (*last_error)(const void*) = nullptr;
  bool load(const fs::path& path) {
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    *reinterpret_cast<void**>(&create) = dlsym(lib, "scale_create");
    *reinterpret_cast<void**>(&destroy) = dlsym(lib, "scale_destroy");
    *reinterpret_cast<void**>(&run) = dlsym(lib, "scale_run");
    *reinterpret_cast<void**>(&run_host) = dlsym(lib, "scale_run_host");
    *reinterpret_cast<void**>(&last_error) = dlsym(lib, "scale_last_error");
    return create && destroy && run && run_host && last_error;
  }
};

double scale_reference(float x) {
  double a = 2.0 * x;
  return (a > 0 ? a : 0.0) * -0.5;
}

std::vector<float> scale_input(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.f, 4.f);
  std::vector<float> x(kN);
  for (float& v : x) v = dist(rng);
  return x;
}

TEST(LibraryKernel, RunsOnGpuAndMatchesReference) {
  if (!built_scale().tools) GTEST_SKIP() << "nvcc or cc not available";
  ASSERT_TRUE(built_scale().status.is_ok()) << built_scale().status.message();
  std::string why;
  if (!test::have_gpu(&why)) GTEST_SKIP() << "no CUDA GPU: " << why << " (library built, not run)";
  ScaleAbi abi;
  ASSERT_TRUE(abi.load(built_scale().lib)) << dlerror();
  void* m = nullptr;
  ASSERT_EQ(abi.create(&m, 0, nullptr, nullptr), 0) << abi.last_error(nullptr);
  std::vector<float> x = scale_input(11), y(kN, NAN);
  const void* ins[] = {x.data()};
  void* outs[] = {y.data()};
  ASSERT_EQ(abi.run_host(m, ins, outs), 0) << abi.last_error(m);
  for (int64_t i = 0; i < kN; ++i)
    ASSERT_NEAR(y[static_cast<size_t>(i)], scale_reference(x[static_cast<size_t>(i)]), 1e-6) << i;
  abi.destroy(m);
}

// run() on a real stream with CUDA graphs (captured on the first call per pointer set, replayed
// after) against the same model with AOTC_NO_CUDA_GRAPH=1: same pointers twice, then other
// output pointers, then other input pointers, then back to the first set.
TEST(LibraryKernel, CudaGraphRunsMatchPlainLaunches) {
  if (!built_scale().tools) GTEST_SKIP() << "nvcc or cc not available";
  ASSERT_TRUE(built_scale().status.is_ok()) << built_scale().status.message();
  std::string why;
  if (!test::have_gpu(&why)) GTEST_SKIP() << "no CUDA GPU: " << why << " (library built, not run)";
  Driver cu;
  ASSERT_TRUE(cu.load());
  ScaleAbi abi;
  ASSERT_TRUE(abi.load(built_scale().lib)) << dlerror();
  void* graphs = nullptr;
  void* plain = nullptr;
  unsetenv("AOTC_NO_CUDA_GRAPH");
  ASSERT_EQ(abi.create(&graphs, 0, nullptr, nullptr), 0) << abi.last_error(nullptr);
  setenv("AOTC_NO_CUDA_GRAPH", "1", 1);
  ASSERT_EQ(abi.create(&plain, 0, nullptr, nullptr), 0) << abi.last_error(nullptr);
  unsetenv("AOTC_NO_CUDA_GRAPH");
  void* stream = nullptr;
  ASSERT_EQ(cu.stream_create(&stream, 1 /* non-blocking */), 0);
  const size_t bytes = sizeof(float) * kN;
  Driver::Ptr in[2], out[4];
  for (auto* p : {&in[0], &in[1], &out[0], &out[1], &out[2], &out[3]}) ASSERT_EQ(cu.alloc(p, bytes), 0);
  std::vector<float> x0 = scale_input(1), x1 = scale_input(2);
  ASSERT_EQ(cu.htod(in[0], x0.data(), bytes), 0);
  ASSERT_EQ(cu.htod(in[1], x1.data(), bytes), 0);
  struct Case { int in, out; };
  const Case cases[] = {{0, 0}, {0, 0}, {0, 1}, {1, 1}, {1, 0}, {0, 0}};
  for (const Case& c : cases) {
    std::vector<float> got_graph(kN, NAN), got_plain(kN, NAN);
    for (int which = 0; which < 2; ++which) {
      Driver::Ptr dst = out[c.out + 2 * which];  // graphs write out[0/1], plain out[2/3]
      ASSERT_EQ(cu.memset8(dst, 0xFF, bytes), 0);
      const void* ins[] = {reinterpret_cast<const void*>(in[c.in])};
      void* outs[] = {reinterpret_cast<void*>(dst)};
      void* h = which == 0 ? graphs : plain;
      ASSERT_EQ(abi.run(h, ins, outs, stream), 0) << abi.last_error(h);
      ASSERT_EQ(cu.stream_sync(stream), 0);
      ASSERT_EQ(cu.dtoh(which == 0 ? got_graph.data() : got_plain.data(), dst, bytes), 0);
    }
    const std::vector<float>& x = c.in == 0 ? x0 : x1;
    for (int64_t i = 0; i < kN; ++i) {
      size_t k = static_cast<size_t>(i);
      ASSERT_EQ(std::memcmp(&got_graph[k], &got_plain[k], sizeof(float)), 0)
          << "case in=" << c.in << " out=" << c.out << " element " << i;
      ASSERT_NEAR(got_graph[k], scale_reference(x[k]), 1e-6) << i;
    }
  }
  // The legacy default stream (NULL) cannot be captured: plain launches, same results.
  std::vector<float> y(kN, NAN);
  const void* ins[] = {reinterpret_cast<const void*>(in[1])};
  void* outs[] = {reinterpret_cast<void*>(out[0])};
  ASSERT_EQ(abi.run(graphs, ins, outs, nullptr), 0) << abi.last_error(graphs);
  ASSERT_EQ(cu.stream_sync(nullptr), 0);
  ASSERT_EQ(cu.dtoh(y.data(), out[0], bytes), 0);
  for (int64_t i = 0; i < kN; ++i)
    ASSERT_NEAR(y[static_cast<size_t>(i)], scale_reference(x1[static_cast<size_t>(i)]), 1e-6) << i;
  abi.destroy(graphs);
  abi.destroy(plain);
  for (auto p : {in[0], in[1], out[0], out[1], out[2], out[3]}) cu.free_(p);
  cu.stream_destroy(stream);
}

}  // namespace
}  // namespace aotc
