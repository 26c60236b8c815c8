// Render check of this area's templates: lower representative nodes (dtypes, broadcast, collapsed
// and odd shapes), fill the holes with a strict local renderer (missing or unused hole = failure,
// like codegen's), and compile all kernels in one file with nvcc -arch=sm_90 -c. Skips without nvcc.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "ir/ops/copy_lowering.h"
#include "ops_test_util.h"

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

// Fills {{name}} holes; records every problem in `errors`.
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
  auto begin = std::sregex_iterator(text.begin(), text.end(), hole_re);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
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

std::vector<std::unique_ptr<OneNode>> representative_nodes() {
  std::vector<std::unique_ptr<OneNode>> v;
  auto add = [&](const char* op, int64_t opset = 17) {
    v.push_back(std::make_unique<OneNode>(op, opset));
    return v.back().get();
  };
  add("Add")->input(DType::kFloat32, {5, 7}).input(DType::kFloat32, {5, 7});
  add("Add")->input(DType::kFloat16, {2, 3, 5}).input(DType::kFloat16, {5});
  add("Div")->input(DType::kInt32, {7, 1, 3}).input(DType::kInt32, {1, 11, 1});
  add("Div")->input(DType::kUInt8, {13}).input(DType::kUInt8, {13});
  add("Div")->input(DType::kInt8, {4, 1}).input(DType::kInt8, {3});
  add("Mul")->input(DType::kInt64, {3, 1}).input(DType::kInt64, {1, 4});
  add("Sub")->input(DType::kFloat64, {}).input(DType::kFloat64, {9});
  add("Sub")->input(DType::kUInt64, {2, 2}).input(DType::kUInt64, {2, 2});
  add("Div")->input(DType::kFloat32, {1, 1}).input(DType::kFloat32, {1});
  add("Relu")->input(DType::kFloat32, {31});
  add("Relu")->input(DType::kInt8, {31});
  add("Relu")->input(DType::kFloat16, {3, 3});
  add("Sigmoid")->input(DType::kFloat16, {17});
  add("Sigmoid")->input(DType::kFloat64, {17});
  add("Clip")->input(DType::kFloat32, {10}).attr("min", Attribute::of_float(0)).attr("max", Attribute::of_float(6));
  add("Clip")->input(DType::kInt32, {10}).attr("min", Attribute::of_float(-3));
  add("Clip")->input(DType::kFloat16, {10}).attr("max", Attribute::of_float(1.5f));
  add("Clip")->input(DType::kFloat32, {10}).input(DType::kFloat32, {}).absent();
  add("Clip")->input(DType::kInt64, {10}).absent().input(DType::kInt64, {});
  add("Clip")->input(DType::kFloat32, {10});
  OneNode* c = add("Concat");
  c->input(DType::kFloat16, {2, 3}).input(DType::kFloat16, {2, 5}).input(DType::kFloat16, {2, 1});
  c->attr("axis", Attribute::of_int(1));
  add("Concat")->input(DType::kBool, {4}).input(DType::kBool, {3}).attr("axis", Attribute::of_int(0));
  add("Concat")->input(DType::kInt64, {2, 2}).input(DType::kInt64, {3, 2}).attr("axis", Attribute::of_int(0));
  add("Transpose")->input(DType::kFloat32, {2, 3, 4, 5}).attr("perm", Attribute::of_ints({0, 2, 3, 1}));
  add("Transpose")->input(DType::kUInt8, {7, 13});
  add("Transpose")->input(DType::kFloat64, {3, 1, 2}).attr("perm", Attribute::of_ints({1, 0, 2}));
  add("Transpose")->input(DType::kFloat16, {4, 6, 8}).attr("perm", Attribute::of_ints({1, 0, 2}));
  add("Softmax")->input(DType::kFloat32, {4, 1000});
  add("Softmax")->input(DType::kFloat16, {3, 13});
  add("Softmax")->input(DType::kFloat64, {37});
  add("Softmax")->input(DType::kFloat32, {2, 7, 5}).attr("axis", Attribute::of_int(1));
  add("Softmax")->input(DType::kFloat16, {2, 7, 5}).attr("axis", Attribute::of_int(0));
  // bfloat16 (common.cuh brings cuda_bf16.h): every family that accepts it.
  add("Mul")->input(DType::kBFloat16, {3, 4}).input(DType::kBFloat16, {4});
  add("Relu")->input(DType::kBFloat16, {5});
  add("Sigmoid")->input(DType::kBFloat16, {5});
  add("Clip")->input(DType::kBFloat16, {5}).attr("max", Attribute::of_float(2));
  add("Softmax")->input(DType::kBFloat16, {2, 9});
  add("Softmax")->input(DType::kBFloat16, {2, 9, 3}).attr("axis", Attribute::of_int(1));
  return v;
}

TEST(TemplateRender, AllTemplatesRenderAndCompileWithNvcc) {
  std::vector<std::string> errors;
  std::string source;
  std::string common = read_file(std::string(AOTC_SOURCE_DIR) + "/templates/common.cuh");
  source += common.empty() ? "#include <cuda_fp16.h>\n" : common + "\n";
  std::set<std::string> templates_used;
  int kernels = 0;
  for (auto& n : representative_nodes()) {
    Status s = n->build();
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
  source += render(copy_kernel_step(0, 1, 4097), "k" + std::to_string(kernels++), &errors) + "\n";
  templates_used.insert("copy");
  for (const std::string& e : errors) ADD_FAILURE() << e;
  for (const char* t : {"binary_same_shape", "binary_broadcast", "unary_elementwise", "clip_dynamic", "concat_slab",
                        "transpose", "transpose_tiled", "softmax_rows", "softmax_columns", "copy"})
    EXPECT_TRUE(templates_used.count(t)) << "template not exercised: " << t;

  if (access(kNvcc, X_OK) != 0) GTEST_SKIP() << "nvcc not found at " << kNvcc << ": render checked, compile skipped";
  char dir_template[] = "/tmp/aotc_ops_basic_XXXXXX";
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
