// Finding a page for a request of at most one page ([Steinberger2012] 6.1, alloc;
// 5.3 hashing; 5.4 access blocks and regions).
#pragma once

#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/math.hpp"
#include "manyalloc/heap/acc/collectives.hpp"
#include "manyalloc/heap/acc/load_hint.hpp"
#include "manyalloc/heap/detail/scatter/group_take.hpp"
#include "manyalloc/heap/detail/scatter/invariants.hpp"
#include "manyalloc/heap/detail/scatter/page_ops.hpp"

namespace manyalloc::heap::detail {

template <class Config, class Hash>
struct SmallSearch {
  using Ops = PageOps<Config>;
  static constexpr std::uint32_t pagesize = Config::pagesize;
  static constexpr std::uint32_t regionsize = Config::regionsize;

  // How a region's fill level is judged during a search.
  enum class Pass {
    skip_90_percent,   // 5.4: skip regions with more than 90% of their pages full (closed)
    skip_only_full,    // last resort before failing: skip only regions marked entirely full
  };

  MANYALLOC_FN static bool search_region(std::uint32_t full_pages, Pass pass) {
    if (pass == Pass::skip_90_percent) return !Ops::closed_region(full_pages);
    return full_pages < regionsize;
  }

  // The multiprocessor term of equation (3), mp * k_mp, for workers that the
  // warp term does not tell apart: host threads (warp width 1, all in warp
  // 0). Where warps exist, the launch-wide warp index separates every worker
  // already, while the multiprocessor a block runs on is picked anew by the
  // hardware for every launch: hashing it would send the same request of the
  // same warp to other pages in every launch, so that pages split for one
  // size end up scattered under the requests of every other size, and every
  // launch splits pages afresh (scatter_anomalies.md).
  template <class Acc>
  MANYALLOC_FN static std::uint64_t processor_term(const Acc& acc) {
    if constexpr (Acc::warp_size == 1) {
      return static_cast<std::uint64_t>(acc.processor_id()) * Hash::hashingDistMP;
    } else {
      return 0;
    }
  }

  // Equation (3), p = (S_req * k_S + mp * k_mp) mod pages_per_block, with
  // the warp spread of scatter_config.hpp. `same` names the lanes of the
  // caller's warp that ask for as many bytes (the caller included): with c
  // chunks of S_req bytes on a page and n such lanes, warp w starts
  // w * (hashingDistWP + hashingDistWPRel * (n / c)) pages further (n / c:
  // the pages its lanes fill), and the lane of rank r among them r / c pages
  // further, at the page its chunk lands on then (all of them on one page
  // when they fit, a page each for requests of more than half a page).
  // Counting the lanes that ask for the size, rather than the warp's width,
  // keeps the pages of a size together when the lanes of a warp ask for
  // different sizes: spread for 32 lanes each, a size's pages interleaved
  // with those of every other size, and requests walked through pages of
  // other sizes to find one of theirs (scatter_anomalies.md, churn).
  // A request that fills a page (c = 1) shares its page with none, so
  // nothing is kept together: its warp spreads as if every lane asked and
  // the lane takes the page of its lane index. Counted, lanes that ask alone
  // (a particle-in-cell code's frames, allocated when a lane's frame fills)
  // all started at w * 2, every warp's requests on a strip of 2 pages per
  // warp, which filled and made every later request walk past it
  // (docs/results/heap/pic, 7379da9).
  template <class Acc>
  MANYALLOC_FN static std::uint32_t hash(const Acc& acc, std::uint32_t request, std::uint32_t pages_per_block,
                                         std::uint32_t same) {
    const std::uint32_t chunks = spread_chunks(request);
    const bool whole_page = chunks == 1u;
    const std::uint32_t asking = whole_page ? Acc::warp_size : bits::popcount(same);
    const std::uint32_t rank = whole_page ? acc.lane_id() : bits::popcount(same & bits::low_mask(acc.lane_id()));
    const std::uint64_t warp_distance =
        Hash::hashingDistWP + static_cast<std::uint64_t>(Hash::hashingDistWPRel) * small_quotient(asking, chunks);
    const std::uint64_t lane_distance = Hash::hashingDistWPRel != 0 ? small_quotient(rank, chunks) : 0u;
    const std::uint64_t h = static_cast<std::uint64_t>(request) * Hash::hashingK + processor_term(acc) +
                            static_cast<std::uint64_t>(acc.warp_id()) * warp_distance + lane_distance;
    return static_cast<std::uint32_t>(h % pages_per_block);
  }

