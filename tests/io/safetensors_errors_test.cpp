// Every way a checkpoint can be broken must give an error naming the file,
// the tensor where there is one, and what was expected.
#include <gtest/gtest.h>

#include "expect_error.h"
#include "io/checkpoint.h"
#include "safetensors_writer.h"

namespace flashdraft::io {
namespace {

using nlohmann::json;
using testing::expect_error;
using testing::f32_bytes;
using testing::TensorSpec;
using testing::u16_bytes;

class BrokenCheckpoint : public ::testing::Test {
 protected:
  std::string single_path() const { return (dir_.path() / "model.safetensors").string(); }
  void write_single(const std::string& image) {
    testing::write_file(dir_.path() / "model.safetensors", image);
  }
  Checkpoint open() const { return Checkpoint::open(dir_.path()); }

  static std::vector<TensorSpec> two_tensors() {
    return {{"a.weight", "F32", {2, 2}, f32_bytes({1, 2, 3, 4})},
            {"b.weight", "BF16", {3}, u16_bytes({1, 2, 3})}};
  }

  testing::TempDir dir_;
};

TEST_F(BrokenCheckpoint, FileShorterThanLengthPrefix) {
  write_single(std::string("\x10\x00\x00", 3));
  expect_error([&] { open(); }, {single_path(), "3 bytes", "8-byte header length"});
}

TEST_F(BrokenCheckpoint, EmptyFile) {
  write_single("");
  expect_error([&] { open(); }, {single_path(), "0 bytes"});
}

TEST_F(BrokenCheckpoint, HeaderLengthPastEndOfFile) {
  std::string image = testing::safetensors_image(two_tensors());
  image[6] = '\x01';  // header length now ~2^48
  write_single(image);
  expect_error([&] { open(); }, {single_path(), "header length", "runs past the end of the file"});
}

TEST_F(BrokenCheckpoint, TruncatedInsideHeader) {
  const std::string image = testing::safetensors_image(two_tensors());
  write_single(image.substr(0, 20));
  expect_error([&] { open(); }, {single_path(), "runs past the end of the file", "20 bytes"});
}

TEST_F(BrokenCheckpoint, TruncatedInsideData) {
  const std::string image = testing::safetensors_image(two_tensors());
  write_single(image.substr(0, image.size() - 2));  // b.weight loses its last element
  expect_error([&] { open(); }, {single_path(), "'b.weight'", "past the end of the data section"});
}

TEST_F(BrokenCheckpoint, BadJson) {
  write_single(testing::safetensors_image_raw("{\"a\": {\"dtype\": \"F32\",", ""));
  expect_error([&] { open(); }, {single_path(), "invalid JSON"});
}

TEST_F(BrokenCheckpoint, HeaderIsNotAnObject) {
  write_single(testing::safetensors_image_raw("[1, 2]", ""));
  expect_error([&] { open(); }, {single_path(), "expected a JSON object"});
}

TEST_F(BrokenCheckpoint, DuplicateNameInOneHeader) {
  write_single(testing::safetensors_image_raw(
      R"({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
          "x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
      f32_bytes({1, 2})));
  expect_error([&] { open(); }, {single_path(), "\"x\" appears twice"});
}

TEST_F(BrokenCheckpoint, OffsetsPastEnd) {
  write_single(testing::safetensors_image(two_tensors(), [](json& h) {
    h["b.weight"]["data_offsets"] = {16, 2000};
  }));
  expect_error([&] { open(); },
               {single_path(), "'b.weight'", "[16, 2000]", "past the end of the data section",
                "22 bytes"});
}

TEST_F(BrokenCheckpoint, EndBeforeBegin) {
  write_single(testing::safetensors_image(two_tensors(), [](json& h) {
    h["a.weight"]["data_offsets"] = {16, 0};
  }));
  expect_error([&] { open(); }, {single_path(), "'a.weight'", "expected end >= begin"});
}

TEST_F(BrokenCheckpoint, NegativeOffset) {
  write_single(testing::safetensors_image(two_tensors(), [](json& h) {
    h["a.weight"]["data_offsets"] = {-4, 12};
  }));
  expect_error([&] { open(); }, {single_path(), "'a.weight'", "non-negative integer", "-4"});
}

TEST_F(BrokenCheckpoint, ByteLengthDisagreesWithShape) {
  write_single(testing::safetensors_image(two_tensors(), [](json& h) {
    h["a.weight"]["shape"] = {2, 3};  // 24 bytes expected, 16 stored
  }));
  expect_error([&] { open(); },
               {single_path(), "'a.weight'", "byte length 16", "[2, 3]", "F32", "24 bytes expected"});
}

TEST_F(BrokenCheckpoint, WrongDtypeSize) {
  // Declared BF16 but written as F32: twice the bytes the shape allows.
  write_single(testing::safetensors_image({{"w", "BF16", {4}, f32_bytes({1, 2, 3, 4})}}));
  expect_error([&] { open(); }, {single_path(), "'w'", "byte length 16", "BF16", "8 bytes expected"});
}

TEST_F(BrokenCheckpoint, UnsupportedDtype) {
  write_single(testing::safetensors_image({{"pos_ids", "I64", {2}, std::string(16, '\0')}}));
  expect_error([&] { open(); },
               {single_path(), "'pos_ids'", "unsupported dtype \"I64\"", "BF16, F16, F32"});
}

TEST_F(BrokenCheckpoint, MissingFields) {
  write_single(testing::safetensors_image(two_tensors(), [](json& h) { h["a.weight"].erase("shape"); }));
  expect_error([&] { open(); }, {single_path(), "'a.weight'", "missing \"shape\""});
  write_single(testing::safetensors_image(two_tensors(), [](json& h) { h["b.weight"].erase("dtype"); }));
  expect_error([&] { open(); }, {single_path(), "'b.weight'", "missing \"dtype\""});
  write_single(testing::safetensors_image(two_tensors(), [](json& h) { h["b.weight"]["data_offsets"] = {0}; }));
  expect_error([&] { open(); }, {single_path(), "'b.weight'", "expected [begin, end]"});
}

TEST_F(BrokenCheckpoint, OverlappingTensors) {
  write_single(testing::safetensors_image(
      {{"a", "F32", {2}, f32_bytes({1, 2})}, {"b", "F32", {2}, f32_bytes({3, 4})}},
      [](json& h) { h["b"]["data_offsets"] = {4, 12}; }));
  expect_error([&] { open(); }, {single_path(), "'a'", "'b'", "overlap"});
}

// ---- sharded checkpoints ----

std::vector<TensorSpec> shard_tensors() {
  return {{"t0", "F32", {1}, f32_bytes({0})},
          {"t1", "F32", {1}, f32_bytes({1})},
          {"t2", "F32", {1}, f32_bytes({2})}};
}

TEST_F(BrokenCheckpoint, MissingShardFile) {
  auto t = shard_tensors();
  testing::write_sharded(dir_.path(), {{"s1.safetensors", {t[0]}}, {"s2.safetensors", {t[1], t[2]}}});
  std::filesystem::remove(dir_.path() / "s2.safetensors");
  expect_error([&] { open(); },
               {"model.safetensors.index.json", (dir_.path() / "s2.safetensors").string(),
                "does not exist", "'t1'"});
}

TEST_F(BrokenCheckpoint, IndexNamesTensorTheShardLacks) {
  auto t = shard_tensors();
  testing::write_sharded(dir_.path(), {{"s1.safetensors", {t[0]}}, {"s2.safetensors", {t[1]}}},
                         [](json& map) { map["t9"] = "s2.safetensors"; });
  expect_error([&] { open(); },
               {"model.safetensors.index.json", "'t9'", (dir_.path() / "s2.safetensors").string(),
                "does not contain it"});
}

TEST_F(BrokenCheckpoint, IndexPointsAtWrongShard) {
  auto t = shard_tensors();
  testing::write_sharded(dir_.path(), {{"s1.safetensors", {t[0]}}, {"s2.safetensors", {t[1], t[2]}}},
                         [](json& map) { map["t1"] = "s1.safetensors"; });
  expect_error([&] { open(); },
               {"'t1'", "s1.safetensors", "does not contain it", "it is in",
                (dir_.path() / "s2.safetensors").string()});
}

TEST_F(BrokenCheckpoint, DuplicateTensorAcrossShards) {
  auto t = shard_tensors();
  testing::write_sharded(dir_.path(), {{"s1.safetensors", {t[0], t[1]}}, {"s2.safetensors", {t[1], t[2]}}});
  expect_error([&] { open(); },
               {"'t1'", "stored in 2 shards", (dir_.path() / "s1.safetensors").string(),
                (dir_.path() / "s2.safetensors").string(), "expected exactly one"});
}

TEST_F(BrokenCheckpoint, ShardTensorMissingFromIndex) {
  auto t = shard_tensors();
  testing::write_sharded(dir_.path(), {{"s1.safetensors", {t[0], t[1]}}, {"s2.safetensors", {t[2]}}},
                         [](json& map) { map.erase("t1"); });
  expect_error([&] { open(); },
               {"'t1'", (dir_.path() / "s1.safetensors").string(), "index does not list it"});
}

TEST_F(BrokenCheckpoint, BrokenShardNamesTheShard) {
  auto t = shard_tensors();
  testing::write_sharded(dir_.path(), {{"s1.safetensors", {t[0]}}, {"s2.safetensors", {t[1]}}});
  const std::string image = testing::safetensors_image({t[1]});
  testing::write_file(dir_.path() / "s2.safetensors", image.substr(0, image.size() - 1));
  expect_error([&] { open(); },
               {(dir_.path() / "s2.safetensors").string(), "'t1'", "past the end of the data section"});
}

TEST_F(BrokenCheckpoint, BadIndex) {
  testing::write_file(dir_.path() / "model.safetensors.index.json", "{\"weight_map\": ");
  expect_error([&] { open(); }, {"model.safetensors.index.json", "invalid JSON"});
  testing::write_file(dir_.path() / "model.safetensors.index.json", R"({"metadata": {}})");
  expect_error([&] { open(); }, {"model.safetensors.index.json", "\"weight_map\""});
  testing::write_file(dir_.path() / "model.safetensors.index.json", R"({"weight_map": {"x": 3}})");
  expect_error([&] { open(); }, {"model.safetensors.index.json", "'x'", "expected a shard file name"});
  testing::write_file(dir_.path() / "model.safetensors.index.json",
                      R"({"weight_map": {"x": "../elsewhere.safetensors"}})");
  expect_error([&] { open(); }, {"'x'", "not a file name inside the model directory"});
}

}  // namespace
}  // namespace flashdraft::io
