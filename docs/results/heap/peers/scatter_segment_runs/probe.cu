// Probe: warm launches of Scatter, with and without XMallocSIMD, at 2^20
// threads, composed as the peers benchmark composes them
// (heap/bench/peers/our_heaps.cuh), sizes drawn as the peers benchmark draws
// its mixed sizes (bench.hpp SizeSpec: uniform LO..HI by hash2 of the index).
// Each case: a fresh heap of POOL GiB, then LAUNCHES alloc launches, each
// followed by a null count and the free launch; prints every launch's time.
// Arguments: LAUNCHES (4), POOL (16). Built against the header tree
// .carry/ncu/NAME (run.sh).
#include "manyalloc/heap/heap.hpp"
#include "manyalloc/heap/creation/scatter.hpp"
#include "manyalloc/heap/distribution/xmalloc_simd.hpp"
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "../probe_kernels.cuh"
#include "../../../../../heap/support/manyalloc_support/workers.hpp"
namespace ma = manyalloc;
namespace CP = ma::heap::CreationPolicies;
namespace DP = ma::heap::DistributionPolicies;
#define CK(x) probe_check((x), #x)

struct ResetConfig : CP::ScatterHeapConfig {
  static constexpr bool resetfreedpages = true;
};
template <class Config, class Dist>
using Heap = ma::heap::Allocator<CP::Scatter<Config>, Dist, ma::heap::OOMPolicies::ReturnNull,
                                 ma::heap::ReservePoolPolicies::CudaMalloc, ma::heap::AlignmentPolicies::Shrink<16>>;

// The peers benchmark's hash2 (bench.hpp) is testing::checksum(a, b, 0x5bd1e995).
__device__ inline unsigned hash2(unsigned a, unsigned b) { return ma::heap::testing::checksum(a, b, 0x5bd1e995u); }
template <class H> __global__ void alloc_k(H h, void** p, unsigned n, unsigned lo, unsigned hi) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { ma::heap::acc::CudaThread a; p[i] = h.alloc(a, lo + hash2(i, 0) % (hi - lo + 1u)); }
}
template <class H> __global__ void free_k(H h, void** p, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { ma::heap::acc::CudaThread a; h.dealloc(a, p[i]); }
}

template <class HeapT>
void run_case(const char* name, unsigned lo, unsigned hi, int launches, size_t pool_gib, void** p, unsigned* nulls) {
  const unsigned n = 1u << 20;
  HeapT heap{pool_gib << 30};
  const auto h = heap.handle();
  busy_k<<<1, 1>>>(2000000);
  std::printf("%-24s %4u-%4u:", name, lo, hi);
  unsigned fails = 0;
  for (int l = 0; l < launches; ++l) {
    const float ta = timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, lo, hi); });
    CK(cudaMemset(nulls, 0, sizeof(unsigned)));
    nulls_k<<<n / 256, 256>>>(p, n, nulls);
    unsigned got = 0; CK(cudaMemcpy(&got, nulls, sizeof got, cudaMemcpyDeviceToHost)); fails += got;
    const float tf = timed([&] { free_k<<<n / 256, 256>>>(h, p, n); });
    std::printf(" %.1f/%.1f", ta, tf);
  }
  std::printf(" us (alloc/free per launch) fails=%u\n", fails);
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 4;
  const size_t pool = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 16;
  std::printf("pool %zu GiB\n", pool);
  void** p; CK(cudaMalloc(&p, (1u << 20) * sizeof(void*)));
  unsigned* nulls; CK(cudaMalloc(&nulls, sizeof(unsigned)));
  using Plain = CP::ScatterHeapConfig;
  for (int round = 0; round < 2; ++round) {
    run_case<Heap<Plain, DP::XMallocSIMD<4096>>>("Scatter+XMallocSIMD", 16, 4096, launches, pool, p, nulls);
    run_case<Heap<Plain, DP::XMallocSIMD<4096>>>("Scatter+XMallocSIMD", 16, 4064, launches, pool, p, nulls);
    run_case<Heap<Plain, DP::NoOp>>("Scatter", 16, 4096, launches, pool, p, nulls);
    run_case<Heap<Plain, DP::NoOp>>("Scatter", 16, 4112, launches, pool, p, nulls);
    // 2^20 two-page runs take 8 GiB: in a smaller pool the failing requests
    // would each scan the whole page array.
    if (pool >= 9) run_case<Heap<Plain, DP::NoOp>>("Scatter", 4097, 4112, launches, pool, p, nulls);
    run_case<Heap<ResetConfig, DP::XMallocSIMD<4096>>>("Scatter(reset)+XMallocSIMD", 16, 4096, launches, pool, p, nulls);
  }
  return 0;
}
