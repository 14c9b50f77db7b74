// What does reading K/V through the block table cost the attention, and
// would another pool layout or block order read faster? The pool is
// [slot][kv head][head_dim]: a head's key row is 256 bytes, the next slot's
// 2 KB further on at 8 kv heads. Alternatives timed here: [block][kv
// head][slot in block][head_dim] (a head's 16 rows of a block are 4 KB in
// one piece), a pool per kv head ([kv head][block][slot][head_dim]: blocks in
// order make a head's keys one run), and contiguous [sequence][kv head][key]
// [head_dim] K/V as torch's SDPA reads them, with and without block lookups.
//
// Each variant reads K and V the way paged_attention.cu does (one CTA a
// (sequence, kv head, key group), 64-key tiles through a 3-stage cp.async
// ring, 128 threads, two CTAs a multiprocessor; a tile's block ids loaded
// one tile before its copies, or two: handed on through a register, or in one
// of two register sets that alternate tiles use; or a stage refilled before
// the next tile lands) and sums one word a row, so
// it times the copies alone; or with bulk copies (`cp.async.bulk`, read_kv_bulk)
// of each layout's contiguous pieces. Block orders: in order, shuffled within 2 MB, shuffled, and
// dealt round robin to 32 sequences (decode growth). Results and what they
// ruled out: bench/bench_attention_notes.md, "The K/V read alone" and, for
// the kernel's batch-32 grid, "The split reduce past 32 slots".
// read_kv_tma: the slot-major pool read by tensor copies (TMA), a copy a
// (block, kv head, 64-dim half) into the 128-byte-swizzled tile layout that
// the prefill kernel's wgmma reads (paged_attention.cu's tile_off), issued by
// one thread; the run first checks that layout byte for byte (check_tma_tile).
// (Its results: bench_attention_notes.md, "Tensor copies for the prefill
// layout's K/V tiles".)
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc bench/kv_layout_probe.cu -o kv_layout_probe
// Run: ./kv_layout_probe [reps]
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "cuda_check.h"
#include "ops/cuda/mbarrier.cuh"

using flashdraft::ops::cuda::bulk_copy;
using flashdraft::ops::cuda::cp_async_mbar_arrive;
using flashdraft::ops::cuda::mbar_expect_tx;
using flashdraft::ops::cuda::mbar_init;
using flashdraft::ops::cuda::mbar_wait;

constexpr int kHD = 128, kBN = 64, kStages = 3, kThreads = 128, kBS = 16;
enum Layout { kNHD = 0, kHND = 1, kContig = 2, kHeadPools = 3 };

__device__ __forceinline__ void cp16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Byte offset of (key in sequence order, head) in the pool, its block `blk` looked up already.
__device__ __forceinline__ uint64_t row_offset(int layout, int blk, int key, int h, int n_kv, int seq_keys, int seq,
                                               int n_blocks) {
  if (layout == kContig) return ((uint64_t(seq) * n_kv + h) * seq_keys + key) * kHD * 2;
  const int t = key % kBS;
  if (layout == kNHD) return ((uint64_t(blk) * kBS + t) * n_kv + h) * kHD * 2;
  if (layout == kHeadPools) return ((uint64_t(h) * n_blocks + blk) * kBS + t) * kHD * 2;
  return ((uint64_t(blk) * n_kv + h) * kBS + t) * kHD * 2;
}

// How a kernel below takes its keys: CTA blockIdx.x reads key group g of kv
// head h of sequence seq (g fastest), `group_keys` keys from key k0, its
// block ids from `table`.
struct CtaKeys {
  int h, seq, k0, n_tiles;
  const int* table;
};
__device__ __forceinline__ CtaKeys cta_keys(const int* tables, int n_kv, int seq_keys, int group_keys) {
  const int groups = seq_keys / group_keys;
  const int g = static_cast<int>(blockIdx.x) % groups, seq = static_cast<int>(blockIdx.x) / (groups * n_kv);
  const int h = static_cast<int>(blockIdx.x / groups) % n_kv;
  return {h, seq, g * group_keys, group_keys / kBN, tables + seq * (seq_keys / kBS)};
}

