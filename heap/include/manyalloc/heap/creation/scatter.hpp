// CreationPolicies::Scatter: the ScatterAlloc algorithm ([Steinberger2012];
// [Eckert2014] 4.3.5) over one pool. The object is the heap handle: small,
// trivially copyable, passed by value into kernels and threads.
//
// Data structures and invariants: detail/scatter/invariants.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "manyalloc/common/math.hpp"
#include "manyalloc/common/report.hpp"
#include "manyalloc/heap/acc/collectives.hpp"
#include "manyalloc/heap/creation/scatter_config.hpp"
#include "manyalloc/heap/detail/scatter/invariants.hpp"
#include "manyalloc/heap/detail/scatter/multi_page.hpp"
#include "manyalloc/heap/detail/scatter/page_ops.hpp"
#include "manyalloc/heap/detail/scatter/search.hpp"
#include "manyalloc/heap/detail/scatter/slots.hpp"

namespace manyalloc::heap::CreationPolicies {

// Counters of a Scatter heap (read on the host).
struct ScatterStatistics {
  std::uint32_t misuse_reports = 0;   // bad or double frees seen by destroy()
  Misuse last_misuse = Misuse::none;
  std::uint32_t page_count = 0;
  std::uint32_t pages_in_use = 0;     // pages split into chunks or in a multi-page run
};

template <ScatterHeapConfiguration HeapConfig = ScatterHeapConfig,
          ScatterHashConfiguration HashConfig = ScatterHashConfig>
class Scatter {
  using Layout = heap::detail::HeapLayout;
  using Ops = heap::detail::PageOps<HeapConfig>;
  using Search = heap::detail::SmallSearch<HeapConfig, HashConfig>;
  using Multi = heap::detail::MultiPage<HeapConfig>;

 public:
  using HeapProperties = HeapConfig;
  using HashingProperties = HashConfig;
  static constexpr std::uint32_t pagesize = HeapConfig::pagesize;
  static constexpr bool providesAvailableSlots = true;
  static constexpr bool needs_addressable_pool = true;

  Scatter() = default;

  // ---- host side -------------------------------------------------------------
  // Lays the heap out in [pool, pool + bytes) and zeroes its metadata. Where
  // the pool's memory is resident (acc::Backend::pool_memory_resident) and
  // splits are kept (no resetfreedpages), it also zeroes every page's
  // bit-field words and marks the pages clean, so that a page's first split
  // is one CAS (I1c), and then reads the active block's metadata back, which
  // the marking's writes pushed out of the GPU's L2 (ReadActiveBlockMetadata).
  // Throws std::invalid_argument when the pool cannot hold one region.
  template <class Backend>
  static Scatter init_heap(void* pool, std::size_t bytes) {
    Scatter s;
    s.layout_ = plan(pool, bytes);
    Backend::fill_zero(pool, s.layout_.metadata_bytes);
    if constexpr (Backend::pool_memory_resident && !HeapConfig::resetfreedpages) {
      (void)Backend::map_ranges(heap::detail::MarkPagesClean<HeapConfig>{s.layout_}, s.layout_.page_count);
      (void)Backend::map_ranges(heap::detail::ReadActiveBlockMetadata<HeapConfig>{s.layout_},
                                s.layout_.pages_per_block);
    }
    return s;
  }

  // Returns the heap to its freshly initialised state ([Eckert2014] 4.3.5).
  template <class Backend>
  static void finalize_heap(const Scatter& s) {
    if (s.layout_.pages != nullptr) Backend::fill_zero(s.layout_.shared, s.layout_.metadata_bytes);
  }

  template <class Backend>
  std::size_t getAvailableSlotsHost(std::size_t slot) const {
    if (slot == 0) return 0;
    const auto parts = Backend::map_ranges(heap::detail::SlotRangeSummary<HeapConfig>{layout_, slot}, layout_.page_count);
    return combine(parts.data(), parts.size(), slot);
  }

