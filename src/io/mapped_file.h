#pragma once
// A read-only memory map of a whole file. Weights are read straight from the
// page cache, so opening a multi-GB checkpoint costs no copy.
#include <cstddef>
#include <filesystem>
#include <span>

namespace flashdraft::io {

class MappedFile {
 public:
  // Throws flashdraft::Error naming the path and the OS reason.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void release() noexcept;

  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace flashdraft::io
