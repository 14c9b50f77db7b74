#include "parallel/thread_group.h"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>

#include "core/error.h"

namespace flashdraft::parallel {
namespace {

// What the ranks share: a reusable barrier that can be aborted, and each
// rank's published tensor.
class Shared {
 public:
  explicit Shared(int size) : size_(size), published_(static_cast<size_t>(size)) {}
  int size() const { return size_; }

  void wait() {
    std::unique_lock lock(mu_);
    check_aborted();
    const uint64_t gen = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != gen || aborted_; });
    check_aborted();
  }
  void abort() {
    std::lock_guard lock(mu_);
    aborted_ = true;
    cv_.notify_all();
  }
  void clear_abort() {
    std::lock_guard lock(mu_);
    aborted_ = false;
    arrived_ = 0;
  }
  void publish(int rank, const ops::Tensor& t) { published_[static_cast<size_t>(rank)] = t; }
  const ops::Tensor& published(int rank) const { return published_[static_cast<size_t>(rank)]; }

 private:
  void check_aborted() const {
    if (aborted_) throw Error("tensor parallel: another rank failed; this rank stops too");
  }
  const int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
  std::vector<ops::Tensor> published_;
};

void require(bool ok, const char* what, const std::string& why) {
  if (!ok) throw Error(std::string("thread group ") + what + ": " + why);
}

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<Shared> shared, int rank) : shared_(std::move(shared)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return shared_->size(); }
  std::string describe() const override { return "threads (" + std::to_string(size()) + " ranks)"; }
  void abort() override { shared_->abort(); }
  void clear_abort() override { shared_->clear_abort(); }

  void all_reduce_sum(ops::Backend& backend, const ops::Tensor& t) override {
    check(backend, t, ops::DType::F32, "all_reduce_sum");
    const auto n = static_cast<size_t>(t.numel());
    sum_.resize(n);
    exchange(t, [&] {
      // Every rank adds in the same order, so every rank gets the same bits.
      std::memcpy(sum_.data(), shared_->published(0).data, n * sizeof(float));
      for (int r = 1; r < size(); ++r) {
        const float* in = shared_->published(r).as<const float>();
        for (size_t i = 0; i < n; ++i) sum_[i] += in[i];
      }
    });
    std::memcpy(t.data, sum_.data(), n * sizeof(float));
  }

  void all_reduce_min_u64(ops::Backend& backend, const ops::Tensor& keys) override {
    check(backend, keys, ops::DType::I32, "all_reduce_min_u64");
    require(keys.cols == 2, "all_reduce_min_u64", "keys must be i32 [n, 2] (one u64 per row)");
    const auto n = static_cast<size_t>(keys.rows);
    min_.resize(n);
    exchange(keys, [&] {
      for (size_t i = 0; i < n; ++i) {
        uint64_t best = UINT64_MAX;
        for (int r = 0; r < size(); ++r) {
          uint64_t k;
          std::memcpy(&k, shared_->published(r).as<const std::byte>() + i * sizeof k, sizeof k);
          best = std::min(best, k);
        }
        min_[i] = best;
      }
    });
    std::memcpy(keys.data, min_.data(), n * sizeof(uint64_t));
  }

  void all_gather(ops::Backend& backend, const ops::Tensor& local, const ops::Tensor& all) override {
    check(backend, local, local.dtype, "all_gather");
    check(backend, all, local.dtype, "all_gather");
    require(all.rows == size() * local.rows && all.cols == local.cols, "all_gather",
            "all must be [size * local.rows, local.cols]");
    const size_t bytes = static_cast<size_t>(local.numel()) * ops::dtype_size(local.dtype);
    // `all` is this rank's own memory: filled while the others' locals are
    // published, and nobody writes a local until everyone has read it.
    exchange(local, [&] {
      for (int r = 0; r < size(); ++r)
        std::memcpy(static_cast<std::byte*>(all.data) + static_cast<size_t>(r) * bytes, shared_->published(r).data,
                    bytes);
    });
  }

 private:
  void check(ops::Backend& backend, const ops::Tensor& t, ops::DType dtype, const char* what) const {
    require(backend.device() == ops::Device::CPU && t.device == ops::Device::CPU, what,
            "the thread group runs CPU backends only");
    require(t.dtype == dtype, what, std::string("expected ") + ops::dtype_name(dtype) + ", got " +
                                        ops::dtype_name(t.dtype));
    require(t.contiguous(), what, "the tensor must be contiguous");
  }
  // Publish t, wait for every rank, read (`read` may look at every rank's
  // tensor), and wait again so that no rank overwrites its tensor while
  // another still reads it.
  template <class Read>
  void exchange(const ops::Tensor& t, Read read) {
    shared_->publish(rank_, t);
    shared_->wait();
    read();
    shared_->wait();
  }

  std::shared_ptr<Shared> shared_;
  const int rank_;
  std::vector<float> sum_;
  std::vector<uint64_t> min_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_thread_group(int size) {
  if (size < 1) throw Error("thread group: size must be >= 1, got " + std::to_string(size));
  auto shared = std::make_shared<Shared>(size);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < size; ++r) out.push_back(std::make_unique<ThreadCommunicator>(shared, r));
  return out;
}

}  // namespace flashdraft::parallel
