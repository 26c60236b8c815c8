// The JSON reader: every value kind, escapes (incl. surrogate pairs) and its refusals (trailing
// text, duplicate keys, depth, bad escapes, control characters, unterminated input).
#include <gtest/gtest.h>

#include "tools/json_reader.h"
#include "tools/json_writer.h"

namespace aotc {
namespace {

TEST(JsonReader, ParsesEveryKind) {
  auto v = parse_json(R"( {"a": [1, -2.5e3, true, false, null], "s": "x\"\\\/\n\u00e9\ud83d\ude00", "o": {}} )");
  ASSERT_TRUE(v.is_ok()) << v.status().message();
  ASSERT_EQ(v->kind, JsonValue::Kind::kObject);
  const JsonValue* a = v->find("a");
  ASSERT_TRUE(a && a->kind == JsonValue::Kind::kArray && a->array.size() == 5u);
  EXPECT_EQ(a->array[0].number, 1.0);
  EXPECT_EQ(a->array[1].number, -2500.0);
  EXPECT_TRUE(a->array[2].boolean);
  EXPECT_EQ(a->array[3].kind, JsonValue::Kind::kBool);
  EXPECT_FALSE(a->array[3].boolean);
  EXPECT_EQ(a->array[4].kind, JsonValue::Kind::kNull);
  const JsonValue* s = v->find("s");
  ASSERT_TRUE(s && s->kind == JsonValue::Kind::kString);
  EXPECT_EQ(s->string, "x\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v->find("o")->kind, JsonValue::Kind::kObject);
  EXPECT_EQ(v->find("missing"), nullptr);
  EXPECT_EQ(a->find("a"), nullptr);  // not an object
}

TEST(JsonReader, ReadsWhatTheWriterWrites) {
  JsonWriter w;
  w.begin_object().key("name\n\"q\"").value(std::string("va\x01lue")).key("n").value(0.125).key("i").value(int64_t{-7});
  w.end_object();
  auto v = parse_json(w.str());
  ASSERT_TRUE(v.is_ok()) << v.status().message() << "\n" << w.str();
  ASSERT_NE(v->find("name\n\"q\""), nullptr);
  EXPECT_EQ(v->find("name\n\"q\"")->string, "va\x01lue");
  EXPECT_EQ(v->find("n")->number, 0.125);
  EXPECT_EQ(v->find("i")->number, -7.0);
}

TEST(JsonReader, RefusesMalformedInput) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":1}x", "{\"a\":1,\"a\":2}", "\"abc",
                          "\"a\\q\"", "\"\\u12\"", "\"\\ud800\\u0041\"", "\"tab\there\"", "01x", "-", "1.", "1e",
                          "tru", "nul", "[1 2]", "{1:2}"}) {
    auto v = parse_json(bad);
    EXPECT_FALSE(v.is_ok()) << "accepted: " << bad;
    if (!v.is_ok()) {
      EXPECT_NE(v.status().message().find("at byte"), std::string::npos) << v.status().message();
    }
  }
  std::string deep(100, '[');
  deep += std::string(100, ']');
  auto v = parse_json(deep);
  ASSERT_FALSE(v.is_ok());
  EXPECT_NE(v.status().message().find("nesting"), std::string::npos);
  std::string ok_depth(60, '[');
  ok_depth += std::string(60, ']');
  EXPECT_TRUE(parse_json(ok_depth).is_ok());
}

}  // namespace
}  // namespace aotc
