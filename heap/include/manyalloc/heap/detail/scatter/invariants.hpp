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
//  I0 chunk_size says what the page is used for, and every change of an
//     unused page's use is a CAS on it: the word is the page's owner. Its
//     values: 0 or clean_page (unused, I1), claiming (being split, I1b),
//     1..pagesize (split, I2), multi_page (in a run, I3).
//  I1 chunk_size == 0: the page is unused and no chunk on it is allocated.
//     Its in-page bit-field words may hold anything (user data of a
//     multi-page run, or never written), so it is split by the claim of
//     I1b, which zeroes them. Without resetfreedpages its fill holds no
//     reservation: 0, or the 1 of a clean page that a run took (I1c, I3),
//     which the claim sets to 0.
//  I1c chunk_size == clean_page: the page is unused and has been neither
//     split nor in a run since the heap was made: its mask and every in-page
//     bit-field word a split can use (max_segments, page_geometry.hpp) are
//     0, and its fill is 1: the reservation of the chunk that the page's
//     split takes. It is split by one CAS of chunk_size from clean_page to
//     the chunk size ([Steinberger2012] 6.1 claims every page so): the bit
//     fields it needs are already zero, so nothing has to be published
//     before the size, and a worker that reads the size may reserve at
//     once. The worker whose CAS wins holds the page's first reservation
//     already and takes its chunk without an atomic on fill (a cold launch
//     of mixed sizes splits a page per lane). Only init_heap makes
//     clean pages, where the back end's pool memory is resident
//     (acc::Backend::pool_memory_resident; elsewhere writing every page
//     would commit the whole pool) and the configuration keeps splits (no
//     resetfreedpages). A split page never becomes clean again, nor does a
//     run's page once the run is made: a freed run leaves its pages at 0. A
//     run that loses a page of its window to another worker before it
//     wrote anything gives back its current batch as the pages were (clean
//     stays clean) and its earlier batches at 0 (I3).
//  I1b chunk_size == claiming: a worker won the CAS from 0 to claiming and
//     is splitting the page: it zeroes the mask and the bit-field words the
//     split needs, then publishes the chunk size with a release (a fence,
//     then the store), so that a worker that reads the size finds them
//     zero. It does so in a bounded number of steps: a worker that finds
//     the page claiming waits for the size (most often a lane of its own
//     warp splitting the page for the same size).
//  I2 1 <= chunk_size <= pagesize: the page is split into chunks of that size
//     (page_geometry.hpp). `fill` counts reserved chunks (0..chunks), plus
//     short-lived +1s of workers whose reservation attempt failed and is being
//     undone, and the short-lived excess of a group's +n past the page's
//     last chunk (group_take.hpp), given back at once; on a page of one
//     chunk reservations are CAS(fill, 0, 1), so its fill is only ever 0, 1
//     or a reset's lock (I4), and a free that finds no reservation there is
//     a chunk freed twice. Each allocated chunk
//     has its bit set (in the mask for flat
//     pages, in its in-page segment word for hierarchical pages), except on
//     a page of one chunk (chunk_size > pagesize / 2), which keeps no bit:
//     its mask stays 0, the reservation is the chunk, and the free is the
//     return of that reservation alone (page_ops.hpp, free_only_chunk); a set bit
//     belongs to a reservation counted in `fill`, except, without
//     resetfreedpages, while a free's clear of it and its return of that
//     reservation, sent together, are in flight (with resetfreedpages the
//     clear comes first: a page whose fill reaches 0 may be reset at once):
//     a worker whose reservation finds no bit free meanwhile
//     walks on for a bounded number of full words, then undoes the
//     reservation (page_ops.hpp, take_in_mask). Without resetfreedpages the
//     chunk size of a split page never changes again.
//  I3 chunk_size == multi_page: the page belongs to an allocation of several
//     pages (6.3), which won each page by a CAS of chunk_size from the
//     unused value it read (0 or clean_page) to multi_page; the first
//     page's mask holds the number of pages, the others' masks are 0 (set
//     only once every page is won). No reservation is made on a run's
//     pages: their fill stays as the run found it, 0, or 1 on a page that
//     was clean (I1c; with resetfreedpages a stale reservation or a reset's
//     lock may hold it for a moment; only scans read it then).
//     A run that loses a page to another worker gives back its current
//     batch as the pages were and its earlier batches at 0; its free
//     publishes 0 with a release (one fence for the run, then the stores).
//  I4 fill >= locked: the page is locked, only with resetfreedpages, by the
//     reset of a split page whose fill came to 0 (6.2): taken by CAS(fill,
//     0, locked), so that no reservation can succeed meanwhile (any
//     reservation needs fill < chunks <= 1024 < locked). Under the lock a
//     split page's size changes only by the reset, which sets it to 0 (a
//     claim or a run takes only unused pages), then unlocks with a release;
//     a page at 0 claimed meanwhile is looked at again once the unlock
//     takes fill to 0 (page_ops.hpp, try_reset). A reservation re-reads
//     chunk_size after it succeeded and is undone if the page was reset or
//     re-split meanwhile. Without resetfreedpages nothing locks a page and
//     no re-split can happen (I2), so no reservation re-reads (as in
//     [Steinberger2012]): a worker touches the bit fields only after it read
//     the chunk size published by the release of I1b (or set by the CAS of
//     I1c, over words that were zero before the heap was shared) and its
//     reservation, an atomic on fill, has returned; the worker whose CAS of
//     I1c split the page holds the page's first reservation without one.
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
// HeapShared: `active_block` is the access block new searches start in,
// always below block_count (every change is a CAS to a block's number). A
// search moves it to the next block when it finds its block full for the
// first pass (most regions sampled closed, search.hpp; of the lanes of a
// warp asking for one size, the highest one only), a free that makes
// room on a full page moves it back to that page's block if lower and the
// page's region is open after the free, unless the free's hint of it
// (acc::load_hint) was at or below that block. `misuse` counts
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
// chunk_size values above every chunk size (I0).
// Pages that belong to a multi-page allocation (I3).
inline constexpr std::uint32_t multi_page = 0xffffffffu;
// Unused pages whose bit fields are known to be zero (I1c).
inline constexpr std::uint32_t clean_page = 0xfffffffeu;
// A page a worker is splitting (I1b).
inline constexpr std::uint32_t claiming = 0xfffffffdu;
// Whether a chunk_size names an unused page (I1, I1c).
MANYALLOC_FN constexpr bool unused_page(std::uint32_t chunk_size) { return chunk_size == 0u || chunk_size == clean_page; }
// Whether a page whose entry was read as {chunk_size, fill} is unused and
// may be taken whole, by a split or a run: an unused chunk size and, with
// resetfreedpages, a fill of 0 (no reset's lock, I4, and no reservation
// being undone). Without resetfreedpages an unused page's fill holds no
// reservation (I1, I1c).
template <bool ResetFreedPages>
MANYALLOC_FN constexpr bool free_page(std::uint32_t chunk_size, std::uint32_t fill) {
  return unused_page(chunk_size) && (!ResetFreedPages || fill == 0u);
}

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