// How a tile's block ids are looked up before its copies go out.
enum Lookup {
  kNoLookup = 0,     // none: the contiguous pool's addresses need no table
  kOneAhead = 1,     // loaded one tile before (as paged_attention.cu does)
  kTwoAheadMoved,    // two tiles before, into a register handed on each tile
  kTwoAheadAlternate // two tiles before, into one of two register sets taken by alternate tiles
};

// kEarly (with kOneAhead): a stage is refilled as soon as every thread is
// past the tile it held, before the next tile has landed, its copies counted
// on an mbarrier (`cp.async.mbarrier.arrive`), not a commit group: three
// tiles in flight where waiting for the next tile first keeps two.
template <int kLookup, bool kEarly = false>
__global__ void __launch_bounds__(kThreads, 2)
    read_kv(int layout, const char* k, const char* v, const int* tables, int n_kv, int seq_keys, int group_keys,
            int n_blocks, float* sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  const CtaKeys ck = cta_keys(tables, n_kv, seq_keys, group_keys);
  const int h = ck.h, seq = ck.seq, k0 = ck.k0, n_tiles = ck.n_tiles;
  const int* table = ck.table;
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  // A tile: 64 rows x 256 bytes each of K and V; thread i copies 16 bytes of
  // rows i / 16 + 8 r (r < 8), i.e. of the tile's 4 blocks r / 2.
  const int col = threadIdx.x % 16, row0 = threadIdx.x / 16;
  int ids_a[4] = {0, 0, 0, 0}, ids_b[4] = {0, 0, 0, 0};
  static_assert(!kEarly || kLookup == kOneAhead, "early refill is timed with ids one tile ahead");
  __shared__ __align__(8) uint64_t landed[kEarly ? kStages : 1];
  if (kEarly && threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) mbar_init(&landed[s], kThreads);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (kEarly) __syncthreads();
  auto lookup = [&](int tile, int (&ids)[4]) {
    if constexpr (kLookup != kNoLookup) {
#pragma unroll
      for (int i = 0; i < 4; ++i) ids[i] = tile < n_tiles ? __ldg(table + (k0 + tile * kBN) / kBS + i) : 0;
    }
  };
  auto issue = [&](int tile, int st, const int (&ids)[4]) {
#pragma unroll
    for (int r = 0; r < 8; ++r) {
      const int row = row0 + 8 * r;
      const uint64_t off =
          row_offset(layout, ids[r / 2], k0 + tile * kBN + row, h, n_kv, seq_keys, seq, n_blocks) + col * 16;
      const uint32_t d = base + st * 2 * kBN * kHD * 2 + (row * 16 + col) * 16;
      cp16(d, k + off);
      cp16(d + kBN * kHD * 2, v + off);
    }
    if constexpr (kEarly) cp_async_mbar_arrive(&landed[st]);
  };
  static_assert(kStages == 3, "the alternate sets assume tile t + 2 is issued at tile t");
  for (int s = 0; s < kStages - 1; ++s) {
    int(&ids)[4] = (kLookup == kTwoAheadAlternate && s % 2) ? ids_b : ids_a;
    lookup(s, ids);
    if (s < n_tiles) issue(s, s, ids);
    if constexpr (!kEarly) commit();
  }
  // ids_a: the next tile to issue (kStages - 1); ids_b: the one after (two-ahead modes).
  lookup(kStages - 1, kLookup == kTwoAheadAlternate ? ((kStages - 1) % 2 ? ids_b : ids_a) : ids_a);
  if constexpr (kLookup == kTwoAheadMoved) lookup(kStages, ids_b);
  if constexpr (kLookup == kTwoAheadAlternate) lookup(kStages, kStages % 2 ? ids_b : ids_a);
  float acc = 0.f;
  auto step = [&](int t, int (&ids)[4]) {
    if constexpr (!kEarly) wait_group<kStages - 2>();
    __syncthreads();
    if (t + kStages - 1 < n_tiles) issue(t + kStages - 1, (t + kStages - 1) % kStages, ids);
    if constexpr (!kEarly) commit();
    if constexpr (kLookup == kTwoAheadMoved) {
#pragma unroll
      for (int i = 0; i < 4; ++i) ids_a[i] = ids_b[i];
      lookup(t + kStages + 1, ids_b);
    } else if constexpr (kLookup == kTwoAheadAlternate) {
      lookup(t + kStages + 1, ids);  // the set's next tile: two on
    } else {
      lookup(t + kStages, ids_a);
    }
    if constexpr (kEarly) mbar_wait(&landed[t % kStages], (t / kStages) & 1);
    const float* tile = reinterpret_cast<const float*>(smem + (t % kStages) * 2 * kBN * kHD * 2);
    acc += tile[threadIdx.x * 32] + tile[kBN * kHD / 2 + threadIdx.x * 32];
  };
  if constexpr (kLookup == kTwoAheadAlternate) {
    // Tile t issues tile t + 2, of t's parity: even tiles use ids_a, odd ids_b, and no id is moved.
    for (int t = 0; t < n_tiles; t += 2) {
      step(t, ids_a);
      if (t + 1 < n_tiles) step(t + 1, ids_b);
    }
  } else {
    for (int t = 0; t < n_tiles; ++t) step(t, ids_a);
  }
  if (acc == 12345.f) sink[blockIdx.x] = acc;  // keeps the loads; never true for the zero pool
}