  // The chunks of a page split for `request` bytes as the spread counts
  // them: page_geometry's count for flat pages (flat_chunks), and 33 for
  // hierarchical ones, which hold at least 33 (a full segment and one more
  // chunk, hierarchy_threshold). The quotients of at most 32 lanes by either
  // are the same (0), and the segments' divisions are left out, so that the
  // lanes of a warp asking for flat and hierarchical sizes do not run both
  // geometries one after the other.
  MANYALLOC_FN static std::uint32_t spread_chunks(std::uint32_t request) {
    const std::uint32_t flat = flat_chunks(pagesize, request);
    return request > hierarchy_threshold(pagesize) ? flat : 33u;
  }

  // Whether `block` is full for the first pass (5.4: "only if the super
  // block reaches a certain fill level ... the allocator proceeds to the
  // next super block"): more than 90% of `samples` regions spread evenly
  // over the block, from `region` on, are closed. A sample, not a count: a
  // counter of closed regions per block, updated whenever a region closed
  // or opened, was one word that every worker filling or emptying pages of
  // 4-8 KiB wrote (scatter_anomalies.md).
  static constexpr std::uint32_t samples = 16;
  template <class Acc>
  MANYALLOC_FN static bool block_full(const Acc& acc, const HeapLayout& h, std::uint32_t block,
                                      std::uint32_t region = 0) {
    const std::uint32_t regions = h.regions_in_block(block, regionsize);
    const std::uint32_t* words = h.regions + block * (h.pages_per_block / regionsize);
    const std::uint32_t stride = regions / samples > 0 ? regions / samples : 1u;
    std::uint32_t closed = 0, seen = 0;
    for (std::uint32_t i = 0; i < samples && i < regions; ++i, ++seen)
      closed += Ops::closed_region(bits::popcount(acc.load(&words[(region + i * stride) % regions])));
    return closed * 10u > seen * 9u;
  }

  // A page's chunk size and fill, read together: one round trip to memory,
  // not two.
  struct PageRead {
    std::uint32_t chunk;
    std::uint32_t fill;
  };
  template <class Acc>
  MANYALLOC_FN static PageRead read_page(const Acc& acc, const HeapLayout& h, std::uint32_t page) {
    return {acc.load(&h.pages[page].chunk_size), acc.load(&h.pages[page].fill)};
  }

  // Tries one page for a request, read as `seen`: uses its chunks when their
  // size fits (within the waste factor), or claims it when it is unused
  // (6.1, alloc lines 8-27).
  template <class Acc>
  MANYALLOC_FN static void* use_page(const Acc& acc, const HeapLayout& h, std::uint32_t page, PageRead seen,
                                     std::uint32_t request, std::uint32_t max_chunk) {
    bool split_clean = false;
    const std::uint32_t now = Ops::size_for_request(acc, h, page, seen.chunk, request, max_chunk, split_clean);
    if (now == 0u) return nullptr;
    // The split of a clean page holds the page's first reservation (I1c);
    // the fill read counts only for the split it was read with.
    return Ops::try_use(acc, h, page, now, now == seen.chunk ? seen.fill : 0u, split_clean);
  }

  // The largest chunks a request of `request` bytes may use (6.1, max_frag).
  MANYALLOC_FN static constexpr std::uint32_t max_chunk_for(std::uint32_t request) {
    return request * Config::wastefactor < pagesize ? request * Config::wastefactor : pagesize;
  }

  // Pages of open regions that the first pass probes in one block before it
  // tries the next block (the block is not moved on for that, see below).
  // One region's worth. A launch of many mixed-size requests can split
  // nearly every page of its block with the full pages scattered, so the
  // block's regions stay open, no search finds it full and it stays active;
  // every request with no page of its size near its hash walks this many
  // pages of it, reading entries of other sizes, before the next block
  // serves it. A shorter walk sends more requests on, which split more
  // pages there. Moving the block on at this exit, the other way to cut the
  // walk, cost churn and the usable share of mixed sizes
  // (docs/results/heap/peers/scatter_activation).
  static constexpr std::uint32_t probe_limit = regionsize;
  static constexpr std::uint32_t skip_limit = 4;

