// Which part of GpuDeviceMallocCoalescing.DynamicWarp fails under compute-sanitizer
// racecheck ("an illegal memory access"; never without a tool; counts in README.md)?
// The test's kernel, one variant per run (argv[1]):
//   raw    CUDA's device malloc/free, no manyalloc code
//   dyn    DynamicWarp over DeviceMalloc, as the test (alloc in two divergent branches)
//   dyn1   the same with one call site (no divergent branches)
//   chain  DynamicWarp whose frees take the chain protocol only (no whole-superblock fast path)
//   gbox   DynamicWarp whose leader hands its pointer over through global memory, not
//          acc::CudaThread's shared-memory box (racecheck instruments shared memory only)
//   scatter, slabs  DynamicWarp over Scatter / SizeClassSlabs (a 256 MiB pool of their own)
//   Added after the last call, not yet run on a GPU (call7.sh):
//   rawbig  as raw, with requests of 1-6 KiB (a DynamicWarp leader's sizes), written and checked
//   dynlate dyn whose chunks are freed by a later kernel (each round: an alloc launch, a free launch)
//   Added for call 10 (call10.sh): does CUDA's free(nullptr) matter? DeviceMalloc::destroy passes
//   nullptr on to ::free from every lane whose part was not the superblock's last (31 of 32 lanes).
//   rawnull rawbig, and each lane calls ::free(nullptr) after its free
//   dynskip dyn over a creation policy that calls ::free only for a pointer that is not nullptr
// argv[2]: rounds per thread (2, the test's), argv[3]: launches (1).
// Exit 0: every chunk allocated, written and read back; 2: counters != 0; 3: a CUDA error.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "manyalloc/heap/heap.hpp"

namespace mh = manyalloc::heap;
namespace DP = mh::DistributionPolicies;

struct ChainOnly : DP::DynamicWarp {
  using DP::DynamicWarp::DynamicWarp;
  template <class Acc>
  MANYALLOC_FN static void* release(const Acc& acc, void* ptr) {
    return ptr == nullptr ? nullptr : mh::distribution::detail::free_segment(acc, ptr, "ChainOnly");
  }
  static std::string classname() { return "ChainOnly"; }
};

// The shared-memory box of acc::CudaThread::group_broadcast64, in global memory instead.
__device__ std::uint64_t global_box[1u << 16][32];
struct GlobalBoxCuda : mh::acc::CudaThread {
  __device__ std::uint64_t group_broadcast64(std::uint32_t group, unsigned root, std::uint64_t value) const {
    const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
    volatile std::uint64_t* slot = &global_box[warp][root];
    if (lane_id() == root) *slot = value;
    __syncwarp(group);
    const std::uint64_t v = *slot;
    __syncwarp(group);
    return v;
  }
};

// CUDA's device malloc, without ::free(nullptr) (dynskip).
struct SkipNullMalloc : mh::CreationPolicies::DeviceMalloc {
  template <class Backend>
  static SkipNullMalloc init_heap(void*, std::size_t) { return {}; }
  template <class Backend>
  static void finalize_heap(const SkipNullMalloc&) {}
  __device__ void destroy(const mh::acc::CudaThread&, void* ptr) const {
    if (ptr != nullptr) ::free(ptr);
  }
  static std::string classname() { return "SkipNullMalloc"; }
};

template <class Policy, class Creation = mh::CreationPolicies::DeviceMalloc>
using Heap = mh::Allocator<Creation, Policy, mh::OOMPolicies::ReturnNull,
                           mh::ReservePoolPolicies::CudaSetLimits, mh::AlignmentPolicies::NoOp>;

__device__ std::size_t size_of(std::uint32_t worker, std::uint32_t round) {
  const std::uint32_t x = worker * 2654435761u ^ round * 40503u;
  switch (x % 6u) {
    case 0: return 1 + x % 7u;
    case 1: return 4 + 8u * (x % 5u);
    case 2: return 16u * (1 + x % 8u);
    default: return 1 + x % 300u;
  }
}

__device__ unsigned char pattern(std::uint32_t worker, std::uint32_t round, std::size_t i) {
  return static_cast<unsigned char>((worker * 0x9e3779b1u) ^ (round * 0x85ebca77u) ^ (i * 0xc2b2ae3du));
}

__device__ bool write_check(unsigned char* p, std::size_t n, std::uint32_t worker, std::uint32_t round) {
  for (std::size_t i = 0; i < n; ++i) p[i] = pattern(worker, round, i);
  __threadfence_block();
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != pattern(worker, round, i)) return false;
  return true;
}

