// Finding a page for a request of at most one page (ScatterAlloc 6.1, alloc;
// 5.3 hashing; 5.4 access blocks and regions).
#pragma once

#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/heap/detail/scatter/heap_layout.hpp"
#include "manyalloc/heap/detail/scatter/page_ops.hpp"

namespace manyalloc::heap::detail {

template <class Config, class Hash>
struct SmallSearch {
  using Ops = PageOps<Config>;
  static constexpr std::uint32_t pagesize = Config::pagesize;
  static constexpr std::uint32_t regionsize = Config::regionsize;

  // How a region's fill level is judged during a search.
  enum class Pass {
    skip_90_percent,   // 5.4: skip regions with more than 90% of their pages full
    skip_only_full,    // last resort before failing: skip only regions marked entirely full
  };

  MANYALLOC_FN static bool search_region(std::uint32_t full_pages, Pass pass) {
    if (pass == Pass::skip_90_percent) return full_pages * 10u <= regionsize * 9u;
    return full_pages < regionsize;
  }

  // Equation (3), p = (S_req * k_S + mp * k_mp) mod pages_per_block, plus the
  // warp spread of scatter_config.hpp.
  MANYALLOC_FN static std::uint32_t hash(std::uint32_t request, unsigned processor, unsigned warp,
                                         std::uint32_t pages_per_block) {
    const std::uint64_t warp_distance =
        Hash::hashingDistWP + static_cast<std::uint64_t>(Hash::hashingDistWPRel) * 32u * request / pagesize;
    const std::uint64_t h = static_cast<std::uint64_t>(request) * Hash::hashingK +
                            static_cast<std::uint64_t>(processor) * Hash::hashingDistMP +
                            static_cast<std::uint64_t>(warp) * warp_distance;
    return static_cast<std::uint32_t>(h % pages_per_block);
  }

  // Tries every region of `block` once, starting at page `start` of the block.
  template <class Acc>
  MANYALLOC_FN static void* search_block(const Acc& acc, const HeapLayout& h, std::uint32_t block,
                                         std::uint32_t start, std::uint32_t request, Pass pass) {
    const std::uint32_t max_chunk =
        request * Config::wastefactor < pagesize ? request * Config::wastefactor : pagesize;
    const std::uint32_t block_first = block * h.pages_per_block;
    const std::uint32_t regions = h.pages_in_block(block) / regionsize;
    std::uint32_t p = start;
    // regions + 1 visits: the first region is entered mid-way (at `start`),
    // so it is visited again from its beginning at the end.
    for (std::uint32_t visit = 0; visit <= regions; ++visit) {
      const std::uint32_t region = p / regionsize;
      const std::uint32_t full = bits::popcount(acc.load(&h.regions[block_first / regionsize + region]));
      if (search_region(full, pass)) {
        const std::uint32_t region_end = (region + 1u) * regionsize;
        for (; p < region_end; ++p) {
          const std::uint32_t page = block_first + p;
          const std::uint32_t chunk = acc.load(&h.pages[page].chunk_size);
          std::uint32_t usable = 0;
          if (chunk >= request && chunk <= max_chunk) {
            usable = chunk;
          } else if (chunk == 0u) {
            const std::uint32_t now = Ops::claim(acc, h, page, request);
            if (now >= request && now <= max_chunk) usable = now;
          }
          if (usable != 0u) {
            if (void* mem = Ops::try_use(acc, h, page, usable)) return mem;
          }
        }
      }
      p = ((region + 1u) % regions) * regionsize;
    }
    return nullptr;
  }

  // alloc (6.1): start in the active access block; when it cannot serve the
  // request, move the active block on (5.4) and try the next one.
  template <class Acc>
  MANYALLOC_FN static void* alloc(const Acc& acc, const HeapLayout& h, std::uint32_t request) {
    const std::uint32_t start = hash(request, acc.processor_id(), acc.warp_id(), h.pages_per_block);
    const std::uint32_t first_block = acc.load(&h.shared->active_block) % h.block_count;
    for (std::uint32_t i = 0; i < h.block_count; ++i) {
      const std::uint32_t block = (first_block + i) % h.block_count;
      if (void* mem = search_block(acc, h, block, start, request, Pass::skip_90_percent)) return mem;
      acc.atomic_cas(&h.shared->active_block, block, (block + 1u) % h.block_count);
    }
    // Region fill levels are hints (heap_layout.hpp): before reporting out of
    // memory, look into every region that is not entirely marked full.
    for (std::uint32_t i = 0; i < h.block_count; ++i) {
      const std::uint32_t block = (first_block + i) % h.block_count;
      if (void* mem = search_block(acc, h, block, start, request, Pass::skip_only_full)) return mem;
    }
    return nullptr;
  }

  // 5.4: a free in a block other than the active one makes that block active
  // with a probability that grows as the freed page's region empties, so
  // that emptied blocks get reused (against blowup).
  template <class Acc>
  MANYALLOC_FN static void maybe_activate(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                          const void* ptr) {
    const std::uint32_t block = h.block_of(page);
    if (acc.load(&h.shared->active_block) % h.block_count == block) return;
    const std::uint32_t full = bits::popcount(acc.load(&h.regions[page / regionsize]));
    const auto noise = static_cast<std::uint32_t>((reinterpret_cast<std::uintptr_t>(ptr) >> 4) * 2654435761u);
    // Chance (regionsize - full) / (64 * regionsize): at most 1 in 64.
    if (noise % (64u * regionsize) < regionsize - full) acc.store(&h.shared->active_block, block);
  }
};

}  // namespace manyalloc::heap::detail
