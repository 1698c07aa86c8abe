// Handing out a freed chunk of a partly used slab again (C6 of
// slabs/invariants.hpp): the last resort of a request of a size class when
// the pool has no page for a new segment, before a chunk of a larger class.
// Chunks normally come back to use only with their whole page (S2); a heap
// whose chunks live for very different times (a particle-in-cell code's
// long-lived frames beside short-lived ones) would otherwise refuse requests
// while much of it is free in pages that never empty.
#pragma once

#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/heap/detail/slabs/class_slots.hpp"
#include "manyalloc/heap/detail/slabs/invariants.hpp"

namespace manyalloc::heap::detail::slabs {

template <class Config>
struct PartialSlabs {
  using Slots = ClassSlots<Config>;
  // Page entries one request reads looking for a partly used slab of its
  // class (from a hashed page on), so that a full heap answers a failing
  // request after a bounded search.
  static constexpr std::uint32_t scan_pages = 256;

  // One freed chunk of a slab of class `cls`, searching `scan_pages` entries
  // from page `start`; nullptr when none was found.
  template <class Acc>
  MANYALLOC_FN static std::byte* take(const Acc& acc, const SlabLayout& h, std::uint32_t cls, std::uint32_t start) {
    const std::uint32_t n = Slots::per_page(cls);
    for (std::uint32_t i = 0; i < scan_pages && i < h.page_count; ++i) {
      const std::uint32_t page = (start + i) % h.page_count;
      SlabPage& e = h.pages[page];
      if (acc.load(&e.cls) != cls + 1u || acc.load(&e.lead) != 0u) continue;
      const std::uint32_t chunks = acc.load(&e.run) * n;
      if (!reserve(acc, e, chunks)) continue;
      // C6: the reservation holds the slab (its count cannot reach 0); if
      // the page became another slab between the reads and the
      // reservation, the reservation is given back like a free.
      if (acc.load(&e.cls) != cls + 1u || acc.load(&e.lead) != 0u || acc.load(&e.run) * n != chunks) {
        if (acc.atomic_sub(&e.used, 1u) == 1u) Slots::retire(acc, h, page, acc.load(&e.run));
        continue;
      }
      const std::uint32_t index = lowest_clear_chunk(acc, h, page, n, chunks);
      if (index != no_chunk) return Slots::address(h, cls, Extent{page, 0u, 0u}, index);
      // Only misuse (a chunk freed that was never handed out) leaves a
      // reservation without a chunk: give it back and look further.
      if (acc.atomic_sub(&e.used, 1u) == 1u) Slots::retire(acc, h, page, acc.load(&e.run));
    }
    return nullptr;
  }

 private:
  // Adds one to the slab's count while it is neither 0 (retired) nor
  // `chunks` (no chunk freed).
  template <class Acc>
  MANYALLOC_FN static bool reserve(const Acc& acc, SlabPage& e, std::uint32_t chunks) {
    std::uint32_t used = acc.load(&e.used);
    while (used != 0u && used < chunks) {
      const std::uint32_t seen = acc.atomic_cas(&e.used, used, used + 1u);
      if (seen == used) return true;
      used = seen;
    }
    return false;
  }

  static constexpr std::uint32_t no_chunk = 0xffffffffu;

  // Sets the lowest clear bit among the slab's chunk bits and returns its
  // chunk index. C6: a reserved chunk exists, and freed chunks lie below
  // every chunk the segment cursor has still to hand out, so the lowest
  // clear bit is a freed one. Other reservers may take the bits it sees
  // first; a few passes over the bits settle that, and no_chunk after them
  // ends the search rather than waiting forever.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t lowest_clear_chunk(const Acc& acc, const SlabLayout& h, std::uint32_t page,
                                                       std::uint32_t n, std::uint32_t chunks) {
    for (int pass = 0; pass < 8; ++pass) {
      for (std::uint32_t first = 0; first < chunks; first += 32u) {
        std::uint32_t* word = h.chunk_word(page, n, first);
        const std::uint32_t valid = chunks - first >= 32u ? 0xffffffffu : bits::low_mask(chunks - first);
        std::uint32_t clear = ~acc.load(word) & valid;
        while (clear != 0u) {
          const std::uint32_t bit = clear & (0u - clear);
          const std::uint32_t old = acc.atomic_or(word, bit);
          if ((old & bit) == 0u) return first + bits::find_first_set(bit) - 1u;
          clear = ~old & valid;
        }
      }
    }
    return no_chunk;
  }
};

}  // namespace manyalloc::heap::detail::slabs