// mode 0: raw; 1: handle, two branches; 2: handle, one call site. The test's
// kernel (AllocWriteFree in distribution_gpu_test.cu), kept as it ran here.
// counters: [0] failed allocations, [1] corrupt chunks.
template <class Acc, class Handle>
__global__ void kernel(Handle heap, int mode, std::uint32_t workers, std::uint32_t rounds, std::uint32_t* counters) {
  const std::uint32_t worker = blockIdx.x * blockDim.x + threadIdx.x;
  if (worker >= workers) return;
  const Acc acc{};
  for (std::uint32_t round = 0; round < rounds; ++round) {
    const std::size_t n = size_of(worker, round);
    void* p = nullptr;
    if (mode == 0) {
      p = (acc.lane_id() % 3u == 0u) ? ::malloc(n) : ::malloc(n);
    } else if (mode == 1 && acc.lane_id() % 3u == 0u) {
      p = heap.alloc(acc, n);
    } else {
      p = heap.alloc(acc, n);
    }
    if (p == nullptr) {
      atomicAdd(counters, 1u);
      continue;
    }
    if (!write_check(static_cast<unsigned char*>(p), n, worker, round)) atomicAdd(counters + 1, 1u);
    if (mode == 0) ::free(p); else heap.dealloc(acc, p);
  }
}

// rawbig: CUDA's malloc from two branches, 1-6 KiB, every byte written and checked;
// rawnull (free_null): each lane then calls ::free(nullptr) too.
__global__ void raw_big_kernel(std::uint32_t workers, std::uint32_t rounds, std::uint32_t* counters,
                               bool free_null) {
  const std::uint32_t worker = blockIdx.x * blockDim.x + threadIdx.x;
  if (worker >= workers) return;
  const mh::acc::CudaThread acc{};
  for (std::uint32_t round = 0; round < rounds; ++round) {
    const std::size_t n = 1024u + (worker * 2654435761u ^ round * 40503u) % 5121u;
    void* p = (acc.lane_id() % 3u == 0u) ? ::malloc(n) : ::malloc(n);
    if (p == nullptr) {
      atomicAdd(counters, 1u);
      continue;
    }
    if (!write_check(static_cast<unsigned char*>(p), n, worker, round)) atomicAdd(counters + 1, 1u);
    ::free(p);
    if (free_null) ::free(nullptr);
  }
}

// dynlate: the allocs of one round (two branches), each chunk written and
// checked and its pointer kept; late_free_kernel frees them in the next launch.
template <class Handle>
__global__ void late_alloc_kernel(Handle heap, std::uint32_t workers, std::uint32_t round, void** kept,
                                  std::uint32_t* counters) {
  const std::uint32_t worker = blockIdx.x * blockDim.x + threadIdx.x;
  if (worker >= workers) return;
  const mh::acc::CudaThread acc{};
  const std::size_t n = size_of(worker, round);
  void* p = (acc.lane_id() % 3u == 0u) ? heap.alloc(acc, n) : heap.alloc(acc, n);
  if (p == nullptr) atomicAdd(counters, 1u);
  else if (!write_check(static_cast<unsigned char*>(p), n, worker, round)) atomicAdd(counters + 1, 1u);
  kept[worker] = p;
}
template <class Handle>
__global__ void late_free_kernel(Handle heap, std::uint32_t workers, void* const* kept) {
  const std::uint32_t worker = blockIdx.x * blockDim.x + threadIdx.x;
  if (worker >= workers) return;
  heap.dealloc(mh::acc::CudaThread{}, kept[worker]);
}

// Prints the counters and the launches' error; returns the exit status.
int report(cudaError_t e, const std::uint32_t* counters) {
  if (e != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(e));
    return 3;
  }
  std::uint32_t c[2];
  cudaMemcpy(c, counters, sizeof c, cudaMemcpyDeviceToHost);
  std::printf("failed allocations %u, corrupt %u\n", c[0], c[1]);
  return c[0] == 0 && c[1] == 0 ? 0 : 2;
}

std::uint32_t* zeroed_counters() {
  std::uint32_t* counters = nullptr;
  mh::acc::cuda_check(cudaMalloc(&counters, 2 * sizeof(std::uint32_t)), "cudaMalloc (counters)");
  mh::acc::cuda_check(cudaMemset(counters, 0, 2 * sizeof(std::uint32_t)), "cudaMemset (counters)");
  return counters;
}

