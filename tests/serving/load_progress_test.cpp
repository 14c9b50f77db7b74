#include "serving/load_progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace flashdraft::serving {
namespace {

// Everything written to a temporary FILE*.
struct Capture {
  std::FILE* file = std::tmpfile();
  ~Capture() { std::fclose(file); }
  std::string text() {
    std::fflush(file);
    std::rewind(file);
    std::string s;
    for (int c; (c = std::fgetc(file)) != EOF;) s.push_back(static_cast<char>(c));
    return s;
  }
};

constexpr uint64_t kMiB = 1024 * 1024;

TEST(LoadProgress, WithoutATerminalOnlyTheFinalLineIsPrinted) {
  Capture c;
  LoadProgress p(c.file, /*draw_bar=*/false, std::chrono::milliseconds(0));
  p.update(5 * kMiB, 10 * kMiB);
  p.update(10 * kMiB, 10 * kMiB);
  EXPECT_EQ(c.text(), "");
  p.finish(10 * kMiB);
  std::string out = c.text();
  EXPECT_EQ(out.rfind("flashdraft: loaded 10.0 MB in ", 0), 0u) << out;
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(out.find('\r'), std::string::npos);
}

TEST(LoadProgress, OnATerminalTheBarAppearsAfterTheQuietPeriodAndIsCleared) {
  Capture c;
  LoadProgress p(c.file, /*draw_bar=*/true, std::chrono::milliseconds(0));
  p.update(5 * kMiB, 10 * kMiB);
  std::string bar = c.text();
  EXPECT_NE(bar.find("\rloading ["), std::string::npos) << bar;
  EXPECT_NE(bar.find(" 50%"), std::string::npos) << bar;
  EXPECT_NE(bar.find("5/10 MB"), std::string::npos) << bar;
  p.update(10 * kMiB, 10 * kMiB);  // the last update is always drawn
  EXPECT_NE(c.text().find("100%"), std::string::npos);
  p.finish(10 * kMiB);
  std::string out = c.text();
  EXPECT_NE(out.find("\r\33[2Kflashdraft: loaded 10.0 MB in "), std::string::npos) << out;
}

TEST(LoadProgress, FastLoadsShowNoBarEvenOnATerminal) {
  Capture c;
  LoadProgress p(c.file, /*draw_bar=*/true, std::chrono::hours(1));
  p.update(5 * kMiB, 10 * kMiB);
  p.finish(10 * kMiB);
  std::string out = c.text();
  EXPECT_EQ(out.find("loading"), std::string::npos) << out;
  EXPECT_EQ(out.rfind("flashdraft: loaded", 0), 0u) << out;
}

}  // namespace
}  // namespace flashdraft::serving