  // Tries every region of `block` once, starting at page `start` of the
  // block. In the first pass it stops early: when it meets closed regions
  // while most of the block is closed (`full` is set then: the block is full
  // for this pass), or after probe_limit pages of open regions without a
  // chunk (an extension of 6.1: the request then tries the next block, as
  // for a block that cannot serve it). Without resetfreedpages a page keeps
  // the size it was first split for, so a block can hold no free page for a
  // request although its regions are open; scanning every page of it cost
  // such requests a million memory accesses (scatter_anomalies.md).
  template <class Acc>
  MANYALLOC_FN static void* search_block(const Acc& acc, const HeapLayout& h, std::uint32_t block,
                                         std::uint32_t start, std::uint32_t request, Pass pass, bool& full) {
    full = false;
    const std::uint32_t max_chunk = max_chunk_for(request);
    const std::uint32_t block_first = block * h.pages_per_block;
    const std::uint32_t regions = h.regions_in_block(block, regionsize);
    // The hashed page first, whatever its region's fill level: it is the page
    // the hash meant for this request (5.3). When the lanes of a launch tile
    // the pages (a page per lane for requests of a page), regions close
    // while the pages the hash assigns in them are still unused; skipping
    // them sent lanes to the pages of later lanes, which went further still.
    if (void* mem = use_page(acc, h, block_first + start, read_page(acc, h, block_first + start), request, max_chunk))
      return mem;
    std::uint32_t p = start + 1u == regions * regionsize ? 0u : start + 1u;
    std::uint32_t skipped = 0, probed = 0;
    // regions + 1 visits: the first region is entered mid-way (at `start`),
    // so it is visited again from its beginning at the end.
    for (std::uint32_t visit = 0; visit <= regions; ++visit) {
      const std::uint32_t region = p / regionsize;
      // The region's marks and the entry of its first page to try, read
      // together: a request that walks on from the hashed page (another size
      // took it first) enters its region with one round trip to memory, not
      // two. In a region found closed the page's read goes unused.
      const std::uint32_t marks = acc.load(&h.regions[block_first / regionsize + region]);
      PageRead seen = read_page(acc, h, block_first + p);
      if (search_region(bits::popcount(marks), pass)) {
        const std::uint32_t region_end = (region + 1u) * regionsize;
        for (;;) {
          if (void* mem = use_page(acc, h, block_first + p, seen, request, max_chunk)) return mem;
          if (pass == Pass::skip_90_percent && ++probed >= probe_limit) return nullptr;
          if (++p == region_end) break;
          seen = read_page(acc, h, block_first + p);
        }
      } else if (pass == Pass::skip_90_percent) {
        // Closed regions met: when most of the block is closed, move on to
        // the next block instead of scanning the rest of this one.
        if (skipped == 0u && block_full(acc, h, block, region)) {
          full = true;
          return nullptr;
        }
        if (++skipped >= skip_limit) return nullptr;
      }
      p = ((region + 1u) % regions) * regionsize;
    }
    full = true;
    return nullptr;
  }

  MANYALLOC_FN static std::uint32_t next_block(const HeapLayout& h, std::uint32_t block) {
    return block + 1u == h.block_count ? 0u : block + 1u;
  }

  // The fewest lanes that take their chunks together. A group's steps run
  // while the warp's lanes outside it wait (they diverged), so groups pay
  // where the whole warp is in groups (a warp asking for one size; pages of
  // four 1 KiB chunks), and pairs among lanes of sizes of their own (mixed
  // sizes) take alone.
  static constexpr std::uint32_t group_min = 4;

  // alloc (6.1): start in the active access block and try the next one
  // when it cannot serve the request; a block full for the first pass also
  // moves the active block on (5.4). `same`: the lanes of the caller's warp
  // asking for `request` bytes too (hash).
  //
  // Fast path: the lanes of `same` that start on the same page try it
  // together first (group_take.hpp), when they are at least group_min; the
  // lanes it does not serve, and the others, search on their own (slow
  // path, from the hashed page on).
  template <class Acc>
  MANYALLOC_FN static void* alloc(const Acc& acc, const HeapLayout& h, std::uint32_t request, std::uint32_t same) {
    // The active block is read before the hash is computed, so that the
    // read is in flight while the hash's arithmetic runs.
    const std::uint32_t first_block = acc.load(&h.shared->active_block);  // < block_count (invariants.hpp)
    const std::uint32_t start = hash(acc, request, h.pages_per_block, same);
    if constexpr (Acc::warp_size > 1) {
      // The group is keyed by the page itself, not by `start`: the lanes
      // read the active block one by one, and another worker may move it
      // in between (a group spread over two blocks reserved on one page and
      // took bits on the other).
      const std::uint32_t page = first_block * h.pages_per_block + start;
      const std::uint32_t group = bits::popcount(same) >= group_min ? acc.match_any(same, page) : 0u;
      if (bits::popcount(group) >= group_min) {
        if (void* mem = GroupTake<Config>::take(acc, h, page, request, max_chunk_for(request), group)) return mem;
      }
    }
    bool full = false;
    // A block found full moves the active block on (5.4), by the highest
    // lane of `same` alone: when every lane that found it full sent its CAS,
    // the warps in flight as a block filled sent one word a CAS per lane,
    // all queued at one L2 slice ahead of every new warp's read of the word
    // (docs/results/heap/peers/scatter_activation). The highest, because a
    // group's take serves its lowest lanes first (group_take.hpp): of the
    // lanes on the hashed page it is the last served and the first to
    // search on. The others search on all the same. When this lane finds a
    // chunk, no lane of `same` moves the block on, whatever the others
    // found (lanes of `same` on other pages, requests of more than half a
    // page): the block stays active until a later search's highest lane
    // finds it full, and searches meanwhile pass through it to the next.
    const bool mover = acc.lane_id() == heap::acc::highest_lane(same);
    // Blocks from first_block on, wrapping (first_block < block_count).
    for (std::uint32_t i = 0, block = first_block; i < h.block_count; ++i, block = next_block(h, block)) {
      if (void* mem = search_block(acc, h, block, start, request, Pass::skip_90_percent, full)) return mem;
      if (full && mover) acc.atomic_cas(&h.shared->active_block, block, next_block(h, block));
    }
    // Region fill levels are hints (scatter/invariants.hpp), and the first pass
    // looks at part of each block only: before reporting out of memory, look
    // into every region that is not entirely marked full.
    for (std::uint32_t i = 0, block = first_block; i < h.block_count; ++i, block = next_block(h, block)) {
      if (void* mem = search_block(acc, h, block, start, request, Pass::skip_only_full, full)) return mem;
    }
    return nullptr;
  }

