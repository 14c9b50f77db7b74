#include "server/endpoints.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "core/error.h"
#include "server/api_error.h"
#include "server/chat_output.h"
#include "server/choice_set.h"
#include "server/logprobs_json.h"
#include "server/openai_responses.h"

namespace flashdraft::server {
namespace {

std::vector<int32_t> encode_prompt(const tokenizer::Tokenizer& tok, const std::string& text, const std::string& param) {
  std::vector<int32_t> ids;
  try {
    // Special tokens written in the text become their ids, as in vLLM.
    ids = tok.encode(text, /*parse_special=*/true);
  } catch (const Error& e) {
    throw invalid_field(param, e.what());
  }
  if (ids.empty()) throw invalid_field(param, "the prompt is empty; the model needs text to continue from");
  return ids;
}

// A choice that failed in the engine ends the whole response.
void throw_if_failed(ChoiceSet& set) {
  for (size_t i = 0; i < set.size(); ++i) {
    if (set[i].finish_reason() == "error") throw ApiError(500, "generation failed: " + set[i].error());
  }
}

Json error_event(const ChoiceStream& c) {
  return ApiError(500, "generation failed: " + c.error()).body();
}

// A client that also counts as gone once a write failed.
struct StreamClient {
  explicit StreamClient(const Client& c) : client(c) {
    view.write = [this](std::string_view data) { return alive = alive && client.write(data); };
    view.gone = [this] { return !alive || (client.gone && client.gone()); };
  }
  bool write(const std::string& data) { return view.write(data); }
  const Client& client;
  Client view;
  bool alive = true;
};

}  // namespace

Endpoints::Endpoints(const ServerOptions& options, std::shared_ptr<ServingModel> model, Metrics& metrics)
    : options_(options), model_(std::move(model)), metrics_(metrics) {}

void Endpoints::check_model(const std::optional<std::string>& requested) const {
  if (requested && *requested != options_.served_model_name) {
    throw ApiError(404, fmt::format("The model `{}` does not exist; this server serves `{}`.", *requested,
                                    options_.served_model_name),
                   "model", "model_not_found");
  }
}

Reply Endpoints::completions(const std::string& body, const Client& client) {
  const CompletionRequest req = parse_completion_request(body, model_->tokenizer.vocab_size());
  check_model(req.model);
  const SamplingRequest& s = req.sampling;
  struct Prepared {
    std::vector<int32_t> ids;
    engine::SamplingParams params;
  };
  std::vector<Prepared> prepared;
  int64_t prompt_tokens = 0;
  for (size_t i = 0; i < req.prompts.size(); ++i) {
    const PromptInput& p = req.prompts[i];
    const std::string param = req.prompts.size() == 1 ? "prompt" : fmt::format("prompt[{}]", i);
    std::vector<int32_t> ids = p.text ? encode_prompt(model_->tokenizer, *p.text, param) : p.ids;
    const auto n = static_cast<int64_t>(ids.size());
    prepared.push_back({std::move(ids), resolve_sampling(s, model_->defaults, model_->default_max_tokens, n,
                                                         model_->max_model_len)});
    prompt_tokens += n;
  }
  auto set = std::make_shared<ChoiceSet>();
  for (const Prepared& p : prepared) set->add(*model_, p.ids, p.params, s.n, s.skip_special_tokens, metrics_);
  const ResponseMeta meta{random_id("cmpl-"), unix_seconds(), options_.served_model_name};

  Reply reply;
  if (s.stream) {
    reply.stream = [set, meta, prompt_tokens, usage = s.include_usage, keep = model_](const Client& c) {
      StreamClient out(c);
      bool failed = false;
      std::vector<int64_t> text_offsets(set->size(), 0);
      const bool ok = set->wait_all(out.view, [&](size_t i, const ChoiceProgress& p) {
        if (failed) return;
        ChoiceStream& choice = (*set)[i];
        const int index = static_cast<int>(i);
        if (p.finished && choice.finish_reason() == "error") {
          failed = true;
          out.write(sse_event(error_event(choice)));
          return;
        }
        const Json logprobs =
            p.logprobs.empty() ? Json(nullptr) : completion_logprobs(p.logprobs, keep->tokenizer, text_offsets[i]);
        if (!p.text.empty() || !logprobs.is_null()) {
          out.write(sse_event(completion_chunk(meta, index, p.text, std::nullopt, nullptr, usage, logprobs)));
        }
        if (p.finished) {
          out.write(sse_event(completion_chunk(meta, index, "", choice.finish_reason(), choice.stop_reason(), usage)));
        }
      });
      if (!ok && !failed) return;  // the client is gone: dropping the set aborts the rest
      if (usage && !failed) out.write(sse_event(usage_chunk(meta, false, usage_json(prompt_tokens, set->completion_tokens()))));
      out.write(std::string(kSseDone));
    };
    return reply;
  }
  std::vector<std::string> texts(set->size());
  std::vector<std::vector<engine::TokenLogprobs>> logprobs(set->size());
  if (!set->wait_all(client, [&](size_t i, const ChoiceProgress& p) {
        texts[i] += p.text;
        logprobs[i].insert(logprobs[i].end(), p.logprobs.begin(), p.logprobs.end());
      })) {
    return reply;
  }
  throw_if_failed(*set);
  std::vector<ChoiceResult> choices;
  for (size_t i = 0; i < set->size(); ++i) {
    ChoiceResult r;
    r.index = static_cast<int>(i);
    r.text = std::move(texts[i]);
    r.finish_reason = (*set)[i].finish_reason();
    r.stop_reason = (*set)[i].stop_reason();
    int64_t text_offset = 0;
    if (s.logprobs) r.logprobs = completion_logprobs(logprobs[i], model_->tokenizer, text_offset);
    choices.push_back(std::move(r));
  }
  reply.body = completion_body(meta, choices, usage_json(prompt_tokens, set->completion_tokens()));
  return reply;
}

std::string Endpoints::render_chat(const ChatRequest& req) const {
  if (!model_->chat_template) {
    throw ApiError(400,
                   "this model has no usable chat template (" + model_->chat_template_error +
                       "); send a rendered prompt to /v1/completions instead",
                   "messages");
  }
  chat::ChatOptions options;
  options.add_generation_prompt = req.add_generation_prompt;
  options.tools = req.tools;
  // transformers hands templates the tokenizer's special tokens; the
  // request's chat_template_kwargs (enable_thinking, ...) come last and win.
  Json extra = Json::object();
  if (auto bos = model_->tokenizer.bos_token()) extra["bos_token"] = *bos;
  if (auto eos = model_->tokenizer.eos_token()) extra["eos_token"] = *eos;
  for (const auto& [key, value] : req.template_kwargs.items()) extra[key] = value;
  try {
    return chat::apply_chat_template(*model_->chat_template, req.messages, options, extra);
  } catch (const Error& e) {
    // raise_exception() in the template: the messages break its rules.
    throw ApiError(400, std::string("the chat template rejected the messages: ") + e.what(), "messages");
  }
}

Reply Endpoints::chat_completions(const std::string& body, const Client& client) {
  const ChatRequest req = parse_chat_request(body, model_->tokenizer.vocab_size());
  check_model(req.model);
  if (req.tool_choice == ToolChoice::Auto && !(options_.enable_auto_tool_choice && !options_.tool_call_parser.empty())) {
    throw ApiError(400,
                   "tool_choice: \"auto\" (the default when tools are given) needs the server started with "
                   "--enable-auto-tool-choice --tool-call-parser hermes",
                   "tool_choice");
  }
  // "required" and a named function need no flag (as in vLLM): the answer is
  // started as a hermes call (Qwen3's format) and parsed as one. It starts
  // with the call, so there is no reasoning to parse.
  const bool forced = req.tool_choice == ToolChoice::Required || req.tool_choice == ToolChoice::Function;
  const std::string prefix = forced ? forced_call_prefix(req.tool_choice_function) : std::string();
  const bool parse_tools = req.tool_choice != ToolChoice::None;
  const bool parse_reasoning = !options_.reasoning_parser.empty() && !forced;
  const std::vector<int32_t> ids = encode_prompt(model_->tokenizer, render_chat(req) + prefix, "messages");
  const auto prompt_tokens = static_cast<int64_t>(ids.size());
  const SamplingRequest& s = req.sampling;
  engine::SamplingParams params =
      resolve_sampling(s, model_->defaults, model_->default_max_tokens, prompt_tokens, model_->max_model_len);
  // A named function gets one call: the answer ends with it, as vLLM's grammar ends it.
  const bool own_stop = req.tool_choice == ToolChoice::Function &&
                        std::find(params.stop.begin(), params.stop.end(), std::string(kToolCallEnd)) == params.stop.end();
  if (own_stop) params.stop.emplace_back(kToolCallEnd);
  auto set = std::make_shared<ChoiceSet>();
  set->add(*model_, ids, params, s.n, s.skip_special_tokens, metrics_);
  auto outputs = std::make_shared<std::vector<ChatOutput>>(set->size(), ChatOutput(parse_reasoning, parse_tools, req.parallel_tool_calls ? INT_MAX : 1));
  // The forced prefix is part of the answer's text (a call the model does
  // not complete stays in the content as written, prefix included).
  auto opening = std::make_shared<std::vector<std::vector<Json>>>();
  for (ChatOutput& o : *outputs) opening->push_back(o.push(prefix));
  const ResponseMeta meta{random_id("chatcmpl-"), unix_seconds(), options_.served_model_name};
  // OpenAI and vLLM: "tool_calls" when calls end the message, but "stop" for a named function's call.
  auto finish_reason = [choice = req.tool_choice](const ChoiceStream& c, const ChatOutput& o) {
    return c.finish_reason() == "stop" && !o.tool_calls().empty() && choice != ToolChoice::Function
               ? std::string("tool_calls")
               : c.finish_reason();
  };
  auto stop_reason = [own_stop](const ChoiceStream& c) {
    return own_stop && c.stop_reason() == std::string(kToolCallEnd) ? Json(nullptr) : c.stop_reason();
  };

  Reply reply;
  if (s.stream) {
    reply.stream = [set, outputs, opening, meta, prompt_tokens, usage = s.include_usage, finish_reason, stop_reason,
                    keep = model_](const Client& c) {
      StreamClient out(c);
      for (size_t i = 0; i < set->size(); ++i) {
        out.write(sse_event(chat_chunk(meta, static_cast<int>(i), {{"role", "assistant"}, {"content", ""}},
                                       std::nullopt, nullptr, usage)));
        for (const Json& delta : (*opening)[i]) {
          out.write(sse_event(chat_chunk(meta, static_cast<int>(i), delta, std::nullopt, nullptr, usage)));
        }
      }
      bool failed = false;
      const bool ok = set->wait_all(out.view, [&](size_t i, const ChoiceProgress& p) {
        if (failed) return;
        ChoiceStream& choice = (*set)[i];
        ChatOutput& o = (*outputs)[i];
        const int index = static_cast<int>(i);
        if (p.finished && choice.finish_reason() == "error") {
          failed = true;
          out.write(sse_event(error_event(choice)));
          return;
        }
        // The progress's log-probabilities ride on its first delta (one with
        // empty content when the parsers hold all of its text back).
        Json logprobs = p.logprobs.empty() ? Json(nullptr) : chat_logprobs(p.logprobs, keep->tokenizer);
        std::vector<Json> deltas = o.push(p.text);
        if (p.finished)
          for (Json& delta : o.finish()) deltas.push_back(std::move(delta));
        if (deltas.empty() && !logprobs.is_null()) deltas.push_back({{"content", ""}});
        for (const Json& delta : deltas) {
          out.write(sse_event(chat_chunk(meta, index, delta, std::nullopt, nullptr, usage, logprobs)));
          logprobs = nullptr;
        }
        if (!p.finished) return;
        out.write(sse_event(chat_chunk(meta, index, Json::object(), finish_reason(choice, o), stop_reason(choice), usage)));
      });
      if (!ok && !failed) return;
      if (usage && !failed) out.write(sse_event(usage_chunk(meta, true, usage_json(prompt_tokens, set->completion_tokens()))));
      out.write(std::string(kSseDone));
    };
    return reply;
  }
  std::vector<std::vector<engine::TokenLogprobs>> logprobs(set->size());
  if (!set->wait_all(client, [&](size_t i, const ChoiceProgress& p) {
        (*outputs)[i].push(p.text);
        logprobs[i].insert(logprobs[i].end(), p.logprobs.begin(), p.logprobs.end());
      })) {
    return reply;
  }
  throw_if_failed(*set);
  std::vector<ChoiceResult> choices;
  std::vector<std::vector<std::string>> ids_per_choice;
  for (size_t i = 0; i < set->size(); ++i) {
    ChatOutput& o = (*outputs)[i];
    o.finish();
    ChoiceResult r;
    r.index = static_cast<int>(i);
    r.text = o.content();
    r.reasoning = o.reasoning();
    r.tool_calls = o.tool_calls();
    r.finish_reason = finish_reason((*set)[i], o);
    r.stop_reason = stop_reason((*set)[i]);
    if (s.logprobs) r.logprobs = chat_logprobs(logprobs[i], model_->tokenizer);
    choices.push_back(std::move(r));
    ids_per_choice.push_back(o.tool_call_ids());
  }
  reply.body = chat_body(meta, choices, ids_per_choice, usage_json(prompt_tokens, set->completion_tokens()));
  return reply;
}

Json Endpoints::models() const {
  Json card = {{"id", options_.served_model_name},
               {"object", "model"},
               {"created", unix_seconds()},
               {"owned_by", "flashdraft"},
               {"root", model_->root},
               {"parent", nullptr},
               {"max_model_len", model_->max_model_len}};
  return {{"object", "list"}, {"data", Json::array({card})}};
}

Json Endpoints::tokenize(const std::string& body) const {
  const Json j = parse_body(body);
  RequestFields f(j);
  check_model(f.string("model"));
  std::vector<int32_t> ids;
  if (f.find("messages")) {
    ids = encode_prompt(model_->tokenizer, render_chat(parse_chat_request(body, model_->tokenizer.vocab_size())),
                        "messages");
  } else {
    auto prompt = f.string("prompt");
    if (!prompt) f.fail("prompt", "missing: give \"prompt\" (text) or \"messages\" (a chat)");
    ids = prompt->empty() ? std::vector<int32_t>{} : encode_prompt(model_->tokenizer, *prompt, "prompt");
  }
  return {{"count", ids.size()}, {"max_model_len", model_->max_model_len}, {"tokens", ids}, {"token_strs", nullptr}};
}

Json Endpoints::detokenize(const std::string& body) const {
  const Json j = parse_body(body);
  RequestFields f(j);
  check_model(f.string("model"));
  const Json* tokens = f.array("tokens");
  if (!tokens) f.fail("tokens", "missing: a list of token ids");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens->size(); ++i) {
    const Json& t = (*tokens)[i];
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= model_->tokenizer.vocab_size()) {
      throw invalid_field(fmt::format("tokens[{}]", i),
                          fmt::format("expected a token id in [0, {}), got {}", model_->tokenizer.vocab_size(),
                                      json_excerpt(t)));
    }
    ids.push_back(t.get<int32_t>());
  }
  return {{"prompt", model_->tokenizer.decode(ids)}};
}

}  // namespace flashdraft::server
