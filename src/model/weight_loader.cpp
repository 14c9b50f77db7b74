#include "model/weight_loader.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <set>
#include <utility>

#include "core/error.h"
#include "io/tensor_view.h"
#include "parallel/rank_threads.h"

namespace flashdraft::model {
namespace {

ops::DType to_ops(io::DType d) {
  switch (d) {
    case io::DType::F32: return ops::DType::F32;
    case io::DType::F16: return ops::DType::F16;
    case io::DType::BF16: return ops::DType::BF16;
  }
  return ops::DType::F32;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

WeightLoader::WeightLoader(ops::Backend& backend, const io::Checkpoint* ckpt, uint64_t seed)
    : backend_(backend), ckpt_(ckpt), seed_(seed) {}

ops::OwnedTensor WeightLoader::alloc(int64_t rows, int64_t cols) {
  return backend_.alloc_tensor(backend_.weight_dtype(), rows, cols);
}

void WeightLoader::add(const std::string& name, std::vector<int64_t> shape, const ops::Tensor& dest, std::string why) {
  add(name, std::move(shape), dest, std::move(why), Part{});
}

void WeightLoader::add(const std::string& name, std::vector<int64_t> shape, const ops::Tensor& dest, std::string why,
                       Part part) {
  const auto dims = static_cast<int>(shape.size());
  if (part.count > 0 && (part.dim < 0 || part.dim >= dims || part.begin < 0 ||
                         part.begin + part.count > shape[static_cast<size_t>(part.dim)]))
    throw Error("weight loader: " + name + " " + io::shape_to_string(shape) + " has no part [" +
                std::to_string(part.begin) + ", +" + std::to_string(part.count) + ") along dim " +
                std::to_string(part.dim));
  // All of a dimension is the whole tensor: the unsplit path.
  if (part.count > 0 && part.begin == 0 && part.count == shape[static_cast<size_t>(part.dim)]) part = Part{};
  const int64_t n = part.count > 0 ? numel(shape) / shape[static_cast<size_t>(part.dim)] * part.count : numel(shape);
  if (n != dest.numel())
    throw Error("weight loader: " + name + " " + io::shape_to_string(shape) + (part.count > 0 ? " (its part)" : "") +
                " does not fill its " + std::to_string(dest.rows) + "x" + std::to_string(dest.cols) + " destination");
  decls_.push_back({name, std::move(shape), dest, std::move(why), part});
}

void WeightLoader::load(const LoadProgress& progress, const std::function<bool(const std::string&)>& ignorable,
                        const std::string& describe) {
  if (!ckpt_) {
    // Dummy weights keep activations at a sane scale: norms at 1, matrices
    // uniform with variance 1 / fan_in, so nothing overflows in bf16.
    // Seeded by name, so a tensor declared in two places (fused copies) gets
    // the same values in both. A rank's part is cut from the whole tensor's
    // values, so every tensor-parallel size builds the same model.
    for (const auto& d : decls_) {
      const uint64_t seed = seed_ ^ std::hash<std::string>{}(d.name);
      const bool norm = d.shape.size() == 1;  // norm weights (biases too): near 1
      const float a = norm ? 0.0f : std::sqrt(3.0f / static_cast<float>(d.shape.back()));
      const float lo = norm ? 0.95f : -a, hi = norm ? 1.05f : a;
      if (d.part.count == 0) {
        backend_.fill_uniform(d.dest, seed, lo, hi);
        continue;
      }
      // The fill draws element i of a contiguous tensor from (seed, i): the
      // whole tensor as [dim 0, the rest], then this rank's rows or columns.
      const int64_t rows = d.shape[0], cols = numel(d.shape) / rows;
      const ops::OwnedTensor whole = backend_.alloc_tensor(d.dest.dtype, rows, cols);
      backend_.fill_uniform(whole.t, seed, lo, hi);
      const ops::Tensor part =
          d.part.dim == 0 ? whole.t.row_slice(d.part.begin, d.part.count) : whole.t.col_slice(d.part.begin, d.part.count);
      backend_.copy(part, d.dest.reshape(part.rows, part.cols));
      backend_.synchronize();  // before `whole` is freed
    }
    backend_.synchronize();
    prepare_matmul_weights();
    return;
  }
  const std::string dir = ckpt_->dir().string();
  // Every checkpoint tensor must be accounted for: an unused one means the
  // config describes a different model than the weights, and the math would
  // be silently wrong.
  std::set<std::string> declared;
  for (const auto& d : decls_) declared.insert(d.name);
  for (const auto& name : ckpt_->names())
    if (!declared.count(name) && !ignorable(name))
      throw Error(dir + ": tensor '" + name + "' has no place in a " + describe +
                  " (as config.json describes it); config and weights do not match");

  size_t total = 0, done = 0;
  for (const auto& d : decls_) {
    const auto& t = ckpt_->get(d.name);  // names a missing tensor
    if (t.shape != d.shape)
      throw Error(t.file + ": tensor '" + d.name + "' has shape " + io::shape_to_string(t.shape) + ", expected " +
                  io::shape_to_string(d.shape) + (d.why.empty() ? "" : " (" + d.why + ")") +
                  "; does config.json match these weights?");
    total += t.nbytes;
  }
  if (progress) progress(0, total);
  std::vector<std::byte> part;
  for (const auto& d : decls_) {
    const auto& t = ckpt_->get(d.name);
    const auto* src = static_cast<const std::byte*>(t.data);
    if (d.part.count == 0) {
      backend_.upload(d.dest, src, to_ops(t.dtype));
    } else {
      // Rows of a row-major tensor are one contiguous run; columns are
      // gathered row by row first.
      const size_t es = t.nbytes / static_cast<size_t>(numel(t.shape));
      const auto inner = static_cast<size_t>(numel(t.shape) / t.shape[0]);
      if (d.part.dim == 0) {
        backend_.upload(d.dest, src + static_cast<size_t>(d.part.begin) * inner * es, to_ops(t.dtype));
      } else {
        const auto rows = static_cast<size_t>(t.shape[0]), count = static_cast<size_t>(d.part.count);
        part.resize(rows * count * es);
        for (size_t r = 0; r < rows; ++r)
          std::memcpy(part.data() + r * count * es, src + (r * inner + static_cast<size_t>(d.part.begin)) * es,
                      count * es);
        backend_.upload(d.dest, part.data(), to_ops(t.dtype));
      }
    }
    done += t.nbytes;
    if (progress) progress(done, total);
  }
  backend_.synchronize();
  prepare_matmul_weights();
}

void WeightLoader::prepare_matmul_weights() {
  for (const auto& [w, glu] : std::exchange(matmul_weights_, {})) {
    if (glu)
      backend_.prepare_glu_weight(*w, quant_);
    else
      backend_.prepare_matmul_weight(*w, quant_);
  }
}

void load_on_every_rank(const std::vector<parallel::Communicator*>& comms, const LoadProgress& progress,
                        const std::function<void(int rank, const LoadProgress& progress)>& load) {
  std::mutex mu;
  std::vector<size_t> done(comms.size(), 0);
  const auto size = static_cast<size_t>(comms.size());
  comms[0]->bind_thread();
  parallel::RankThreads ranks(comms);
  ranks.run([&](int r) {
    LoadProgress mine;
    if (progress)
      mine = [&, r](size_t bytes, size_t total) {
        std::lock_guard lock(mu);
        done[static_cast<size_t>(r)] = bytes;
        progress(std::accumulate(done.begin(), done.end(), size_t{0}), size * total);
      };
    load(r, mine);
  });
}

}  // namespace flashdraft::model