  // 5.4: frees make emptied blocks active again, so that they get reused
  // (against blowup). [Steinberger2012] picks such a block at random, with a chance
  // that grows as the block empties; we take the lowest block in which a
  // free makes room on a full page (first fit over blocks, as mallocMC
  // does), unless the page's region is still closed (the first pass skips
  // it) or the free's hint of the active block was already that low
  // (below). After a launch frees what an earlier one allocated, the next
  // launch then starts in the block where that one started and finds the
  // pages it split there (scatter_anomalies.md): random activation sent it
  // to whichever block a late free had picked. Frees on pages that were
  // not full leave the active block alone (a block left for being full has
  // full pages).
  //
  // Fast path: the page lies in or above the active block, found by
  // comparing page numbers (the active block is below block_count, so block
  // b's first page is b * pages_per_block): no division on the way out.
  // The active block is read as a hint (acc::load_hint; on the GPU at CTA
  // scope, which the SM's L1 may serve): this read came last in an ordered
  // free and waited for a round trip to L2 behind every warp's atomics, on
  // its own line as much as on the shared word
  // (docs/results/heap/peers/scatter_release_pair). A hint
  // below the true value returns here where the word would not: the
  // activation is skipped, which costs 5.4's reuse, nothing else (a search
  // still reaches every block). In a launch that only frees, only frees
  // write the word and they only lower it, so every hint is at or above it
  // and the next launch starts where the last one did (above); a low hint
  // needs searches in the same launch, as in churn.
  template <class Acc>
  MANYALLOC_FN static void maybe_activate(const Acc& acc, const HeapLayout& h, std::uint32_t page) {
    if (page >= std::uint64_t{acc::load_hint(acc, &h.shared->active_block)} * h.pages_per_block) return;
    // Slow path: a lower block, made active when the free left its page's
    // region open, the one region a search of that block would now enter
    // (search_region's test of the first pass). The word itself decides
    // first: a hint above it would cost a read of the region and a failed
    // CAS. The region word is read coherently after this free's own clear
    // of its bit (same word, same worker: the read sees the clear). Not a
    // sample of the block (block_full): until a sample found the block not
    // full, every free below the active block read 16 region words, shared
    // by all of them, and a launch freeing whole pages below the active
    // block spent most of its time there
    // (docs/results/heap/peers/scatter_activation). The rule activates more
    // readily than the sample did: one free that opens a region left at
    // the 90% mark is enough. A block activated with most of its regions
    // still closed costs the searches then in flight a sample per full
    // block on their way back up: each finds the block full and moves the
    // active block on by one.
    std::uint32_t active = acc.load(&h.shared->active_block);
    const std::uint32_t block = h.block_of(page);
    if (active <= block) return;
    if (!search_region(bits::popcount(acc.load(&h.regions[page / regionsize])), Pass::skip_90_percent)) return;
    while (active > block) {
      const std::uint32_t seen = acc.atomic_cas(&h.shared->active_block, active, block);
      if (seen == active) return;
      active = seen;
    }
  }
};

}  // namespace manyalloc::heap::detail
