#include "io/generation_config.h"

#include "io/json_fields.h"
#include "io/json_text.h"

namespace flashdraft::io {

GenerationConfig parse_generation_config(const std::string& text, const std::string& source) {
  const nlohmann::json raw = parse_json(text, source);
  const JsonFields f(raw, source);
  GenerationConfig g;
  g.temperature = f.optional_number("temperature");
  g.top_p = f.optional_number("top_p");
  g.min_p = f.optional_number("min_p");
  g.repetition_penalty = f.optional_number("repetition_penalty");
  g.top_k = f.optional_int("top_k");
  g.max_new_tokens = f.optional_int("max_new_tokens");
  g.do_sample = f.optional_bool("do_sample");
  g.eos_token_ids = f.int_or_int_list("eos_token_id");
  g.bos_token_id = f.optional_int("bos_token_id");
  g.pad_token_id = f.optional_int("pad_token_id");
  return g;
}

GenerationConfig load_generation_config(const std::filesystem::path& dir) {
  const auto path = dir / "generation_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  return parse_generation_config(read_text_file(path), path.string());
}

}  // namespace flashdraft::io
