#pragma once
// Loads a model's weights into backend tensors, by their checkpoint names.
// A model declares every tensor it expects (name, shape, where it goes);
// load() then checks the checkpoint against the declarations (a missing
// tensor, a wrong shape, or a checkpoint tensor the model has no place for is
// a flashdraft::Error naming the directory and tensor) and uploads each one,
// converted to the backend's weight dtype. One checkpoint tensor may go to
// several places (fused projections), and several tensors into one buffer
// (q/k/v stacked into one QKV weight, gate/up into one).
//
// Without a checkpoint (--load-format dummy) every declared tensor is filled
// with seeded random values instead: real shapes, meaningless numbers, for
// timing real-size models on machines that have no checkpoint. A Part gets
// its share of the whole tensor's values: the same model at every
// tensor-parallel size.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "io/checkpoint.h"
#include "ops/backend.h"
#include "parallel/communicator.h"

namespace flashdraft::model {

using LoadProgress = std::function<void(size_t done_bytes, size_t total_bytes)>;

class WeightLoader {
 public:
  // ckpt == nullptr: dummy weights from `seed`.
  WeightLoader(ops::Backend& backend, const io::Checkpoint* ckpt, uint64_t seed = 0);

  // A weight buffer of rows x cols in the backend's weight dtype.
  ops::OwnedTensor alloc(int64_t rows, int64_t cols);
  // Marks `w` (from alloc, used whole as matmul's w only) for the backend's
  // matmul layout (Backend::prepare_matmul_weight), applied once load() has
  // filled it: `w` must stay where it is until then.
  void matmul_weight(ops::OwnedTensor& w) { matmul_weights_.push_back({&w, false}); }
  // The same for a fused [gate; up] projection that only
  // Backend::matmul_silu_glu reads (Backend::prepare_glu_weight).
  void glu_weight(ops::OwnedTensor& w) { matmul_weights_.push_back({&w, true}); }
  // Every matmul and glu weight of this load rounded to `quant`'s grid when
  // prepared (a quantized drafter: ops::WeightQuant).
  void quantize(ops::WeightQuant quant) { quant_ = quant; }
  // Checkpoint tensor `name` of `shape` ([out, in] or [n]) goes to `dest`
  // (same element count, e.g. a row slice of a fused buffer). `why` explains
  // the expected shape in error messages ("hidden_size x ...").
  void add(const std::string& name, std::vector<int64_t> shape, const ops::Tensor& dest, std::string why = "");
  // Part of a checkpoint tensor (tensor parallelism): rows (dim 0) or
  // columns (dim 1) [begin, begin + count) of `name`, whose whole shape is
  // still checked against `shape`. count 0: the whole tensor.
  struct Part {
    int dim = 0;
    int64_t begin = 0, count = 0;
  };
  void add(const std::string& name, std::vector<int64_t> shape, const ops::Tensor& dest, std::string why,
           Part part);
  // Reads everything declared. `ignorable` names checkpoint tensors that may
  // be present without a place (tied heads, saved rotary buffers);
  // `describe` says what model the config describes, for the error message.
  void load(const LoadProgress& progress, const std::function<bool(const std::string&)>& ignorable,
            const std::string& describe);

 private:
  void prepare_matmul_weights();
  struct Decl {
    std::string name;
    std::vector<int64_t> shape;
    ops::Tensor dest;
    std::string why;
    Part part;
  };
  ops::Backend& backend_;
  const io::Checkpoint* ckpt_;
  uint64_t seed_;
  std::vector<Decl> decls_;
  std::vector<std::pair<ops::OwnedTensor*, bool>> matmul_weights_;  // (weight, is a [gate; up] one)
  ops::WeightQuant quant_ = ops::WeightQuant::None;
};

// Tensor parallelism: runs load(r, progress_r) for every rank r of a group
// at once, each on a thread bound to comms[r] (its buffers on its device;
// rank 0 on the caller's thread, bound to comms[0] from then on). The
// ranks' bytes are summed into `progress`, one call at a time (every rank's
// total is the same: each declares every checkpoint tensor). A rank's error
// is rethrown once every rank has stopped.
void load_on_every_rank(const std::vector<parallel::Communicator*>& comms, const LoadProgress& progress,
                        const std::function<void(int rank, const LoadProgress& progress)>& load);

}  // namespace flashdraft::model