int run_raw_big(std::uint32_t rounds, int launches, bool free_null) {
  Heap<DP::NoOp> device_heap(std::size_t{256} << 20);  // CUDA's malloc heap: 256 MiB
  std::uint32_t* counters = zeroed_counters();
  const std::uint32_t workers = 1u << 15;
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < launches && e == cudaSuccess; ++i) {
    raw_big_kernel<<<workers / 256, 256>>>(workers, rounds, counters, free_null);
    e = cudaDeviceSynchronize();
  }
  return report(e, counters);
}

int run_dyn_late(std::uint32_t rounds, int launches) {
  Heap<DP::NoOp> device_heap(std::size_t{256} << 20);
  const typename Heap<DP::DynamicWarp>::Handle handle(device_heap.creation());
  std::uint32_t* counters = zeroed_counters();
  const std::uint32_t workers = 1u << 15;
  void** kept = nullptr;
  mh::acc::cuda_check(cudaMalloc(&kept, workers * sizeof(void*)), "cudaMalloc (kept pointers)");
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < launches && e == cudaSuccess; ++i) {
    for (std::uint32_t round = 0; round < rounds && e == cudaSuccess; ++round) {
      late_alloc_kernel<<<workers / 256, 256>>>(handle, workers, round, kept, counters);
      late_free_kernel<<<workers / 256, 256>>>(handle, workers, kept);
      e = cudaDeviceSynchronize();
    }
  }
  return report(e, counters);
}

// Launches the kernel `launches` times on `handle`; prints and returns the exit status.
template <class Acc, class Handle>
int launch(const Handle& handle, int mode, std::uint32_t rounds, int launches) {
  std::uint32_t* counters = zeroed_counters();
  const std::uint32_t workers = 1u << 15;
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < launches && e == cudaSuccess; ++i) {
    kernel<Acc><<<workers / 256, 256>>>(handle, mode, workers, rounds, counters);
    e = cudaDeviceSynchronize();
  }
  return report(e, counters);
}

// Over CUDA's device malloc.
template <class Policy, class Acc = mh::acc::CudaThread, class Creation = mh::CreationPolicies::DeviceMalloc>
int run(int mode, std::uint32_t rounds, int launches) {
  Heap<DP::NoOp, Creation> device_heap(std::size_t{256} << 20);  // sets CUDA's malloc heap to 256 MiB
  return launch<Acc>(typename Heap<Policy, Creation>::Handle(device_heap.creation()), mode, rounds, launches);
}

// Over one of our heaps, with a pool of its own.
template <class Creation>
int run_pool(std::uint32_t rounds, int launches) {
  mh::Allocator<Creation, DP::DynamicWarp, mh::OOMPolicies::ReturnNull, mh::ReservePoolPolicies::CudaMalloc,
                mh::AlignmentPolicies::NoOp>
      heap(std::size_t{256} << 20);
  return launch<mh::acc::CudaThread>(heap.handle(), 1, rounds, launches);
}

int main(int argc, char** argv) {
  const std::string v = argc > 1 ? argv[1] : "dyn";
  const std::uint32_t rounds = argc > 2 ? static_cast<std::uint32_t>(std::atoi(argv[2])) : 2u;
  const int launches = argc > 3 ? std::atoi(argv[3]) : 1;
  if (v == "raw") return run<DP::NoOp>(0, rounds, launches);
  if (v == "dyn") return run<DP::DynamicWarp>(1, rounds, launches);
  if (v == "dyn1") return run<DP::DynamicWarp>(2, rounds, launches);
  if (v == "chain") return run<ChainOnly>(1, rounds, launches);
  if (v == "gbox") return run<DP::DynamicWarp, GlobalBoxCuda>(1, rounds, launches);
  if (v == "scatter") return run_pool<mh::CreationPolicies::Scatter<>>(rounds, launches);
  if (v == "slabs") return run_pool<mh::CreationPolicies::SizeClassSlabs<>>(rounds, launches);
  if (v == "rawbig") return run_raw_big(rounds, launches, false);
  if (v == "rawnull") return run_raw_big(rounds, launches, true);
  if (v == "dynskip") return run<DP::DynamicWarp, mh::acc::CudaThread, SkipNullMalloc>(1, rounds, launches);
  if (v == "dynlate") return run_dyn_late(rounds, launches);
  std::printf("unknown variant %s (raw, dyn, dyn1, chain, gbox, scatter, slabs, rawbig, dynlate, rawnull, dynskip)\n", v.c_str());
  return 1;
}
