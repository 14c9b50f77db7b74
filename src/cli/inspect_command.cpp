#include "cli/inspect_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/json_text.h"
#include "io/model_config.h"
#include "model/dflash_config.h"
#include "model/model_description.h"
#include "serving/model_dir.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Past this many tensor problems in one checkpoint the rest are counted, not listed.
constexpr size_t kMaxTensorLines = 16;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "bfloat16" / "float16" / "float32" (config spellings) -> bytes per element; 0 if unknown.
int64_t config_dtype_bytes(const std::string& d) {
  if (d == "bfloat16" || d == "float16") return 2;
  if (d == "float32") return 4;
  return 0;
}
std::string config_dtype_short(const std::string& d) {
  return d == "bfloat16" ? "bf16" : d == "float16" ? "f16" : d == "float32" ? "f32" : d;
}

std::string grouped(int64_t n) {
  std::string s = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.2f} {}", b, units[u]);
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

bool is_drafter_dir(const fs::path& dir) {
  const json raw = io::parse_json(io::read_text_file(dir / "config.json"), (dir / "config.json").string());
  if (!raw.is_object() || !raw.contains("architectures") || !raw["architectures"].is_array()) return false;
  for (const auto& a : raw["architectures"])
    if (a == "DFlashDraftModel") return true;
  return false;
}

// The geometry and sizes every model shares.
json describe_decoder(const io::ModelConfig& c, const std::vector<model::TensorSpec>& tensors) {
  json j;
  j["architectures"] = c.architectures;
  j["model_type"] = c.model_type;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["context_length"] = c.max_position_embeddings;
  j["dtype"] = c.torch_dtype;
  j["parameters"] = model::parameter_count(tensors);
  // The engine keeps K/V in its activation dtype: bf16 on CUDA, f32 on the CPU.
  j["kv_bytes_per_token"] = {{"bf16", model::kv_bytes_per_token(c, 2)}, {"f32", model::kv_bytes_per_token(c, 4)}};
  j["bytes_by_dtype"] = json::object();
  if (const int64_t b = config_dtype_bytes(c.torch_dtype))
    j["bytes_by_dtype"][config_dtype_short(c.torch_dtype)] = model::parameter_count(tensors) * b;
  j["bytes_from"] = "config";
  return j;
}

// The safetensors headers of `dir` against `want`: one line per missing,
// misshapen or unexpected tensor; bytes by dtype from the headers.
void check_weights(const fs::path& dir, const std::vector<model::TensorSpec>& want,
                   const std::function<bool(const std::string&)>& ignorable, json& j,
                   std::vector<std::string>& errors) {
  std::optional<io::Checkpoint> ckpt;
  try {
    ckpt.emplace(io::Checkpoint::open(dir));
  } catch (const Error& e) {
    errors.push_back(e.what());
    return;
  }
  std::vector<std::string> lines;
  std::set<std::string> wanted;
  for (const auto& t : want) {
    wanted.insert(t.name);
    if (!ckpt->contains(t.name)) {
      lines.push_back(dir.string() + ": tensor '" + t.name + "' is missing (expected shape " +
                      io::shape_to_string(t.shape) + ")");
      continue;
    }
    const auto& v = ckpt->get(t.name);
    if (v.shape != t.shape)
      lines.push_back(v.file + ": tensor '" + t.name + "' has shape " + io::shape_to_string(v.shape) + ", expected " +
                      io::shape_to_string(t.shape) + " (from config.json)");
  }
  std::map<std::string, int64_t> bytes;
  int64_t params = 0;
  for (const auto& name : ckpt->names()) {
    const auto& v = ckpt->get(name);
    bytes[lower(io::dtype_name(v.dtype))] += static_cast<int64_t>(v.nbytes);
    params += v.numel();
    if (!wanted.count(name) && !ignorable(name))
      lines.push_back(v.file + ": tensor '" + name + "' has no place in this model as config.json describes it");
  }
  for (size_t i = 0; i < lines.size() && i < kMaxTensorLines; ++i) errors.push_back(lines[i]);
  if (lines.size() > kMaxTensorLines)
    errors.push_back(dir.string() + ": " + std::to_string(lines.size() - kMaxTensorLines) +
                     " more tensor problems like these (not listed)");
  j["bytes_by_dtype"] = bytes;
  j["bytes_from"] = "safetensors";
  j["checkpoint_parameters"] = params;
}

