// The template renderer's contract (missing / unused / repeated holes, literal braces) and the
// sanitizers that keep model text out of generated source.
#include <gtest/gtest.h>

#include "codegen/embedded_files.h"
#include "codegen/identifiers.h"
#include "codegen/template_renderer.h"

namespace aotc {
namespace {

TEST(TemplateRenderer, SubstitutesEveryUse) {
  auto out = render_template("t", "a={{A}}; b={{B}}; a2={{A}};", {{"A", "1"}, {"B", "x+y"}});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_EQ(*out, "a=1; b=x+y; a2=1;");
}

TEST(TemplateRenderer, FailsOnMissingHole) {
  auto out = render_template("unary", "n = {{numel}}; t = {{T}};", {{"T", "float"}});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("'numel' is used but not provided"), std::string::npos)
      << out.status().message();
  EXPECT_NE(out.status().message().find("unary"), std::string::npos);
}

TEST(TemplateRenderer, FailsOnUnusedKey) {
  auto out = render_template("t", "{{T}}", {{"T", "float"}, {"extra", "1"}});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("'extra' is provided but the template does not use it"),
            std::string::npos)
      << out.status().message();
}

TEST(TemplateRenderer, FailsOnRepeatedKey) {
  auto out = render_template("t", "{{T}}", {{"T", "float"}, {"T", "double"}});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("given twice"), std::string::npos);
}

TEST(TemplateRenderer, BracesThatAreNotHolesStayLiteral) {
  // CUDA aggregate initialisers and a hole inside braces.
  auto out = render_template("t", "int a[1][1] = {{0}}; long d[] = {{{dims}}}; {{ x }}",
                             {{"dims", "1LL, 2LL"}});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_EQ(*out, "int a[1][1] = {{0}}; long d[] = {1LL, 2LL}; {{ x }}");
  EXPECT_EQ(template_holes("{{a}}{{b}}{{a}}{{0}}"), (std::vector<std::string>{"a", "b"}));
}

TEST(TemplateRenderer, ValuesAreNotRescanned) {
  auto out = render_template("t", "{{A}}", {{"A", "{{B}}"}});
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(*out, "{{B}}");
}

TEST(Identifiers, HostileNamesBecomePlainIdentifiers) {
  const std::string hostile[] = {"*/ int pwned; /*", "a\nb", "x\"y'z", "#include <evil.h>",
                                 "\xc3\xa9\xe2\x80\x8b", "", "?" "?/", "a\\", "0start"};
  for (const std::string& h : hostile) {
    std::string id = sanitize_identifier(h);
    ASSERT_FALSE(id.empty());
    for (char c : id)
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '_') << "from " << h;
  }
  EXPECT_EQ(sanitize_identifier("conv1/relu:0"), "conv1_relu_0");
  EXPECT_EQ(sanitize_identifier("a...b"), "a_b");
  EXPECT_EQ(sanitize_identifier(std::string(100, 'a'), 40).size(), 40u);
  EXPECT_EQ(abi_prefix("0model"), "_0model");
  EXPECT_EQ(abi_prefix(""), "model");
}

TEST(Identifiers, CommentsCannotEscape) {
  std::string c = sanitize_comment("x */ #include \"evil\"\n?\\\x01\xff// y");
  for (const char* bad : {"*/", "/*", "//", "#", "\"", "\n", "\\", "?"})
    EXPECT_EQ(c.find(bad), std::string::npos) << bad << " in " << c;
  EXPECT_EQ(sanitize_comment("Relu over 1x3x224x224"), "Relu over 1x3x224x224");
}

TEST(Identifiers, StringLiteralEscapesEverythingButAlnum) {
  EXPECT_EQ(c_string_literal("ab_1"), "\"ab_1\"");
  // The quote, backslash, newline and a non-ASCII byte become 3-digit octal escapes.
  EXPECT_EQ(c_string_literal("a\"\\\n\xff" "7"), "\"a\\042\\134\\012\\3777\"");
}

TEST(EmbeddedFiles, TemplatesAndRuntimeAreEmbedded) {
  ASSERT_NE(find_embedded_file("templates/common.cuh"), nullptr);
  ASSERT_NE(find_embedded_file("templates/unary_elementwise.cu.in"), nullptr);
  // The runtime is split by concern; every file must be embedded (codegen compiles all of them).
  for (const char* name : {"aotc_rt_create.c", "aotc_rt_driver.c", "aotc_rt_launch.c",
                           "aotc_rt_graph.c", "aotc_rt_profile.c", "aotc_rt_check.c", "aotc_rt_internal.h",
                           "aotc_runtime.h", "aotc_cuda_api.h"})
    EXPECT_NE(find_embedded_file(std::string("runtime/") + name), nullptr) << name;
  const EmbeddedFile* rt = find_embedded_file("runtime/aotc_rt_create.c");
  ASSERT_NE(rt, nullptr);
  EXPECT_NE(rt->text().find("int aotc_rt_create("), std::string::npos);
  EXPECT_NE(find_embedded_file("templates/library_params.cuh"), nullptr);
  EXPECT_EQ(find_embedded_file("templates/no_such.cu.in"), nullptr);
}

}  // namespace
}  // namespace aotc
