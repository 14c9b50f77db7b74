#include "io/safetensors_header.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.h"
#include "io/json_text.h"

namespace flashdraft::io {

namespace {

using nlohmann::json;

constexpr size_t kLengthPrefix = 8;

struct Context {
  const std::string& file;
  std::string tensor;  // empty while reading the header as a whole

  [[noreturn]] void fail(const std::string& problem) const {
    if (tensor.empty()) throw Error(file + ": " + problem);
    throw Error(file + ": tensor '" + tensor + "': " + problem);
  }
};

uint64_t read_le_u64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint64_t non_negative_integer(const json& value, const Context& ctx, const std::string& what) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return value.get<uint64_t>();
  ctx.fail(what + ": expected a non-negative integer, found " + json_excerpt(value));
}

std::vector<int64_t> parse_shape(const json& entry, const Context& ctx) {
  auto it = entry.find("shape");
  if (it == entry.end()) ctx.fail("missing \"shape\" (expected an array of dimensions)");
  if (!it->is_array()) ctx.fail("\"shape\": expected an array of dimensions, found " + json_excerpt(*it));
  std::vector<int64_t> shape;
  for (const json& d : *it) {
    uint64_t dim = non_negative_integer(d, ctx, "\"shape\" entry");
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      ctx.fail("\"shape\" entry " + std::to_string(dim) + " is too large");
    }
    shape.push_back(static_cast<int64_t>(dim));
  }
  return shape;
}

DType parse_entry_dtype(const json& entry, const Context& ctx) {
  auto it = entry.find("dtype");
  if (it == entry.end()) ctx.fail("missing \"dtype\" (expected one of BF16, F16, F32)");
  if (!it->is_string()) ctx.fail("\"dtype\": expected a string, found " + json_excerpt(*it));
  const std::string& name = it->get_ref<const std::string&>();
  auto dtype = parse_dtype(name);
  if (!dtype) ctx.fail("unsupported dtype \"" + name + "\" (supported: BF16, F16, F32)");
  return *dtype;
}

std::pair<uint64_t, uint64_t> parse_offsets(const json& entry, const Context& ctx) {
  auto it = entry.find("data_offsets");
  if (it == entry.end()) ctx.fail("missing \"data_offsets\" (expected [begin, end])");
  if (!it->is_array() || it->size() != 2) {
    ctx.fail("\"data_offsets\": expected [begin, end], found " + json_excerpt(*it));
  }
  return {non_negative_integer((*it)[0], ctx, "\"data_offsets\" begin"),
          non_negative_integer((*it)[1], ctx, "\"data_offsets\" end")};
}

// Byte count implied by shape x dtype, or fail on overflow.
uint64_t expected_nbytes(const std::vector<int64_t>& shape, DType dtype, const Context& ctx) {
  uint64_t n = dtype_size(dtype);
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) {
      ctx.fail("shape " + shape_to_string(shape) + " overflows a 64-bit byte count");
    }
  }
  return n;
}

struct Range {
  uint64_t begin, end;
  size_t index;  // into the result vector
};

void reject_overlaps(std::vector<Range> ranges, const std::vector<TensorView>& tensors,
                     const std::string& file) {
  // Empty tensors occupy no bytes and may share an offset with anything.
  std::erase_if(ranges, [](const Range& r) { return r.begin == r.end; });
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i) {
    const Range& prev = ranges[i - 1];
    const Range& cur = ranges[i];
    if (cur.begin < prev.end) {
      throw Error(file + ": tensors '" + tensors[prev.index].name + "' (bytes " +
                  std::to_string(prev.begin) + ".." + std::to_string(prev.end) + ") and '" +
                  tensors[cur.index].name + "' (bytes " + std::to_string(cur.begin) + ".." +
                  std::to_string(cur.end) + ") overlap; expected disjoint data_offsets");
    }
  }
}

}  // namespace

std::vector<TensorView> read_safetensors_header(const MappedFile& file) {
  const std::string path = file.path().string();
  Context ctx{path, {}};
  const auto bytes = file.bytes();
  if (bytes.size() < kLengthPrefix) {
    ctx.fail("file is " + std::to_string(bytes.size()) +
             " bytes, too short for the 8-byte header length (truncated?)");
  }
  const uint64_t header_len = read_le_u64(bytes.data());
  const uint64_t room = bytes.size() - kLengthPrefix;
  if (header_len > room) {
    ctx.fail("header length " + std::to_string(header_len) + " runs past the end of the file (" +
             std::to_string(bytes.size()) + " bytes: at most " + std::to_string(room) +
             " bytes of header fit; truncated or not a safetensors file?)");
  }
  const auto* header_start = reinterpret_cast<const char*>(bytes.data() + kLengthPrefix);
  const json header = parse_json(std::string_view(header_start, header_len),
                                 path + " (safetensors header)", /*reject_duplicate_keys=*/true);
  if (!header.is_object()) {
    ctx.fail("header: expected a JSON object of tensors, found " + json_excerpt(header));
  }

  const std::byte* data_section = bytes.data() + kLengthPrefix + header_len;
  const uint64_t data_size = room - header_len;
  std::vector<TensorView> tensors;
  std::vector<Range> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) ctx.fail("\"__metadata__\": expected an object, found " + json_excerpt(entry));
      continue;
    }
    ctx.tensor = name;
    if (!entry.is_object()) {
      ctx.fail("expected {dtype, shape, data_offsets}, found " + json_excerpt(entry));
    }
    const DType dtype = parse_entry_dtype(entry, ctx);
    std::vector<int64_t> shape = parse_shape(entry, ctx);
    const auto [begin, end] = parse_offsets(entry, ctx);
    if (end < begin) {
      ctx.fail("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
               "]: expected end >= begin");
    }
    if (end > data_size) {
      ctx.fail("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
               "] run past the end of the data section (" + std::to_string(data_size) +
               " bytes; truncated file?)");
    }
    const uint64_t want = expected_nbytes(shape, dtype, ctx);
    if (end - begin != want) {
      ctx.fail("byte length " + std::to_string(end - begin) + " (data_offsets [" +
               std::to_string(begin) + ", " + std::to_string(end) + "]) does not match shape " +
               shape_to_string(shape) + " x " + dtype_name(dtype) + " (" +
               std::to_string(dtype_size(dtype)) + " bytes) = " + std::to_string(want) +
               " bytes expected");
    }
    ranges.push_back({begin, end, tensors.size()});
    tensors.push_back(TensorView{name, dtype, std::move(shape), data_section + begin,
                                 static_cast<size_t>(end - begin), path});
  }
  reject_overlaps(std::move(ranges), tensors, path);
  return tensors;
}

}  // namespace flashdraft::io