// The same reads with bulk copies (`cp.async.bulk`, the copy engine's 1-D
// form) counted on one mbarrier a stage: a copy a 256-byte row for the
// slot-major pool, a (block, kv head)'s 4 KB for head-major blocks, a
// tile's 16 KB for contiguous K/V. Thread i issues row i % 64 of K (i < 64)
// or V, looking its own block id up one tile ahead. Does the copy engine
// read scattered pool rows faster than 16-byte cp.async does?

__global__ void __launch_bounds__(kThreads, 2)
    read_kv_bulk(int layout, const char* k, const char* v, const int* tables, int n_kv, int seq_keys,
                 int group_keys, int n_blocks, float* sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) uint64_t bars[kStages];
  const CtaKeys ck = cta_keys(tables, n_kv, seq_keys, group_keys);
  const int h = ck.h, seq = ck.seq, k0 = ck.k0, n_tiles = ck.n_tiles;
  const int* table = ck.table;
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const int row = threadIdx.x % kBN;
  const bool is_v = threadIdx.x >= kBN;
  const int rows_a_copy = layout == kNHD ? 1 : layout == kContig ? kBN : kBS;
  const bool issuer = row % rows_a_copy == 0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) mbar_init(&bars[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  auto lookup = [&](int tile) {
    return layout != kContig && tile < n_tiles ? __ldg(table + (k0 + tile * kBN + row) / kBS) : 0;
  };
  auto issue = [&](int tile, int st, int blk) {
    if (threadIdx.x == 0) mbar_expect_tx(&bars[st], 2 * kBN * kHD * 2);
    if (issuer) {
      const uint64_t off = row_offset(layout, blk, k0 + tile * kBN + row, h, n_kv, seq_keys, seq, n_blocks);
      const uint32_t dst = base + st * 2 * kBN * kHD * 2 + (is_v ? kBN * kHD * 2 : 0) + row * kHD * 2;
      bulk_copy(dst, (is_v ? v : k) + off, rows_a_copy * kHD * 2, &bars[st]);
    }
  };
  for (int s = 0; s < kStages - 1 && s < n_tiles; ++s) issue(s, s, lookup(s));
  int next = lookup(kStages - 1);
  float acc = 0.f;
  for (int t = 0; t < n_tiles; ++t) {
    mbar_wait(&bars[t % kStages], (t / kStages) & 1);
    __syncthreads();  // every thread is past tile t - 1, whose stage the next copies refill
    if (t + kStages - 1 < n_tiles) {
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      issue(t + kStages - 1, (t + kStages - 1) % kStages, next);
    }
    next = lookup(t + kStages);
    const float* tile = reinterpret_cast<const float*>(smem + (t % kStages) * 2 * kBN * kHD * 2);
    acc += tile[threadIdx.x * 32] + tile[kBN * kHD / 2 + threadIdx.x * 32];
  }
  if (acc == 12345.f) sink[blockIdx.x] = acc;  // keeps the loads; never true for the zero pool
}

// The prefill layout's byte offset of 16-byte chunk c of row r in a tile of
// kBN rows (paged_attention.cu, tile_off: rows of 64 elements, the tile's
// two 64-dim halves one after the other, chunk c ^ (r % 8) within a row).
__host__ __device__ constexpr uint32_t tile_off(int r, int c) {
  return static_cast<uint32_t>(((c >> 3) * kBN + r) * 128 + (((c & 7) ^ (r & 7)) << 4));
}

// One tensor copy of a box of a 3-D map into shared memory, counted on `bar`.
__device__ __forceinline__ void tma_3d(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2),
      "r"(static_cast<uint32_t>(__cvta_generic_to_shared(bar)))
      : "memory");
}

