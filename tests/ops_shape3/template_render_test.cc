// Render check of this area's templates: lower representative nodes (every template, several
// dtypes, odd shapes, negative strides, run-time and constant pad values), fill the holes with a
// strict renderer (missing or unused hole = failure, like codegen's) and compile all kernels in
// one file with nvcc -arch=sm_90 -c. Skips the compile without nvcc.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "tests/ops_basic/ops_test_util.h"

namespace aotc {
namespace {

using test::OneNode;

const char* const kNvcc = "/usr/local/cuda/bin/nvcc";

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string render(const KernelStep& k, const std::string& kernel_name, std::vector<std::string>* errors) {
  std::string text = read_file(std::string(AOTC_SOURCE_DIR) + "/templates/" + k.template_name + ".cu.in");
  if (text.empty()) {
    errors->push_back("template " + k.template_name + " not found");
    return "";
  }
  std::map<std::string, std::string> holes;
  for (const auto& h : k.holes)
    if (!holes.emplace(h.first, h.second).second) errors->push_back(k.template_name + ": hole given twice: " + h.first);
  holes["kernel_name"] = kernel_name;
  std::set<std::string> used;
  std::regex hole_re("\\{\\{([A-Za-z_][A-Za-z0-9_]*)\\}\\}");
  std::string out;
  size_t last = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), hole_re); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    out += text.substr(last, static_cast<size_t>(it->position()) - last);
    auto h = holes.find(name);
    if (h == holes.end()) errors->push_back(k.template_name + ": missing hole " + name);
    else out += h->second;
    used.insert(name);
    last = static_cast<size_t>(it->position() + it->length());
  }
  out += text.substr(last);
  for (const auto& h : holes)
    if (!used.count(h.first)) errors->push_back(k.template_name + ": unused hole " + h.first);
  return out;
}

Tensor i64(std::vector<int64_t> v) { return Tensor::from_int64s({static_cast<int64_t>(v.size())}, v); }

std::vector<std::unique_ptr<OneNode>> representative_nodes() {
  std::vector<std::unique_ptr<OneNode>> v;
  auto add = [&](const char* op, int64_t opset = 18) {
    v.push_back(std::make_unique<OneNode>(op, opset));
    return v.back().get();
  };
  add("Gather")->input(DType::kFloat32, {5, 7, 3}).input(DType::kInt64, {2, 4}).attr("axis", Attribute::of_int(1));
  add("Gather")->input(DType::kFloat16, {11}).input(DType::kInt32, {3});
  add("Gather")->input(DType::kBool, {4, 2}).input(DType::kInt64, {}).attr("axis", Attribute::of_int(-1));
  add("GatherElements")->input(DType::kInt64, {3, 5}).input(DType::kInt32, {3, 2}).attr("axis", Attribute::of_int(1));
  add("GatherElements")->input(DType::kFloat64, {2, 3, 4}).input(DType::kInt64, {2, 3, 4});
  add("Slice")->input(DType::kFloat32, {7, 9}).constant(i64({5, 1})).constant(i64({0, 8})).constant(i64({0, 1})).constant(i64({-2, 3}));
  add("Slice")->input(DType::kUInt8, {13}).constant(i64({2})).constant(i64({INT64_MAX}));
  add("Split")->input(DType::kFloat16, {3, 10}).constant(i64({3, 0, 7})).attr("axis", Attribute::of_int(1));
  add("Expand")->input(DType::kInt32, {3, 1}).constant(i64({2, 3, 5}));
  add("Tile")->input(DType::kInt8, {2, 3}).constant(i64({3, 2}));
  add("ConstantOfShape")->constant(i64({4, 5})).attr("value", Attribute::of_tensor(Tensor::from_floats({1}, {1.5f})));
  add("Pad")->input(DType::kFloat32, {1, 3, 4, 5}).constant(i64({0, 0, 1, 2, 0, 0, 3, -1})).constant(Tensor::scalar_float(2.5f));
  add("Pad")->input(DType::kFloat16, {4, 5}).constant(i64({1, 2, 0, 3})).input(DType::kFloat16, {});
  add("Pad")->input(DType::kInt64, {4, 5}).constant(i64({2, 3, 2, 3})).attr("mode", Attribute::of_string("reflect"));
  add("Pad")->input(DType::kInt32, {4, 5}).constant(i64({2, 3})).absent().constant(i64({1})).attr("mode", Attribute::of_string("edge"));
  add("Pad", 19)->input(DType::kFloat32, {3}).constant(i64({4, 5})).attr("mode", Attribute::of_string("wrap"));
  add("Trilu")->input(DType::kFloat32, {2, 5, 7}).constant(Tensor::scalar_int64(-1));
  add("Trilu")->input(DType::kInt64, {6, 4}).attr("upper", Attribute::of_int(0));
  add("CumSum")->input(DType::kFloat32, {4, 7, 3}).constant(Tensor::scalar_int64(1));
  add("CumSum")->input(DType::kFloat16, {17}).constant(Tensor::scalar_int64(0)).attr("exclusive", Attribute::of_int(1));
  add("CumSum")->input(DType::kBFloat16, {3, 5}).constant(Tensor::scalar_int64(-1)).attr("reverse", Attribute::of_int(1));
  add("CumSum")->input(DType::kInt64, {5, 3}).constant(Tensor::scalar_int64(0));
  add("CumSum")->input(DType::kUInt32, {5, 3}).constant(Tensor::scalar_int64(0));
  add("CumSum")->input(DType::kFloat64, {5}).constant(Tensor::scalar_int64(0));
  add("DepthToSpace")->input(DType::kFloat32, {1, 8, 3, 5}).attr("blocksize", Attribute::of_int(2));
  add("DepthToSpace")->input(DType::kFloat16, {2, 18, 2, 3}).attr("blocksize", Attribute::of_int(3)).attr("mode", Attribute::of_string("CRD"));
  add("SpaceToDepth")->input(DType::kUInt16, {1, 3, 4, 6}).attr("blocksize", Attribute::of_int(2));
  add("Dropout")->input(DType::kFloat32, {3, 4});
  v.back()->graph.opset = 13;
  return v;
}

