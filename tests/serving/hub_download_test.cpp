// Hub ids downloaded from a hub (tests/serving/hub_server: the shipped models
// under the hub's URL layout) into a fresh cache: the layout huggingface_hub
// writes, revisions, tokens, and one clear line for 401, 404, an interrupted
// transfer and a full disk, after which nothing half-written looks complete
// and the next run resumes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "hub_server.h"
#include "serving/engine_builder.h"
#include "serving/hub_cache.h"
#include "serving/model_dir.h"
#include "serving/speculative_config.h"
#include "test_support/scoped_env.h"

namespace flashdraft::serving {
namespace {

namespace fs = std::filesystem;
using flashdraft::testing::ScopedEnv;
using flashdraft::testing::ScopedTempDir;
using test::HubServer;

const fs::path kTarget = fs::path(FD_SOURCE_DIR) / "models" / "target";         // index + 2 shards
const fs::path kDrafter = fs::path(FD_SOURCE_DIR) / "models" / "drafter-full";  // model.safetensors
const std::string kTargetCommit = "1111111111111111111111111111111111111111";
const std::string kDrafterCommit = "2222222222222222222222222222222222222222";
const std::string kShard = "model-00001-of-00002.safetensors";

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> files_named(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(e.path());
  }
  return out;
}

// The error message of fn, which must throw flashdraft::Error.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected flashdraft::Error";
  return "";
}

class HubDownload : public ::testing::Test {
 protected:
  HubDownload()
      : cache_env_("HF_HUB_CACHE", cache_.path().string()),
        endpoint_env_("HF_ENDPOINT", hub_.endpoint()),
        offline_env_("HF_HUB_OFFLINE", std::nullopt),
        token_env_("HF_TOKEN", std::nullopt),
        token_path_env_("HF_TOKEN_PATH", (cache_.path() / "no-token").string()) {
    hub_.add_repo("flashdraft/tiny-target", {kTarget, kTargetCommit, ""});
    hub_.add_repo("flashdraft/tiny-drafter", {kDrafter, kDrafterCommit, ""});
  }
  fs::path repo(const std::string& folder) const { return cache_.path() / folder; }
  fs::path target_snapshot() const { return repo("models--flashdraft--tiny-target") / "snapshots" / kTargetCommit; }
  fs::path resolve_target(const std::string& revision = "main") {
    return resolve_model("--model", "flashdraft/tiny-target", {}, revision, nullptr);
  }
  int gets_with_range() const {
    int n = 0;
    for (const auto& r : hub_.requests()) n += r.method == "GET" && !r.range.empty();
    return n;
  }

  ScopedTempDir cache_;
  HubServer hub_;
  ScopedEnv cache_env_, endpoint_env_, offline_env_, token_env_, token_path_env_;
};

TEST_F(HubDownload, FetchesATargetIntoHuggingFaceHubsLayout) {
  const fs::path snap = resolve_target();
  EXPECT_EQ(snap, target_snapshot());
  EXPECT_EQ(read(repo("models--flashdraft--tiny-target") / "refs" / "main"), kTargetCommit);
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                        "model.safetensors.index.json", "model-00001-of-00002.safetensors",
                        "model-00002-of-00002.safetensors"}) {
    SCOPED_TRACE(f);
    ASSERT_TRUE(fs::is_symlink(snap / f));
    const std::string contents = read(kTarget / f);
    EXPECT_EQ(fs::read_symlink(snap / f), fs::path("../../blobs") / HubServer::etag_of(contents));
    EXPECT_EQ(read(snap / f), contents);
  }
  // Files the repository lacks are remembered as huggingface_hub does.
  EXPECT_TRUE(fs::exists(repo("models--flashdraft--tiny-target") / ".no_exist" / kTargetCommit / "chat_template.jinja"));
  EXPECT_TRUE(files_named(cache_.path(), ".incomplete").empty());

  // From the cache now, without a request, offline or not.
  hub_.clear_requests();
  EXPECT_EQ(resolve_target(), snap);
  ScopedEnv off("HF_HUB_OFFLINE", "1");
  EXPECT_EQ(resolve_target(), snap);
  EXPECT_EQ(resolve_target(kTargetCommit), snap);
  EXPECT_TRUE(hub_.requests().empty());
}

TEST_F(HubDownload, TheDownloadedModelGeneratesAsTheLocalOne) {
  const auto run = [](const fs::path& dir) {
    EngineOptions o;
    o.model = dir.string();
    o.device = "cpu";
    o.max_num_seqs = 1;
    o.max_model_len = 64;
    LoadedEngine e = build_engine(o, nullptr);
    engine::SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 6;
    p.ignore_eos = true;
    const engine::RequestId id = e.engine->add({1, 2, 3, 4, 5}, p);
    while (e.engine->has_work()) e.engine->step();
    return e.engine->result(id).tokens;
  };
  const auto local = run(kTarget);
  EXPECT_EQ(local.size(), 6u);
  EXPECT_EQ(run(resolve_target()), local);
}

