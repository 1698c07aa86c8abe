// Sequential model of the PIC steps experiment's heap traffic on Scatter<8 KiB pages>
// (heap/bench/pic: Init convergent, Emit = divergent lone-lane allocs of outbox
// frames, Gather = frees of those frames). Runs the real policy code of whatever
// tree is on the include path on a counting accelerator; reports pages looked at
// (loads of chunk_size) and memory ops per alloc in Emit.
#include <sys/mman.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstddef>
#include <random>
#include <vector>
#include "manyalloc/heap/acc/host_thread.hpp"
#include "manyalloc/heap/creation/scatter.hpp"
namespace ma = manyalloc;
struct Counters { std::uint64_t loads = 0, stores = 0, atomics = 0, fences = 0, probes = 0;
  std::uint64_t total() const { return loads + stores + atomics; } };
inline const ma::heap::detail::PageEntry* sim_pages = nullptr;
inline std::size_t sim_page_count = 0;
inline const std::uint32_t* sim_regions=nullptr; inline std::size_t sim_region_count=0; inline std::uint64_t region_loads=0;
struct SimAcc : ma::heap::acc::HostThread {
  static constexpr unsigned warp_size = 32;
  unsigned lane = 0, warp = 0;
  std::uint32_t together = 0;  // lanes of the warp in this call together (incl. this one)
  Counters* c = nullptr;
  unsigned lane_id() const { return lane; }
  std::uint32_t active_mask() const { return together; }
  std::uint32_t ballot(std::uint32_t, bool pred) const { return pred ? 1u << lane : 0u; }
  std::uint32_t match_any(std::uint32_t mask, std::uint32_t) const { return mask; }  // all ask 8192
  std::uint32_t reduce_or(std::uint32_t, std::uint32_t v) const { return v; }
  void sync_lanes(std::uint32_t) const {}
  unsigned processor_id() const { return 0; }
  unsigned warp_id() const { return warp; }
  std::uint32_t load(const std::uint32_t* p) const {
    ++c->loads;
    const auto at = reinterpret_cast<std::uintptr_t>(p), table = reinterpret_cast<std::uintptr_t>(sim_pages);
    if (at >= table && at < table + sim_page_count * sizeof *sim_pages &&
        (at - table) % sizeof *sim_pages == offsetof(ma::heap::detail::PageEntry, chunk_size)) ++c->probes;
    if (p >= sim_regions && p < sim_regions + sim_region_count) ++region_loads;
    return *p;
  }
  void store(std::uint32_t* p, std::uint32_t v) const { ++c->stores; *p = v; }
  std::uint32_t atomic_add(std::uint32_t* p, std::uint32_t v) const { ++c->atomics; auto o = *p; *p = o + v; return o; }
  std::uint32_t atomic_sub(std::uint32_t* p, std::uint32_t v) const { ++c->atomics; auto o = *p; *p = o - v; return o; }
  std::uint32_t atomic_sub_release(std::uint32_t* p, std::uint32_t v) const { return atomic_sub(p, v); }
  std::uint32_t atomic_or(std::uint32_t* p, std::uint32_t v) const { ++c->atomics; auto o = *p; *p = o | v; return o; }
  std::uint32_t atomic_and(std::uint32_t* p, std::uint32_t v) const { ++c->atomics; auto o = *p; *p = o & v; return o; }
  std::uint32_t atomic_and_release(std::uint32_t* p, std::uint32_t v) const { return atomic_and(p, v); }
  std::uint32_t atomic_exch(std::uint32_t* p, std::uint32_t v) const { ++c->atomics; auto o = *p; *p = v; return o; }
  std::uint32_t atomic_cas(std::uint32_t* p, std::uint32_t e, std::uint32_t d) const {
    ++c->atomics; auto o = *p; if (o == e) *p = d; return o; }
  void fence() const { ++c->fences; }
  void relax() const {}
};
struct FramePages : ma::heap::CreationPolicies::ScatterHeapConfig { static constexpr std::uint32_t pagesize = 8192; };
using Heap = ma::heap::CreationPolicies::Scatter<FramePages>;
constexpr std::size_t heap_bytes = std::size_t{8192} << 20;

