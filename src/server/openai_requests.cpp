#include "server/openai_requests.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "server/api_error.h"

namespace flashdraft::server {
namespace {

constexpr int kMaxChoices = 128;

[[noreturn]] void unsupported(const std::string& param, const std::string& why) {
  throw invalid_field(param, "not supported by this server: " + why);
}

int32_t token_id(const Json& v, const std::string& param, int64_t vocab_size) {
  if (!v.is_number_integer()) throw invalid_field(param, "expected a token id (an integer), got " + json_excerpt(v));
  const int64_t id = v.get<int64_t>();
  if (id < 0 || id >= vocab_size) {
    throw invalid_field(param, fmt::format("token id {} is outside the vocabulary [0, {})", id, vocab_size));
  }
  return static_cast<int32_t>(id);
}

std::vector<int32_t> token_ids(const Json& list, const std::string& param, int64_t vocab_size) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < list.size(); ++i) ids.push_back(token_id(list[i], fmt::format("{}[{}]", param, i), vocab_size));
  return ids;
}

// {"token id": bias}: ids as strings (JSON keys), biases clamped to
// [-100, 100] as OpenAI documents and vLLM does.
std::vector<std::pair<int32_t, float>> read_logit_bias(const Json& bias, const std::string& path, int64_t vocab_size) {
  std::vector<std::pair<int32_t, float>> out;
  for (const auto& [key, value] : bias.items()) {
    const std::string at = path + "." + key;
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != key.size() || key.empty()) throw invalid_field(at, "keys must be token ids, got \"" + key + "\"");
    if (id < 0 || id >= vocab_size) {
      throw invalid_field(at, fmt::format("token id {} is outside the vocabulary [0, {})", id, vocab_size));
    }
    if (!value.is_number()) throw invalid_field(at, "expected a number, got " + json_excerpt(value));
    const double b = value.get<double>();
    if (!std::isfinite(b)) throw invalid_field(at, "expected a finite number");
    out.emplace_back(static_cast<int32_t>(id), static_cast<float>(std::clamp(b, -100.0, 100.0)));
  }
  return out;
}

// Fields both endpoints share. `max_tokens_key` is the spelling the endpoint prefers.
SamplingRequest read_sampling(const RequestFields& f, int64_t vocab_size) {
  SamplingRequest s;
  s.temperature = f.number_in("temperature", 0, INFINITY);
  s.top_p = f.number_in("top_p", 0, 1, /*lo_open=*/true);
  s.min_p = f.number_in("min_p", 0, 1);
  if (auto k = f.integer("top_k")) {
    // vLLM spells "off" -1 (and 0).
    if (*k < -1 || *k > INT32_MAX) f.fail("top_k", fmt::format("must be -1 or 0 (off) or a positive count, got {}", *k));
    s.top_k = *k <= 0 ? 0 : static_cast<int>(*k);
  }
  if (auto seed = f.integer("seed")) s.seed = static_cast<uint64_t>(*seed);
  s.stop = f.string_or_strings("stop");
  for (const std::string& stop : s.stop) {
    if (stop.empty()) f.fail("stop", "a stop string must not be empty");
  }
  if (const Json* ids = f.array("stop_token_ids")) s.stop_token_ids = token_ids(*ids, f.path_of("stop_token_ids"), vocab_size);
  s.ignore_eos = f.boolean("ignore_eos").value_or(false);
  s.skip_special_tokens = f.boolean("skip_special_tokens").value_or(true);
  s.adaptive_speculation = f.boolean("adaptive_speculation");
  if (auto n = f.integer("n")) {
    if (*n < 1 || *n > kMaxChoices) f.fail("n", fmt::format("must be in [1, {}], got {}", kMaxChoices, *n));
    s.n = static_cast<int>(*n);
  }
  s.stream = f.boolean("stream").value_or(false);
  if (const Json* options = f.object("stream_options")) {
    if (!s.stream) f.fail("stream_options", "only allowed with \"stream\": true");
    s.include_usage = RequestFields(*options, f.path_of("stream_options")).boolean("include_usage").value_or(false);
  }

  s.presence_penalty = f.number_in("presence_penalty", -2, 2);
  s.frequency_penalty = f.number_in("frequency_penalty", -2, 2);
  s.repetition_penalty = f.number_in("repetition_penalty", 0, INFINITY, /*lo_open=*/true, /*hi_open=*/true);
  if (const Json* bias = f.object("logit_bias")) s.logit_bias = read_logit_bias(*bias, f.path_of("logit_bias"), vocab_size);
  if (f.find("prompt_logprobs")) unsupported("prompt_logprobs", "prompt tokens get no log-probabilities");

  // Honest refusals: these would change the output, and the engine cannot do them yet.
  if (const Json* format = f.object("response_format")) {
    auto type = RequestFields(*format, f.path_of("response_format")).string("type");
    if (type && *type != "text") unsupported("response_format.type", "no guided decoding (only \"text\")");
  }
  for (const char* key : {"guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs"}) {
    if (f.find(key)) unsupported(key, "no guided decoding");
  }
  if (f.boolean("include_stop_str_in_output").value_or(false)) {
    unsupported("include_stop_str_in_output", "stop strings are never part of the output");
  }
  return s;
}