TEST_F(HubDownload, ADrafterNeedsNoTokenizerAndComesThroughEitherFlag) {
  const SpeculativeSetup a = speculative_setup(std::string("flashdraft/tiny-drafter"), 4, std::nullopt);
  const fs::path snap = repo("models--flashdraft--tiny-drafter") / "snapshots" / kDrafterCommit;
  EXPECT_EQ(a.draft_model, snap.string());
  EXPECT_EQ(read(snap / "model.safetensors"), read(kDrafter / "model.safetensors"));
  const SpeculativeSetup b = speculative_setup(
      std::nullopt, std::nullopt,
      std::string(R"({"method":"dflash","model":"flashdraft/tiny-drafter","revision":")") + kDrafterCommit + "\"}");
  EXPECT_EQ(b.draft_model, snap.string());
  EXPECT_EQ(b.revision, kDrafterCommit);
}

TEST_F(HubDownload, DummyWeightsFetchNoWeights) {
  const fs::path snap =
      resolve_model("--model", "flashdraft/tiny-target", {.tokenizer = true, .weights = false}, "main", nullptr);
  EXPECT_TRUE(fs::exists(snap / "config.json"));
  EXPECT_TRUE(fs::exists(snap / "tokenizer.json"));
  EXPECT_FALSE(fs::exists(snap / kShard));
  for (const auto& r : hub_.requests()) EXPECT_EQ(r.path.find(".safetensors"), std::string::npos) << r.path;
  // Asking for the weights later fetches just those.
  hub_.clear_requests();
  EXPECT_EQ(resolve_target(), snap);
  EXPECT_TRUE(fs::exists(snap / kShard));
  for (const auto& r : hub_.requests()) {
    if (r.method == "GET") {
      EXPECT_NE(r.path.find(".safetensors"), std::string::npos) << r.path;
    }
  }
}

