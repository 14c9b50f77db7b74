// `flashdraft inspect`: every published config (tests/fixtures/configs,
// copies of ../shared/configs) with its expected sizes and layer kinds, the
// pairs among them, the shipped pair with its safetensors headers, and one
// error line per problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "subprocess.h"

namespace flashdraft::cli::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kConfigs = FD_FIXTURES_DIR "/configs/";
const std::string kModels = FD_SOURCE_DIR "/models/";

json inspect_json(const std::vector<std::string>& args, Ran* ran = nullptr) {
  std::vector<std::string> a = {"inspect", "--json"};
  a.insert(a.end(), args.begin(), args.end());
  Ran r = run_flashdraft(a);
  if (ran) *ran = r;
  return json::parse(r.out);
}

// Parameter counts are the published ones (safetensors totals of the hub
// checkpoints: Llama-3.1-8B 8,030,261,248, Qwen3-8B 8,190,735,360, ...);
// KV bytes per token = 2 x layers x kv heads x head_dim x 2 (bf16).
struct Expected {
  std::string dir;
  std::string architecture;
  int64_t parameters, kv_bf16, context;
  // Drafters: block size, taps, mask id, per layer "full"/"sliding<W>" plus "c" (causal) or "n".
  int64_t block = 0;
  std::vector<int64_t> taps = {};
  int64_t mask = 0;
  std::vector<std::string> layers = {};
};

const std::vector<Expected> kExpected = {
    {"qwen3-8b", "Qwen3ForCausalLM", 8190735360, 147456, 40960},
    {"qwen3-4b", "Qwen3ForCausalLM", 4022468096, 147456, 40960},
    {"qwen3-32b", "Qwen3ForCausalLM", 32762123264, 262144, 40960},
    {"llama-3.1-8b-instruct", "LlamaForCausalLM", 8030261248, 131072, 131072},
    {"qwen3-8b-dflash-b16", "DFlashDraftModel", 1048626432, 20480, 40960, 16, {1, 9, 17, 25, 33}, 151669,
     {"full n", "full n", "full n", "full n", "full n"}},
    {"qwen3-4b-dflash-b16", "DFlashDraftModel", 537427200, 20480, 40960, 16, {1, 9, 17, 25, 33}, 151669,
     {"full n", "full n", "full n", "full n", "full n"}},
    {"qwen3.5-4b-dflash", "DFlashDraftModel", 537427200, 20480, 262144, 16, {1, 8, 15, 22, 29}, 248070,
     {"full n", "full n", "full n", "full n", "full n"}},
    {"qwen3.6-27b-dflash", "DFlashDraftModel", 1730213120, 20480, 262144, 16, {1, 16, 31, 46, 61}, 248070,
     {"sliding2048 c", "sliding2048 c", "sliding2048 c", "sliding2048 c", "full n"}},
};

std::string kind(const json& l) {
  return (l["attention"] == "sliding" ? "sliding" + std::to_string(l["window"].get<int64_t>()) : std::string("full")) +
         (l["causal"].get<bool>() ? " c" : " n");
}

TEST(CliInspect, EveryPublishedConfigWithItsSizesAndLayerKinds) {
  size_t seen = 0;
  for (const auto& e : fs::directory_iterator(kConfigs)) seen += fs::exists(e.path() / "config.json");
  EXPECT_EQ(seen, kExpected.size()) << "a config in tests/fixtures/configs has no row here";
  for (const Expected& x : kExpected) {
    SCOPED_TRACE(x.dir);
    Ran r;
    const json j = inspect_json({"--model", kConfigs + x.dir, "--config-only"}, &r);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(j["errors"].empty());
    const bool drafter = x.block > 0;
    ASSERT_TRUE(j.contains(drafter ? "drafter" : "target")) << j.dump();
    const json& m = j[drafter ? "drafter" : "target"];
    EXPECT_EQ(m["architectures"], json::array({x.architecture}));
    EXPECT_EQ(m["parameters"].get<int64_t>(), x.parameters);
    EXPECT_EQ(m["kv_bytes_per_token"]["bf16"].get<int64_t>(), x.kv_bf16);
    EXPECT_EQ(m["kv_bytes_per_token"]["f32"].get<int64_t>(), 2 * x.kv_bf16);
    EXPECT_EQ(m["context_length"].get<int64_t>(), x.context);
    EXPECT_EQ(m["bytes_by_dtype"]["bf16"].get<int64_t>(), 2 * x.parameters);  // every config says bfloat16
    EXPECT_EQ(m["bytes_from"], "config");
    if (!drafter) continue;
    EXPECT_EQ(m["block_size"].get<int64_t>(), x.block);
    EXPECT_EQ(m["target_layer_ids"].get<std::vector<int64_t>>(), x.taps);
    EXPECT_EQ(m["mask_token_id"].get<int64_t>(), x.mask);
    std::vector<std::string> kinds;
    for (const auto& l : m["layers"]) kinds.push_back(kind(l));
    EXPECT_EQ(kinds, x.layers);
    EXPECT_FALSE(j["pair"]["checked"].get<bool>());
  }
}

