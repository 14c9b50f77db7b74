#include "ops/cuda/cuda_graph.h"

#include <string>

#include "core/error.h"

namespace flashdraft::ops::cuda {
namespace {

class CudaGraph final : public Graph {
 public:
  CudaGraph(cudaGraphExec_t exec, cudaStream_t stream) : exec_(exec), stream_(stream) {}
  ~CudaGraph() override { cudaGraphExecDestroy(exec_); }
  void replay() override {
    const cudaError_t e = cudaGraphLaunch(exec_, stream_);
    if (e != cudaSuccess) throw Error(std::string("cudaGraphLaunch: ") + cudaGetErrorString(e));
  }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("graph capture: ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace

std::unique_ptr<Graph> capture_graph(cudaStream_t stream, const std::function<void()>& work) {
  // Thread-local mode: another thread's unrelated CUDA calls (a second
  // engine in the same process) neither break this capture nor get refused.
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  cudaGraph_t graph = nullptr;
  try {
    work();
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();  // a launch refused during capture must not stick to later calls
    throw;
  }
  check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check(e, "cudaGraphInstantiate");
  return std::make_unique<CudaGraph>(exec, stream);
}

}  // namespace flashdraft::ops::cuda
