#pragma once
// The collectives tensor parallelism needs, behind one small interface, so
// that model/ is written once: ThreadGroup (ranks are threads of this
// process, CPU backends: what CI tests) and NcclGroup (one GPU per rank,
// NCCL from the CUDA toolkit) implement it.
//
// Every rank calls the same collectives in the same order (SPMD): a rank
// that skips one leaves the others waiting. Tensors are contiguous and live
// in the memory of the backend passed along; each call is enqueued on that
// backend's queue like an op (NCCL on the CUDA stream; the CPU group runs
// it at once, as the CPU backend runs its ops).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/backend.h"

namespace flashdraft::parallel {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "threads (2 ranks)", "nccl 2.28 (2 ranks, cuda:0..1)".
  virtual std::string describe() const = 0;
  // Makes the calling thread fit to run this rank's work (its CUDA device);
  // each rank's thread calls it once before using its backend.
  virtual void bind_thread() {}
  // Wakes every rank waiting in a collective with an Error: a rank that
  // failed calls it, so that the others do not wait forever.
  virtual void abort() {}
  // Undoes abort() once no rank is inside a collective (the group's failed
  // call has returned on every rank), so the next call works again. The
  // NCCL group cannot: after a failure there, the engine is done.
  virtual void clear_abort() {}

  // t <- the sum over ranks of t, in place, the same on every rank. f32 (and
  // bf16 where the backend uses it). The CPU group adds in rank order, rank
  // 0 first, so the result does not depend on timing.
  virtual void all_reduce_sum(ops::Backend& backend, const ops::Tensor& t) = 0;
  // keys (i32 [n, 2], row r one little-endian u64) <- per row, the smallest
  // over ranks (a sharded argmax: see Backend::argmax_key).
  virtual void all_reduce_min_u64(ops::Backend& backend, const ops::Tensor& keys) = 0;
  // all [size() * local.rows, local.cols] <- every rank's `local`, rank 0's rows first.
  virtual void all_gather(ops::Backend& backend, const ops::Tensor& local, const ops::Tensor& all) = 0;
};

// One communicator per rank, [0, size). device: "cpu" (threads) or "cuda"
// (NCCL, GPUs 0 .. size - 1). Throws flashdraft::Error saying why when the
// device cannot (a build without NCCL, fewer GPUs than ranks).
std::vector<std::unique_ptr<Communicator>> make_group(const std::string& device, int size);

}  // namespace flashdraft::parallel