json describe_drafter(const model::DFlashConfig& d, int64_t target_hidden) {
  json j = describe_decoder(d.model, model::drafter_tensors(d, target_hidden));
  j["block_size"] = d.block_size;
  j["mask_token_id"] = d.mask_token_id;
  j["num_target_layers"] = d.num_target_layers > 0 ? json(d.num_target_layers) : json(nullptr);
  j["target_layer_ids"] = d.target_layer_ids;
  j["default_taps"] = d.default_taps;
  json layers = json::array();
  for (const auto& k : d.layers)
    layers.push_back({{"attention", k.sliding ? "sliding" : "full"}, {"causal", k.causal}, {"window", k.window}});
  j["layers"] = layers;
  j["final_logit_softcapping"] = d.final_logit_softcapping ? json(*d.final_logit_softcapping) : json(nullptr);
  j["input_embedding_scale"] = d.input_embedding_scale ? json(*d.input_embedding_scale) : json(nullptr);
  return j;
}

// The mask id must be a token of the target's tokenizer (when the target has one).
void check_mask_token(const fs::path& target_dir, const fs::path& drafter_dir, int32_t mask, json& drafter,
                      std::vector<std::string>& errors) {
  drafter["mask_token"] = nullptr;
  if (!fs::exists(target_dir / "tokenizer.json")) return;
  try {
    const auto tok = tokenizer::Tokenizer::load(target_dir);
    if (mask >= tok.vocab_size()) {
      errors.push_back((drafter_dir / "config.json").string() + ": field \"dflash_config.mask_token_id\": " +
                       std::to_string(mask) + " is not a token of the target's tokenizer (" +
                       (target_dir / "tokenizer.json").string() + " has ids 0.." +
                       std::to_string(tok.vocab_size() - 1) + ")");
      return;
    }
    drafter["mask_token"] = tok.id_to_token(mask);
  } catch (const Error& e) {
    errors.push_back(std::string("mask token check: ") + e.what());
  }
}

std::string layer_kind_text(const json& k) {
  std::string s = k["attention"] == "sliding" ? "sliding (window " + std::to_string(k["window"].get<int64_t>()) + ")"
                                              : std::string("full");
  return s + (k["causal"].get<bool>() ? ", causal" : ", non-causal");
}

void print_model(const char* role, const json& m) {
  const auto row = [](const std::string& k, const std::string& v) { fmt::print("  {:<20}{}\n", k, v); };
  fmt::print("{} {}\n", role, m["dir"].get<std::string>());
  std::string arch;
  for (const auto& a : m["architectures"]) arch += (arch.empty() ? "" : ", ") + a.get<std::string>();
  row("architecture", (arch.empty() ? "(none given)" : arch) + " (model_type " + m["model_type"].get<std::string>() + ")");
  row("layers", fmt::format("{} x hidden {}, MLP {}, {} query / {} kv heads of {}", m["num_hidden_layers"].get<int64_t>(),
                            m["hidden_size"].get<int64_t>(), m["intermediate_size"].get<int64_t>(),
                            m["num_attention_heads"].get<int64_t>(), m["num_key_value_heads"].get<int64_t>(),
                            m["head_dim"].get<int64_t>()));
  row("vocabulary", grouped(m["vocab_size"].get<int64_t>()) +
                        (m["tie_word_embeddings"].get<bool>() ? " (tied embeddings)" : ""));
  row("parameters", grouped(m["parameters"].get<int64_t>()) +
                        (m.contains("checkpoint_parameters")
                             ? " (checkpoint: " + grouped(m["checkpoint_parameters"].get<int64_t>()) + ")"
                             : ""));
  std::string bytes;
  for (const auto& [dt, b] : m["bytes_by_dtype"].items())
    bytes += (bytes.empty() ? "" : ", ") + dt + " " + human_bytes(static_cast<double>(b.get<int64_t>()));
  row("bytes by dtype", (bytes.empty() ? std::string("unknown") : bytes) + " (from " +
                            m["bytes_from"].get<std::string>() + ")");
  row("KV per token", fmt::format("{} in bf16 (CUDA), {} in f32 (CPU)",
                                  human_bytes(static_cast<double>(m["kv_bytes_per_token"]["bf16"].get<int64_t>())),
                                  human_bytes(static_cast<double>(m["kv_bytes_per_token"]["f32"].get<int64_t>()))));
  row("context length", grouped(m["context_length"].get<int64_t>()));
  if (!m.contains("block_size")) return;
  row("block size", fmt::format("{} (up to {} drafted tokens a step)", m["block_size"].get<int64_t>(),
                                m["block_size"].get<int64_t>() - 1));
  const json& tok = m["mask_token"];
  row("mask token", std::to_string(m["mask_token_id"].get<int64_t>()) +
                        (tok.is_string() ? " " + io::json_excerpt(tok) : std::string()));
  std::vector<int64_t> taps = m["target_layer_ids"];
  std::string of = m["num_target_layers"].is_null() ? std::string()
                                                    : fmt::format(" of {} target layers", m["num_target_layers"].get<int64_t>());
  row("taps", taps.empty() ? "z-lab's default (needs the target's layer count)"
                           : list_text(taps) + of + (m["default_taps"].get<bool>() ? " (z-lab's default)" : ""));
  const json& layers = m["layers"];
  for (size_t i = 0; i < layers.size(); ++i) row(i == 0 ? "drafter layers" : "", fmt::format("{}: {}", i, layer_kind_text(layers[i])));
}

}  // namespace