// A tile's K and V (4 blocks x 2 halves each) by tensor copies into stage
// `dst` (K, then V kBN * kHD * 2 bytes on), 1024-byte aligned as the swizzle
// needs; `ids` the tile's 4 block ids.
__device__ __forceinline__ void tma_tile(uint32_t dst, const CUtensorMap* tk, const CUtensorMap* tv, int h,
                                         const int (&ids)[4], uint64_t* bar) {
  mbar_expect_tx(bar, 2 * kBN * kHD * 2);
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const uint32_t off = tile_off(j * kBS, half * 8);  // the block's first row of that half
      tma_3d(dst + off, tk, half * 64, h, ids[j] * kBS, bar);
      tma_3d(dst + kBN * kHD * 2 + off, tv, half * 64, h, ids[j] * kBS, bar);
    }
}

__device__ __forceinline__ uint32_t aligned_1k(const unsigned char* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return a + ((1024u - (a & 1023u)) & 1023u);
}

__global__ void __launch_bounds__(kThreads, 2)
    read_kv_tma(const __grid_constant__ CUtensorMap tk, const __grid_constant__ CUtensorMap tv, const int* tables,
                int n_kv, int seq_keys, int group_keys, float* sink) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t bars[kStages];
  const CtaKeys ck = cta_keys(tables, n_kv, seq_keys, group_keys);
  const int h = ck.h, k0 = ck.k0, n_tiles = ck.n_tiles;
  const int* table = ck.table;
  const uint32_t base = aligned_1k(smem_raw);
  const unsigned char* smem = smem_raw + (base - static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw)));
  const bool issuer = threadIdx.x == 0;
  if (issuer) {
    for (int s = 0; s < kStages; ++s) mbar_init(&bars[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  int ids[4] = {0, 0, 0, 0};
  auto lookup = [&](int tile) {
    if (issuer && tile < n_tiles) {
#pragma unroll
      for (int i = 0; i < 4; ++i) ids[i] = __ldg(table + (k0 + tile * kBN) / kBS + i);
    }
  };
  for (int s = 0; s < kStages - 1 && s < n_tiles; ++s) {
    lookup(s);
    if (issuer) tma_tile(base + s * 2 * kBN * kHD * 2, &tk, &tv, h, ids, &bars[s]);
  }
  lookup(kStages - 1);
  float acc = 0.f;
  for (int t = 0; t < n_tiles; ++t) {
    mbar_wait(&bars[t % kStages], (t / kStages) & 1);
    __syncthreads();  // every thread is past tile t - 1, whose stage the next copies refill
    if (issuer && t + kStages - 1 < n_tiles) {
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      tma_tile(base + ((t + kStages - 1) % kStages) * 2 * kBN * kHD * 2, &tk, &tv, h, ids,
               &bars[(t + kStages - 1) % kStages]);
    }
    lookup(t + kStages);
    const float* tile = reinterpret_cast<const float*>(smem + (t % kStages) * 2 * kBN * kHD * 2);
    acc += tile[threadIdx.x * 32] + tile[kBN * kHD / 2 + threadIdx.x * 32];
  }
  if (acc == 12345.f) sink[blockIdx.x] = acc;  // keeps the loads; never true for the zero pool
}

// One tile of (sequence 0, kv head h) at key tile `tile` by tma_tile, then
// every 16-byte chunk of K and V compared with the pool's row at tile_off's
// place: mismatching chunks counted into *bad.
__global__ void check_tma_tile(const __grid_constant__ CUtensorMap tk, const __grid_constant__ CUtensorMap tv,
                               const char* k, const char* v, const int* table, int n_kv, int h, int tile,
                               int* bad) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t bar;
  const uint32_t base = aligned_1k(smem_raw);
  const unsigned char* smem = smem_raw + (base - static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw)));
  int ids[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) ids[i] = table[tile * kBN / kBS + i];
  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) tma_tile(base, &tk, &tv, h, ids, &bar);
  mbar_wait(&bar, 0);
  for (int i = threadIdx.x; i < kBN * 16; i += blockDim.x) {
    const int r = i / 16, c = i % 16;
    const uint64_t src = ((uint64_t(ids[r / kBS]) * kBS + r % kBS) * n_kv + h) * kHD * 2 + c * 16;
    const uint4 gk = *reinterpret_cast<const uint4*>(k + src), gv = *reinterpret_cast<const uint4*>(v + src);
    const uint4 sk = *reinterpret_cast<const uint4*>(smem + tile_off(r, c));
    const uint4 sv = *reinterpret_cast<const uint4*>(smem + kBN * kHD * 2 + tile_off(r, c));
    if (gk.x != sk.x || gk.y != sk.y || gk.z != sk.z || gk.w != sk.w) atomicAdd(bad, 1);
    if (gv.x != sv.x || gv.y != sv.y || gv.z != sv.z || gv.w != sv.w) atomicAdd(bad, 1);
  }
}