  template <class Backend>
  ScatterStatistics statistics() const {
    heap::detail::HeapShared shared{};
    Backend::copy_to_host(&shared, layout_.shared, sizeof shared);
    ScatterStatistics st;
    st.misuse_reports = shared.misuse;
    st.last_misuse = static_cast<Misuse>(shared.last_misuse);
    st.page_count = layout_.page_count;
    const auto parts = Backend::map_ranges(heap::detail::PagesInUse{layout_}, layout_.page_count);
    for (auto n : parts) st.pages_in_use += static_cast<std::uint32_t>(n);
    return st;
  }

  const Layout& layout() const { return layout_; }

  static std::string classname() {
    return "Scatter[pagesize=" + std::to_string(HeapConfig::pagesize) +
           ",accessblocks=" + std::to_string(HeapConfig::accessblocks) +
           ",regionsize=" + std::to_string(HeapConfig::regionsize) +
           ",wastefactor=" + std::to_string(HeapConfig::wastefactor) +
           ",resetfreedpages=" + (HeapConfig::resetfreedpages ? "true" : "false") +
           ",ordered_frees=" + (HeapConfig::ordered_frees ? "true" : "false") +
           ",hashingK=" + std::to_string(HashConfig::hashingK) +
           ",hashingDistMP=" + std::to_string(HashConfig::hashingDistMP) +
           ",hashingDistWP=" + std::to_string(HashConfig::hashingDistWP) +
           ",hashingDistWPRel=" + std::to_string(HashConfig::hashingDistWPRel) + "]";
  }

  // ---- worker side -----------------------------------------------------------
  // The lanes that enter together, nullptr requests (bytes == 0) included,
  // find which of them ask for as many bytes with one match_any: the search
  // spreads a warp's requests of one size by their number (search.hpp, hash).
  template <class Acc>
  MANYALLOC_FN void* create(const Acc& acc, std::size_t bytes) const {
    const std::uint32_t key = bytes <= pagesize ? static_cast<std::uint32_t>(bytes) : 0xffffffffu;
    const std::uint32_t same = acc.match_any(acc.active_mask(), key);
    if (bytes == 0) return nullptr;
    if (bytes <= pagesize) return Search::alloc(acc, layout_, static_cast<std::uint32_t>(bytes), same);
    const std::uint64_t pages = bytes / pagesize + (bytes % pagesize != 0 ? 1 : 0);
    // Each worker starts its search for a run where its own request would
    // go if all workers asked for as much (counted from the top of the pool,
    // multi_page.hpp), so concurrent large requests do not all scan and take
    // the same pages ([Steinberger2012] expects few of them): every worker's
    // start is its own. The worker's place in its launch identifies it where
    // warps exist; the processor is added only for host threads (search.hpp,
    // processor_term).
    const std::uint64_t worker = static_cast<std::uint64_t>(acc.warp_id()) * Acc::warp_size + acc.lane_id();
    return Multi::alloc(acc, layout_, pages, worker * pages + Search::processor_term(acc));
  }