CLI::App* add_inspect_command(CLI::App& app, InspectOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Check a model directory (or a target + DFlash drafter pair) without loading weights");
  cmd->add_option("--model", o.model_dir,
                  "Model directory or Hugging Face hub id: a target, or a DFlash drafter on its own")
      ->required();
  cmd->add_option("--draft-model", o.draft_model_dir,
                  "DFlash drafter directory or hub id, checked against --model");
  cmd->add_option("--revision", o.revision, "With hub ids: the branch, tag or commit (default: main)");
  cmd->add_flag("--config-only", o.config_only, "Read config.json only (no safetensors headers)");
  cmd->add_flag("--json", o.json, "Print the report as JSON");
  return cmd;
}

std::vector<std::string> run_inspect(const InspectOptions& o) {
  std::vector<std::string> errors;
  json report = json::object();
  // A hub id is fetched into (or found in) the local cache first; only what
  // the check reads: config.json, and the weights unless --config-only.
  const serving::ModelNeeds needs{.tokenizer = false, .weights = !o.config_only};
  const fs::path model_dir = serving::resolve_model("--model", o.model_dir, needs, o.revision);
  fs::path target_dir,
      drafter_dir = o.draft_model_dir.empty() ? fs::path()
                                              : serving::resolve_model("--draft-model", o.draft_model_dir, needs,
                                                                       o.revision);
  try {
    if (is_drafter_dir(model_dir)) {
      if (!drafter_dir.empty())
        throw UsageError("--model " + model_dir.string() +
                         " is a DFlash drafter; give the target as --model and the drafter as --draft-model");
      drafter_dir = model_dir;
    } else {
      target_dir = model_dir;
    }
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    errors.push_back(e.what());
  }

  std::optional<io::ModelConfig> target;
  if (!target_dir.empty()) {
    try {
      target = io::load_model_config(target_dir);
      const auto tensors = model::target_tensors(*target);
      json t = describe_decoder(*target, tensors);
      t["dir"] = target_dir.string();
      if (!o.config_only)
        check_weights(target_dir, tensors, [&](const std::string& n) { return model::ignorable_target_tensor(n, *target); },
                      t, errors);
      report["target"] = t;
    } catch (const Error& e) {
      errors.push_back(e.what());
    }
  }
  if (!drafter_dir.empty()) {
    try {
      const auto cfg = model::load_drafter_model_config(drafter_dir);
      const auto d = model::read_dflash_config(
          cfg, drafter_dir, target ? std::optional<int64_t>(target->num_hidden_layers) : std::nullopt);
      const int64_t tap_width = target ? target->hidden_size : d.model.hidden_size;
      json dj = describe_drafter(d, tap_width);
      dj["dir"] = drafter_dir.string();
      dj["mask_token"] = nullptr;
      if (!o.config_only)
        check_weights(drafter_dir, model::drafter_tensors(d, tap_width), [](const std::string&) { return false; }, dj,
                      errors);
      if (target) {
        const auto problems = model::dflash_pair_problems(d, *target, drafter_dir);
        errors.insert(errors.end(), problems.begin(), problems.end());
        report["pair"] = {{"checked", true}, {"fits", problems.empty()}};
        if (problems.empty()) check_mask_token(target_dir, drafter_dir, d.mask_token_id, dj, errors);
      } else {
        report["pair"] = {{"checked", false}};
      }
      report["drafter"] = dj;
    } catch (const Error& e) {
      errors.push_back(e.what());
    }
  }
  report["errors"] = errors;

  if (o.json) {
    fmt::print("{}\n", report.dump(2));
  } else {
    if (report.contains("target")) print_model("target ", report["target"]);
    if (report.contains("drafter")) print_model("drafter", report["drafter"]);
    if (report.contains("pair")) {
      const json& p = report["pair"];
      fmt::print("pair     {}\n", !p["checked"].get<bool>() ? "not checked (no target given)"
                                  : p["fits"].get<bool>()    ? "fits"
                                                             : "does not fit (see the errors)");
    }
    fmt::print("{}\n", errors.empty() ? "ok: no problems found"
                                      : fmt::format("{} problem{} found", errors.size(), errors.size() == 1 ? "" : "s"));
  }
  std::fflush(stdout);
  return errors;
}

}  // namespace flashdraft::cli
