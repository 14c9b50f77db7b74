// Hub ids and the local Hugging Face cache (serving/hub_cache, resolve_model
// without a network): the environment's settings as huggingface_hub reads
// them, and a cache laid out as huggingface_hub writes it.
#include "serving/hub_cache.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "serving/model_dir.h"
#include "test_support/scoped_env.h"

namespace flashdraft::serving {
namespace {

namespace fs = std::filesystem;
using flashdraft::testing::ScopedEnv;
using flashdraft::testing::ScopedTempDir;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

TEST(HubId, OrgSlashNameOnly) {
  for (const char* id : {"Qwen/Qwen3-8B", "z-lab/Qwen3-8B-DFlash-b16", "meta-llama/Llama-3.1-8B-Instruct", "a/b",
                         "org_1/model.v2"})
    EXPECT_TRUE(is_hub_id(id)) << id;
  for (const char* id : {"gpt2", "models/target/", "/abs/path", "./models/x", "a/b/c", "a//b", "org/-name",
                         "org/name.git", "org--x/name", "org/na..me", "org/na me", ""})
    EXPECT_FALSE(is_hub_id(id)) << id;
}

TEST(HubCacheDir, HonoursTheEnvironmentInHuggingFaceHubsOrder) {
  ScopedEnv home("HOME", "/home/u");
  ScopedEnv cache("HF_HUB_CACHE", std::nullopt), legacy("HUGGINGFACE_HUB_CACHE", std::nullopt);
  ScopedEnv hf_home("HF_HOME", std::nullopt), xdg("XDG_CACHE_HOME", std::nullopt);
  EXPECT_EQ(hub_cache_dir(), fs::path("/home/u/.cache/huggingface/hub"));
  {
    ScopedEnv x("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(hub_cache_dir(), fs::path("/xdg/huggingface/hub"));
    ScopedEnv h("HF_HOME", "~/hf");
    EXPECT_EQ(hub_cache_dir(), fs::path("/home/u/hf/hub"));
    ScopedEnv c("HF_HUB_CACHE", "/c");
    EXPECT_EQ(hub_cache_dir(), fs::path("/c"));
  }
}

TEST(HubSettings, OfflineEndpointAndToken) {
  ScopedTempDir dir;
  ScopedEnv off("HF_HUB_OFFLINE", std::nullopt), toff("TRANSFORMERS_OFFLINE", std::nullopt);
  EXPECT_FALSE(hub_offline());
  for (const char* v : {"1", "true", "ON", "yes"}) {
    ScopedEnv o("HF_HUB_OFFLINE", v);
    EXPECT_TRUE(hub_offline()) << v;
  }
  {
    ScopedEnv o("HF_HUB_OFFLINE", "0");
    EXPECT_FALSE(hub_offline());
  }
  {
    ScopedEnv e("HF_ENDPOINT", std::nullopt);
    EXPECT_EQ(hub_endpoint(), "https://huggingface.co");
    ScopedEnv m("HF_ENDPOINT", "http://mirror.local:8080//");
    EXPECT_EQ(hub_endpoint(), "http://mirror.local:8080");
  }
  ScopedEnv hf_home("HF_HOME", dir.path().string()), path("HF_TOKEN_PATH", std::nullopt);
  ScopedEnv t("HF_TOKEN", std::nullopt), legacy("HUGGING_FACE_HUB_TOKEN", std::nullopt);
  EXPECT_EQ(hub_token(), "");
  write(dir.path() / "token", "hf_file\n");
  EXPECT_EQ(hub_token(), "hf_file");
  ScopedEnv env_token("HF_TOKEN", "hf_env");
  EXPECT_EQ(hub_token(), "hf_env");
}

// A cache as huggingface_hub leaves it: blobs, relative symlinks, refs/main.
struct HubCache {
  ScopedTempDir dir;
  std::string commit = "0123456789abcdef0123456789abcdef01234567";
  fs::path repo() const { return dir.path() / "models--Org--Tiny"; }
  fs::path snapshot() const { return repo() / "snapshots" / commit; }
  void add(const std::string& file, const std::string& contents, const std::string& etag) {
    write(repo() / "blobs" / etag, contents);
    fs::create_directories((snapshot() / file).parent_path());
    fs::create_symlink(fs::path("../../blobs") / etag, snapshot() / file);
  }
  void ref(const std::string& name) { write(repo() / "refs" / name, commit); }
};

TEST(HubCache, ResolvesARevisionThroughRefsOrAsACommit) {
  HubCache c;
  c.add("config.json", "{}", "e1");
  EXPECT_FALSE(cached_snapshot(c.dir.path(), "Org/Tiny", "main").has_value());  // no refs/main yet
  c.ref("main");
  EXPECT_EQ(cached_snapshot(c.dir.path(), "Org/Tiny", "main"), c.snapshot());
  EXPECT_EQ(cached_snapshot(c.dir.path(), "Org/Tiny", c.commit), c.snapshot());
  EXPECT_FALSE(cached_snapshot(c.dir.path(), "Org/Tiny", "v2").has_value());
  EXPECT_FALSE(cached_snapshot(c.dir.path(), "Org/Other", "main").has_value());
}

TEST(HubCache, CompletenessFollowsTheRoleAndTheShardIndex) {
  HubCache c;
  c.add("config.json", "{}", "e1");
  const ModelNeeds target{}, drafter{.tokenizer = false, .weights = true}, dummy{.tokenizer = true, .weights = false};
  EXPECT_EQ(missing_model_files(c.snapshot(), target), (std::vector<std::string>{"tokenizer.json", "model.safetensors"}));
  EXPECT_EQ(missing_model_files(c.snapshot(), drafter), (std::vector<std::string>{"model.safetensors"}));
  c.add("tokenizer.json", "{}", "e2");
  EXPECT_TRUE(missing_model_files(c.snapshot(), dummy).empty());
  c.add("model.safetensors.index.json",
        R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})", "e3");
  c.add("model-00001-of-00002.safetensors", "x", "e4");
  EXPECT_EQ(missing_model_files(c.snapshot(), target), (std::vector<std::string>{"model-00002-of-00002.safetensors"}));
  // A link whose blob is gone (a cache cleaned by hand) is missing too.
  fs::create_symlink("../../blobs/gone", c.snapshot() / "model-00002-of-00002.safetensors");
  EXPECT_EQ(missing_model_files(c.snapshot(), target).size(), 1u);
  write(c.repo() / "blobs" / "gone", "y");
  EXPECT_TRUE(missing_model_files(c.snapshot(), target).empty());
}

TEST(ResolveModel, LocalPathsAndNonIdsComeBackAsGiven) {
  ScopedTempDir dir;
  ScopedEnv off("HF_HUB_OFFLINE", "1");
  fs::create_directories(dir.path() / "Org" / "Local");
  const ModelNeeds needs{};
  // An existing directory wins over the hub even when it reads like an id.
  struct InDir {
    fs::path old = fs::current_path();
    explicit InDir(const fs::path& p) { fs::current_path(p); }
    ~InDir() { fs::current_path(old); }
  };
  {
    InDir in(dir.path());
    EXPECT_EQ(resolve_model("--model", "Org/Local", needs), dir.path() / "Org" / "Local");
  }
  EXPECT_EQ(resolve_model("--model", "/no/such/dir", needs), fs::path("/no/such/dir"));
  EXPECT_EQ(resolve_model("--model", "plainname", needs), fs::absolute("plainname"));
}

TEST(ResolveModel, ACompleteCachedSnapshotResolvesOffline) {
  HubCache c;
  c.add("config.json", "{}", "e1");
  c.add("tokenizer.json", "{}", "e2");
  c.add("model.safetensors", "w", "e3");
  c.ref("main");
  ScopedEnv cache("HF_HUB_CACHE", c.dir.path().string()), off("HF_HUB_OFFLINE", "1");
  EXPECT_EQ(resolve_model("--model", "Org/Tiny", {}), c.snapshot());
  EXPECT_EQ(resolve_model("--model", "Org/Tiny", {}, c.commit), c.snapshot());
}

TEST(ResolveModel, OfflineAndNotCachedIsOneUsageLine) {
  HubCache c;
  c.add("config.json", "{}", "e1");
  c.ref("main");
  ScopedEnv cache("HF_HUB_CACHE", c.dir.path().string()), off("HF_HUB_OFFLINE", "1");
  try {
    resolve_model("--draft-model", "Org/Tiny", {});
    FAIL() << "expected a usage error";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--draft-model Org/Tiny: not a local directory"), std::string::npos) << m;
    EXPECT_NE(m.find("incomplete (no tokenizer.json, model.safetensors)"), std::string::npos) << m;
    EXPECT_NE(m.find("HF_HUB_OFFLINE"), std::string::npos) << m;
  }
  try {
    resolve_model("--model", "Org/Absent", {});
    FAIL() << "expected a usage error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("not in the Hugging Face cache"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resolve_model("--model", "Org/Tiny", {}, "../../etc"), UsageError);
}

}  // namespace
}  // namespace flashdraft::serving