__global__ void fill_pattern(uint32_t* p, size_t words, uint32_t salt) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x)
    p[i] = static_cast<uint32_t>(i * 2654435761u) ^ salt;
}

// The slot-major pool [slot][kv head][kHD] of `slots` slots as a 3-D tensor
// map (dims, kv heads, slots) with a box of 64 dims x 1 head x kBS slots,
// 128-byte swizzled: one block's rows of one head's half.
CUtensorMap pool_map(const void* pool, int n_kv, size_t slots) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
    if (!fn || q != cudaDriverEntryPointSuccess) {
      std::fprintf(stderr, "kv_layout_probe: cuTensorMapEncodeTiled not found\n");
      std::exit(1);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  CUtensorMap map{};
  const cuuint64_t dims[3] = {cuuint64_t(kHD), cuuint64_t(n_kv), cuuint64_t(slots)};
  const cuuint64_t strides[2] = {cuuint64_t(kHD) * 2, cuuint64_t(n_kv) * kHD * 2};  // bytes, dims 1 and 2
  const cuuint32_t box[3] = {64, 1, kBS}, elem[3] = {1, 1, 1};
  const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(pool), dims, strides, box,
                            elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "kv_layout_probe: cuTensorMapEncodeTiled failed (%d)\n", int(r));
    std::exit(1);
  }
  return map;
}