  // Frees are combined per warp: the lanes freeing chunks whose bits share
  // one bit-field word of one page form a group, whose lowest lane clears
  // their bits and returns their reservations with one atomic each
  // (PageOps::free_chunks; groups of up to four lanes gather their bits
  // while the warp is still together, PageOps::gather_small_groups). A lane
  // with nullptr takes part in forming the groups (so that a distribution
  // policy may pass nullptr from the lanes that free nothing) and frees
  // nothing. After the groups formed and gathered, every lane collective
  // names the lanes of one group only: a collective over all the lanes that
  // entered together, after they went different ways, deadlocked on the GPU
  // when a lane had meanwhile entered the next free.
  template <class Acc>
  MANYALLOC_FN void destroy(const Acc& acc, void* ptr) const {
    const std::uint32_t lanes = acc.active_mask();
    Misuse m = ptr == nullptr ? Misuse::none : Misuse::foreign_pointer;
    std::uint32_t page = 0, chunk = 0, in_page = 0, index = 0, word = 0;
    heap::detail::PageGeometry g;
    bool small = false, multi = false;
    if (ptr != nullptr && layout_.contains(ptr, pagesize)) {
      const auto offset = static_cast<std::size_t>(static_cast<std::byte*>(ptr) - layout_.data);
      page = static_cast<std::uint32_t>(offset / pagesize);
      in_page = static_cast<std::uint32_t>(offset % pagesize);
      chunk = acc.load(&layout_.pages[page].chunk_size);
      if (heap::detail::unused_page(chunk)) {
        m = Misuse::double_free;
      } else if (chunk == heap::detail::multi_page) {
        m = Misuse::none;
        multi = true;
      } else if (chunk == heap::detail::claiming) {
        m = Misuse::double_free;  // being split: none of its chunks was handed out (I1b)
      } else {
        g = heap::detail::page_geometry(pagesize, chunk);
        index = Ops::chunk_index(g, chunk, in_page);
        word = Ops::bit_word(g, index);
        small = index != g.chunks;
        m = small ? Misuse::none : Misuse::not_a_chunk_start;
      }
    }
    // One match_any for every lane of `lanes` when at least half a warp came
    // together (a warp's frees in a loop or a kernel of their own); lanes
    // that come alone or in few, as frees between searches that end at
    // different times do, free one by one: forming their groups cost more
    // than it saved (docs/results/heap/ab/2026-11-25-scatter-free-combining).
    // The key of a chunk is its bit-field word, page * 32 + word; a heap of
    // more than 2^26 pages, whose keys would not fit below bit 31, frees
    // one by one too. Lanes without a chunk to free get a key of their own.
    const std::uint32_t alone = 1u << acc.lane_id();
    const bool together = layout_.page_count <= (1u << 26) && bits::popcount(lanes) >= Acc::warp_size / 2;
    const std::uint32_t group =
        !together ? alone : acc.match_any(lanes, small ? page * 32u + word : 0x80000000u | acc.lane_id());
    const std::uint32_t bit = small ? Ops::chunk_bit(g, index) : 0u;
    const std::uint32_t gathered = together ? Ops::gather_small_groups(acc, lanes, group, bit) : bit;
    if (small) {
      const auto r = Ops::free_chunks(acc, layout_, group, page, g, index, gathered);
      m = r.misuse;
      for (std::uint32_t stale = r.stale; stale != 0u; stale &= stale - 1u) {
        const std::uint32_t freed_twice = word * 32u + bits::find_first_set(stale) - 1u;
        note_misuse(acc, Misuse::double_free, layout_.page_data(page, pagesize) + std::size_t{freed_twice} * chunk);
      }
      // Only a free that makes room on a full page can make a full block
      // usable again: only those look at the active block (5.4).
      if (r.made_room) Search::maybe_activate(acc, layout_, page);
    } else if (multi) {
      m = Multi::free(acc, layout_, page, in_page);
    }
    if (m != Misuse::none) note_misuse(acc, m, ptr);
  }

  MANYALLOC_FN static bool is_oom(const void* ptr, std::size_t bytes) {
    return bytes != 0 && ptr == nullptr;
  }

  // Called by the lanes in `acc`'s active set together ([Eckert2014] 4.3.5: the
  // lanes split the pages among themselves; warp width bounds cooperation).
  // Every calling lane gets the same result.
  template <class Acc>
  MANYALLOC_FN std::size_t getAvailableSlotsAccelerator(const Acc& acc, std::uint32_t mask,
                                                        std::size_t slot) const {
    if (slot == 0) return 0;
    const unsigned lanes = bits::popcount(mask);
    const unsigned rank = bits::popcount(mask & bits::low_mask(acc.lane_id()));
    const std::uint64_t n = layout_.page_count;
    const heap::detail::SlotRangeSummary<HeapConfig> f{layout_, slot};
    const heap::detail::SlotSummary mine = f(n * rank / lanes, n * (rank + 1) / lanes);
    heap::detail::SlotSummary parts[Acc::warp_size];
    unsigned count = 0;
    for (unsigned lane = 0; lane < Acc::warp_size; ++lane) {
      if (((mask >> lane) & 1u) == 0u) continue;
      parts[count].slots = acc::shfl64(acc, mask, mine.slots, lane);
      parts[count].length = acc::shfl64(acc, mask, mine.length, lane);
      parts[count].head_free = acc::shfl64(acc, mask, mine.head_free, lane);
      parts[count].tail_free = acc::shfl64(acc, mask, mine.tail_free, lane);
      ++count;
    }
    return combine(parts, count, slot);
  }