TEST(Shape3TemplateRender, AllTemplatesRenderAndCompileWithNvcc) {
  std::vector<std::string> errors;
  std::string common = read_file(std::string(AOTC_SOURCE_DIR) + "/templates/common.cuh");
  ASSERT_FALSE(common.empty());
  std::string source = common + "\n";
  std::set<std::string> templates_used;
  int kernels = 0;
  auto nodes = representative_nodes();
  for (auto& n : nodes) {
    int outputs = n->node.op_type == "Split" ? 3 : 1;
    Status s = n->build(outputs);
    ASSERT_TRUE(s.is_ok()) << s.message();
    const OpDef* def = default_registry().find(n->built().op_type);
    auto l = def->lower(n->built(), n->graph);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    for (const LoweredStep& step : l->steps) {
      ASSERT_EQ(step.kind, LoweredStep::Kind::kKernel);
      EXPECT_GE(step.kernel.grid.x, 1);
      EXPECT_GE(step.kernel.block.x, 1);
      EXPECT_LE(step.kernel.block.x, 1024);
      source += render(step.kernel, "k" + std::to_string(kernels++), &errors) + "\n";
      templates_used.insert(step.kernel.template_name);
    }
  }
  // Dropout with a mask: copy + fill.
  OneNode drop("Dropout", 13);
  drop.input(DType::kFloat16, {5, 3});
  ASSERT_TRUE(drop.build(2).is_ok());
  auto l = default_registry().find("Dropout")->lower(drop.built(), drop.graph);
  ASSERT_TRUE(l.is_ok());
  ASSERT_EQ(l->steps.size(), 2u);
  for (const LoweredStep& step : l->steps) source += render(step.kernel, "k" + std::to_string(kernels++), &errors) + "\n";
  for (const std::string& e : errors) ADD_FAILURE() << e;
  for (const char* t : {"strided_gather", "gather_axis", "gather_elements", "fill", "pad", "trilu", "cumsum"})
    EXPECT_TRUE(templates_used.count(t)) << "template not exercised: " << t;

  if (access(kNvcc, X_OK) != 0) GTEST_SKIP() << "nvcc not found at " << kNvcc << ": render checked, compile skipped";
  char dir_template[] = "/tmp/aotc_ops_shape3_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  { std::ofstream(dir + "/kernels.cu") << source; }
  // Fixed argument list, paths we created: nothing from outside reaches the shell.
  std::string cmd = std::string(kNvcc) + " -arch=sm_90 -c " + dir + "/kernels.cu -o " + dir + "/kernels.o > " + dir +
                    "/nvcc.log 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << "nvcc failed:\n" << read_file(dir + "/nvcc.log") << "\nsource kept in " << dir;
  if (rc == 0) std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace aotc
