// --base-url as vLLM's bench and OpenAI clients write it.
#include "bench_serve/base_url.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace flashdraft::bench_serve {
namespace {

TEST(BaseUrl, Forms) {
  BaseUrl u = parse_base_url("http://127.0.0.1:8000");
  EXPECT_EQ(u.origin(), "http://127.0.0.1:8000");
  EXPECT_EQ(u.prefix, "");
  EXPECT_EQ(u.url("/v1/completions"), "http://127.0.0.1:8000/v1/completions");
  EXPECT_EQ(parse_base_url("http://localhost:8000/v1/").prefix, "");
  EXPECT_EQ(parse_base_url("http://h/proxy/v1").prefix, "/proxy");
  EXPECT_EQ(parse_base_url("http://h").port, 80);
  EXPECT_EQ(parse_base_url("https://h").port, 443);
  BaseUrl v6 = parse_base_url("http://[::1]:9000");
  EXPECT_EQ(v6.host, "[::1]");
  EXPECT_EQ(v6.port, 9000);
}

TEST(BaseUrl, Rejects) {
  for (const char* bad : {"127.0.0.1:8000", "ftp://h", "http://", "http://h:0", "http://h:70000", "http://h:x",
                          "http://[::1", "http://h/v1?x=1"}) {
    EXPECT_THROW(parse_base_url(bad), UsageError) << bad;
  }
}

}  // namespace
}  // namespace flashdraft::bench_serve
