// CreationPolicies::SizeClassSlabs: a heap of size-class slabs carved from
// one pool of pages, for today's GPUs (issue 15; ideas from Ouroboros's
// per-class queues [Winter2020] and Gallatin's segment trees [McCoy2024],
// reimplemented; keys in docs/REFERENCES.md).
//
//  - Size classes from 16 B to 32 KiB, two per doubling of sizes by default
//    (Config::classes_per_doubling; detail/slabs/size_classes.hpp): mixed
//    sizes cost what single sizes cost.
//  - A pool that runs out keeps its started pages usable: open segments
//    shrink to their current page, and a request takes a chunk of a larger
//    class when its own has none (slabs/invariants.hpp C5); a request of a
//    class of at least Config::reuse_freed_chunks_from_bytes (4 KiB by
//    default) first takes a freed chunk of a partly used slab of its class
//    (C6).
//  - A slab is one page of one class, or the few pages a warp's group of
//    large requests takes whole; pages come from one page pool and go back
//    to it when their slab's last chunk is freed, so memory moves between
//    classes and large requests.
//  - Requests are combined per warp: the lanes asking for the same class
//    elect one lane that claims chunks for all of them with one 64-bit
//    atomic add on its shard's slot (fast path), or takes whole pages when
//    the group needs a page or more.
//  - Requests above the largest class take runs of whole pages, found
//    through the page bitmap's two hint levels, never by scanning pages.
//  - A free is combined per warp. In a class of at most 32 chunks per page
//    (2 KiB and up with 64 KiB pages) it is one atomic AND on the slab's
//    state word, which holds the class and a bit per chunk; in a smaller
//    class, one atomic on the chunk's bitmap word and one on the slab's
//    counter.
//
// Data structures and invariants: detail/slabs/invariants.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/math.hpp"
#include "manyalloc/common/report.hpp"
#include "manyalloc/heap/acc/collectives.hpp"
#include "manyalloc/heap/acc/concepts.hpp"
#include "manyalloc/heap/creation/size_class_slabs_config.hpp"
#include "manyalloc/heap/detail/slabs/class_slots.hpp"
#include "manyalloc/heap/detail/slabs/free_runs.hpp"
#include "manyalloc/heap/detail/slabs/page_pool.hpp"
#include "manyalloc/heap/detail/slabs/size_classes.hpp"
#include "manyalloc/heap/detail/slabs/invariants.hpp"

namespace manyalloc::heap::CreationPolicies {

// Counters of a SizeClassSlabs heap (read on the host).
struct SizeClassSlabsStatistics {
  std::uint32_t misuse_reports = 0;  // bad or double frees seen by destroy()
  Misuse last_misuse = Misuse::none;
  std::uint32_t page_count = 0;
  std::uint32_t pages_in_use = 0;    // slabs, segments and large runs
  std::uint32_t open_pages = 0;      // pages of the size classes' open segments
  std::uint32_t open_budget = 0;     // what open segments aim to stay within
  std::uint32_t dry_refills = 0;     // refills of a class that found no free page
  std::uint32_t reused_chunks = 0;   // freed chunks of partly used slabs handed out again (C6)
};

template <SizeClassSlabsConfiguration Config = SizeClassSlabsConfig>
class SizeClassSlabs {
  using Layout = heap::detail::slabs::SlabLayout;
  using Pool = heap::detail::slabs::PagePool;
  using Slots = heap::detail::slabs::ClassSlots<Config>;

 public:
  using Properties = Config;
  static constexpr std::uint32_t slab_bytes = Config::slab_bytes;
  using Classes = typename Slots::Classes;
  static constexpr std::uint32_t class_count = Slots::class_count;
  static constexpr std::uint32_t largest_class = Classes::bytes(class_count - 1u);
  static constexpr bool providesAvailableSlots = true;
  static constexpr bool needs_addressable_pool = true;
  static constexpr std::uint32_t no_class = 0xffffffffu;  // match_any key of lanes on the large path

  SizeClassSlabs() = default;

  // ---- host side -------------------------------------------------------------
  // Lays the heap out in [pool, pool + bytes) and zeroes its metadata.
  // Throws std::invalid_argument when the pool cannot hold one page.
  template <class Backend>
  static SizeClassSlabs init_heap(void* pool, std::size_t bytes) {
    SizeClassSlabs s;
    s.layout_ = plan(pool, bytes);
    Backend::fill_zero(pool, s.layout_.metadata_bytes);
    return s;
  }

  // Bytes from `pool` that init_heap writes (GrowingCreationPolicy).
  static std::size_t metadata_bytes_for(void* pool, std::size_t bytes) { return plan(pool, bytes).metadata_bytes; }