 private:
  template <class Acc>
  MANYALLOC_FN void note_misuse(const Acc& acc, Misuse m, const void* ptr) const {
    acc.atomic_add(&layout_.shared->misuse, 1u);
    acc.store(&layout_.shared->last_misuse, static_cast<std::uint32_t>(m));
    report_misuse("Scatter::destroy", m, ptr);
  }

  MANYALLOC_FN static std::size_t combine(const heap::detail::SlotSummary* parts, std::size_t count,
                                          std::size_t slot) {
    if (slot <= pagesize) {
      std::uint64_t total = 0;
      for (std::size_t i = 0; i < count; ++i) total += parts[i].slots;
      return total;
    }
    const std::uint64_t per_slot = slot / pagesize + (slot % pagesize != 0 ? 1 : 0);
    heap::detail::SlotSummary all;
    for (std::size_t i = 0; i < count; ++i) all = heap::detail::combine_runs(all, parts[i], per_slot);
    return heap::detail::finish_runs(all, per_slot);
  }

  // Sizes the heap: page table entries, region words and pages share the
  // pool; pages start at a pagesize-aligned address; each access block is a
  // whole number of regions.
  static Layout plan(void* pool, std::size_t bytes) {
    using namespace heap::detail;
    constexpr std::size_t ps = HeapConfig::pagesize;
    constexpr std::size_t rs = HeapConfig::regionsize;
    const auto base = reinterpret_cast<std::uintptr_t>(pool);
    const std::size_t per_region = rs * (ps + sizeof(PageEntry)) + sizeof(std::uint32_t);
    std::size_t regions = bytes / per_region;
    auto fits = [&](std::size_t r) {
      const std::size_t meta = sizeof(HeapShared) + r * rs * sizeof(PageEntry) + r * sizeof(std::uint32_t);
      const std::uintptr_t data = round_up_or_zero<std::uintptr_t>(base + meta, ps);
      return data != 0 && data - base + r * rs * ps <= bytes;
    };
    while (regions > 0 && !fits(regions)) --regions;
    std::uint32_t blocks = HeapConfig::accessblocks;
    if (regions < blocks) blocks = static_cast<std::uint32_t>(regions);
    if (blocks == 0) throw std::invalid_argument("Scatter: heap too small for one region of pages");
    const std::size_t max_regions = std::numeric_limits<std::uint32_t>::max() / 2 / rs;
    if (regions > max_regions) regions = max_regions;
    // Every region is used: the last access block takes the regions that do
    // not divide evenly among the blocks.
    Layout l;
    l.block_count = blocks;
    l.pages_per_block = static_cast<std::uint32_t>(regions / blocks * rs);
    l.page_count = static_cast<std::uint32_t>(regions * rs);
    const std::size_t region_count = l.page_count / rs;
    l.shared = reinterpret_cast<HeapShared*>(base);
    l.pages = reinterpret_cast<PageEntry*>(base + sizeof(HeapShared));
    l.regions = reinterpret_cast<std::uint32_t*>(l.pages + l.page_count);
    const std::uintptr_t meta_end = reinterpret_cast<std::uintptr_t>(l.regions + region_count);
    l.metadata_bytes = meta_end - base;
    l.data = reinterpret_cast<std::byte*>(round_up_or_zero<std::uintptr_t>(meta_end, ps));
    return l;
  }

  Layout layout_{};
};

}  // namespace manyalloc::heap::CreationPolicies
