#pragma once
// Device helpers shared by the kernels of this folder: vectorised loads that
// widen to f32 (every kernel does its math in f32 and rounds once on store),
// and warp/block reductions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace flashdraft::ops::cuda {

using bf16 = __nv_bfloat16;

// For a short kernel that a GEMM follows: lets that GEMM (launched as a
// programmatic dependent) be scheduled now, so its blocks request their first
// weight tiles while this kernel runs; the GEMM waits for this grid's results
// (griddepcontrol.wait) before it reads them. A no-op before kernels launched
// without the attribute.
__device__ __forceinline__ void let_dependents_launch() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }

// A shared-memory pointer as the 32-bit address PTX's shared state space takes.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ldmatrix.x4 (and .trans): lane l gives the address of row l % 8 of matrix
// l / 8 and receives (row l / 4, elements 2 (l % 4), +1) of each matrix into
// r0..r3 (transposed: of each matrix's transpose).
__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr)
               : "memory");
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr)
               : "memory");
}

// V consecutive elements moved as one access: 8 bf16 or 4 f32 is one 16-byte
// load, which is what saturates HBM; narrower V serves rows that are not
// 16-byte aligned (the caller picks V with vector_elems()).
template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}

template <int V, class T>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[V]) {
  const Vec<T, V> v = *reinterpret_cast<const Vec<T, V>*>(p);
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = to_float(v.v[i]);
}

template <int V, class T>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[V]) {
  Vec<T, V> v;
#pragma unroll
  for (int i = 0; i < V; ++i) v.v[i] = from_float<T>(in[i]);
  *reinterpret_cast<Vec<T, V>*>(p) = v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over the whole block (blockDim.x a multiple of 32), returned to every
// thread: each warp re-reduces the per-warp partials itself, which saves the
// second barrier a broadcast through shared memory would need. Call it at
// most once per kernel (its shared slots are not reset).
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float warp_sums[32];
  v = warp_sum(v);
  const int lane = threadIdx.x % 32;
  if (lane == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? warp_sums[lane] : 0.f;
  return warp_sum(v);
}

// Threads for a one-block-per-row kernel: one vector each up to 256 threads,
// rounded to whole warps (block_sum needs that).
inline unsigned row_threads(int64_t vectors) {
  const int64_t warps = (vectors + 31) / 32;
  return static_cast<unsigned>(32 * (warps < 1 ? 1 : warps > 8 ? 8 : warps));
}

// Runs the statement (a kernel launch) with the compile-time constant V equal
// to the run-time width v that vector_elems() picked: kernels are templated on
// V so that their loads compile to single vector instructions.
#define FD_DISPATCH_VEC(v, V, ...) \
  switch (v) {                     \
    case 8: {                      \
      constexpr int V = 8;         \
      __VA_ARGS__;                 \
      break;                       \
    }                              \
    case 4: {                      \
      constexpr int V = 4;         \
      __VA_ARGS__;                 \
      break;                       \
    }                              \
    case 2: {                      \
      constexpr int V = 2;         \
      __VA_ARGS__;                 \
      break;                       \
    }                              \
    default: {                     \
      constexpr int V = 1;         \
      __VA_ARGS__;                 \
      break;                       \
    }                              \
  }

}  // namespace flashdraft::ops::cuda
