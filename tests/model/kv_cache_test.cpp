#include <gtest/gtest.h>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/qwen3_model.h"
#include "reference_data.h"

namespace flashdraft::model {
namespace {

using testing::fixture;

TEST(KVCache, TruncateRollsBackExactly) {
  // The speculative-decoding pattern: run some tokens, drop them, run others.
  const auto dir = fixture("tiny-qwen3");
  auto model = Qwen3Model::load(io::Checkpoint::open(dir), io::load_model_config(dir));
  const auto ref = testing::load_reference(dir);
  const auto& ids = ref.prompts[2].ids;  // 40 tokens
  auto cache = model->new_cache();
  std::vector<float> first, rejected, again;
  model->forward(std::span(ids).first(30), cache, first);
  model->forward(std::span(ids).subspan(30), cache, rejected, true);
  const std::vector<int32_t> other = {7, 8, 9, 10, 11};
  cache.truncate(30);
  std::vector<float> scratch;
  model->forward(other, cache, scratch);  // overwrite rows 30..34 with something else
  cache.truncate(30);
  model->forward(std::span(ids).subspan(30), cache, again, true);
  EXPECT_EQ(cache.length(), 40);
  EXPECT_EQ(again, rejected);
}

TEST(KVCache, ClearStartsOver) {
  const auto dir = fixture("tiny-qwen3");
  auto model = Qwen3Model::load(io::Checkpoint::open(dir), io::load_model_config(dir));
  const std::vector<int32_t> ids = {3, 1, 4, 1, 5};
  auto cache = model->new_cache();
  std::vector<float> a, b;
  model->forward(ids, cache, a);
  cache.clear();
  EXPECT_EQ(cache.length(), 0);
  model->forward(ids, cache, b);
  EXPECT_EQ(a, b);
}

TEST(KVCache, TruncatePastTheEndThrows) {
  auto backend = ops::make_cpu_backend();
  KVCache cache(*backend, {{1, 8}, {1, 8}});
  EXPECT_THROW(cache.truncate(1), Error);
  cache.reserve_append(3);
  cache.commit(3);
  EXPECT_EQ(cache.length(), 3);
  EXPECT_THROW(cache.truncate(4), Error);
  EXPECT_THROW(cache.truncate(-1), Error);
  cache.truncate(1);
  EXPECT_EQ(cache.length(), 1);
  EXPECT_THROW(cache.commit(10), Error);
}

}  // namespace
}  // namespace flashdraft::model
