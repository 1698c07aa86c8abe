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

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/report.hpp"
#include "manyalloc/heap/detail/scatter/invariants.hpp"

namespace manyalloc::heap::detail {

template <class Config>
struct MultiPage {
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
      std::uint32_t busy = last_busy(acc, h, first, n);
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

  // Pages a worker looks at or locks in one go: their loads (or CASes) are
  // issued together and waited for once. One at a time, a 1 GiB request
  // (262,144 pages) waited for half a million round trips to memory.
  static constexpr std::uint32_t batch = 8;

  // The last page of [first, first + n) that is not unused, or n when all are.
  // Scans from the end, so that a busy page found lets the search skip past it.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t last_busy(const Acc& acc, const HeapLayout& h, std::uint32_t first,
                                              std::uint32_t n) {
    for (std::uint32_t end = n; end > 0;) {
      const std::uint32_t m = end < batch ? end : batch;
      std::uint32_t chunk[batch], fill[batch];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t i = 0; i < batch; ++i) {
        const PageEntry& e = h.pages[first + end - 1u - (i < m ? i : 0u)];
        chunk[i] = i < m ? acc.load(&e.chunk_size) : 0u;
        fill[i] = i < m ? acc.load(&e.fill) : 0u;
      }
      for (std::uint32_t i = 0; i < m; ++i) {
        if (!unused(chunk[i], fill[i])) return end - 1u - i;
      }
      end -= m;
    }
    return n;
  }

  // Locks pages [first, first+n), a batch at a time. Returns n on success.
  // Page first+k that it cannot lock (or that is split, without
  // resetfreedpages), the first such page of its batch: it unlocks every page
  // it took and returns k.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t lock_run(const Acc& acc, const HeapLayout& h, std::uint32_t first,
                                             std::uint32_t n) {
    for (std::uint32_t done = 0; done < n;) {
      const std::uint32_t m = n - done < batch ? n - done : batch;
      std::uint32_t old[batch], chunk[batch];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t i = 0; i < batch; ++i)
        old[i] = i < m ? acc.atomic_cas(&h.pages[first + done + i].fill, 0u, page_locked) : 1u;
      // Split but empty. With resetfreedpages the page would have been reset
      // had our lock not been in the way: it counts as unused (no chunk is
      // allocated while fill is 0). Otherwise it keeps its split. Read once
      // our lock is in place (the CAS's result is back), the batch together.
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t i = 0; i < batch; ++i)
        chunk[i] = i < m && old[i] == 0u && !Config::resetfreedpages ? acc.load(&h.pages[first + done + i].chunk_size)
                                                                      : 0u;
      std::uint32_t won = 0, lost = m;
      for (std::uint32_t i = 0; i < m; ++i) {
        if (old[i] == 0u) won |= 1u << i;
        if (lost == m && (old[i] != 0u || chunk[i] != 0u)) lost = i;
      }
      if (lost != m) {
        // Pages of this batch that we locked past the conflict go back
        // unlocked. With resetfreedpages an emptied split page among them
        // is reset as well: our lock may have kept its last free from
        // resetting it (I4), and left split it would stay so for good.
        for (std::uint32_t i = lost; i < m; ++i) {
          if (((won >> i) & 1u) == 0u) continue;
          PageEntry& e = h.pages[first + done + i];
          if constexpr (Config::resetfreedpages) {
            acc.store(&e.chunk_size, 0u);
            acc.store(&e.mask, 0u);
          }
          acc.atomic_sub_release(&e.fill, page_locked);
        }
        unlock_run(acc, h, first, done + lost);
        return done + lost;
      }
      done += m;
    }
    for (std::uint32_t k = 0; k < n; ++k) {
      PageEntry& e = h.pages[first + k];
      acc.store(&e.mask, k == 0 ? n : 0u);
      acc.store(&e.chunk_size, multi_page);
    }
    mark_run(acc, h, first, n, true);  // full as long as it is locked
    acc.fence();
    return n;
  }

  // Marks pages [first, first+n) full (or not full), one atomic per region
  // word rather than per page.
  template <class Acc>
  MANYALLOC_FN static void mark_run(const Acc& acc, const HeapLayout& h, std::uint32_t first, std::uint32_t n,
                                    bool full) {
    constexpr std::uint32_t regionsize = Config::regionsize;
    for (std::uint32_t page = first; page - first < n;) {
      const std::uint32_t in_region = page % regionsize;
      const std::uint32_t k = regionsize - in_region < first + n - page ? regionsize - in_region : first + n - page;
      const std::uint32_t marks = bits::low_mask(k) << in_region;
      if (full) {
        acc.atomic_or(&h.regions[page / regionsize], marks);
      } else {
        acc.atomic_and(&h.regions[page / regionsize], ~marks);
      }
      page += k;
    }
  }

  template <class Acc>
  MANYALLOC_FN static void unlock_run(const Acc& acc, const HeapLayout& h, std::uint32_t first,
                                      std::uint32_t n) {
    for (std::uint32_t k = 0; k < n; ++k) {
      PageEntry& e = h.pages[first + k];
      acc.store(&e.chunk_size, 0u);
      acc.store(&e.mask, 0u);
    }
    mark_run(acc, h, first, n, false);
    // Every unlock after all the stores above: one fence for the run, not a
    // release per page (a fence each, 262,144 of them for 1 GiB).
    acc.fence();
    for (std::uint32_t k = 0; k < n; ++k) acc.atomic_sub(&h.pages[first + k].fill, page_locked);
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
