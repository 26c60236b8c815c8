// SHA-256 against the FIPS 180-4 / NIST test vectors and the system's sha256sum; the JSON writer
// against hand-written escapes (RFC 8259) and, where python3 exists, against Python's json parser.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tools/json_writer.h"
#include "codegen/sha256.h"

namespace aotc {
namespace {

std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[256];
  while (fgets(buf, sizeof(buf), p)) out += buf;
  pclose(p);
  return out;
}

TEST(Sha256, NistVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 million;
  std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) million.update(chunk.data(), chunk.size());
  EXPECT_EQ(million.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, FileMatchesSha256sum) {
  std::string path = ::testing::TempDir() + "/aotc_sha_test.bin";
  {
    std::ofstream f(path, std::ios::binary);
    for (int i = 0; i < 200000; ++i) f.put(static_cast<char>((i * 131) ^ (i >> 7)));
  }
  auto h = sha256_file(path);
  ASSERT_TRUE(h.is_ok());
  std::string sys = run_capture("sha256sum '" + path + "' 2>/dev/null");
  if (sys.size() < 64) GTEST_SKIP() << "no sha256sum on this machine";
  EXPECT_EQ(*h, sys.substr(0, 64));
  EXPECT_FALSE(sha256_file(path + ".missing").is_ok());
}

TEST(Json, EscapesHostileStrings) {
  EXPECT_EQ(json_escape("plain"), "\"plain\"");
  EXPECT_EQ(json_escape("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_escape("l1\nl2\t\r"), "\"l1\\nl2\\t\\r\"");
  EXPECT_EQ(json_escape(std::string("\x01\x1f\x7f", 3)), "\"\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(json_escape(std::string("nul\0x", 5)), "\"nul\\u0000x\"");
  EXPECT_EQ(json_escape("caf\xc3\xa9"), "\"caf\xc3\xa9\"");          // valid UTF-8 passes
  EXPECT_EQ(json_escape("bad\xff\xc3"), "\"bad\\u00ff\\u00c3\"");     // invalid bytes escaped
  EXPECT_EQ(json_escape("\xed\xa0\x80"), "\"\\u00ed\\u00a0\\u0080\"");  // a UTF-16 surrogate
  EXPECT_EQ(json_escape("*/ #include"), "\"*/ #include\"");
}

TEST(Json, WriterNestsAndParses) {
  JsonWriter j;
  j.begin_object().key("ok").value(true).key("n").value(int64_t{-3}).key("x").value(0.5);
  j.key("inf").value(1.0 / 0.0).key("s").value(std::string("q\"\n\xff", 4));
  j.key("empty").begin_array().end_array().key("o").begin_object().end_object();
  j.key("list").begin_array().value(1).value("two").begin_object().key("k").null().end_object().end_array();
  j.key("dims").int_array({1, 3, 224}).end_object();
  const std::string& s = j.str();
  EXPECT_NE(s.find("\"ok\": true"), std::string::npos);
  EXPECT_NE(s.find("\"inf\": null"), std::string::npos);
  EXPECT_NE(s.find("\"dims\": [1, 3, 224]"), std::string::npos);
  EXPECT_NE(s.find("\"empty\": []"), std::string::npos);
  std::string path = ::testing::TempDir() + "/aotc_json_test.json";
  ASSERT_TRUE(write_file_atomically(path, s).is_ok());
  if (std::system("python3 -c 'import json' 2>/dev/null") != 0) GTEST_SKIP() << "no python3 to parse the JSON";
  std::string parsed = run_capture(
      "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
      "print(d[\"n\"], d[\"x\"], d[\"inf\"], ascii(d[\"s\"]), d[\"list\"][1], d[\"list\"][2][\"k\"], d[\"dims\"])' '" +
      path + "'");
  EXPECT_EQ(parsed, "-3 0.5 None 'q\"\\n\\xff' two None [1, 3, 224]\n");
}

}  // namespace
}  // namespace aotc
