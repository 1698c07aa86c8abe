// Probe (README.md): the peers benchmark's churn (2^18 threads x 50 rounds of
// alloc/write/read/free of 16 B-1 KiB in one kernel) on a Scatter heap of
// 16 GiB, three repetitions on one heap; built by run.sh. Built with -DCOUNTED
// against headers instrumented by add_counters.py it also prints the
// counters of each repetition per request.
#include <cstdint>
#include "../probe_common.cuh"
#include "manyalloc/heap/creation/scatter.hpp"

using ScatterHeap = ProbeHeap<cp::Scatter<>>;

__device__ inline unsigned churn_hash(unsigned i, unsigned k) {
  unsigned x = i * 0x9e3779b1u ^ (k + 0x7f4a7c15u) * 0x85ebca6bu;
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
  return x;
}

template <class H>
__global__ void churn_k(H h, unsigned n, unsigned rounds, unsigned rep, unsigned long long* bad) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  ma::heap::acc::CudaThread a;
  for (unsigned r = 0; r < rounds; ++r) {
    const unsigned k = rep * rounds + r;
    const unsigned bytes = 16u + churn_hash(i, k) % 1009u;
    void* p = h.alloc(a, bytes);
    if (p == nullptr) {
      atomicAdd(bad, 1ull);
    } else {
      volatile unsigned* w = static_cast<unsigned*>(p);
      *w = k;
      if (*w != k) atomicAdd(bad, 1ull);
    }
    h.dealloc(a, p);
  }
}

#ifdef COUNTED
void counters(unsigned long long pairs, bool print) {
  unsigned long long c[16] = {};
  if (print) {
    CK(cudaMemcpyFromSymbol(c, ma::heap::detail::probe_counters, sizeof c));
    std::printf("  per request:");
    for (int i = 0; i < 14; ++i) std::printf(" [%d] %.3f", i, double(c[i]) / double(pairs));
    std::printf("\n");
  }
  static const unsigned long long zero[16] = {};
  CK(cudaMemcpyToSymbol(ma::heap::detail::probe_counters, zero, sizeof zero));
}
#else
void counters(unsigned long long, bool) {}
#endif

int main() {
  const unsigned n = 1u << 18, rounds = 50;
  unsigned long long* bad;
  CK(cudaMalloc(&bad, sizeof *bad));
  CK(cudaMemset(bad, 0, sizeof *bad));
  ScatterHeap heap(std::size_t{16} << 30);
  const auto h = heap.handle();
  for (unsigned rep = 0; rep < 3; ++rep) {
    counters(0, false);
    const float us = timed([&] { churn_k<<<n / 256, 256>>>(h, n, rounds, rep, bad); });
    const unsigned long long pairs = std::uint64_t{n} * rounds;
    const auto st = heap.creation().template statistics<ma::heap::acc::Cuda>();
    std::printf("rep %u: %.1f us, %.3f G pairs/s, pages in use %u\n", rep, us, pairs / us / 1e3, st.pages_in_use);
    counters(pairs, true);
  }
  unsigned long long b = 0;
  CK(cudaMemcpy(&b, bad, sizeof b, cudaMemcpyDeviceToHost));
  std::printf("failed or bad: %llu\n", b);
  return b == 0 ? 0 : 1;
}
