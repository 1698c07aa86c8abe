// Where does DynamicWarp over CUDA's device malloc go wrong under racecheck? repro.cu's
// `chain` and `dyn` kernels (2^15 threads, alloc at two divergent call sites, write and
// check, free), with every step that could lead a free astray checked before it is taken:
//   chk     the chain protocol only, a checked copy of segments.hpp's free_segment: a header
//           whose size is 0 (an odd payload address), an offset of 0 or over 1 MiB, a
//           superblock start that is not 16-byte aligned, a walk of more than 64 steps.
//           A failed check is counted, its values kept (the first one), and the free gives up
//           (the superblock leaks) instead of loading through the bad address.
//   dynchk  the library's DynamicWarp unchanged (fast path and chain).
// Both run over CheckedMalloc: CUDA's malloc/free, counting superblocks that are not
// 16-byte aligned, and frees of such addresses.
// argv: variant, rounds per thread, launches. Exit 0: clean; 2: failed allocations or
// corrupt chunks; 3: a CUDA error (the counters are then lost); 4: a check failed.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "manyalloc/heap/heap.hpp"

namespace mh = manyalloc::heap;
namespace DP = mh::DistributionPolicies;
namespace seg = mh::distribution::detail;

// [0..5]: failed checks by kind (1 header size 0, 2 bad offset, 3 misaligned superblock
// start, 4 previous header size 0, 5 walk too long); [6] misaligned creates; [7] misaligned destroys.
__device__ unsigned long long g_count[8];
// The first failed check: kind, ptr, q, offset, word, steps.
__device__ unsigned long long g_first[6];
__device__ unsigned g_first_taken;

__device__ void record(unsigned kind, const void* ptr, const void* q, unsigned long long off, unsigned word,
                       unsigned steps) {
  atomicAdd(&g_count[kind], 1ull);
  if (atomicCAS(&g_first_taken, 0u, 1u) == 0u) {
    g_first[0] = kind;
    g_first[1] = reinterpret_cast<std::uintptr_t>(ptr);
    g_first[2] = reinterpret_cast<std::uintptr_t>(q);
    g_first[3] = off;
    g_first[4] = word;
    g_first[5] = steps;
    __threadfence();
  }
}

class CheckedMalloc {
 public:
  static constexpr bool providesAvailableSlots = false;
  static constexpr bool needs_addressable_pool = false;
  template <class Backend>
  static CheckedMalloc init_heap(void*, std::size_t) { return {}; }
  template <class Backend>
  static void finalize_heap(const CheckedMalloc&) {}
  __device__ void* create(const mh::acc::CudaThread&, std::size_t bytes) const {
    void* p = bytes == 0 ? nullptr : ::malloc(bytes);
    if (reinterpret_cast<std::uintptr_t>(p) % 16u != 0u) atomicAdd(&g_count[6], 1ull);
    return p;
  }
  __device__ void destroy(const mh::acc::CudaThread&, void* ptr) const {
    if (reinterpret_cast<std::uintptr_t>(ptr) % 16u != 0u) {
      atomicAdd(&g_count[7], 1ull);
      return;
    }
    ::free(ptr);
  }
  MANYALLOC_FN static bool is_oom(const void* ptr, std::size_t bytes) { return bytes != 0 && ptr == nullptr; }
  static std::string classname() { return "CheckedMalloc"; }
};

// segments.hpp's free_segment, each step checked first (see the top of the file).
template <class Acc>
__device__ void* checked_free_segment(const Acc& acc, void* ptr) {
  auto* p = static_cast<std::byte*>(ptr);
  const unsigned h = seg::header_bytes_at(reinterpret_cast<std::uintptr_t>(p));
  if (h == 0u) {
    record(1, ptr, p, 0, 0, 0);
    return nullptr;
  }
  acc.fence();
  std::uint32_t old = seg::load_flags_word(acc, p, h);
  for (;;) {
    if ((old & seg::seg_free) != 0u) return nullptr;  // double free: the library reports it
    if (seg::cas_flags_word(acc, p, h, old, old | seg::seg_free)) break;
    old = seg::load_flags_word(acc, p, h);
  }
  if ((old & seg::seg_last) == 0u) return nullptr;
  std::byte* q = p;
  unsigned hq = h;
  std::uint32_t wq = old;
  for (unsigned steps = 0;; ++steps) {
    const std::uint64_t off = seg::load_offset(acc, q, hq, wq);
    if (off == 0u || off > (std::uint64_t{1} << 20)) {
      record(2, ptr, q, off, wq, steps);
      return nullptr;
    }
    if ((wq & seg::seg_superblock) != 0u) {
      if (reinterpret_cast<std::uintptr_t>(q - off) % 16u != 0u) {
        record(3, ptr, q, off, wq, steps);
        return nullptr;
      }
      acc.fence();
      return q - off;
    }
    if (steps > 64u) {
      record(5, ptr, q, off, wq, steps);
      return nullptr;
    }
    std::byte* prev = q - off;
    const unsigned hp = seg::header_bytes_at(reinterpret_cast<std::uintptr_t>(prev));
    if (hp == 0u) {
      record(4, ptr, q, off, wq, steps);
      return nullptr;
    }
    std::uint32_t wp = seg::load_flags_word(acc, prev, hp);
    for (;;) {
      if ((wp & seg::seg_free) != 0u) break;
      if (seg::cas_flags_word(acc, prev, hp, wp, wp | seg::seg_last)) return nullptr;
      wp = seg::load_flags_word(acc, prev, hp);
    }
    q = prev;
    hq = hp;
    wq = wp;
  }
}

