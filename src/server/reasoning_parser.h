#pragma once
// --reasoning-parser qwen3: a completion that opens with <think> reasons
// until </think>; that part goes to reasoning_content, the rest to content.
// Without an opening <think> (thinking disabled) everything is content; a
// completion cut off before </think> is all reasoning. The same rule holds
// piece by piece when streaming, so a streamed answer adds up to the
// non-streamed one.
#include <optional>
#include <string>
#include <string_view>

namespace flashdraft::server {

struct ReasoningDelta {
  std::string reasoning, content;
};

class ReasoningParser {
 public:
  // The next piece of generated text; what is now known to be reasoning or content.
  ReasoningDelta push(std::string_view piece);
  // End of the completion: whatever was held back.
  ReasoningDelta finish();
  // Whether a <think> block was opened (reasoning_content is then present, maybe empty).
  bool reasoned() const { return mode_ == Mode::Reasoning || saw_think_; }

 private:
  enum class Mode { Undecided, Reasoning, Content };
  ReasoningDelta drain(bool final);

  Mode mode_ = Mode::Undecided;
  bool saw_think_ = false;
  std::string held_;
};

// The whole completion at once; reasoning is absent when no <think> opened.
struct ReasoningSplit {
  std::optional<std::string> reasoning;
  std::string content;
};
ReasoningSplit split_reasoning(std::string_view text);

}  // namespace flashdraft::server
