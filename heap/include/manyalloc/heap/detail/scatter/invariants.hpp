// The data structures of the Scatter heap, and the invariants every operation
// keeps. Everything else in detail/scatter/ is algorithms over these.
//
// Pool layout (one contiguous pool from the ReservePoolPolicy):
//
//   [ HeapShared | PageEntry x page_count | region word x region_count | pad ]
//   [ page 0 | page 1 | ... | page page_count-1 ]          <- pagesize-aligned
//
// Metadata (the first line) is kept apart from the pages, except for the
// in-page bit fields of hierarchical pages ([Steinberger2012] 5.2), which by
// design sit at the end of their page. Pages are grouped in `block_count`
// access blocks (super blocks, [Steinberger2012] 5.1) of `pages_per_block` pages,
// and each block in regions of `regionsize` pages (5.4). Since all pages lie
// side by side, the page of a pointer is one division away (6.2).
//
// PageEntry (the page usage table, 5.2) -- invariants:
//  I1 chunk_size == 0: the page is unused. Unless locked, its mask is 0 and
//     no chunk on it is allocated.
//  I2 1 <= chunk_size <= pagesize: the page is split into chunks of that size
//     (page_geometry.hpp). `fill` counts reserved chunks (0..chunks), plus
//     short-lived +1s of workers whose reservation attempt failed and is being
//     undone. Each allocated chunk has its bit set (in the mask for flat
//     pages, in its in-page segment word for hierarchical pages); a set bit
//     belongs to a reservation counted in `fill`, except, without
//     resetfreedpages, while a free's clear of it and its return of that
//     reservation, sent together, are in flight (with resetfreedpages the
//     clear comes first: a page whose fill reaches 0 may be split anew at
//     once): a worker whose reservation finds no bit free meanwhile
//     walks on for a bounded number of full words, then undoes the
//     reservation (page_ops.hpp, take_in_mask). Without resetfreedpages the
//     chunk size of a split page never changes again.
//  I3 chunk_size == multi_page: the page belongs to an allocation of several
//     pages (6.3). Its `fill` holds `locked` for the allocation's lifetime; the
//     first page's mask holds the number of pages, the others' masks are 0.
//  I4 fill >= locked: the page is locked. chunk_size and the bit fields only
//     change while the changer holds the lock, which it took by CAS(fill, 0,
//     locked): while locked no reservation can succeed, because any
//     reservation needs fill < chunks <= 1024 < locked. A lock taken on
//     fill == 0 means no chunk is allocated; with resetfreedpages its holder
//     may reset or re-split the page (the emptying free may have lost its
//     own reset to that lock). With resetfreedpages a reservation re-reads
//     chunk_size after it succeeded and is undone if the page was re-split
//     meanwhile; without it no re-split can happen (I2), so none does (as in
//     [Steinberger2012]): the claimer zeroes the bit fields and sets the
//     chunk size under the lock and unlocks with a release, and a worker
//     touches the bit fields only after its reservation, an atomic on fill
//     that can succeed only after that unlock, has returned.
//     Every lock is held for a bounded number of steps (claim, reset, the
//     locking loop of a multi-page run, which then marks its pages
//     multi_page), so a worker may wait for a page's lock to go away.
//  I5 The mask of a hierarchical page has bit k set only if segment k was seen
//     full; a worker that sets it re-reads the segment and clears the bit again
//     if the segment has room. The bit is a hint: a worker holding a
//     reservation that finds every unmarked segment full walks all segments,
//     so a wrongly set bit never hides a free chunk.
//
// Region words (5.4): bit i of a region's word is set when page i of the
// region is (believed) full. popcount(word) is the region's fill level used
// by the 90% rule; a region above it is *closed*. Like I5 this is a hint:
// the worker that fills a page re-checks after setting its bit, and every
// decrement of `fill` that takes it from `chunks` to below (a free, or the
// undoing of a failed reservation) clears the bit, so that no bit stays set
// on a page with room once the workers on it are done; a final search pass
// tries every region that is not entirely marked full before an allocation
// fails.
//
// HeapShared: `active_block` is the access block new searches start in. A
// search moves it to the next block when it finds its block full for the
// first pass (most regions sampled closed, search.hpp), a free that makes
// room on a full page moves it back to that page's block if lower and not
// full. `misuse` counts
// reported misuse of the public API (bad or double frees).
#pragma once

#include <cstddef>
#include <cstdint>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::detail {

struct PageEntry {
  std::uint32_t chunk_size;
  std::uint32_t fill;
  std::uint32_t mask;
};

struct HeapShared {
  std::uint32_t active_block;
  std::uint32_t misuse;
  std::uint32_t last_misuse;
  std::uint32_t reserved;
};

// Page lock value (I4). Far above any chunk count or number of concurrent
// failed reservations.
inline constexpr std::uint32_t page_locked = 1u << 31;
// chunk_size of pages that belong to a multi-page allocation (I3).
inline constexpr std::uint32_t multi_page = 0xffffffffu;

// Immutable description of one heap, copied into every handle so that
// workers never load it from memory.
struct HeapLayout {
  std::byte* data = nullptr;            // page 0
  PageEntry* pages = nullptr;           // page usage table
  std::uint32_t* regions = nullptr;     // one word per region
  HeapShared* shared = nullptr;
  std::uint32_t page_count = 0;         // a multiple of regionsize
  std::uint32_t pages_per_block = 0;    // a multiple of regionsize; the last block
                                        // also holds the page_count % pages_per_block rest
  std::uint32_t block_count = 0;
  std::size_t metadata_bytes = 0;       // bytes in front of page 0 (zeroed at init)

  MANYALLOC_FN std::byte* page_data(std::uint32_t page, std::uint32_t pagesize) const {
    return data + static_cast<std::size_t>(page) * pagesize;
  }
  MANYALLOC_FN std::uint32_t block_of(std::uint32_t page) const {
    const std::uint32_t b = page / pages_per_block;
    return b < block_count ? b : block_count - 1;
  }
  MANYALLOC_FN std::uint32_t pages_in_block(std::uint32_t block) const {
    return block + 1 == block_count ? page_count - block * pages_per_block : pages_per_block;
  }
  MANYALLOC_FN std::uint32_t regions_in_block(std::uint32_t block, std::uint32_t regionsize) const {
    return pages_in_block(block) / regionsize;
  }
  MANYALLOC_FN bool contains(const void* p, std::uint32_t pagesize) const {
    const auto* b = static_cast<const std::byte*>(p);
    return b >= data && b < data + static_cast<std::size_t>(page_count) * pagesize;
  }
};

}  // namespace manyalloc::heap::detail