  // Lets the heap use the pages that lie wholly below `end` and no others (a
  // pool that grows, GrowingCreationPolicy): P3's usable count. Raising it
  // is safe while workers run; lowering it only while no page above the new
  // end is in use (right after init_heap). The `full` hints of words that
  // gain pages are cleared (a hint left set would only cost searches time).
  template <class Backend>
  void set_mapped_end(const void* end) const {
    const Layout& h = layout_;
    const std::uint32_t usable = pages_below(end);
    heap::detail::slabs::SlabShared shared{};
    Backend::copy_to_host(&shared, h.shared, sizeof shared);
    const std::uint32_t before = h.page_count - shared.unmapped_pages;
    const std::uint32_t unmapped = h.page_count - usable;
    const auto end_address = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(end));
    Backend::copy_to_device(&h.shared->mapped_end, &end_address, sizeof end_address);
    if (usable <= before) {
      Backend::copy_to_device(&h.shared->unmapped_pages, &unmapped, sizeof unmapped);
      return;
    }
    const std::uint32_t first_word = before / 32u, last_word = (usable - 1u) / 32u;
    const std::uint32_t first_hint = first_word / 32u, last_hint = last_word / 32u;
    std::vector<std::uint32_t> full(last_hint - first_hint + 1);
    Backend::copy_to_host(full.data(), h.full + first_hint, full.size() * sizeof(std::uint32_t));
    for (std::uint32_t hint = first_hint; hint <= last_hint; ++hint)
      full[hint - first_hint] &= ~hint_bits(hint, first_word, last_word);
    Backend::copy_to_device(h.full + first_hint, full.data(), full.size() * sizeof(std::uint32_t));
    Backend::copy_to_device(&h.shared->unmapped_pages, &unmapped, sizeof unmapped);
  }