void check_max_tokens(const RequestFields& f, const char* key, SamplingRequest& s) {
  if (auto v = f.integer(key)) {
    if (*v < 1) f.fail(key, fmt::format("must be >= 1, got {}", *v));
    s.max_tokens = *v;
  }
}

std::optional<std::string> read_model(const RequestFields& f) { return f.string("model"); }

// A message's content as the template expects it: a string. Text parts of a
// list are joined with newlines, and null (an assistant turn that only calls
// tools) is "", as vLLM does: templates test `'x' in content`.
Json message_content(const Json& content, const std::string& path) {
  if (content.is_null()) return "";
  if (content.is_string()) return content;
  if (!content.is_array()) throw invalid_field(path, "expected a string or a list of content parts, got " + json_excerpt(content));
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string part_path = fmt::format("{}[{}]", path, i);
    RequestFields part(content[i], part_path);
    auto type = part.string("type");
    if (!type) part.fail("type", "missing (expected \"text\")");
    if (*type != "text") part.fail("type", fmt::format("\"{}\" is not supported: this model reads text only", *type));
    auto piece = part.string("text");
    if (!piece) part.fail("text", "missing");
    if (i > 0) text += "\n";
    text += *piece;
  }
  return text;
}

Json read_messages(const RequestFields& f) {
  const Json* messages = f.array("messages");
  if (!messages) f.fail("messages", "missing: a chat request needs a list of messages");
  if (messages->empty()) f.fail("messages", "must hold at least one message");
  Json out = Json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    const std::string path = fmt::format("messages[{}]", i);
    RequestFields m((*messages)[i], path);
    auto role = m.string("role");
    if (!role) m.fail("role", "missing");
    static const std::vector<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
    if (std::find(kRoles.begin(), kRoles.end(), *role) == kRoles.end()) {
      m.fail("role", fmt::format("\"{}\" is not one of system, developer, user, assistant, tool", *role));
    }
    Json message = (*messages)[i];
    if (auto it = message.find("content"); it != message.end()) {
      *it = message_content(*it, m.path_of("content"));
    } else if (*role != "assistant") {
      m.fail("content", "missing");
    } else {
      message["content"] = "";
    }
    if (const Json* calls = m.array("tool_calls")) {
      if (*role != "assistant") m.fail("tool_calls", "only assistant messages carry tool calls");
      Json& out_calls = message["tool_calls"];
      for (size_t k = 0; k < calls->size(); ++k) {
        const std::string call_path = fmt::format("{}.tool_calls[{}]", path, k);
        RequestFields call((*calls)[k], call_path);
        const Json* function = call.object("function");
        if (!function) call.fail("function", "missing");
        RequestFields fn(*function, call.path_of("function"));
        if (!fn.string("name")) fn.fail("name", "missing");
        // Templates (Qwen3's among them) print arguments as an object; the
        // API sends them as a JSON string. vLLM hands templates the object.
        if (auto args = fn.string("arguments")) {
          Json parsed = Json::parse(*args, nullptr, /*allow_exceptions=*/false);
          if (parsed.is_discarded()) fn.fail("arguments", "expected a JSON object encoded as a string");
          out_calls[k]["function"]["arguments"] = std::move(parsed);
        }
      }
    }
    if (*role == "tool" && !message.contains("tool_call_id")) {
      // Qwen3's template does not need it, but OpenAI requires it: a missing
      // one is a client bug worth reporting.
      m.fail("tool_call_id", "missing: a tool message answers a tool call by its id");
    }
    out.push_back(std::move(message));
  }
  return out;
}

