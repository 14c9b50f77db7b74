#include "io/dtype.h"

#include <bit>
#include <cstring>

namespace flashdraft::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; big-endian hosts would need byte swaps");

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "F32") return DType::F32;
  if (name == "F16") return DType::F16;
  if (name == "BF16") return DType::BF16;
  return std::nullopt;
}

float bf16_to_f32(uint16_t bits) {
  // bf16 is the top half of an fp32, so every value (nan payloads included)
  // widens exactly.
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

float f16_to_f32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) {
    // inf stays inf; nan keeps its payload (shifted into the fp32 mantissa).
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent == 0) {
    // Zero or subnormal: mantissa x 2^-24, exact in fp32 (mantissa < 2^10).
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  const uint32_t exp32 = exponent + (127 - 15);
  return std::bit_cast<float>(sign | (exp32 << 23) | (mantissa << 13));
}

void widen_to_f32(DType dtype, const std::byte* src, size_t count, float* dst) {
  switch (dtype) {
    case DType::F32:
      std::memcpy(dst, src, count * sizeof(float));
      return;
    case DType::BF16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        dst[i] = bf16_to_f32(bits);
      }
      return;
    case DType::F16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        dst[i] = f16_to_f32(bits);
      }
      return;
  }
}

}  // namespace flashdraft::io
