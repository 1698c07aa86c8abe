// Requests larger than a page: runs of consecutive unused pages
// ([Steinberger2012] 6.3). The paper reserves dedicated super blocks for them; we
// search the whole page array instead, so a run may span access blocks and a
// single request can use almost the whole heap (heaps > 4 GiB included).
// Runs are placed from the top of the pool down, the small search's pages
// from the active block up (block 0 first): the two meet only where a run's
// start window (its worker's place, scatter.hpp) reaches down to the pages
// split for small chunks. Those stay split when their chunks are freed (I2
// without resetfreedpages), so a run looking among them for unused pages
// steps over them one window at a time.
//
// A run wins each of its pages by a CAS of its chunk size to multi_page and
// keeps that for the allocation's lifetime (I3), so the small-chunk path
// never touches it and the free path knows its length.
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
    return free_page<Config::resetfreedpages>(chunk_size, fill);
  }

  // Passes down the page array from the window `below_top` pages below the
  // highest one (modulo the windows there are), each wrapping once. A pass
  // that lost a race for a page (another worker took it between our scan
  // and our CAS) is repeated, a few times at most; a pass without such
  // conflicts that finds no run means the heap has none.
  template <class Acc>
  MANYALLOC_FN static void* alloc(const Acc& acc, const HeapLayout& h, std::uint64_t count,
                                  std::uint64_t below_top) {
    if (count == 0u || count > h.page_count) return nullptr;  // fail at once, no scan
    const std::uint32_t n = static_cast<std::uint32_t>(count);
    const std::uint32_t top = h.page_count - n;  // the highest window's first page
    const std::uint32_t start = top - static_cast<std::uint32_t>(below_top % (std::uint64_t{top} + 1u));
    for (int pass = 0; pass < 4; ++pass) {
      bool conflicts = false;
      if (void* run = one_pass(acc, h, n, start, conflicts)) return run;
      if (!conflicts) break;
    }
    return nullptr;
  }

  // Window [first, first+n) first, then lower ones; after the lowest, the
  // highest ones down to the one above `start`. A window whose lowest busy
  // page is first+b rules out every window that holds that page: the next
  // one ends at it.
  template <class Acc>
  MANYALLOC_FN static void* one_pass(const Acc& acc, const HeapLayout& h, std::uint32_t n, std::uint32_t start,
                                     bool& conflicts) {
    const std::uint32_t top = h.page_count - n;
    std::uint32_t first = start;
    std::uint64_t ruled_out = 0;  // windows ruled out, of top + 1
    while (ruled_out <= top) {
      bool all_clean = false;
      std::uint32_t busy = lowest_busy(acc, h, first, n, all_clean);
      if (busy == n) {
        const std::uint32_t taken = take_run(acc, h, first, n, all_clean ? clean_page : 0u);
        if (taken == n) return h.page_data(first, pagesize);
        busy = taken;  // page first+taken was taken under our feet
        conflicts = true;
      }
      if (first + busy < n) {  // no lower window ends at or below first+busy: wrap
        ruled_out += first + 1u;
        first = top;
      } else {
        ruled_out += n - busy;
        first = first + busy - n;
      }
    }
    return nullptr;
  }

  // Pages a worker looks at or takes in one go: their loads (or CASes) are
  // issued together and waited for once. One at a time, a 1 GiB request
  // (262,144 pages) waited for half a million round trips to memory.
  static constexpr std::uint32_t batch = 8;

  // The offset of the lowest page of [first, first + n) that is not unused,
  // or n when all are; `all_clean` says whether every page read clean (I1c;
  // only when n). Scans from the bottom, so that a busy page found lets the
  // search skip below it.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t lowest_busy(const Acc& acc, const HeapLayout& h, std::uint32_t first,
                                                std::uint32_t n, bool& all_clean) {
    all_clean = true;
    for (std::uint32_t at = 0; at < n;) {
      const std::uint32_t m = n - at < batch ? n - at : batch;
      std::uint32_t chunk[batch], fill[batch];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t i = 0; i < batch; ++i) {
        const PageEntry& e = h.pages[first + at + (i < m ? i : 0u)];
        chunk[i] = i < m ? acc.load(&e.chunk_size) : 0u;
        fill[i] = i < m ? acc.load(&e.fill) : 0u;
      }
      for (std::uint32_t i = 0; i < m; ++i) {
        if (!unused(chunk[i], fill[i])) return at + i;
        all_clean = all_clean && chunk[i] == clean_page;
      }
      at += m;
    }
    return n;
  }

  // Takes pages [first, first+n) for a run, a batch at a time, each by a
  // CAS of its chunk size from `guess` (the unused value the scan read for
  // every page: clean_page when all read clean, else 0) to multi_page, and
  // a second CAS from the other unused value for a page the first found
  // there (I3). Returns n on success. Page first+k that it cannot take (a
  // claim or another run took it), the first such page of its batch: it
  // gives back every page it took and returns k.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t take_run(const Acc& acc, const HeapLayout& h, std::uint32_t first,
                                             std::uint32_t n, std::uint32_t guess) {
    const std::uint32_t other = guess == 0u ? clean_page : 0u;
    for (std::uint32_t done = 0; done < n;) {
      const std::uint32_t m = n - done < batch ? n - done : batch;
      // was[i]: the unused value page done+i had when we took it, or (not
      // taken) the value that stopped us, never an unused one then.
      std::uint32_t was[batch];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t i = 0; i < batch; ++i)
        was[i] = i < m ? acc.atomic_cas(&h.pages[first + done + i].chunk_size, guess, multi_page) : guess;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t i = 0; i < batch; ++i) {
        if (i < m && was[i] == other) {
          const std::uint32_t now = acc.atomic_cas(&h.pages[first + done + i].chunk_size, other, multi_page);
          // Found at `guess` now: given back by a run since; lost to it.
          was[i] = now == other ? other : now == guess ? multi_page : now;
        }
      }
      std::uint32_t lost = m;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t i = 0; i < batch; ++i)
        if (i < m && lost == m && !unused_page(was[i])) lost = i;
      if (lost != m) {
        // The pages of this batch go back as they were (nothing was written
        // to them, so a clean page is still clean); those of the batches
        // before at 0 (I1: which of them were clean is not kept).
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (std::uint32_t i = 0; i < batch; ++i)
          if (i < m && unused_page(was[i])) acc.store(&h.pages[first + done + i].chunk_size, was[i]);
        for (std::uint32_t k = 0; k < done; ++k) acc.store(&h.pages[first + k].chunk_size, 0u);
        return done + lost;
      }
      done += m;
    }
    for (std::uint32_t k = 0; k < n; ++k) acc.store(&h.pages[first + k].mask, k == 0 ? n : 0u);
    mark_run(acc, h, first, n, true);  // full as long as it is in use
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

  // Frees the run that starts at `page`; `offset` is the pointer's offset in it.
  // The pages go back at 0 (I1: they hold the run's data) after one fence for
  // the whole run (a release per page cost a fence each, 262,144 of them for
  // 1 GiB): what the run's owner wrote is published before a page is taken anew.
  template <class Acc>
  MANYALLOC_FN static Misuse free(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                  std::size_t offset) {
    if (offset != 0u) return Misuse::not_a_chunk_start;
    // Taking the count out of the head makes a second free of the run fail.
    const std::uint32_t n = acc.atomic_exch(&h.pages[page].mask, 0u);
    if (n == 0u) return Misuse::not_a_chunk_start;  // not a run's first page, or freed twice
    mark_run(acc, h, page, n, false);
    acc.fence();
    for (std::uint32_t k = 0; k < n; ++k) acc.store(&h.pages[page + k].chunk_size, 0u);
    return Misuse::none;
  }
};

}  // namespace manyalloc::heap::detail
