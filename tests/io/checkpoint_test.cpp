#include "io/checkpoint.h"

#include <gtest/gtest.h>

#include <utility>

#include "core/error.h"
#include "safetensors_writer.h"

namespace flashdraft::io {
namespace {

using testing::f32_bytes;
using testing::TempDir;
using testing::TensorSpec;
using testing::u16_bytes;

std::vector<TensorSpec> mixed_tensors() {
  return {
      {"model.embed_tokens.weight", "F32", {2, 3}, f32_bytes({1, 2, 3, -4, 5.5f, 6})},
      {"model.norm.weight", "BF16", {4}, u16_bytes({0x3F80, 0xC000, 0x3F00, 0x0000})},
      {"lm_head.weight", "F16", {2, 2}, u16_bytes({0x3C00, 0x0001, 0x7BFF, 0xB800})},
      {"empty", "F32", {0, 5}, ""},
  };
}

TEST(Checkpoint, SingleFile) {
  TempDir dir;
  testing::write_file(dir.path() / "model.safetensors", testing::safetensors_image(mixed_tensors()));
  const Checkpoint ckpt = Checkpoint::open(dir.path());

  EXPECT_EQ(ckpt.names(), (std::vector<std::string>{"empty", "lm_head.weight",
                                                     "model.embed_tokens.weight",
                                                     "model.norm.weight"}));
  EXPECT_TRUE(ckpt.contains("lm_head.weight"));
  EXPECT_FALSE(ckpt.contains("lm_head"));
  EXPECT_EQ(ckpt.total_bytes(), 24u + 8u + 8u);

  const TensorView& norm = ckpt.get("model.norm.weight");
  EXPECT_EQ(norm.dtype, DType::BF16);
  EXPECT_EQ(norm.shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(norm.numel(), 4);
  EXPECT_EQ(norm.nbytes, 8u);
  EXPECT_EQ(norm.file, (dir.path() / "model.safetensors").string());

  const int64_t embed_shape[] = {2, 3};
  EXPECT_EQ(ckpt.load_f32("model.embed_tokens.weight", embed_shape),
            (std::vector<float>{1, 2, 3, -4, 5.5f, 6}));
  const int64_t norm_shape[] = {4};
  EXPECT_EQ(ckpt.load_f32("model.norm.weight", norm_shape), (std::vector<float>{1, -2, 0.5f, 0}));
  const int64_t head_shape[] = {2, 2};
  EXPECT_EQ(ckpt.load_f32("lm_head.weight", head_shape),
            (std::vector<float>{1, 5.9604644775390625e-08f, 65504, -0.5f}));
  const int64_t empty_shape[] = {0, 5};
  EXPECT_TRUE(ckpt.load_f32("empty", empty_shape).empty());
}

TEST(Checkpoint, Sharded) {
  TempDir dir;
  auto t = mixed_tensors();
  testing::write_sharded(dir.path(), {{"model-00001-of-00002.safetensors", {t[0], t[1]}},
                                      {"model-00002-of-00002.safetensors", {t[2], t[3]}}});
  const Checkpoint ckpt = Checkpoint::open(dir.path());
  EXPECT_EQ(ckpt.names().size(), 4u);
  EXPECT_EQ(ckpt.get("lm_head.weight").file,
            (dir.path() / "model-00002-of-00002.safetensors").string());
  EXPECT_EQ(ckpt.get("model.norm.weight").file,
            (dir.path() / "model-00001-of-00002.safetensors").string());
  const int64_t shape[] = {2, 3};
  EXPECT_EQ(ckpt.load_f32("model.embed_tokens.weight", shape),
            (std::vector<float>{1, 2, 3, -4, 5.5f, 6}));
  const int64_t head_shape[] = {2, 2};
  EXPECT_EQ(ckpt.load_f32("lm_head.weight", head_shape)[3], -0.5f);
}

TEST(Checkpoint, SingleFileWinsOverIndex) {
  TempDir dir;
  testing::write_file(dir.path() / "model.safetensors",
                      testing::safetensors_image({{"a", "F32", {1}, f32_bytes({7})}}));
  testing::write_file(dir.path() / "model.safetensors.index.json", "not even json");
  const Checkpoint ckpt = Checkpoint::open(dir.path());
  EXPECT_EQ(ckpt.names(), std::vector<std::string>{"a"});
}

TEST(Checkpoint, MovedCheckpointKeepsViewsValid) {
  TempDir dir;
  testing::write_file(dir.path() / "model.safetensors", testing::safetensors_image(mixed_tensors()));
  Checkpoint first = Checkpoint::open(dir.path());
  Checkpoint second = std::move(first);
  const int64_t shape[] = {4};
  EXPECT_EQ(second.load_f32("model.norm.weight", shape), (std::vector<float>{1, -2, 0.5f, 0}));
}

TEST(Checkpoint, UnknownTensorNamesDirAndSuggestsNearest) {
  TempDir dir;
  testing::write_file(dir.path() / "model.safetensors", testing::safetensors_image(mixed_tensors()));
  const Checkpoint ckpt = Checkpoint::open(dir.path());
  try {
    ckpt.get("model.norm.wieght");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(dir.path().string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("'model.norm.wieght'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("nearest name: 'model.norm.weight'"), std::string::npos) << msg;
  }
}

TEST(Checkpoint, ShapeMismatchInLoadF32) {
  TempDir dir;
  testing::write_file(dir.path() / "model.safetensors", testing::safetensors_image(mixed_tensors()));
  const Checkpoint ckpt = Checkpoint::open(dir.path());
  const int64_t transposed[] = {3, 2};
  try {
    ckpt.load_f32("model.embed_tokens.weight", transposed);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find((dir.path() / "model.safetensors").string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("'model.embed_tokens.weight'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("has shape [2, 3], expected [3, 2]"), std::string::npos) << msg;
  }
  const int64_t flattened[] = {6};
  EXPECT_THROW(ckpt.load_f32("model.embed_tokens.weight", flattened), Error);
}

TEST(Checkpoint, DirectoryWithoutWeights) {
  TempDir dir;
  EXPECT_THROW(
      {
        try {
          Checkpoint::open(dir.path());
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("no model.safetensors"), std::string::npos);
          throw;
        }
      },
      Error);
  EXPECT_THROW(Checkpoint::open(dir.path() / "does-not-exist"), Error);
}

}  // namespace
}  // namespace flashdraft::io
