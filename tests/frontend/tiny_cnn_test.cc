// End to end through the frontend: models/tiny_cnn.py builds the example CNN and ONNX Runtime's
// output for a seeded input; we import it and, once every op in it is registered, run the CPU
// reference and compare with ONNX Runtime. Until then, the only acceptable problems are
// "unsupported op" (ops still being added), and `check` must name each of them.
#include <cmath>
#include <cstdlib>

#include <gtest/gtest.h>

#include "frontend/onnx_loader.h"
#include "frontend/tensor_file.h"
#include "ir/evaluator.h"
#include "tests/frontend/model_builder.h"

namespace aotc {
namespace {

TEST(TinyCnn, ImportsAndMatchesOnnxRuntime) {
  if (std::system("python3 -c 'import onnx, onnxruntime, numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 with onnx, onnxruntime and numpy is needed to build the model";
  test::TempDir dir;
  const std::string model = dir.file("tiny_cnn.onnx");
  const std::string cmd = std::string("python3 ") + AOTC_TINY_CNN_SCRIPT + " " + model +
                          " --with-ort-reference " + dir.file("ref") + " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

  std::vector<Status> problems = check_onnx_model(model);
  for (const Status& p : problems)
    EXPECT_NE(p.message().find("unsupported op"), std::string::npos) << p.message();
  auto g = load_onnx_model(model);
  if (!problems.empty()) {
    ASSERT_FALSE(g.is_ok());
    GTEST_SKIP() << problems.size() << " op(s) not registered yet, first: " << problems[0].message();
  }
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->value(g->inputs[0]).name, "image");
  EXPECT_EQ(g->value(g->inputs[0]).shape, (Shape{1, 3, 32, 32}));
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->value(g->outputs[0]).shape, (Shape{1, 10}));

  auto image = load_tensor_pb(dir.file("ref/input_0.pb"));
  auto expected = load_tensor_pb(dir.file("ref/output_0.pb"));
  ASSERT_TRUE(image.is_ok() && expected.is_ok());
  auto out = evaluate_graph(*g, {*image});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  // Whole-model criteria of design.md section 4 (fp32): relative L2 < 1e-4 and largest absolute
  // error < 1e-3 x max|ref|.
  double err2 = 0, ref2 = 0, max_err = 0, max_ref = 0;
  for (int64_t i = 0; i < expected->numel(); ++i) {
    double e = expected->get(i), d = (*out)[0].get(i) - e;
    err2 += d * d;
    ref2 += e * e;
    max_err = std::max(max_err, std::fabs(d));
    max_ref = std::max(max_ref, std::fabs(e));
  }
  EXPECT_LT(std::sqrt(err2 / ref2), 1e-4);
  EXPECT_LT(max_err, 1e-3 * max_ref);
}

}  // namespace
}  // namespace aotc
