// getAvailableSlots ([Eckert2014] 4.3.5): how many chunks of one size could still
// be allocated, computed without changing the heap. Pages are independent,
// so the count is a reduction over page ranges; ranges are summarised and
// the summaries combined in page order, on the host or inside a warp.
#pragma once

#include <cstdint>

#include "manyalloc/heap/detail/scatter/invariants.hpp"
#include "manyalloc/heap/detail/scatter/page_geometry.hpp"

namespace manyalloc::heap::detail {

// Summary of a range of pages. For slots of at most one page only `slots`
// is used. For larger slots (runs of unused pages, counted greedily from the
// left as in [Eckert2014]'s pseudo code) the free runs touching the range ends
// must be carried to the neighbours before they can be counted.
struct SlotSummary {
  std::uint64_t slots = 0;        // small: free chunks; large: slots in inner runs
  std::uint64_t length = 0;       // pages in the range
  std::uint64_t head_free = 0;    // unused pages at the start of the range
  std::uint64_t tail_free = 0;    // unused pages at the end of the range

  MANYALLOC_FN bool all_free() const { return length != 0 && head_free == length; }
};

// Combines summaries of adjacent ranges (left then right) for runs of
// `pages_per_slot` pages.
MANYALLOC_FN inline SlotSummary combine_runs(const SlotSummary& l, const SlotSummary& r,
                                             std::uint64_t pages_per_slot) {
  if (l.length == 0) return r;
  if (r.length == 0) return l;
  SlotSummary s;
  s.length = l.length + r.length;
  if (l.all_free() && r.all_free()) {
    s.head_free = s.tail_free = s.length;
  } else if (l.all_free()) {
    s.head_free = l.length + r.head_free;
    s.tail_free = r.tail_free;
    s.slots = r.slots;
  } else if (r.all_free()) {
    s.head_free = l.head_free;
    s.tail_free = l.tail_free + r.length;
    s.slots = l.slots;
  } else {
    s.head_free = l.head_free;
    s.tail_free = r.tail_free;
    s.slots = l.slots + r.slots + (l.tail_free + r.head_free) / pages_per_slot;
  }
  return s;
}

MANYALLOC_FN inline std::uint64_t finish_runs(const SlotSummary& s, std::uint64_t pages_per_slot) {
  if (s.all_free()) return s.length / pages_per_slot;
  return s.head_free / pages_per_slot + s.slots + s.tail_free / pages_per_slot;
}

template <class Config>
struct SlotCounter {
  static constexpr std::uint32_t pagesize = Config::pagesize;

  // Free chunks of size `slot` (<= pagesize) on one page ([Eckert2014] 4.3.5,
  // countFreeChunksInPage). An unused page counts as split into `slot`s. A
  // page split into larger chunks counts only within the waste factor, since
  // alloc would not use it otherwise.
  template <class Load>
  MANYALLOC_FN static std::uint64_t free_chunks(const Load& load, const PageEntry& e, std::uint32_t slot) {
    std::uint32_t fill = load(&e.fill);
    if (fill >= page_locked) return 0;
    std::uint32_t chunk = load(&e.chunk_size);
    if (unused_page(chunk)) {
      chunk = slot;
      if constexpr (!Config::resetfreedpages) fill = 0;  // it holds no reservation (I1, I1c)
    }
    const std::uint64_t max_chunk = static_cast<std::uint64_t>(slot) * Config::wastefactor;
    if (chunk < slot || chunk > pagesize || chunk > max_chunk) return 0;
    const std::uint32_t chunks = page_geometry(pagesize, chunk).chunks;
    return fill < chunks ? chunks - fill : 0u;
  }

  // Summary of pages [begin, end) for slots of `slot` bytes.
  template <class Load>
  MANYALLOC_FN static SlotSummary summarize(const Load& load, const HeapLayout& h, std::uint64_t begin,
                                            std::uint64_t end, std::uint64_t slot) {
    SlotSummary s;
    s.length = end - begin;
    if (slot <= pagesize) {
      for (std::uint64_t p = begin; p < end; ++p)
        s.slots += free_chunks(load, h.pages[p], static_cast<std::uint32_t>(slot));
      s.head_free = s.tail_free = 0;  // unused for small slots
      return s;
    }
    const std::uint64_t per_slot = (slot + pagesize - 1) / pagesize;
    std::uint64_t run = 0;
    bool head = true;
    for (std::uint64_t p = begin; p < end; ++p) {
      const bool unused = free_page<Config::resetfreedpages>(load(&h.pages[p].chunk_size), load(&h.pages[p].fill));
      if (unused) {
        ++run;
      } else {
        if (head) s.head_free = run; else s.slots += run / per_slot;
        head = false;
        run = 0;
      }
    }
    if (head) s.head_free = run;  // the whole range is unused
    s.tail_free = run;
    return s;
  }
};

// Loads for counting: coherent with concurrent workers, and race-free for
// ThreadSanitizer on the host.
struct CoherentLoad {
  MANYALLOC_FN std::uint32_t operator()(const std::uint32_t* p) const {
#if defined(__CUDA_ARCH__)
    return *static_cast<const volatile std::uint32_t*>(p);
#else
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
  }
};

// Functors over page ranges for a back end's map_ranges (host threads or a
// kernel). Namespace-scope types, as CUDA requires for kernel arguments.
template <class Config>
struct SlotRangeSummary {
  HeapLayout layout;
  std::uint64_t slot;
  MANYALLOC_FN SlotSummary operator()(std::uint64_t begin, std::uint64_t end) const {
    return SlotCounter<Config>::summarize(CoherentLoad{}, layout, begin, end, slot);
  }
};

struct PagesInUse {
  HeapLayout layout;
  MANYALLOC_FN std::uint64_t operator()(std::uint64_t begin, std::uint64_t end) const {
    std::uint64_t n = 0;
    for (std::uint64_t p = begin; p < end; ++p) n += !unused_page(CoherentLoad{}(&layout.pages[p].chunk_size));
    return n;
  }
};

}  // namespace manyalloc::heap::detail