TEST_F(HubDownload, PrivateRepositoriesNeedTheToken) {
  hub_.add_repo("flashdraft/private", {kDrafter, kDrafterCommit, "hf_secret"});
  const ModelNeeds drafter{.tokenizer = false, .weights = true};
  std::string m = error_of([&] { resolve_model("--draft-model", "flashdraft/private", drafter, "main", nullptr); });
  EXPECT_NE(m.find("--draft-model flashdraft/private: not a local directory"), std::string::npos) << m;
  EXPECT_NE(m.find("answers 401 Unauthorized"), std::string::npos) << m;
  EXPECT_NE(m.find("no token is set (HF_TOKEN)"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  {
    ScopedEnv wrong("HF_TOKEN", "hf_wrong");
    m = error_of([&] { resolve_model("--draft-model", "flashdraft/private", drafter, "main", nullptr); });
    EXPECT_NE(m.find("the token in HF_TOKEN cannot read it"), std::string::npos) << m;
  }
  ScopedEnv right("HF_TOKEN", "hf_secret");
  hub_.clear_requests();
  const fs::path snap = resolve_model("--draft-model", "flashdraft/private", drafter, "main", nullptr);
  EXPECT_TRUE(fs::exists(snap / "model.safetensors"));
  for (const auto& r : hub_.requests()) EXPECT_EQ(r.authorization, "Bearer hf_secret");
}

TEST_F(HubDownload, MissingModelRevisionOrFileIsOneLine) {
  std::string m = error_of([&] { resolve_model("--model", "flashdraft/nope", {}, "main", nullptr); });
  EXPECT_NE(m.find("401"), std::string::npos) << m;  // the hub answers unknown and private alike
  m = error_of([&] { resolve_target("v9"); });
  EXPECT_NE(m.find("--model flashdraft/tiny-target: not a local directory, and downloading it failed: " +
                   hub_.endpoint() + " has no revision v9 (404)"),
            std::string::npos)
      << m;
  // A drafter's repository asked for as a target: it has no tokenizer.json.
  m = error_of([&] { resolve_model("--model", "flashdraft/tiny-drafter", {}, "main", nullptr); });
  EXPECT_NE(m.find("has no tokenizer.json in revision main (404)"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_FALSE(fs::exists(repo("models--flashdraft--tiny-drafter") / "refs" / "main"));
}

TEST_F(HubDownload, AnInterruptedTransferResumesWithinTheRun) {
  hub_.cut(kShard, 1 << 20, 2);  // two cut bodies, then whole ones
  const fs::path snap = resolve_target();
  EXPECT_EQ(read(snap / kShard), read(kTarget / kShard));
  EXPECT_EQ(gets_with_range(), 2);  // resumed at 1 MB, then at 2 MB
  bool at_2mb = false;
  for (const auto& r : hub_.requests()) at_2mb |= r.range == "bytes=" + std::to_string(2 << 20) + "-";
  EXPECT_TRUE(at_2mb);
}

TEST_F(HubDownload, AnInterruptedRunLeavesNothingCompleteAndTheNextOneResumes) {
  hub_.cut(kShard, 1 << 20, 100);
  const std::string m = error_of([&] { resolve_target(); });
  EXPECT_NE(m.find("downloading it failed: " + kShard + " interrupted"), std::string::npos) << m;
  EXPECT_NE(m.find("run again to resume"), std::string::npos) << m;
  // What arrived waits in an .incomplete blob; the snapshot does not show the
  // shard and the revision is not recorded, so nothing takes it for complete.
  const auto parts = files_named(cache_.path(), ".incomplete");
  ASSERT_EQ(parts.size(), 1u);
  const uint64_t kept = fs::file_size(parts[0]);
  EXPECT_EQ(kept, 4u << 20);  // four attempts of 1 MB each
  EXPECT_FALSE(fs::exists(target_snapshot() / kShard));
  EXPECT_FALSE(fs::exists(repo("models--flashdraft--tiny-target") / "refs" / "main"));
  EXPECT_FALSE(missing_model_files(target_snapshot(), {}).empty());
  {
    ScopedEnv off("HF_HUB_OFFLINE", "1");
    EXPECT_THROW(resolve_target(), UsageError);
  }

  hub_.cut(kShard, 0, 0);
  hub_.clear_requests();
  const fs::path snap = resolve_target();
  EXPECT_EQ(read(snap / kShard), read(kTarget / kShard));
  bool resumed = false;
  for (const auto& r : hub_.requests()) resumed |= r.range == "bytes=" + std::to_string(kept) + "-";
  EXPECT_TRUE(resumed);
  EXPECT_TRUE(files_named(cache_.path(), ".incomplete").empty());
}

// A full disk, as the process sees one: writes past RLIMIT_FSIZE fail with
// EFBIG (SIGXFSZ ignored) exactly where ENOSPC would.
TEST_F(HubDownload, AFullDiskIsOneLineAndTheNextRunResumes) {
  struct FileSizeLimit {
    rlimit old{};
    void (*old_handler)(int) = nullptr;
    explicit FileSizeLimit(rlim_t bytes) {
      getrlimit(RLIMIT_FSIZE, &old);
      old_handler = signal(SIGXFSZ, SIG_IGN);
      rlimit r = old;
      r.rlim_cur = bytes;
      setrlimit(RLIMIT_FSIZE, &r);
    }
    ~FileSizeLimit() {
      setrlimit(RLIMIT_FSIZE, &old);
      signal(SIGXFSZ, old_handler);
    }
  };
  std::string m;
  {
    FileSizeLimit limit(3 << 20);
    m = error_of([&] { resolve_target(); });
  }
  EXPECT_NE(m.find("writing "), std::string::npos) << m;
  EXPECT_NE(m.find(".incomplete failed after 3.0 MB: File too large"), std::string::npos) << m;
  EXPECT_NE(m.find("free space"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_FALSE(files_named(cache_.path(), ".incomplete").empty());
  EXPECT_FALSE(fs::exists(target_snapshot() / kShard));
  EXPECT_FALSE(fs::exists(repo("models--flashdraft--tiny-target") / "refs" / "main"));

  hub_.clear_requests();
  const fs::path snap = resolve_target();
  EXPECT_EQ(read(snap / kShard), read(kTarget / kShard));
  EXPECT_EQ(gets_with_range(), 1);
}

TEST_F(HubDownload, ProgressAndASummaryLineGoToTheLog) {
  std::FILE* log = std::tmpfile();
  resolve_model("--model", "flashdraft/tiny-target", {}, "main", log);
  std::fflush(log);
  std::rewind(log);
  std::string text;
  for (int c; (c = std::fgetc(log)) != EOF;) text.push_back(static_cast<char>(c));
  std::fclose(log);
  EXPECT_NE(text.find("flashdraft: downloading flashdraft/tiny-target (main = commit 111111111111) from " +
                      hub_.endpoint()),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("flashdraft: downloaded 24.4 MB (7 files) of flashdraft/tiny-target in"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace flashdraft::serving