int main(int argc, char** argv) {
  const std::uint32_t cells = argc > 1 ? std::atoi(argv[1]) : 65536, species = 2, steps = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::uint32_t lists = cells * species, warps = lists / 32;
  void* pool = mmap(nullptr, heap_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  Heap heap = Heap::init_heap<ma::heap::acc::HostThreads>(pool, heap_bytes);
  sim_pages = heap.layout().pages; sim_page_count = heap.layout().page_count; sim_regions = heap.layout().regions; sim_region_count = heap.layout().page_count / 16;
  std::printf("pages %u, pages_per_block %u, blocks %u\n", heap.layout().page_count, heap.layout().pages_per_block, heap.layout().block_count);
  Counters c;
  auto run = [&](std::uint32_t w, std::uint32_t mask, auto&& f) {
    SimAcc a; a.lane = w % 32; a.warp = w / 32; a.together = mask; a.c = &c; return f(a); };
  // Init: 2 frames per list, whole warps together.
  for (int r = 0; r < 2; ++r)
    for (std::uint32_t w = 0; w < lists; ++w)
      if (!run(w, ~0u, [&](auto& a) { return heap.create(a, 8192); })) std::printf("init fail\n");
  std::mt19937 rng(1);
  for (std::uint32_t s = 1; s <= steps; ++s) {
    // Emit: each list allocates its left/right outbox frame at the first particle
    // leaving that way, the convert frame (non-growing species) at the first convert.
    struct Req { std::uint32_t j, w; };
    std::vector<Req> reqs;
    std::geometric_distribution<int> move(0.05), conv(0.002);
    for (std::uint32_t w = 0; w < lists; ++w) {
      reqs.push_back({static_cast<std::uint32_t>(std::min(move(rng), 399)), w});
      reqs.push_back({static_cast<std::uint32_t>(std::min(move(rng), 399)), w});
      if (w % species != 0) { int j = conv(rng); if (j < 400) reqs.push_back({static_cast<std::uint32_t>(j), w}); }
    }
    std::sort(reqs.begin(), reqs.end(), [](const Req& a, const Req& b) { return a.j != b.j ? a.j < b.j : a.w < b.w; });
    std::vector<void*> frames; frames.reserve(reqs.size());
    std::vector<std::uint32_t> per; per.reserve(reqs.size());
    std::uint64_t fails = 0; const Counters before = c; const auto rl0 = region_loads;
    for (std::size_t i = 0; i < reqs.size();) {  // one (j, warp) = lanes calling alloc together
      std::size_t k = i; std::uint32_t mask = 0;
      while (k < reqs.size() && reqs[k].j == reqs[i].j && reqs[k].w / 32 == reqs[i].w / 32) mask |= 1u << (reqs[k++].w % 32);
      for (; i < k; ++i) {
        const auto t0 = c.probes;
        void* p = run(reqs[i].w, mask, [&](auto& a) { return heap.create(a, 8192); });
        per.push_back(static_cast<std::uint32_t>(c.probes - t0));
        if (p) frames.push_back(p); else ++fails;
      }
    }
    std::sort(per.begin(), per.end());
    const double n = static_cast<double>(reqs.size());
    std::printf("step %u emit: %zu allocs, fails %llu, pages looked at/alloc mean %.1f p50 %u p90 %u p99 %u max %u; mem ops/alloc %.1f\n", s,
                reqs.size(), (unsigned long long)fails, (c.probes - before.probes) / n, per[per.size() / 2], per[per.size() * 9 / 10],
                per[per.size() * 99 / 100], per.back(), (c.total() - before.total()) / n);
    std::printf("   region-word loads/alloc %.1f, loads %.1f atomics %.1f per alloc\n", (region_loads - rl0) / n, (c.loads - before.loads) / n, (c.atomics - before.atomics) / n);
    {
      const auto& L = heap.layout();
      std::uint32_t base = static_cast<std::uint32_t>((8192ull * 38183ull) % L.pages_per_block);
      std::printf("   active block %u; hashed base page %u of %u per block; per block: full regions (16/16 marked) | closed (>90%%) | run of full regions from base\n   ", L.shared->active_block, base, L.pages_per_block);
      for (std::uint32_t b = 0; b < L.block_count; ++b) {
        std::uint32_t rpb = L.pages_per_block / 16, full = 0, closed = 0, run = 0; bool inrun = true;
        for (std::uint32_t r = 0; r < rpb; ++r) { auto pc = __builtin_popcount(L.regions[b * rpb + r]); full += pc == 16; closed += pc >= 15; }
        for (std::uint32_t k = 0; k < rpb && inrun; ++k) { auto pc = __builtin_popcount(L.regions[b * rpb + (base / 16 + k) % rpb]); if (pc == 16) ++run; else inrun = false; }
        std::printf("b%u %u|%u|%u  ", b, full, closed, run);
      }
      std::printf("(regions per block %u)\n", L.pages_per_block / 16);
    }
    // Gather: every outbox frame freed, lanes alone.
    for (std::size_t i = 0; i < frames.size(); ++i) run(static_cast<std::uint32_t>(i % lists), 1u << (i % 32), [&](auto& a) { heap.destroy(a, frames[i]); return 0; });
  }
  auto st = heap.statistics<ma::heap::acc::HostThreads>();
  std::printf("misuse %u pages_in_use %u\n", st.misuse_reports, st.pages_in_use);
}