  // Worker side of the same, for a pool that grows while workers run
  // (detail/growth_mailbox.hpp): lets the heap use the pages wholly below
  // `end`, which the caller knows to be mapped. Only raises the heap's
  // mapped end (M5) and the usable count (P3), so concurrent callers with
  // different ends agree on the largest; then clears the `full` hints of
  // the words that gained pages. Returns whether this call raised the count.
  template <class Acc>
  MANYALLOC_FN bool extend_mapped_end(const Acc& acc, const void* end) const {
    const Layout& h = layout_;
    const auto end_address = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(end));
    for (std::uint64_t known = acc.load64(&h.shared->mapped_end); known < end_address;) {
      const std::uint64_t old = acc.atomic_cas64(&h.shared->mapped_end, known, end_address);
      if (old == known) break;
      known = old;
    }
    const std::uint32_t usable = pages_below(end);
    if (usable == 0u) return false;
    const std::uint32_t unmapped = h.page_count - usable;
    std::uint32_t seen = acc.load(&h.shared->unmapped_pages);
    while (seen > unmapped) {
      const std::uint32_t old = acc.atomic_cas(&h.shared->unmapped_pages, seen, unmapped);
      if (old == seen) break;
      seen = old;
    }
    if (seen <= unmapped) return false;  // raised as far already
    const std::uint32_t first = (h.page_count - seen) / 32u, last = (usable - 1u) / 32u;
    for (std::uint32_t hint = first / 32u; hint <= last / 32u; ++hint) {
      acc.atomic_and(&h.full[hint], ~hint_bits(hint, first, last));
    }
    return true;
  }

  // Bytes to map beyond the mapped end so that a request of `bytes` that
  // found no room finds it there: its pages in whole words of the page
  // bitmap (a run of up to 32 pages lies inside one word, a longer one takes
  // whole words, P1), plus one word for where the mapped end cuts a word.
  MANYALLOC_FN static std::uint64_t growth_bytes_for(std::uint64_t bytes) {
    return ((pages_taken_by(bytes) + 31u) / 32u + 1u) * 32u * slab_bytes;
  }

  // Whether the usable pages not taken (P2's count, P3) could hold a
  // request of `bytes`: when they could, a failed request may have met a
  // busy slot or scattered pages rather than a pool without room, and a
  // growth service lets it try again before it maps more.
  template <class Acc>
  MANYALLOC_FN bool room_for(const Acc& acc, std::uint64_t bytes) const {
    const std::uint32_t usable = Pool::usable(acc, layout_), taken = Pool::taken_pages(acc, layout_);
    return taken < usable && usable - taken >= pages_taken_by(bytes);
  }

  // The word detail/growth_mailbox.hpp's requests take turns by (M1).
  MANYALLOC_FN std::uint32_t* growth_lock() const { return &layout_.shared->growth_lock; }

  // The end of the mapped part of the pool as the heap knows it (M5): what
  // set_mapped_end set, or a larger end extend_mapped_end was given since.
  // The pool is mapped at least that far.
  template <class Acc>
  MANYALLOC_FN const std::byte* known_mapped_end(const Acc& acc) const {
    return reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(acc.load64(&layout_.shared->mapped_end)));
  }

  template <class Backend>
  static void finalize_heap(const SizeClassSlabs& s) {
    if (s.layout_.data != nullptr) Backend::fill_zero(s.layout_.shared, s.layout_.metadata_bytes);
  }

  // Closes every segment that still has chunks to hand out, so that pages
  // whose handed-out chunks have all been freed go back to the pool (a
  // segment's freed chunks are reused only through its pages, S2). Safe
  // while kernels run; the next request of a class refills its slot.
  // Returns the chunks the segments dropped.
  template <class Backend>
  std::uint64_t release_open_segments() const {
    const auto parts = Backend::map_ranges(heap::detail::slabs::CloseSegments<Config, Backend>{layout_}, std::uint64_t{class_count} * layout_.shards);
    std::uint64_t dropped = 0;
    for (auto d : parts) dropped += d;
    return dropped;
  }

  // Free `slot`-byte chunks after release_open_segments(): what a worker
  // could allocate now.
  template <class Backend>
  std::size_t getAvailableSlotsHost(std::size_t slot) const {
    if (slot == 0) return 0;
    release_open_segments<Backend>();
    const Layout& h = layout_;
    std::vector<std::uint32_t> taken(h.words);
    Backend::copy_to_host(taken.data(), h.taken, taken.size() * sizeof(std::uint32_t));
    heap::detail::slabs::SlabShared shared{};
    Backend::copy_to_host(&shared, h.shared, sizeof shared);
    const std::uint32_t limit = h.page_count - shared.unmapped_pages;
    const std::uint64_t k = pages_for(slot);
    const auto s = heap::detail::slabs::summarize_words([&](std::uint64_t w) { return taken[w]; }, 0, h.words,
                                                        limit, k == 0 ? 1 : k);
    if (k != 0) return heap::detail::slabs::finish_runs(s, k);
    const std::uint32_t cls = Classes::of(static_cast<std::uint32_t>(slot));
    std::vector<std::uint64_t> slots(h.shards);
    Backend::copy_to_host(slots.data(), h.slot(cls, 0), slots.size() * sizeof(std::uint64_t));
    std::uint64_t in_segments = 0;
    for (std::uint64_t w : slots) in_segments += Slots::segment_room(cls, w);
    std::uint64_t freed = 0;  // C6's chunks
    if (Slots::reuses(cls)) {
      std::vector<heap::detail::slabs::SlabPage> pages(h.page_count);
      Backend::copy_to_host(pages.data(), h.pages, pages.size() * sizeof(pages[0]));
      for (const auto& e : pages) freed += freed_chunks(cls, e.cls, e.used, e.run);
    }
    return s.free_pages * Slots::per_page(cls) + in_segments + freed;
  }

  template <class Backend>
  SizeClassSlabsStatistics statistics() const {
    heap::detail::slabs::SlabShared shared{};
    Backend::copy_to_host(&shared, layout_.shared, sizeof shared);
    SizeClassSlabsStatistics st;
    st.misuse_reports = shared.misuse;
    st.last_misuse = static_cast<Misuse>(shared.last_misuse);
    st.page_count = layout_.page_count;
    for (const auto& c : shared.taken) st.pages_in_use += c.value;
    st.open_pages = shared.open_pages.value;
    st.open_budget = layout_.open_budget;
    st.dry_refills = shared.dry_refills;
    st.reused_chunks = shared.reused_chunks;
    return st;
  }

  const Layout& layout() const { return layout_; }

  static std::string classname() {
    return "SizeClassSlabs[slab=" + std::to_string(slab_bytes) + ",classes=" + std::to_string(class_count) +
           ",max_shards=" + std::to_string(Config::max_shards) + "]";
  }

  // ---- worker side -----------------------------------------------------------
  template <class Acc>
    requires acc::MixedWidthAtomics<Acc>
  MANYALLOC_FN void* create(const Acc& acc, std::size_t bytes) const {
    if (bytes == 0) return nullptr;
    const bool small = bytes <= largest_class;
    const std::uint32_t cls = small ? Classes::of(static_cast<std::uint32_t>(bytes)) : 0u;
    // Every lane of the caller's active set takes part in the grouping.
    void* mem = create_small(acc, acc.active_mask(), small, cls);  // fast path
    if (!small) mem = create_large(acc, bytes);                      // slow path
    return mem;
  }

  // Frees are combined per warp: the lanes freeing chunks whose bits share
  // one word of a slab's chunk bits form a group, whose lowest lane clears
  // all their bits with one atomic and returns them to the slab's count
  // with one more, or with the one atomic alone when the bits are in the
  // slab's state (S2, S3); a slab that becomes empty goes back to the pool
  // with one atomic on the page bitmap (ClassSlots::retire). A lane with
  // nullptr takes part in forming the groups (so that a distribution policy
  // may pass nullptr from the lanes that free nothing) and frees nothing.
  template <class Acc>
    requires acc::MixedWidthAtomics<Acc>
  MANYALLOC_FN void destroy(const Acc& acc, void* ptr) const {
    const std::uint32_t mask = acc.active_mask();
    const Located at = locate(acc, ptr);  // nullptr: a foreign pointer, whose key is the lane's own
    const std::uint32_t group = acc.match_any(mask, free_key(acc, at));
    if (ptr == nullptr) return;
    Misuse m = at.misuse;
    if (m == Misuse::none) m = at.large ? free_large(acc, at.page) : free_chunk(acc, group, at);
    if (m != Misuse::none) note_misuse(acc, m, ptr);
  }

  MANYALLOC_FN static bool is_oom(const void* ptr, std::size_t bytes) { return bytes != 0 && ptr == nullptr; }

  // Called by the lanes in `mask` together; every calling lane gets the same
  // result. The lanes split the page bitmap among themselves.
  template <class Acc>
  MANYALLOC_FN std::size_t getAvailableSlotsAccelerator(const Acc& acc, std::uint32_t mask,
                                                        std::size_t slot) const {
    if (slot == 0) return 0;
    const Layout& h = layout_;
    const unsigned lanes = bits::popcount(mask);
    const unsigned rank = bits::popcount(mask & bits::low_mask(acc.lane_id()));
    const std::uint32_t limit = Pool::usable(acc, h);
    const std::uint64_t k = pages_for(slot);
    const std::uint64_t n = h.words;
    const auto mine = heap::detail::slabs::summarize_words([&](std::uint64_t w) { return acc.load(&h.taken[w]); },
                                                           n * rank / lanes, n * (rank + 1) / lanes, limit,
                                                           k == 0 ? 1 : k);
    heap::detail::slabs::RunSummary all;
    for (unsigned lane = 0; lane < Acc::warp_size; ++lane) {
      if (((mask >> lane) & 1u) == 0u) continue;
      heap::detail::slabs::RunSummary part;
      part.free_pages = acc::shfl64(acc, mask, mine.free_pages, lane);
      part.runs = acc::shfl64(acc, mask, mine.runs, lane);
      part.words = acc::shfl64(acc, mask, mine.words, lane);
      part.head_words = acc::shfl64(acc, mask, mine.head_words, lane);
      part.tail_words = acc::shfl64(acc, mask, mine.tail_words, lane);
      all = heap::detail::slabs::join(all, part, k == 0 ? 1 : k);
    }
    if (k != 0) return heap::detail::slabs::finish_runs(all, k);
    const std::uint32_t cls = Classes::of(static_cast<std::uint32_t>(slot));
    std::uint64_t in_segments = 0;
    for (std::uint32_t s = 0; s < h.shards; ++s) {
      in_segments += Slots::segment_room(cls, acc.load64(h.slot(cls, s)));
    }
    std::uint64_t freed_all = 0;  // C6's chunks
    if (Slots::reuses(cls)) {
      std::uint64_t freed = 0;
      const std::uint64_t pages = h.page_count;
      for (std::uint64_t p = pages * rank / lanes; p < pages * (rank + 1) / lanes; ++p) {
        auto& e = h.pages[p];
        const std::uint64_t st = acc.load64(heap::detail::slabs::state_of(e));
        freed += freed_chunks(cls, heap::detail::slabs::state_cls(st), heap::detail::slabs::state_used(st),
                              acc.load(&e.run));
      }
      for (unsigned lane = 0; lane < Acc::warp_size; ++lane) {
        if (((mask >> lane) & 1u) != 0u) freed_all += acc::shfl64(acc, mask, freed, lane);
      }
    }
    return all.free_pages * Slots::per_page(cls) + in_segments + freed_all;
  }

 private:
  // Pages a request of `bytes` takes on the large path; 0 for a size class.
  MANYALLOC_FN static std::uint64_t pages_for(std::size_t bytes) {
    if (bytes <= largest_class) return 0;
    return bytes / slab_bytes + (bytes % slab_bytes != 0 ? 1u : 0u);
  }
  // The same, counting a size class's request as the one page a refill of
  // its slot takes at least.
  MANYALLOC_FN static std::uint64_t pages_taken_by(std::uint64_t bytes) {
    return bytes <= largest_class ? 1u : pages_for(static_cast<std::size_t>(bytes));
  }

  // Pages wholly below `end`, at most page_count: P3's usable count of a
  // pool mapped up to `end`.
  MANYALLOC_FN std::uint32_t pages_below(const void* end) const {
    const auto* e = static_cast<const std::byte*>(end);
    if (e <= layout_.data) return 0u;
    const std::uint64_t pages = static_cast<std::uint64_t>(e - layout_.data) >> layout_.slab_shift;
    return pages < layout_.page_count ? static_cast<std::uint32_t>(pages) : layout_.page_count;
  }

  // The bits of hint word `hint` that stand for the words [first, last] of
  // the page bitmap (one bit per word, P1's hints).
  MANYALLOC_FN static std::uint32_t hint_bits(std::uint32_t hint, std::uint32_t first, std::uint32_t last) {
    const std::uint32_t lo = first > hint * 32u ? first - hint * 32u : 0u;
    const std::uint32_t hi = last < hint * 32u + 31u ? last - hint * 32u : 31u;
    return bits::low_mask(hi + 1u) & ~bits::low_mask(lo);
  }

  // Free chunks of class `cls` in the slab whose first page's entry reads
  // (c, used, run): what C6 can hand out (0 for other pages).
  MANYALLOC_FN static std::uint64_t freed_chunks(std::uint32_t cls, std::uint32_t c, std::uint32_t used,
                                                 std::uint32_t run) {
    if (c != cls + 1u || used == 0u) return 0;
    const std::uint64_t chunks = std::uint64_t{run} * Slots::per_page(cls);
    const std::uint32_t busy = Slots::in_use(c, used);
    return busy < chunks ? chunks - busy : 0u;
  }

  // Fast path. The lanes asking for the same class form a group
  // (match_any); the lowest lane of each group gathers extents for all of
  // them, then hands them over to its group. Groups of different classes
  // work side by side; every lane of `mask` takes part in match_any, only
  // the lanes of a group in its hand-overs.
  template <class Acc>
  MANYALLOC_FN void* create_small(const Acc& acc, std::uint32_t mask, bool small, std::uint32_t cls) const {
    const std::uint32_t group = acc.match_any(mask, small ? cls : no_class);
    if (!small) return nullptr;
    const unsigned lane = acc.lane_id();
    const unsigned leader = acc::lowest_lane(group);
    typename Slots::Gathered g;
    if (lane == leader) {
      g.need = bits::popcount(group);
      const std::uint32_t shard = acc.processor_id() & (layout_.shards - 1u);
      Slots::gather(acc, layout_, cls, shard, acc.warp_id(), g);
    }
    const std::uint32_t rank = bits::popcount(group & bits::low_mask(lane));
    // The first hand-over carries the number of extents (bits 29-31) and
    // whether the pool ran dry (bit 28) beside the first extent (whose start
    // stays below 2^20, ClassSlots::max_segment_chunks).
    const std::uint64_t first =
        lane == leader ? g.extents[0].pack() | (std::uint64_t{g.count} << 29) | (std::uint64_t{g.dry} << 28) : 0u;
    std::uint64_t word = acc::group_hand_over(acc, group, leader, first);
    const auto extents = static_cast<std::uint32_t>(word >> 29) & 7u;
    const bool dry = ((word >> 28) & 1u) != 0u;
    void* mine = nullptr;
    std::uint32_t done = 0;
    for (std::uint32_t i = 0; i < extents; ++i) {
      if (i > 0) word = acc::group_hand_over(acc, group, leader, lane == leader ? g.extents[i].pack() : 0u);
      const auto e = heap::detail::slabs::Extent::unpack(word & ~(std::uint64_t{15} << 28));
      if (rank >= done && rank < done + e.count) mine = Slots::address(layout_, cls, e, rank - done);
      done += e.count;
    }
    if (mine == nullptr) {  // slow path: the pool ran out of pages, or other shards were busy
      // C6 first when the group's own refill found the pool without a free
      // page; for any other lane left without a chunk (its group ran out of
      // room for extents, or its slot was busy) only before it fails.
      const bool reuse = Slots::reuses(cls);
      const std::uint32_t start = Slots::hash_start(layout_, acc.warp_id(), cls);
      if (reuse && dry) mine = Slots::from_freed_chunks(acc, layout_, cls, start);
      std::uint32_t from = cls;
      if (mine == nullptr) mine = Slots::from_larger_class(acc, layout_, from);
      if (mine == nullptr && reuse && !dry) mine = Slots::from_freed_chunks(acc, layout_, cls, start);
      // Last: a freed chunk of a larger class with C6, in a bounded search.
      if (mine == nullptr && cls + 1u < class_count) {
        mine = Slots::from_freed_chunks(acc, layout_, cls, start, Slots::FreedOf::larger_class,
                                        Slots::larger_freed_search_words, Slots::larger_freed_search_pages);
      }
    }
    return mine;
  }

  // Slow path: whole pages for one lane.
  template <class Acc>
  MANYALLOC_FN void* create_large(const Acc& acc, std::size_t bytes) const {
    const Layout& h = layout_;
    const std::uint64_t k = pages_for(bytes);
    if (k > h.page_count) return nullptr;
    const std::uint32_t worker = acc.warp_id() * 32u + acc.lane_id();
    const std::uint32_t start = Slots::hash_start(h, worker, acc.processor_id());
    const std::uint32_t page = k <= 32u ? Pool::claim_in_word(acc, h, static_cast<std::uint32_t>(k), start,
                                                              Slots::hash_place(worker, acc.processor_id()))
                                        : Pool::claim_words(acc, h, k);
    if (page == heap::detail::slabs::no_page) return nullptr;
    acc.store(&h.pages[page].run, static_cast<std::uint32_t>(k));
    acc.fence();
    acc.store(&h.pages[page].cls, heap::detail::slabs::large_head);
    return h.page_data(page);
  }

  // Where a freed pointer lies: a chunk of a slab page, or the start of a
  // large run, or what is wrong with it.
  struct Located {
    Misuse misuse = Misuse::none;
    bool large = false;
    std::uint32_t page = 0;   // the page of the pointer; for slab chunks the slab's first page (S2)
    std::uint32_t cls = 0;    // class index (slab chunks)
    std::uint32_t index = 0;  // chunk index in the slab
    std::uint32_t per_page = 0;  // the class's chunks per page (slab chunks)
  };

  template <class Acc>
  MANYALLOC_FN Located locate(const Acc& acc, void* ptr) const {
    const Layout& h = layout_;
    Located at;
    if (!h.contains(ptr)) {
      at.misuse = Misuse::foreign_pointer;
      return at;
    }
    const auto offset = static_cast<std::size_t>(static_cast<std::byte*>(ptr) - h.data);
    at.page = static_cast<std::uint32_t>(offset >> h.slab_shift);
    const auto in_page = static_cast<std::uint32_t>(offset & (h.slab_bytes() - 1u));
    const std::uint32_t cls = acc.load(&h.pages[at.page].cls);
    const std::uint32_t lead = acc.load(&h.pages[at.page].lead);  // beside cls: both loads in flight together
    if (cls == 0u) {
      at.misuse = Misuse::double_free;
    } else if (cls == heap::detail::slabs::large_head) {
      at.large = true;
      if (in_page != 0u) at.misuse = Misuse::not_a_chunk_start;
    } else {
      at.cls = cls - 1u;
      const std::uint32_t bytes = Classes::bytes(at.cls);
      const std::uint32_t n = Slots::chunks_per_page(bytes);
      at.per_page = n;
      const std::uint32_t in_slab_page = small_quotient(in_page, bytes);
      if (in_slab_page * bytes != in_page || in_slab_page >= n) {
        at.misuse = Misuse::not_a_chunk_start;
      } else if (lead > at.page || lead >= 32u) {
        at.misuse = Misuse::double_free;  // a stale entry of a free page (S1)
      } else {
        at.page -= lead;
        at.index = lead * n + in_slab_page;
      }
    }
    return at;
  }

  // The match_any key of a free: the chunk's bitmap word (slab and word
  // index) when every such key fits below bit 31 (SlabLayout::word_keys),
  // else its slab's first page. Lanes not freeing a slab chunk get a key of their own.
  template <class Acc>
  MANYALLOC_FN std::uint32_t free_key(const Acc& acc, const Located& at) const {
    const Layout& h = layout_;
    if (at.misuse != Misuse::none || at.large) return 0x80000000u | acc.lane_id();
    return h.word_keys ? at.page * h.bitmap_words + at.index / 32u : at.page;
  }

  template <class Acc>
  MANYALLOC_FN void note_misuse(const Acc& acc, Misuse m, const void* ptr) const {
    acc.atomic_add(&layout_.shared->misuse, 1u);
    acc.store(&layout_.shared->last_misuse, static_cast<std::uint32_t>(m));
    report_misuse("SizeClassSlabs::destroy", m, ptr);
  }

  // Called by every lane of `group`: the lanes freeing chunks of one slab,
  // and of one bitmap word when the keys name words. Returns this lane's
  // misuse (chunks whose bit was already clear are reported by the leader).
  template <class Acc>
  MANYALLOC_FN Misuse free_chunk(const Acc& acc, std::uint32_t group, const Located& at) const {
    const Layout& h = layout_;
    if (!h.word_keys) group = acc.match_any(group, at.index / 32u);
    const std::uint32_t bit = 1u << (at.index % 32u);
    // The barrier orders every lane's writes to its chunk before the
    // leader's release below with Config::ordered_frees: the atomic after
    // which the chunks can be handed out again (C6 takes a chunk once its
    // bit is clear; other classes reuse a chunk only after S2's retire).
    acc.sync_lanes(group);
    const std::uint32_t bits = acc.reduce_or(group, bit);
    Misuse mine = Misuse::none;
    // Two lanes freeing one chunk: the lowest of them frees it, the others
    // free it a second time.
    if (bits::popcount(bits) != bits::popcount(group)) {
      const std::uint32_t same = acc.match_any(group, bit);
      if (acc.lane_id() != acc::lowest_lane(same)) mine = Misuse::double_free;
    }
    if (acc.lane_id() != acc::lowest_lane(group)) return mine;
    heap::detail::slabs::SlabPage& slab = h.pages[at.page];
    // Loaded before the AND below (a release waits for it; a relaxed AND
    // has it in flight beside it).
    const std::uint32_t run = acc.load(&slab.run);
    const std::uint32_t n = at.per_page;
    // One AND clears the group's bits: a 64-bit one on the slab's state
    // when the bits are there (S2: then it also says whether the slab is
    // empty), else a 32-bit one on their chunk-bit word, followed by the
    // count update below. With ordered_frees the release is the AND where
    // it frees the chunks for reuse (bits in the state, or a class with
    // C6), else the count update.
    const bool in_state = Slots::bits_in_state(at.cls);
    const bool clear_releases = Config::ordered_frees && (in_state || Slots::reuses(at.cls));
    std::uint32_t old = 0;
    if (in_state) {
      std::uint64_t* state = heap::detail::slabs::state_of(slab);
      const std::uint64_t keep = ~(static_cast<std::uint64_t>(bits) << 32);
      const std::uint64_t before = clear_releases ? acc.atomic_and64_release(state, keep) : acc.atomic_and64(state, keep);
      // S1: a stale pointer whose page became a slab of another class
      // since its class was read (never in a correct program: a live
      // chunk keeps its slab's bits set). The AND has already cleared bits
      // of that slab's state, which no check of a pointer can prevent;
      // this reports it and acts no further with this slab's shape.
      if (heap::detail::slabs::state_cls(before) != at.cls + 1u) {
        note_misuse(acc, Misuse::double_free, Slots::address(h, at.cls, {at.page, 0u, 0u}, at.index));
        return mine;
      }
      old = heap::detail::slabs::state_used(before);
    } else {
      std::uint32_t* word = h.chunk_word(at.page, n, at.index);
      old = clear_releases ? acc.atomic_and_release(word, ~bits) : acc.atomic_and(word, ~bits);
    }
    // S3: a bit already clear is a chunk freed twice or never handed out.
    const std::uint32_t first = at.index / 32u * 32u;
    for (std::uint32_t stale = bits & ~old; stale != 0u; stale &= stale - 1u) {
      const std::uint32_t index = first + bits::find_first_set(stale) - 1u;
      note_misuse(acc, Misuse::double_free, Slots::address(h, at.cls, {at.page, 0u, 0u}, index));
    }
    if ((old & bits) == 0u) return mine;
    // S2: the slab's last chunks came back; no one hands out its chunks
    // again, so its pages return to the pool. A count update is issued only
    // once the bit clear's old value is back (it needs it), so the clear is
    // done before it. A free that leaves a slab whose chunks were all in
    // use with free chunks sets its C6 hint (in the bit form: whatever bit
    // a reservation may hold beyond the slab's chunks, ClassSlots::take_freed_chunk).
    const std::uint32_t chunks = run * n;
    bool empty = false;
    bool was_full = false;
    if (in_state) {
      const std::uint32_t all = bits::low_mask(chunks);
      empty = (old & ~bits) == 0u;
      was_full = (old & all) == all;
    } else {
      const std::uint32_t freed = bits::popcount(old & bits);
      const bool count_releases = Config::ordered_frees && !clear_releases;
      const std::uint32_t before =
          count_releases ? acc.atomic_sub_release(&slab.used, freed) : acc.atomic_sub(&slab.used, freed);
      empty = before == freed;
      was_full = before == chunks;
    }
    if (empty) {
      Slots::retire(acc, h, at.page, run);
    } else if (Slots::reuses(at.cls) && was_full) {
      Slots::mark_partial(acc, h, at.page);
    }
    return mine;
  }

  template <class Acc>
  MANYALLOC_FN Misuse free_large(const Acc& acc, std::uint32_t page) const {
    const Layout& h = layout_;
    heap::detail::slabs::SlabPage& e = h.pages[page];
    const std::uint32_t run = acc.load(&e.run);
    // S4: the swap decides which of two racing frees releases the run.
    if (acc.atomic_cas(&e.cls, heap::detail::slabs::large_head, 0u) != heap::detail::slabs::large_head)
      return Misuse::double_free;
    acc.fence();
    Pool::release(acc, h, page, run);
    return Misuse::none;
  }

  // Sizes the heap: metadata first, then pages from a slab_bytes-aligned
  // address.
  static Layout plan(void* pool, std::size_t bytes) {
    using namespace heap::detail::slabs;
    constexpr std::size_t slab = slab_bytes;
    const auto base = reinterpret_cast<std::uintptr_t>(pool);
    const std::uint32_t bitmap_words = slab_bytes / 16u / 32u;
    // Metadata bytes per page (entry, chunk bitmap, bits in `taken` and `partial`, hints).
    const std::size_t per_page_meta = sizeof(SlabPage) + bitmap_words * sizeof(std::uint32_t) + 1;
    std::size_t pages = bytes / (slab + per_page_meta);
    if (pages > max_pages) pages = max_pages;
    auto layout_for = [&](std::size_t n) {
      Layout l;
      l.page_count = static_cast<std::uint32_t>(n);
      l.words = static_cast<std::uint32_t>((n + 31) / 32);
      const std::size_t hint_words = (l.words + 31) / 32;
      const std::uint32_t zone = l.words / 8u * Config::large_zone_eighths;  // P4
      l.small_words = l.words > zone ? l.words - zone : 1u;
      // Open segments may hold about an eighth of the pages (C4); there are
      // at most as many shards as leave every class one page in each.
      l.open_budget = static_cast<std::uint32_t>(n / 8 > 0 ? n / 8 : 1);
      std::uint32_t shards = 1;
      while (shards * 2u <= Config::max_shards && std::size_t{shards} * 2u * class_count <= n / 8) shards *= 2u;
      l.shards = shards;
      l.bitmap_words = bitmap_words;
      l.word_keys = std::uint64_t{n} * bitmap_words < 0x80000000u;
      l.slab_shift = static_cast<unsigned>(bits::find_first_set(slab_bytes) - 1u);
      std::uintptr_t at = base;
      auto carve = [&](std::size_t size, std::size_t align) {
        at = (at + align - 1) / align * align;
        const std::uintptr_t p = at;
        at += size;
        return p;
      };
      l.shared = reinterpret_cast<SlabShared*>(carve(sizeof(SlabShared), 64));
      l.slots = reinterpret_cast<std::uint64_t*>(carve(sizeof(std::uint64_t) * class_count * shards, 64));
      l.pages = reinterpret_cast<SlabPage*>(carve(sizeof(SlabPage) * n, 64));
      l.chunk_bits = reinterpret_cast<std::uint32_t*>(carve(sizeof(std::uint32_t) * bitmap_words * n, 128));
      l.taken = reinterpret_cast<std::uint32_t*>(carve(sizeof(std::uint32_t) * l.words, 128));
      l.busy = reinterpret_cast<std::uint32_t*>(carve(sizeof(std::uint32_t) * hint_words, 128));
      l.full = reinterpret_cast<std::uint32_t*>(carve(sizeof(std::uint32_t) * hint_words, 128));
      l.partial = reinterpret_cast<std::uint32_t*>(carve(sizeof(std::uint32_t) * l.words, 128));
      l.class_flags = reinterpret_cast<std::uint32_t*>(carve(sizeof(std::uint32_t) * class_count, 128));
      l.metadata_bytes = at - base;
      l.data = reinterpret_cast<std::byte*>(carve(slab * n, slab));
      return l;
    };
    // The estimate above ignores alignment padding: drop pages until the
    // layout fits.
    while (pages > 0 && reinterpret_cast<std::uintptr_t>(layout_for(pages).data) + slab * pages > base + bytes) --pages;
    if (pages == 0) throw std::invalid_argument("SizeClassSlabs: pool too small for one page of " +
                                                std::to_string(slab_bytes) + " bytes and its metadata");
    return layout_for(pages);
  }

  Layout layout_{};
};

}  // namespace manyalloc::heap::CreationPolicies