Json read_tools(const RequestFields& f) {
  const Json* tools = f.array("tools");
  if (!tools || tools->empty()) return nullptr;
  for (size_t i = 0; i < tools->size(); ++i) {
    RequestFields tool((*tools)[i], fmt::format("tools[{}]", i));
    auto type = tool.string("type");
    if (type && *type != "function") tool.fail("type", fmt::format("\"{}\": only \"function\" tools exist", *type));
    const Json* function = tool.object("function");
    if (!function) tool.fail("function", "missing");
    RequestFields fn(*function, tool.path_of("function"));
    if (!fn.string("name")) fn.fail("name", "missing");
    fn.object("parameters");
  }
  return *tools;
}

void read_tool_choice(const RequestFields& f, ChatRequest& r) {
  const Json* choice = f.find("tool_choice");
  const bool has_tools = !r.tools.is_null();
  // vLLM's default: "auto" when tools are given, else "none".
  if (!choice) {
    r.tool_choice = has_tools ? ToolChoice::Auto : ToolChoice::None;
    return;
  }
  if (choice->is_string()) {
    const std::string c = choice->get<std::string>();
    if (c == "none") {
      r.tool_choice = ToolChoice::None;
      return;
    }
    if (c != "auto" && c != "required") f.fail("tool_choice", fmt::format("\"{}\" is not one of none, auto, required", c));
    if (!has_tools) f.fail("tool_choice", fmt::format("\"{}\" needs \"tools\"", c));
    r.tool_choice = c == "auto" ? ToolChoice::Auto : ToolChoice::Required;
    return;
  }
  if (!choice->is_object()) {
    f.fail("tool_choice", "expected \"none\", \"auto\", \"required\" or an object, got " + json_excerpt(*choice));
  }
  RequestFields named(*choice, f.path_of("tool_choice"));
  auto type = named.string("type");
  if (!type || *type != "function") named.fail("type", "expected \"function\"");
  const Json* function = named.object("function");
  if (!function) named.fail("function", "missing: {\"name\": ...} of the function to call");
  RequestFields fn(*function, named.path_of("function"));
  auto name = fn.string("name");
  if (!name) fn.fail("name", "missing");
  bool known = false;
  if (has_tools) {
    for (const Json& tool : r.tools) known = known || tool.at("function").at("name") == *name;
  }
  if (!known) fn.fail("name", fmt::format("no function \"{}\" among \"tools\"", *name));
  r.tool_choice = ToolChoice::Function;
  r.tool_choice_function = *name;
}

// Deepest nesting of arrays and objects in JSON text (strings skipped).
// Checked before parsing: copying or printing a value recurses once per
// level, and a request must not be able to exhaust the stack.
size_t nesting_depth(const std::string& text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

constexpr size_t kMaxNesting = 64;

}  // namespace

Json parse_body(const std::string& body) {
  if (nesting_depth(body) > kMaxNesting) {
    throw ApiError(400, fmt::format("the request body nests arrays and objects more than {} deep", kMaxNesting));
  }
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object, got " + json_excerpt(j));
  return j;
}

CompletionRequest parse_completion_request(const std::string& body, int64_t vocab_size) {
  const Json j = parse_body(body);
  RequestFields f(j);
  CompletionRequest r;
  r.model = read_model(f);
  const Json* prompt = f.find("prompt");
  if (!prompt) f.fail("prompt", "missing: a completion request needs a prompt");
  if (prompt->is_string()) {
    r.prompts.push_back({prompt->get<std::string>(), {}});
  } else if (prompt->is_array() && !prompt->empty()) {
    const Json& first = prompt->front();
    if (first.is_number_integer()) {
      r.prompts.push_back({std::nullopt, token_ids(*prompt, "prompt", vocab_size)});
    } else {
      for (size_t i = 0; i < prompt->size(); ++i) {
        const Json& p = (*prompt)[i];
        const std::string path = fmt::format("prompt[{}]", i);
        if (p.is_string()) {
          r.prompts.push_back({p.get<std::string>(), {}});
        } else if (p.is_array() && !p.empty()) {
          r.prompts.push_back({std::nullopt, token_ids(p, path, vocab_size)});
        } else {
          throw invalid_field(path, "expected a string or a non-empty list of token ids, got " + json_excerpt(p));
        }
      }
    }
  } else {
    f.fail("prompt", "expected a string, a list of strings, or token ids, got " + json_excerpt(*prompt));
  }
  for (size_t i = 0; i < r.prompts.size(); ++i) {
    if (r.prompts[i].text && r.prompts[i].text->empty()) {
      throw invalid_field(r.prompts.size() == 1 && prompt->is_string() ? "prompt" : fmt::format("prompt[{}]", i),
                          "the prompt is empty; the model needs text to continue from");
    }
  }
  r.sampling = read_sampling(f, vocab_size);
  check_max_tokens(f, "max_tokens", r.sampling);
  if (auto n = f.integer("logprobs")) {
    if (*n < 0 || *n > engine::SamplingParams::kMaxLogprobs) {
      f.fail("logprobs", fmt::format("must be in [0, {}], got {}", engine::SamplingParams::kMaxLogprobs, *n));
    }
    r.sampling.logprobs = static_cast<int>(*n);
  }
  if (f.boolean("echo").value_or(false)) unsupported("echo", "the prompt is not returned with the completion");
  if (auto suffix = f.string("suffix"); suffix && !suffix->empty()) unsupported("suffix", "no fill-in-the-middle");
  if (auto best_of = f.integer("best_of"); best_of && *best_of != r.sampling.n) {
    unsupported("best_of", "choices are not ranked (leave it unset or equal to n)");
  }
  return r;
}