struct ChainChecked : DP::DynamicWarp {
  using DP::DynamicWarp::DynamicWarp;
  template <class Acc>
  MANYALLOC_FN static void* release(const Acc& acc, void* ptr) {
    return ptr == nullptr ? nullptr : checked_free_segment(acc, ptr);
  }
  static std::string classname() { return "ChainChecked"; }
};

template <class Policy>
using Heap = mh::Allocator<CheckedMalloc, Policy, mh::OOMPolicies::ReturnNull, mh::ReservePoolPolicies::CudaSetLimits,
                           mh::AlignmentPolicies::NoOp>;

__device__ std::size_t size_of(std::uint32_t worker, std::uint32_t round) {
  const std::uint32_t x = worker * 2654435761u ^ round * 40503u;
  switch (x % 6u) {
    case 0: return 1 + x % 7u;
    case 1: return 4 + 8u * (x % 5u);
    case 2: return 16u * (1 + x % 8u);
    default: return 1 + x % 300u;
  }
}

__device__ bool write_check(unsigned char* p, std::size_t n, std::uint32_t worker, std::uint32_t round) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(worker ^ round * 131u ^ i * 7u);
  __threadfence_block();
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != static_cast<unsigned char>(worker ^ round * 131u ^ i * 7u)) return false;
  return true;
}

// counters: [0] failed allocations, [1] corrupt chunks.
template <class Handle>
__global__ void kernel(Handle heap, std::uint32_t workers, std::uint32_t rounds, std::uint32_t* counters) {
  const std::uint32_t worker = blockIdx.x * blockDim.x + threadIdx.x;
  if (worker >= workers) return;
  const mh::acc::CudaThread acc{};
  for (std::uint32_t round = 0; round < rounds; ++round) {
    const std::size_t n = size_of(worker, round);
    void* p = (acc.lane_id() % 3u == 0u) ? heap.alloc(acc, n) : heap.alloc(acc, n);
    if (p == nullptr) {
      atomicAdd(counters, 1u);
      continue;
    }
    if (!write_check(static_cast<unsigned char*>(p), n, worker, round)) atomicAdd(counters + 1, 1u);
    heap.dealloc(acc, p);
  }
}

template <class Policy>
int run(std::uint32_t rounds, int launches) {
  Heap<DP::NoOp> device_heap(std::size_t{256} << 20);  // sets CUDA's malloc heap to 256 MiB
  const typename Heap<Policy>::Handle handle(device_heap.creation());
  std::uint32_t* counters = nullptr;
  mh::acc::cuda_check(cudaMalloc(&counters, 2 * sizeof(std::uint32_t)), "cudaMalloc (counters)");
  mh::acc::cuda_check(cudaMemset(counters, 0, 2 * sizeof(std::uint32_t)), "cudaMemset (counters)");
  const std::uint32_t workers = 1u << 15;
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < launches && e == cudaSuccess; ++i) {
    kernel<<<workers / 256, 256>>>(handle, workers, rounds, counters);
    e = cudaDeviceSynchronize();
  }
  if (e != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(e));
    return 3;
  }
  std::uint32_t c[2];
  unsigned long long count[8], first[6];
  mh::acc::cuda_check(cudaMemcpy(c, counters, sizeof c, cudaMemcpyDeviceToHost), "cudaMemcpy (counters)");
  mh::acc::cuda_check(cudaMemcpyFromSymbol(count, g_count, sizeof count), "cudaMemcpyFromSymbol (g_count)");
  mh::acc::cuda_check(cudaMemcpyFromSymbol(first, g_first, sizeof first), "cudaMemcpyFromSymbol (g_first)");
  unsigned long long checks = 0;
  for (int k = 1; k <= 5; ++k) checks += count[k];
  std::printf("failed allocations %u, corrupt %u; failed checks %llu (kinds 1-5: %llu %llu %llu %llu %llu); "
              "misaligned creates %llu, destroys %llu\n",
              c[0], c[1], checks, count[1], count[2], count[3], count[4], count[5], count[6], count[7]);
  if (checks != 0)
    std::printf("first failed check: kind %llu ptr %#llx q %#llx offset %llu word %#llx steps %llu\n", first[0],
                first[1], first[2], first[3], first[4], first[5]);
  if (checks != 0 || count[6] != 0 || count[7] != 0) return 4;
  return c[0] == 0 && c[1] == 0 ? 0 : 2;
}

int main(int argc, char** argv) {
  const std::string v = argc > 1 ? argv[1] : "chk";
  const std::uint32_t rounds = argc > 2 ? static_cast<std::uint32_t>(std::atoi(argv[2])) : 8u;
  const int launches = argc > 3 ? std::atoi(argv[3]) : 3;
  if (v == "chk") return run<ChainChecked>(rounds, launches);
  if (v == "dynchk") return run<DP::DynamicWarp>(rounds, launches);
  std::printf("unknown variant %s (chk, dynchk)\n", v.c_str());
  return 1;
}
