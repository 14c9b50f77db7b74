// Python str/float/json semantics the renderer relies on. Expected values are
// what CPython 3.11 prints for the same calls (noted next to each).
#include <gtest/gtest.h>

#include "chat/py_json.h"
#include "chat/py_str.h"

namespace flashdraft::chat::py {
namespace {

using V = std::vector<std::string>;

TEST(PyFloatRepr, MatchesPythonRepr) {
  EXPECT_EQ(float_repr(0.1), "0.1");
  EXPECT_EQ(float_repr(1e16), "1e+16");
  EXPECT_EQ(float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(float_repr(1.5e-7), "1.5e-07");
  EXPECT_EQ(float_repr(123456789012345680.0), "1.2345678901234568e+17");
  EXPECT_EQ(float_repr(0.0001), "0.0001");
  EXPECT_EQ(float_repr(-0.0), "-0.0");
  EXPECT_EQ(float_repr(1e300), "1e+300");
  EXPECT_EQ(float_repr(5e-324), "5e-324");
  EXPECT_EQ(float_repr(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(float_repr(100.0), "100.0");
}

TEST(PyStr, SplitAndRsplit) {
  EXPECT_EQ(split(" a  b \t", std::nullopt, 1), (V{"a", "b \t"}));      // ' a  b \t'.split(None, 1)
  EXPECT_EQ(rsplit(" a  b c ", std::nullopt, 1), (V{" a  b", "c"}));    // ' a  b c '.rsplit(None, 1)
  EXPECT_EQ(split("a,b,,c", std::string(","), 2), (V{"a", "b", ",c"}));
  EXPECT_EQ(rsplit("a,b,,c", std::string(","), 2), (V{"a,b", "", "c"}));
  EXPECT_EQ(split("", std::string(","), -1), (V{""}));
  EXPECT_EQ(split("", std::nullopt, -1), V{});
  EXPECT_EQ(split("x</think>y</think>z", std::string("</think>"), -1), (V{"x", "y", "z"}));
}

TEST(PyStr, StripUsesUnicodeWhitespace) {
  EXPECT_EQ(strip("\u3000 x\u2028", std::nullopt, true, true), "x");
  EXPECT_EQ(strip("\n\nx\n", std::string("\n"), true, false), "x\n");
  EXPECT_EQ(strip("ééxé", std::string("é"), true, true), "x");  // chars are code points, not bytes
}

TEST(PyStr, ReplaceWithEmptyPattern) {
  EXPECT_EQ(replace("xyx", "", "-", -1), "-x-y-x-");
  EXPECT_EQ(replace("abc", "", "-", 2), "-a-bc");
}

TEST(PyStr, ReprQuoting) {
  EXPECT_EQ(repr("it's"), "\"it's\"");
  EXPECT_EQ(repr("a\"b'c"), "'a\"b\\'c'");
  EXPECT_EQ(repr("\x01\x7f\u0085\u200b\U0001F600\u00e9"), "'\\x01\\x7f\\x85\\u200b\U0001F600\u00e9'");
}

TEST(PyJson, DumpsLikePython) {
  const Json j = Json::parse(R"({"b": [1, 2.0, "é\n"], "a": {}, "c": []})");
  DumpsOptions o;
  EXPECT_EQ(json_dumps(j, o), R"({"b": [1, 2.0, "é\n"], "a": {}, "c": []})");
  o.ensure_ascii = true;
  o.sort_keys = true;
  EXPECT_EQ(json_dumps(j, o), R"({"a": {}, "b": [1, 2.0, "\u00e9\n"], "c": []})");
  DumpsOptions indented;
  indented.indent = "  ";
  EXPECT_EQ(json_dumps(Json::parse(R"({"k": [1, {}]})"), indented), "{\n  \"k\": [\n    1,\n    {}\n  ]\n}");
  o.ensure_ascii = true;
  EXPECT_EQ(json_dumps(Json("\U0001F600"), o), "\"\\ud83d\\ude00\"");
}

}  // namespace
}  // namespace flashdraft::chat::py