ChatRequest parse_chat_request(const std::string& body, int64_t vocab_size) {
  const Json j = parse_body(body);
  RequestFields f(j);
  ChatRequest r;
  r.model = read_model(f);
  r.messages = read_messages(f);
  r.tools = read_tools(f);
  read_tool_choice(f, r);
  r.parallel_tool_calls = f.boolean("parallel_tool_calls").value_or(true);
  if (const Json* kwargs = f.object("chat_template_kwargs")) r.template_kwargs = *kwargs;
  r.add_generation_prompt = f.boolean("add_generation_prompt").value_or(true);
  if (f.boolean("continue_final_message").value_or(false)) {
    unsupported("continue_final_message", "the answer always starts a new assistant turn");
  }
  r.sampling = read_sampling(f, vocab_size);
  // max_completion_tokens is OpenAI's current name; max_tokens the older one.
  check_max_tokens(f, "max_tokens", r.sampling);
  check_max_tokens(f, "max_completion_tokens", r.sampling);
  // As vLLM: top_logprobs (default 0) counts only with logprobs true, and
  // a positive one without it is a mistake worth reporting.
  const bool logprobs = f.boolean("logprobs").value_or(false);
  const auto top = f.integer("top_logprobs");
  if (top && (*top < 0 || *top > engine::SamplingParams::kMaxLogprobs)) {
    f.fail("top_logprobs", fmt::format("must be in [0, {}], got {}", engine::SamplingParams::kMaxLogprobs, *top));
  }
  if (top && *top > 0 && !logprobs) f.fail("top_logprobs", "needs \"logprobs\": true");
  if (logprobs) r.sampling.logprobs = static_cast<int>(top.value_or(0));
  return r;
}

engine::SamplingParams resolve_sampling(const SamplingRequest& request, const engine::SamplingParams& defaults,
                                        std::optional<int64_t> default_max_tokens, int64_t prompt_tokens,
                                        int64_t max_model_len) {
  if (prompt_tokens >= max_model_len) {
    throw ApiError(400,
                   fmt::format("This model's maximum context length is {} tokens. However, your prompt has {} "
                               "tokens, which leaves no room for the completion. Please shorten the prompt.",
                               max_model_len, prompt_tokens),
                   "prompt");
  }
  const int64_t room = max_model_len - prompt_tokens;
  if (request.max_tokens && *request.max_tokens > room) {
    throw ApiError(400,
                   fmt::format("This model's maximum context length is {} tokens. However, you requested {} tokens "
                               "({} in the prompt, {} for the completion). Please reduce the prompt or max_tokens.",
                               max_model_len, prompt_tokens + *request.max_tokens, prompt_tokens,
                               *request.max_tokens),
                   "max_tokens");
  }
  engine::SamplingParams p = request.applied_to(defaults);
  p.seed = request.seed;
  p.stop = request.stop;
  p.stop_token_ids = request.stop_token_ids;
  p.ignore_eos = request.ignore_eos;
  p.logit_bias = request.logit_bias;
  p.logprobs = request.logprobs;
  p.adaptive_speculation = request.adaptive_speculation;
  const int64_t max_tokens = request.max_tokens ? *request.max_tokens : std::min(default_max_tokens.value_or(room), room);
  p.max_tokens = static_cast<int>(std::min<int64_t>(max_tokens, INT32_MAX));
  return p;
}

}  // namespace flashdraft::server