// check_tma_tile over a patterned pool with shuffled blocks: 0 mismatching
// chunks, or the run stops.
void check_tma_layout() {
  const int n_kv = 8, keys = 1024;
  const size_t slots = keys, bytes = slots * n_kv * kHD * 2;
  char *k, *v;
  int *table, *bad;
  CK(cudaMalloc(&k, bytes));
  CK(cudaMalloc(&v, bytes));
  CK(cudaMalloc(&table, keys / kBS * sizeof(int)));
  CK(cudaMalloc(&bad, sizeof(int)));
  fill_pattern<<<256, 256>>>(reinterpret_cast<uint32_t*>(k), bytes / 4, 0x1234567u);
  fill_pattern<<<256, 256>>>(reinterpret_cast<uint32_t*>(v), bytes / 4, 0x89abcdeu);
  std::vector<int> ids(keys / kBS);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(11));
  CK(cudaMemcpy(table, ids.data(), ids.size() * sizeof(int), cudaMemcpyHostToDevice));
  const CUtensorMap tk = pool_map(k, n_kv, slots), tv = pool_map(v, n_kv, slots);
  const int smem = 2 * kBN * kHD * 2 + 1024;
  CK(cudaFuncSetAttribute(check_tma_tile, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int total = 0;
  for (int h : {0, 5})
    for (int tile : {0, 7, 15}) {
      CK(cudaMemset(bad, 0, sizeof(int)));
      check_tma_tile<<<1, kThreads, smem>>>(tk, tv, k, v, table, n_kv, h, tile, bad);
      int b = 0;
      CK(cudaMemcpy(&b, bad, sizeof(int), cudaMemcpyDeviceToHost));
      total += b;
    }
  std::printf("tensor copies into the prefill tile layout: %d of %d chunks differ from the pool\n", total,
              2 * 3 * 2 * kBN * 16);
  if (total) std::exit(1);
  CK(cudaFree(k));
  CK(cudaFree(v));
  CK(cudaFree(table));
  CK(cudaFree(bad));
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 50;
  const int n_kv = 8;
  struct Shape {
    int batch, keys, group_keys;
  };
  // batch 1: 16 key groups a kv head (128 CTAs), and at 32k 32 (256: the kernel's grid there); batch 32:
  // 512-key groups (the split length past 4k keys),
  // and a CTA a (sequence, kv head) walking every key, as the kernel runs batch 32 (one key group).
  const Shape shapes[] = {{1, 32768, 2048}, {1, 32768, 1024}, {1, 8192, 512}, {32, 8192, 512}, {32, 1024, 256},
                          {32, 8192, 8192}, {32, 32768, 32768}, {32, 32768, 512}};
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  const size_t smem = size_t(kStages) * 2 * kBN * kHD * 2;
  // The kernel of each Lookup, by its value.
  void (*const kernels[])(int, const char*, const char*, const int*, int, int, int, int, float*) = {
      read_kv<kNoLookup>, read_kv<kOneAhead>, read_kv<kTwoAheadMoved>, read_kv<kTwoAheadAlternate>,
      read_kv<kOneAhead, true>};
  for (auto* kern : kernels) CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  CK(cudaFuncSetAttribute(read_kv_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  CK(cudaFuncSetAttribute(read_kv_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem) + 1024));
  check_tma_layout();
  constexpr int kBulk = -1;         // a Variant's lookup: read_kv_bulk
  constexpr int kTma = -2;          // a Variant's lookup: read_kv_tma (slot-major only)
  constexpr int kEarlyRefill = 4;  // a Variant's lookup: read_kv<kOneAhead, true> (kernels[4])
  struct Variant {
    int layout, lookup;
    const char* name;
  };
  const Variant variants[] = {{kNHD, kOneAhead, "slot-major, ids 1 tile ahead"},
                              {kNHD, kEarlyRefill, "slot-major, ids 1 ahead, early refill (3 in flight)"},
                              {kContig, kEarlyRefill, "contiguous, ids 1 ahead (unused), early refill"},
                              {kNHD, kTwoAheadMoved, "slot-major, 2 ahead moved"},
                              {kNHD, kTwoAheadAlternate, "slot-major, 2 ahead alternate"},
                              {kHND, kOneAhead, "head-major blocks, 1 ahead"},
                              {kHeadPools, kOneAhead, "a pool per kv head, 1 ahead"},
                              {kHeadPools, kTwoAheadMoved, "a pool per kv head, 2 ahead moved"},
                              {kContig, kNoLookup, "contiguous, no ids (order 1 only)"},
                              {kContig, kOneAhead, "contiguous, ids 1 ahead, unused"},
                              {kContig, kTwoAheadMoved, "contiguous, ids 2 ahead moved, unused"},
                              {kNHD, kBulk, "slot-major, bulk copies of 256 B"},
                              {kHND, kBulk, "head-major blocks, bulk copies of 4 KB"},
                              {kContig, kBulk, "contiguous, bulk copies of 16 KB"},
                              {kNHD, kTma, "slot-major, tensor copies of 2 KB into the prefill layout"}};
  std::printf("columns, us:");
  for (const Variant& vt : variants) std::printf(" | %s", vt.name);
  std::printf("\n");
  float* sink;
  CK(cudaMalloc(&sink, 1 << 20));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  // Block orders: the pool's blocks as a table hands them to the sequences.
  // window w: blocks shuffled within runs of w (a 32 KB block of 8 kv heads'
  // K rows: 64 blocks = 2 MB); 0: the whole pool shuffled; -s: blocks dealt
  // round robin to the sequences in steps of s (decode growth of s requests).
  const int orders[] = {1, 64, 0, -32};
  for (const Shape& s : shapes) {
    const size_t blocks = size_t(s.batch) * s.keys / kBS;
    const size_t bytes = blocks * kBS * n_kv * kHD * 2;  // K (and V) pool
    // Enough copies that the calls of a round rotate through more than L2 holds.
    const int copies = bytes * 2 >= (size_t(256) << 20) ? 1 : int((size_t(256) << 20) / (bytes * 2)) + 1;
    std::vector<char*> kk(copies), vv(copies);
    for (int c = 0; c < copies; ++c) {
      CK(cudaMalloc(&kk[c], bytes));
      CK(cudaMalloc(&vv[c], bytes));
      CK(cudaMemset(kk[c], 0, bytes));
      CK(cudaMemset(vv[c], 0, bytes));
    }
    int* d_table;
    CK(cudaMalloc(&d_table, blocks * sizeof(int)));
    std::vector<CUtensorMap> tmk(copies), tmv(copies);  // each copy's slot-major pool as tensor maps
    for (int c = 0; c < copies; ++c) {
      tmk[c] = pool_map(kk[c], n_kv, blocks * kBS);
      tmv[c] = pool_map(vv[c], n_kv, blocks * kBS);
    }
    const int grid = s.batch * n_kv * (s.keys / s.group_keys);
    std::printf("batch %d, %d keys, %d-key groups (%d CTAs), %.1f MB of K+V:\n", s.batch, s.keys, s.group_keys, grid,
                2.0 * bytes / 1e6);
    std::mt19937 rng(7);
    for (int order : orders) {
      if (order < 0 && s.batch < -order) continue;
      std::vector<int> table(blocks);
      std::iota(table.begin(), table.end(), 0);
      if (order > 1) {
        for (size_t b = 0; b < blocks; b += order)
          std::shuffle(table.begin() + b, table.begin() + std::min(blocks, b + order), rng);
      } else if (order == 0) {
        std::shuffle(table.begin(), table.end(), rng);
      } else if (order < 0) {
        // sequence q's i-th block is pool block i * step + q (mod the pool), sequences of one call first
        const size_t per = blocks / s.batch, step = size_t(-order);
        for (size_t q = 0; q < size_t(s.batch); ++q)
          for (size_t i = 0; i < per; ++i)
            table[q * per + i] = int(((i * step + q % step) + (q / step) * per * step) % blocks);
      }
      CK(cudaMemcpy(d_table, table.data(), blocks * sizeof(int), cudaMemcpyHostToDevice));
      std::printf("  order %5d:", order);
      for (const Variant& vt : variants) {
        if (vt.layout == kContig && order != 1) continue;
        auto launch = [&](int c) {
          if (vt.lookup == kTma) {
            read_kv_tma<<<grid, kThreads, smem + 1024>>>(tmk[c % copies], tmv[c % copies], d_table, n_kv, s.keys,
                                                         s.group_keys, sink);
            return;
          }
          auto* kern = vt.lookup == kBulk ? read_kv_bulk : kernels[vt.lookup];
          kern<<<grid, kThreads, smem>>>(vt.layout, kk[c % copies], vv[c % copies], d_table, n_kv, s.keys,
                                         s.group_keys, int(blocks), sink);
        };
        float best = 1e30f;
        for (int round = 0; round < 2; ++round) {
          for (int w = 0; w < 3; ++w) launch(w);
          CK(cudaEventRecord(e0));
          for (int r = 0; r < reps; ++r) launch(r);
          CK(cudaEventRecord(e1));
          CK(cudaEventSynchronize(e1));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, e0, e1));
          best = std::min(best, 1e3f * ms / reps);
        }
        std::printf(" %7.1f", best);
      }
      std::printf("\n");
    }
    for (int c = 0; c < copies; ++c) {
      CK(cudaFree(kk[c]));
      CK(cudaFree(vv[c]));
    }
    CK(cudaFree(d_table));
  }
  CK(cudaGetLastError());
  return 0;
}
