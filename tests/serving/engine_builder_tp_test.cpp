// --tensor-parallel-size through the engine builder (what generate, serve and
// bench_dflash share): the shipped pair over 2 CPU thread ranks generates
// what 1 rank does, and sizes that cannot split the model are usage errors
// naming the field, before any weight is read.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "serving/engine_builder.h"

namespace flashdraft::serving {
namespace {

const std::string kShipped = FD_SOURCE_DIR "/models";

std::vector<int32_t> generate(int ranks, bool dflash) {
  EngineOptions o;
  o.model = kShipped + "/target";
  o.device = "cpu";
  o.tensor_parallel_size = ranks;
  o.positions_per_seq = 256;
  if (dflash) {
    o.speculative = speculative_setup(kShipped + "/drafter-swa", std::nullopt, std::nullopt);
    o.speculative.adaptive = false;
  }
  LoadedEngine e = build_engine(o, nullptr);
  EXPECT_EQ(e.target->shard().size, ranks);
  if (dflash) {
    EXPECT_EQ(e.drafter->peers().size(), static_cast<size_t>(ranks - 1));
  }
  engine::SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 48;
  const auto id = e.engine->add(e.files.tokenizer.encode("def fibonacci(n):\n", false), p);
  while (e.engine->has_work()) e.engine->step();
  return e.engine->result(id).tokens;
}

TEST(TensorParallelBuilder, TwoRanksGenerateWhatOneDoes) {
  const auto one = generate(1, false);
  ASSERT_EQ(one.size(), 48u);
  EXPECT_EQ(generate(2, false), one);
  EXPECT_EQ(generate(2, true), one);
}

TEST(TensorParallelBuilder, SizesThatCannotSplitTheModelNameTheField) {
  const auto message = [](int ranks) {
    EngineOptions o;
    o.model = kShipped + "/target";
    o.device = "cpu";
    o.tensor_parallel_size = ranks;
    try {
      build_engine(o, nullptr);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no usage error");
  };
  EXPECT_NE(message(4).find("num_attention_heads (6) is not divisible by --tensor-parallel-size 4"), std::string::npos)
      << message(4);
  EXPECT_NE(message(3).find("num_key_value_heads (2)"), std::string::npos) << message(3);
  EXPECT_NE(message(0).find("--tensor-parallel-size: must be >= 1"), std::string::npos) << message(0);
}

}  // namespace
}  // namespace flashdraft::serving
