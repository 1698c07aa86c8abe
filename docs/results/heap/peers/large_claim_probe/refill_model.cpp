// Host model of SizeClassSlabs' page claims under a fill pattern: loads and
// atomics on the page bitmap per request, one thread, requests spread over
// the slots (shard) and warps as a GPU's would be; then whether one 1 GiB
// request fits beside the last launch's chunks. No contention: it counts
// what a placement makes each request read, not what concurrent refills
// cost each other. Built with g++ -std=c++20 -O2 against a header tree
// (-I<tree>/heap/include -I<tree>/common/include and a directory holding a
// generated manyalloc/common/build_config.hpp).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "manyalloc/heap/heap.hpp"
using namespace manyalloc::heap;
static std::size_t g_loads = 0, g_atomics = 0;
static const std::uint32_t *g_b = nullptr, *g_e = nullptr;
struct Counting : acc::HostThread {
  unsigned shard = 0, warp = 0;
  unsigned processor_id() const { return shard; }
  unsigned warp_id() const { return warp; }
  static bool in(const std::uint32_t* p) { return p >= g_b && p < g_e; }
  std::uint32_t load(const std::uint32_t* p) const { if (in(p)) ++g_loads; return HostThread::load(p); }
  std::uint32_t atomic_or(std::uint32_t* p, std::uint32_t v) const { if (in(p)) ++g_atomics; return HostThread::atomic_or(p, v); }
  std::uint32_t atomic_and(std::uint32_t* p, std::uint32_t v) const { if (in(p)) ++g_atomics; return HostThread::atomic_and(p, v); }
  std::uint32_t atomic_cas(std::uint32_t* p, std::uint32_t e, std::uint32_t d) const { if (in(p)) ++g_atomics; return HostThread::atomic_cas(p, e, d); }
};
using Heap = Allocator<CreationPolicies::SizeClassSlabs<>, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                       ReservePoolPolicies::HostPool, AlignmentPolicies::Shrink<16>>;
static unsigned size_of(unsigned i, unsigned bytes) {
  if (bytes) return bytes;
  unsigned x = i * 2654435761u; x ^= x >> 15; x *= 2246822519u; x ^= x >> 13; return 16 + x % 4081;
}
int main(int argc, char** argv) {
  const unsigned bytes = argc > 1 ? std::atoi(argv[1]) : 0;
  const unsigned n = argc > 2 ? std::atoi(argv[2]) : (1u << 17);
  const int launches = argc > 3 ? std::atoi(argv[3]) : 2;
  Heap heap(std::size_t{16} << 30);
  const auto& h = heap.creation().layout();
  g_b = h.taken; g_e = h.taken + h.words;
  const auto handle = heap.handle();
  std::vector<void*> p(n);
  for (int l = 0; l < launches; ++l) {
    g_loads = g_atomics = 0;
    unsigned failed = 0;
    for (unsigned i = 0; i < n; ++i) {
      Counting a; a.shard = i % 128u; a.warp = i / 32u;
      p[i] = handle.alloc(a, size_of(i, bytes));
      failed += p[i] == nullptr;
    }
    std::uint32_t busy = 0;
    for (std::uint32_t w = 0; w < h.words; ++w) busy += h.taken[w] != 0u;
    std::printf("launch %d, %u x %s: bitmap loads %.3f, atomics %.3f per request; failed %u; busy words %u of %u\n", l, n,
                bytes ? std::to_string(bytes).c_str() : "mixed", double(g_loads) / n, double(g_atomics) / n, failed, busy, h.words);
    if (l + 1 == launches) {
      Counting a;
      void* big = handle.alloc(a, std::size_t{1} << 30);
      std::printf("  then one 1 GiB request: %s\n", big ? "served" : "FAILED");
      if (big) handle.dealloc(a, big);
    }
    for (unsigned i = 0; i < n; ++i) if (p[i]) handle.dealloc(Counting{}, p[i]);
  }
}
