#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"

namespace flashdraft::io {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const char* what, int err) {
  throw Error(path.string() + ": cannot " + what + ": " + std::strerror(err));
}

// Closes the descriptor on every exit path; the mapping outlives it.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  FdGuard guard{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (guard.fd < 0) fail(path, "open", errno);
  struct stat st {};
  if (::fstat(guard.fd, &st) != 0) fail(path, "stat", errno);
  if (!S_ISREG(st.st_mode)) throw Error(path.string() + ": not a regular file");
  size_ = static_cast<size_t>(st.st_size);
  // mmap rejects length 0; an empty file is simply an empty span.
  if (size_ == 0) return;
  void* addr = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, guard.fd, 0);
  if (addr == MAP_FAILED) fail(path, "mmap", errno);
  data_ = static_cast<const std::byte*>(addr);
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace flashdraft::io
