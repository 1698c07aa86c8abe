// Requests larger than a page: runs of consecutive unused pages
// ([Steinberger2012] 6.3). The paper reserves dedicated super blocks for them; we
// search the whole page array instead, so a run may span access blocks and a
// single request can use almost the whole heap (heaps > 4 GiB included).
//
// Each page of a run is locked for the allocation's lifetime (I3, I4), so
// the small-chunk path never touches it and the free path knows its length.
#pragma once

#include <cstddef>
#include <cstdint>

#include "manyalloc/common/report.hpp"
#include "manyalloc/heap/detail/scatter/invariants.hpp"
#include "manyalloc/heap/detail/scatter/page_ops.hpp"

namespace manyalloc::heap::detail {

template <class Config>
struct MultiPage {
  using Ops = PageOps<Config>;
  static constexpr std::uint32_t pagesize = Config::pagesize;

  MANYALLOC_FN static bool unused(std::uint32_t chunk_size, std::uint32_t fill) {
    return chunk_size == 0u && fill == 0u;
  }

  // Passes over the page array starting at `start`, each wrapping once.
  // A pass that lost a race for a page (another worker locked it between our
  // scan and our lock) is repeated, a few times at most; a pass without
  // such conflicts that finds no run means the heap has none.
  template <class Acc>
  MANYALLOC_FN static void* alloc(const Acc& acc, const HeapLayout& h, std::uint64_t count,
                                  std::uint32_t start) {
    if (count == 0u || count > h.page_count) return nullptr;  // fail at once, no scan
    for (int pass = 0; pass < 4; ++pass) {
      bool conflicts = false;
      if (void* run = one_pass(acc, h, static_cast<std::uint32_t>(count), start, conflicts)) return run;
      if (!conflicts) break;
    }
    return nullptr;
  }

  template <class Acc>
  MANYALLOC_FN static void* one_pass(const Acc& acc, const HeapLayout& h, std::uint32_t n, std::uint32_t start,
                                     bool& conflicts) {
    std::uint32_t first = start % h.page_count;
    std::uint64_t scanned = 0;
    while (scanned < h.page_count) {
      if (first > h.page_count - n) {  // a run cannot wrap around the end
        scanned += h.page_count - first;
        first = 0;
        continue;
      }
      // Find the last busy page of [first, first+n); restart after it.
      std::uint32_t busy = n;
      for (std::uint32_t k = n; k-- > 0;) {
        const PageEntry& e = h.pages[first + k];
        if (!unused(acc.load(&e.chunk_size), acc.load(&e.fill))) {
          busy = k;
          break;
        }
      }
      if (busy == n) {
        const std::uint32_t locked = lock_run(acc, h, first, n);
        if (locked == n) return h.page_data(first, pagesize);
        busy = locked;  // page first+locked was taken under our feet
        conflicts = true;
      }
      scanned += busy + 1u;
      first += busy + 1u;
      if (first >= h.page_count) first = 0;
    }
    return nullptr;
  }

  // Locks pages [first, first+n) one by one. Returns n on success; on a
  // conflict at page first+k it unlocks the k pages it took and returns k.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t lock_run(const Acc& acc, const HeapLayout& h, std::uint32_t first,
                                             std::uint32_t n) {
    for (std::uint32_t k = 0; k < n; ++k) {
      PageEntry& e = h.pages[first + k];
      if (acc.atomic_cas(&e.fill, 0u, page_locked) != 0u) {
        unlock_run(acc, h, first, k);
        return k;
      }
      // Split but empty. With resetfreedpages the page would have been reset
      // had our lock not been in the way: it counts as unused (no chunk is
      // allocated while fill is 0). Otherwise it keeps its split.
      if (acc.load(&e.chunk_size) != 0u && !Config::resetfreedpages) {
        acc.atomic_sub(&e.fill, page_locked);
        unlock_run(acc, h, first, k);
        return k;
      }
    }
    for (std::uint32_t k = 0; k < n; ++k) {
      PageEntry& e = h.pages[first + k];
      acc.store(&e.mask, k == 0 ? n : 0u);
      acc.store(&e.chunk_size, multi_page);
      Ops::mark_page_full(acc, h, first + k, 0u);  // full as long as it is locked
    }
    acc.fence();
    return n;
  }

  template <class Acc>
  MANYALLOC_FN static void unlock_run(const Acc& acc, const HeapLayout& h, std::uint32_t first,
                                      std::uint32_t n) {
    for (std::uint32_t k = 0; k < n; ++k) {
      PageEntry& e = h.pages[first + k];
      acc.store(&e.chunk_size, 0u);
      acc.store(&e.mask, 0u);
      Ops::mark_page_not_full(acc, h, first + k);
    }
    // Each unlock a release: after all the stores above.
    for (std::uint32_t k = 0; k < n; ++k) acc.atomic_sub_release(&h.pages[first + k].fill, page_locked);
  }

  // Frees the run that starts at `page`; `offset` is the pointer's offset in it.
  template <class Acc>
  MANYALLOC_FN static Misuse free(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                  std::size_t offset) {
    if (offset != 0u) return Misuse::not_a_chunk_start;
    // Taking the count out of the head makes a second free of the run fail.
    const std::uint32_t n = acc.atomic_exch(&h.pages[page].mask, 0u);
    if (n == 0u) return Misuse::not_a_chunk_start;  // not a run's first page, or freed twice
    unlock_run(acc, h, page, n);
    return Misuse::none;
  }
};

}  // namespace manyalloc::heap::detail
