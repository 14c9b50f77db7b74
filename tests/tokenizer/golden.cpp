#include "golden.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace flashdraft::tokenizer::testing {
namespace {

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::vector<nlohmann::json> rows;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

}  // namespace

std::filesystem::path fixture_dir() { return std::filesystem::path(FD_FIXTURES_DIR) / "tokenizer"; }
std::filesystem::path qwen3_tokenizer_dir() { return FD_QWEN3_TOKENIZER_DIR; }

std::vector<GoldenCase> load_golden_cases() {
  const auto corpus = read_jsonl(fixture_dir() / "corpus.jsonl");
  const auto golden = read_jsonl(fixture_dir() / "golden.jsonl");
  if (golden.empty() || !golden[0].value("header", false) || golden[0]["count"].get<size_t>() != corpus.size() ||
      golden.size() != corpus.size() + 1)
    throw std::runtime_error("golden.jsonl does not match corpus.jsonl: rerun tools/gen_tokenizer_golden.py");
  std::vector<GoldenCase> cases;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const auto& g = golden[i + 1];
    GoldenCase c;
    c.text = corpus[i]["text"].get<std::string>();
    c.ids = g["ids"].get<std::vector<int32_t>>();
    c.ids_nospecial = g["ids_nospecial"].is_null() ? c.ids : g["ids_nospecial"].get<std::vector<int32_t>>();
    c.decode = g["decode"].is_null() ? c.text : g["decode"].get<std::string>();
    c.decode_skip = g["decode_skip"].is_null() ? c.decode : g["decode_skip"].get<std::string>();
    c.nfc = g["nfc"].is_null() ? c.text : g["nfc"].get<std::string>();
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<GoldenDecode> load_golden_decodes() {
  std::vector<GoldenDecode> out;
  for (const auto& row : read_jsonl(fixture_dir() / "golden_decode.jsonl"))
    out.push_back({row["ids"].get<std::vector<int32_t>>(), row["decode"].get<std::string>(),
                   row["decode_skip"].get<std::string>()});
  return out;
}

std::string utf8_of(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

size_t first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

std::string preview(const std::string& text) {
  const std::string cut = text.size() > 120 ? text.substr(0, 120) + "..." : text;
  return nlohmann::json(cut).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace flashdraft::tokenizer::testing
