#include "parallel/nccl_group.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace flashdraft::parallel {
namespace {

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Error(std::string("NCCL ") + what + ": " + ncclGetErrorString(r));
}

void check_cuda(cudaError_t r, const char* what) {
  if (r != cudaSuccess) throw Error(std::string("NCCL group ") + what + ": " + cudaGetErrorString(r));
}

ncclDataType_t nccl_type(ops::DType d) {
  switch (d) {
    case ops::DType::F32: return ncclFloat32;
    case ops::DType::BF16: return ncclBfloat16;
    case ops::DType::F16: return ncclFloat16;
    case ops::DType::I32: return ncclInt32;
  }
  return ncclFloat32;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  ~NcclCommunicator() override { ncclCommDestroy(comm_); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override {
    return "nccl " + std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + " (" + std::to_string(size_) +
           " ranks, cuda:0.." + std::to_string(size_ - 1) + ")";
  }
  void bind_thread() override { check_cuda(cudaSetDevice(rank_), "cudaSetDevice"); }

  void all_reduce_sum(ops::Backend& backend, const ops::Tensor& t) override {
    check(t, "all_reduce_sum");
    if (t.dtype == ops::DType::I32) throw Error("NCCL all_reduce_sum: f32, bf16 or f16 tensors only");
    check_nccl(ncclAllReduce(t.data, t.data, static_cast<size_t>(t.numel()), nccl_type(t.dtype), ncclSum, comm_,
                             stream(backend)),
               "all_reduce_sum");
  }
  void all_reduce_min_u64(ops::Backend& backend, const ops::Tensor& keys) override {
    check(keys, "all_reduce_min_u64");
    if (keys.dtype != ops::DType::I32 || keys.cols != 2)
      throw Error("NCCL all_reduce_min_u64: keys must be i32 [n, 2] (one u64 per row)");
    check_nccl(ncclAllReduce(keys.data, keys.data, static_cast<size_t>(keys.rows), ncclUint64, ncclMin, comm_,
                             stream(backend)),
               "all_reduce_min_u64");
  }
  void all_gather(ops::Backend& backend, const ops::Tensor& local, const ops::Tensor& all) override {
    check(local, "all_gather");
    check(all, "all_gather");
    if (all.dtype != local.dtype || all.rows != size_ * local.rows || all.cols != local.cols)
      throw Error("NCCL all_gather: all must be [size * local.rows, local.cols] of local's dtype");
    check_nccl(ncclAllGather(local.data, all.data, static_cast<size_t>(local.numel()), nccl_type(local.dtype), comm_,
                             stream(backend)),
               "all_gather");
  }

 private:
  static void check(const ops::Tensor& t, const char* what) {
    if (t.device != ops::Device::CUDA || !t.contiguous())
      throw Error(std::string("NCCL ") + what + ": the tensor must be contiguous CUDA memory");
  }
  static cudaStream_t stream(ops::Backend& backend) {
    if (backend.device() != ops::Device::CUDA) throw Error("NCCL group: the backend is not a CUDA backend");
    return static_cast<cudaStream_t>(backend.native_queue());
  }

  ncclComm_t comm_;
  const int rank_, size_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_nccl_group(int size) {
  // NVLink SHARP (multicast) is off unless asked for: the machines this is
  // run on do not lend it (see the README).
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
  if (visible < size)
    throw Error("--tensor-parallel-size " + std::to_string(size) + ": needs " + std::to_string(size) +
                " GPUs, " + std::to_string(visible) + " visible");
  std::vector<ncclComm_t> comms(static_cast<size_t>(size));
  std::vector<int> devices(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) devices[static_cast<size_t>(r)] = r;
  check_nccl(ncclCommInitAll(comms.data(), size, devices.data()), "ncclCommInitAll");
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < size; ++r)
    out.push_back(std::make_unique<NcclCommunicator>(comms[static_cast<size_t>(r)], r, size));
  return out;
}

}  // namespace flashdraft::parallel