TEST(CliInspect, TheTableNamesWhatItFound) {
  Ran r = run_flashdraft({"inspect", "--model", kConfigs + "qwen3-8b", "--draft-model",
                          kConfigs + "qwen3-8b-dflash-b16", "--config-only"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want : {"Qwen3ForCausalLM", "8,190,735,360", "DFlashDraftModel", "[1, 9, 17, 25, 33] of 36",
                           "151669", "4: full, non-causal", "16 (up to 15 drafted tokens a step)", "pair     fits",
                           "ok: no problems found"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " in:\n" << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

// Published pairs: the right ones fit; crossed ones give one line per mismatch.
TEST(CliInspect, PairsOfPublishedConfigs) {
  struct Pair {
    std::string target, drafter;
    std::vector<std::string> problems;  // a field named by each error line, in order
  };
  const std::vector<Pair> pairs = {
      {"qwen3-8b", "qwen3-8b-dflash-b16", {}},
      {"qwen3-4b", "qwen3-4b-dflash-b16", {}},
      {"qwen3-8b", "qwen3-4b-dflash-b16", {"\"hidden_size\""}},
      {"qwen3-4b", "qwen3.5-4b-dflash", {"\"vocab_size\"", "\"num_target_layers\"", "\"dflash_config.mask_token_id\""}},
      {"qwen3-32b", "qwen3.6-27b-dflash", {"\"vocab_size\"", "\"dflash_config.mask_token_id\""}},
  };
  for (const Pair& p : pairs) {
    SCOPED_TRACE(p.target + " + " + p.drafter);
    Ran r;
    const json j = inspect_json({"--model", kConfigs + p.target, "--draft-model", kConfigs + p.drafter, "--config-only"}, &r);
    EXPECT_EQ(r.exit_code, p.problems.empty() ? 0 : 1);
    EXPECT_EQ(j["pair"]["fits"].get<bool>(), p.problems.empty());
    ASSERT_EQ(j["errors"].size(), p.problems.size()) << j["errors"].dump();
    const auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), p.problems.size()) << r.err;
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(lines[i].rfind("flashdraft: error: ", 0), 0u) << lines[i];
      EXPECT_NE(lines[i].find(p.problems[i]), std::string::npos) << lines[i];
    }
  }
}

// The shipped pair, headers included: parameters from config and checkpoint
// agree (models/README.md: 12,588,672 and 3,000,832), bf16 bytes, and the
// mask id is the target tokenizer's <|mask|>.
TEST(CliInspect, ShippedPairWithWeights) {
  for (const char* drafter : {"drafter-full", "drafter-swa"}) {
    SCOPED_TRACE(drafter);
    Ran r;
    const json j = inspect_json({"--model", kModels + "target", "--draft-model", kModels + drafter}, &r);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(j["errors"].empty()) << j["errors"].dump();
    EXPECT_TRUE(j["pair"]["fits"].get<bool>());
    EXPECT_EQ(j["target"]["parameters"].get<int64_t>(), 12588672);
    EXPECT_EQ(j["target"]["checkpoint_parameters"].get<int64_t>(), 12588672);
    EXPECT_EQ(j["target"]["bytes_by_dtype"], json({{"bf16", 2 * 12588672}}));
    EXPECT_EQ(j["target"]["bytes_from"], "safetensors");
    EXPECT_EQ(j["drafter"]["parameters"].get<int64_t>(), 3000832);
    EXPECT_EQ(j["drafter"]["checkpoint_parameters"].get<int64_t>(), 3000832);
    EXPECT_EQ(j["drafter"]["mask_token"], "<|mask|>");
    EXPECT_EQ(j["drafter"]["layers"][0]["attention"], std::string(drafter) == "drafter-swa" ? "sliding" : "full");
  }
}

struct Scratch {
  fs::path path;
  Scratch() {
    std::string t = (fs::temp_directory_path() / "fd-inspect-XXXXXX").string();
    if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path = t;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A config that does not describe its weights: one line per misshapen tensor.
TEST(CliInspect, WeightsThatDoNotMatchTheConfig) {
  Scratch s;
  const fs::path d = s.path / "drafter";
  fs::create_directories(d);
  fs::create_symlink(fs::absolute(kModels + "drafter-swa/model.safetensors"), d / "model.safetensors");
  std::ifstream in(kModels + "drafter-swa/config.json");
  json c = json::parse(in);
  c["intermediate_size"] = 512;
  std::ofstream(d / "config.json") << c.dump();
  Ran r;
  const json j = inspect_json({"--model", kModels + "target", "--draft-model", d.string()}, &r);
  EXPECT_EQ(r.exit_code, 1);
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 6u) << r.err;  // gate, up, down of both layers
  for (const auto& l : lines) {
    const bool down = l.find("down_proj") != std::string::npos;
    EXPECT_NE(l.find(down ? "has shape [384, 768], expected [384, 512]" : "has shape [768, 384], expected [512, 384]"),
              std::string::npos)
        << l;
  }
  // --config-only does not open the weights: nothing to complain about.
  EXPECT_EQ(run_flashdraft({"inspect", "--model", kModels + "target", "--draft-model", d.string(), "--config-only"})
                .exit_code,
            0);
}

// Hub ids resolve through the local Hugging Face cache (huggingface_hub's
// layout: snapshots/<commit>/ files, refs/main), offline here.
TEST(CliInspect, HubIdsFromTheLocalCache) {
  Scratch s;
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  const auto cache_model = [&](const std::string& repo, const std::string& dir) {
    const fs::path r = s.path / ("models--Org--" + repo);
    fs::create_directories(r / "snapshots" / commit);
    fs::create_directories(r / "refs");
    std::ofstream(r / "refs" / "main") << commit;
    for (const auto& f : fs::directory_iterator(kModels + dir))
      fs::create_symlink(fs::absolute(f.path()), r / "snapshots" / commit / f.path().filename());
  };
  cache_model("Target", "target");
  cache_model("Drafter", "drafter-full");
  setenv("HF_HUB_CACHE", s.path.c_str(), 1);
  setenv("HF_HUB_OFFLINE", "1", 1);
  Ran r;
  const json hub = inspect_json({"--model", "Org/Target", "--draft-model", "Org/Drafter"}, &r);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json local = inspect_json({"--model", kModels + "target", "--draft-model", kModels + "drafter-full"});
  EXPECT_TRUE(hub["pair"]["fits"].get<bool>());
  EXPECT_EQ(hub["target"]["checkpoint_parameters"], local["target"]["checkpoint_parameters"]);
  EXPECT_EQ(hub["drafter"]["checkpoint_parameters"], local["drafter"]["checkpoint_parameters"]);
  EXPECT_EQ(hub["drafter"]["mask_token"], "<|mask|>");

  // Not cached and offline: one usage line naming the flag and the id.
  r = run_flashdraft({"inspect", "--model", "Org/Target", "--draft-model", "Org/Missing", "--config-only"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--draft-model Org/Missing"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HF_HUB_OFFLINE"), std::string::npos) << r.err;
  unsetenv("HF_HUB_CACHE");
  unsetenv("HF_HUB_OFFLINE");
}

TEST(CliInspect, UnsupportedModelsAreOneLine) {
  Scratch s;
  const auto write = [&](const std::string& name, const json& c) {
    fs::create_directories(s.path / name);
    std::ofstream(s.path / name / "config.json") << c.dump();
    return (s.path / name).string();
  };
  // A hybrid target in the layout Qwen3.5 publishes (its text model under text_config).
  const std::string hybrid =
      write("hybrid", {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
                       {"model_type", "qwen3_5"},
                       {"text_config", {{"layer_types", {"linear_attention", "linear_attention", "full_attention"}}}}});
  Ran r = run_flashdraft({"inspect", "--model", hybrid, "--config-only"});
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("\"text_config.layer_types\": entry 0 is \"linear_attention\""), std::string::npos) << r.err;

  std::ifstream in(kConfigs + "qwen3.6-27b-dflash/config.json");
  json d = json::parse(in);
  d["layer_types"][1] = "chunked_attention";
  r = run_flashdraft({"inspect", "--model", write("chunked", d), "--config-only"});
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("entry 1 is \"chunked_attention\""), std::string::npos) << r.err;

  r = run_flashdraft({"inspect", "--model", kConfigs + "qwen3-8b-dflash-b16", "--draft-model",
                      kConfigs + "qwen3-8b-dflash-b16"});
  EXPECT_EQ(r.exit_code, 2) << r.err;  // a usage error
  EXPECT_NE(r.err.find("is a DFlash drafter"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace flashdraft::cli::test
