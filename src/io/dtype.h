#pragma once
// Element types a checkpoint may hold, and their widening to fp32.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace flashdraft::io {

enum class DType { F32, F16, BF16 };

size_t dtype_size(DType dtype);
// The safetensors spelling: "F32", "F16", "BF16".
const char* dtype_name(DType dtype);
// nullopt for any dtype we do not load (callers build the error message,
// since only they know the file and tensor).
std::optional<DType> parse_dtype(std::string_view safetensors_name);

float bf16_to_f32(uint16_t bits);
float f16_to_f32(uint16_t bits);

// Widens `count` elements stored at `src` (any alignment; little-endian as in
// safetensors) into `dst`.
void widen_to_f32(DType dtype, const std::byte* src, size_t count, float* dst);

}  // namespace flashdraft::io
