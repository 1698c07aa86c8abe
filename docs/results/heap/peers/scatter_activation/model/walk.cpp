// A host model of the probe's mixed alloc launch (scatter_upstream_probe,
// probe_kernels.cuh's sizes): Scatter's small search on the library's own
// headers, one lane after the other, warp by warp in order, on a 16 GiB pool
// (mapped NORESERVE; the chunks are never written). Every lane passes its
// warp's true `same` mask; the lanes take no group path (match_any names the
// lane alone). Prints, per launch, block 0's pages split, full and its
// regions closed, the pages split for small chunks in all, the reads of a
// page's chunk size (one per page looked at) and of region words per
// request, the failures and the active block; then frees every chunk one by
// one before the next launch. A model of the order of a GPU launch, not a timing: the GPU's
// warps run at once. From the repository root, with a CMake build in BUILD
// (its common/generated holds manyalloc/common/build_config.hpp):
//   g++ -std=c++20 -O2 -I<heap/include of the tree> -Icommon/include
//       -Iheap/tests -Iheap/support -IBUILD/common/generated -o walk walk.cpp
//   ./walk [requests (2^20)] [fixed size, 0 = mixed (0)] [launches (1)]
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include "generic/test_heaps.hpp"
#include "manyalloc_support/host_runner.hpp"

using namespace manyalloc::heap;
using Config = CreationPolicies::ScatterHeapConfig;
using Heap = testing::ScatterHeap<testing::HostRunner, Config>;
using Search = detail::SmallSearch<Config, CreationPolicies::ScatterHashConfig>;

struct Lane : acc::HostThread {
  static constexpr unsigned warp_size = 32;
  unsigned lane = 0, warp = 0;
  const detail::PageEntry* pages = nullptr;
  std::uint64_t pages_n = 0;
  std::uint64_t* reads = nullptr;
  const std::uint32_t* regions = nullptr;
  std::uint64_t regions_n = 0;
  std::uint64_t* region_reads = nullptr;
  unsigned lane_id() const { return lane; }
  std::uint32_t active_mask() const { return 1u << lane; }
  std::uint32_t ballot(std::uint32_t, bool p) const { return p ? 1u << lane : 0u; }
  std::uint32_t match_any(std::uint32_t, std::uint32_t) const { return 1u << lane; }
  unsigned warp_id() const { return warp; }
  unsigned processor_id() const { return 0; }
  // Counts the loads of a page entry's chunk size (its first word): one per
  // page a search looks at; the loads of fill and mask are left out. And
  // the loads of region words (a region entered, a block's sample).
  std::uint32_t load(const std::uint32_t* p) const {
    const auto at = reinterpret_cast<std::uintptr_t>(p), first = reinterpret_cast<std::uintptr_t>(pages);
    if (at >= first && at < first + pages_n * sizeof(detail::PageEntry) && (at - first) % sizeof(detail::PageEntry) == 0)
      ++*reads;
    if (p >= regions && p < regions + regions_n) ++*region_reads;
    return HostThread::load(p);
  }
};

static unsigned fixed_size = 0;
static unsigned size_of(unsigned i) {
  if (fixed_size) return fixed_size;
  unsigned x = i * 2654435761u; x ^= x >> 15; x *= 2246822519u; x ^= x >> 13; return 16 + x % 4081;
}

int main(int argc, char** argv) {
  const unsigned n = argc > 1 ? std::atoi(argv[1]) : (1u << 20);
  fixed_size = argc > 2 ? std::atoi(argv[2]) : 0;
  Heap heap{std::size_t{16} << 30};
  const auto& h = heap.creation().layout();
  std::uint64_t reads = 0, region_reads = 0, fails = 0;
  const unsigned warps = n / 32;
  std::vector<void*> chunks(n, nullptr);
  const unsigned launches = argc > 3 ? std::atoi(argv[3]) : 1;
  for (unsigned launch = 0; launch < launches; ++launch) {
  reads = 0; region_reads = 0; fails = 0;
  for (unsigned w = 0; w < warps; ++w) {
    unsigned bytes[32];
    for (unsigned l = 0; l < 32; ++l) bytes[l] = (size_of(w * 32 + l) + 15u) / 16u * 16u;
    for (unsigned l = 0; l < 32; ++l) {
      std::uint32_t same = 0;
      for (unsigned m = 0; m < 32; ++m) same |= (bytes[m] == bytes[l] ? 1u : 0u) << m;
      Lane a; a.lane = l; a.warp = w; a.pages = h.pages; a.pages_n = h.page_count; a.reads = &reads;
      a.regions = h.regions; a.regions_n = h.page_count / Config::regionsize; a.region_reads = &region_reads;
      chunks[w * 32 + l] = Search::alloc(a, h, bytes[l], same);
      if (chunks[w * 32 + l] == nullptr) ++fails;
    }
  }
  std::uint64_t split = 0;
  for (std::uint64_t p = 0; p < h.page_count; ++p) split += h.pages[p].chunk_size != 0 && h.pages[p].chunk_size <= 4096;
  // Block 0 after the launch: its pages split for small chunks, those of
  // them full, and its regions closed for the first pass (closed_region).
  std::uint64_t split0 = 0, full0 = 0, closed0 = 0;
  for (std::uint64_t p = 0; p < h.pages_per_block; ++p) {
    const std::uint32_t c = h.pages[p].chunk_size;
    if (c == 0 || c > Config::pagesize) continue;
    ++split0;
    full0 += h.pages[p].fill >= detail::page_geometry(Config::pagesize, c).chunks;
  }
  const std::uint64_t regions0 = h.pages_per_block / Config::regionsize;
  for (std::uint64_t r = 0; r < regions0; ++r)
    closed0 += detail::PageOps<Config>::closed_region(static_cast<std::uint32_t>(__builtin_popcount(h.regions[r])));
  std::printf("launch %u: block 0: %llu pages split, %llu full, %llu of %llu regions closed; ", launch,
              (unsigned long long)split0, (unsigned long long)full0, (unsigned long long)closed0,
              (unsigned long long)regions0);
  std::printf("pages split %llu, ", (unsigned long long)split);
  std::printf("n=%u chunk-size reads %.2f per request (%llu), region-word reads %.2f per request, fails %llu, active block %u of %u\n", n,
              double(reads) / n, (unsigned long long)reads, double(region_reads) / n, (unsigned long long)fails, h.shared->active_block,
              h.block_count);
  for (unsigned i = 0; i < n; ++i) {
    Lane a; a.lane = i % 32; a.warp = i / 32; a.pages = h.pages; a.pages_n = 0; a.reads = &reads;
    a.region_reads = &region_reads;
    heap.creation().destroy(a, chunks[i]);
  }
  }
}
