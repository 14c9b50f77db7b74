#pragma once
// A kernel launch as cudaLaunchKernelEx takes it: grid, block, dynamic shared
// memory and stream, whether the kernel may start while the one before it in
// the stream still runs (programmatic dependent launch: it must then execute
// griddepcontrol.wait before it reads what that kernel writes), and
// optionally blocks in clusters. Launch with
// cudaLaunchKernelEx(&launch.config, kernel, args...).
#include <cuda_runtime_api.h>

#include <cstddef>

namespace flashdraft::ops::cuda {

struct KernelLaunch {
  cudaLaunchConfig_t config{};
  cudaLaunchAttribute attrs[2]{};

  KernelLaunch(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool early_start) {
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[0].val.programmaticStreamSerializationAllowed = early_start ? 1 : 0;
    config.attrs = attrs;
    config.numAttrs = 1;
  }
  // config.attrs points into this object.
  KernelLaunch(const KernelLaunch&) = delete;
  KernelLaunch& operator=(const KernelLaunch&) = delete;

  // Blocks in clusters of x by y by z.
  void clusters(unsigned x, unsigned y, unsigned z) {
    attrs[1].id = cudaLaunchAttributeClusterDimension;
    attrs[1].val.clusterDim.x = x;
    attrs[1].val.clusterDim.y = y;
    attrs[1].val.clusterDim.z = z;
    config.numAttrs = 2;
  }
};

}  // namespace flashdraft::ops::cuda
