// Operations on one page: claiming an unused page for a chunk size,
// reserving and taking a chunk ([Steinberger2012] 6.1, tryUsePage), freeing a
// chunk (6.2) and resetting an emptied page. Invariants: scatter/invariants.hpp.
#pragma once

#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/math.hpp"
#include "manyalloc/common/report.hpp"
#include "manyalloc/heap/acc/collectives.hpp"
#include "manyalloc/heap/detail/scatter/invariants.hpp"
#include "manyalloc/heap/detail/scatter/page_geometry.hpp"

namespace manyalloc::heap::detail {

template <class Config>
struct PageOps {
  static constexpr std::uint32_t pagesize = Config::pagesize;
  static constexpr std::uint32_t regionsize = Config::regionsize;

  MANYALLOC_FN static std::uint32_t* segment_word(const HeapLayout& h, std::uint32_t page,
                                                  std::uint32_t segment) {
    auto* page_end = reinterpret_cast<std::uint32_t*>(h.page_data(page, pagesize) + pagesize);
    return page_end - 1 - segment;
  }

  // --- region hints (5.4) -------------------------------------------------
  // A region with more than 90% of its pages marked full is closed.
  MANYALLOC_FN static constexpr bool closed_region(std::uint32_t full_pages) {
    return full_pages * 10u > regionsize * 9u;
  }
  // Marks `page` full, in two halves, so that the worker that reserved the
  // page's last chunk sends the mark and the take of its chunk together
  // (take_reserved) and waits for both once: start_mark_page_full sends the OR
  // and returns its old value, the region's marks, unread;
  // finish_mark_page_full then re-checks.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t start_mark_page_full(const Acc& acc, const HeapLayout& h, std::uint32_t page) {
    return acc.atomic_or(&h.regions[page / regionsize], 1u << (page % regionsize));
  }
  // A free may have slipped in before our bit took effect: read `fill`
  // again, with an atomic issued once the OR's old value (`marks`) is back,
  // i.e. after the OR took effect (no fence on the way). A free that takes
  // `fill` below `chunks` clears the bit after its own decrement, so if
  // our re-read still sees the page full, that clear comes after our OR.
  // When the bit was set already, its setter's re-check or the clear of a
  // free since our fill follows our OR. (A failed reservation in flight can hide a
  // free here; its undoing clears the bit then, see release_reservation.)
  // A page of one chunk needs no re-check: the only chunk that a free could
  // return after our reservation is the one we reserved, not handed out yet
  // (the return of an earlier owner's free came before our reservation,
  // which found fill at 0; its clear of the bit may come after our OR, which
  // leaves the page marked not full, a hint that costs a probe).
  template <class Acc>
  MANYALLOC_FN static void finish_mark_page_full(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                                 std::uint32_t chunks, std::uint32_t marks) {
    const std::uint32_t bit = 1u << (page % regionsize);
    if (chunks > 1u && (marks & bit) == 0u && acc.atomic_add(&h.pages[page].fill, 0u) < chunks)
      acc.atomic_and(&h.regions[page / regionsize], ~bit);
  }
  template <class Acc>
  MANYALLOC_FN static void mark_page_not_full(const Acc& acc, const HeapLayout& h, std::uint32_t page) {
    acc.atomic_and(&h.regions[page / regionsize], ~(1u << (page % regionsize)));
  }

  // --- claiming an unused page (6.1, alloc lines 16-27) --------------------
  // Splits a page at 0 (I1) into `chunk_size` chunks: wins it by CAS(0,
  // claiming), zeroes its mask and the bit-field words the split needs (they
  // may hold user data of a run) and publishes the size with a release
  // (I1b). Returns the page's chunk size afterwards: `chunk_size` when we
  // split it; the size another worker gave it (waiting for its split, see
  // wait_for_claim); 0 when the page is not split (in a run, or clean:
  // claim_clean splits those).
  template <class Acc>
  MANYALLOC_FN static std::uint32_t claim(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                          std::uint32_t chunk_size) {
    PageEntry& e = h.pages[page];
    const std::uint32_t was = acc.atomic_cas(&e.chunk_size, 0u, claiming);
    if (was != 0u) return was == claiming ? wait_for_claim(acc, e) : settled(was);
    acc.store(&e.mask, 0u);
    // The reservation a clean page's fill held, where a run took the page
    // clean (I1, I3); with resetfreedpages fill is a reset's lock here.
    if constexpr (!Config::resetfreedpages) acc.store(&e.fill, 0u);
    const PageGeometry g = page_geometry(pagesize, chunk_size);
    for (std::uint32_t s = 0; s < g.segments(); ++s) acc.store(segment_word(h, page, s), 0u);
    // One fence for all of the stores above, then the size: a worker that
    // reads it finds them done. (A cold launch of mixed sizes pays the fence
    // once per lane that splits a page at 0; clean pages need none, I1c.)
    acc.fence();
    acc.store(&e.chunk_size, chunk_size);
    return chunk_size;
  }

  // The chunk size a claim reports for a page whose chunk_size it read as
  // `chunk`: a split's size, or 0 for every page that is not split.
  MANYALLOC_FN static constexpr std::uint32_t settled(std::uint32_t chunk) {
    return chunk >= 1u && chunk <= pagesize ? chunk : 0u;
  }

  // Another worker is splitting the page (I1b), most often a lane of the
  // same warp splitting it for the same size. As in [Steinberger2012], where
  // the loser of the CAS uses the winner's split, wait for the size. The
  // wait is not bounded: a bound let the lanes of a warp that lost to their
  // own sibling give up while the sibling, on the other side of the warp's
  // divergence, had not finished, so that every lane claimed a page of its
  // own (scatter_anomalies.md). A split takes a bounded number of steps
  // (I1b), and the GPU schedules the diverged lanes of a warp independently.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t wait_for_claim(const Acc& acc, PageEntry& e) {
    for (;;) {
      const std::uint32_t chunk = acc.load(&e.chunk_size);
      if (chunk != claiming) return settled(chunk);
      acc.relax();
    }
  }

  // Splits a clean page (I1c) into `chunk_size` chunks with one CAS: its
  // bit fields are zero already, so nothing to publish first. Returns the
  // page's chunk size afterwards: `chunk_size` when the CAS won (`won`: the
  // caller then holds the page's first reservation, I1c), else a split's
  // size, or 0 for a page that is not split (a run's, one at 0, or one
  // being split: the caller reads it again on its next visit).
  template <class Acc>
  MANYALLOC_FN static std::uint32_t claim_clean(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                                std::uint32_t chunk_size, bool& won) {
    const std::uint32_t was = acc.atomic_cas(&h.pages[page].chunk_size, clean_page, chunk_size);
    won = was == clean_page;
    return won ? chunk_size : settled(was);
  }

  // The chunk size with which `page`, whose chunk_size was read as `chunk`,
  // serves a request of `request` bytes (chunks of request..max_chunk
  // bytes, the waste factor of 6.1): `chunk` when it fits; for an unused
  // page the size it has once split (a clean page by one CAS, I1c; one at
  // 0 by the claim of I1b; one being split waited for, I1b); 0 when the
  // page serves no such request. `split_clean`: the caller split a clean
  // page and holds its first reservation (I1c). (use_page for one lane,
  // GroupTake for a group.)
  template <class Acc>
  MANYALLOC_FN static std::uint32_t size_for_request(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                                     std::uint32_t chunk, std::uint32_t request,
                                                     std::uint32_t max_chunk, bool& split_clean) {
    split_clean = false;
    if (chunk >= request && chunk <= max_chunk) return chunk;
    std::uint32_t now = 0;
    if (chunk == clean_page) {
      now = claim_clean(acc, h, page, request, split_clean);
    } else if (chunk == 0u) {
      now = claim(acc, h, page, request);
    } else if (chunk == claiming) {
      now = wait_for_claim(acc, h.pages[page]);
    }
    return now >= request && now <= max_chunk ? now : 0u;
  }

  // --- tryUsePage (6.1) ------------------------------------------------------
  // The reservation of a page of one chunk (I2): CAS(fill, 0, 1), so that a
  // failed attempt leaves fill alone and a free that finds no reservation
  // there tells a chunk freed twice. Returns fill as it was: 0 when this
  // worker holds the chunk.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t reserve_only_chunk(const Acc& acc, PageEntry& e) {
    return acc.atomic_cas(&e.fill, 0u, 1u);
  }

  // Reserves a chunk on a page split into `chunk_size` chunks of geometry
  // `g`: on success `reserved` is the reservation's index (< g.chunks) and
  // `marked` the segments' full marks as read with it (I5). Fails (false,
  // nothing held) when the page is full, locked or was re-split meanwhile.
  // `fill_seen` is the page's fill as the caller read it (0: not read).
  template <class Acc>
  MANYALLOC_FN static bool reserve(const Acc& acc, const HeapLayout& h, std::uint32_t page, const PageGeometry& g,
                                   std::uint32_t chunk_size, std::uint32_t fill_seen, std::uint32_t& reserved,
                                   std::uint32_t& marked) {
    PageEntry& e = h.pages[page];
    // Reserving first means that a worker that gets past here will find a
    // free bit (I2), and that failure costs no bit-field traffic.
    // A plain read first: probing a full page then costs no atomic traffic.
    if (fill_seen >= g.chunks) return false;
    // Which segments are marked full (I5), read with the reservation in
    // flight rather than after it.
    marked = g.hierarchical ? acc.load(&e.mask) : 0u;
    reserved = g.keeps_bits() ? acc.atomic_add(&e.fill, 1u) : reserve_only_chunk(acc, e);
    if (reserved >= g.chunks) {
      if (g.keeps_bits()) release_reservation(acc, h, page, g.chunks);
      return false;
    }
    if constexpr (Config::resetfreedpages) {
      acc.fence();
      if (acc.load(&e.chunk_size) != chunk_size) {
        // The page was emptied and re-split after we read its chunk size.
        release_reservation(acc, h, page, g.chunks);
        return false;
      }
    }
    // Without resetfreedpages a split page keeps its chunk size (I2): no
    // re-check, and no fence on the way to a chunk.
    return true;
  }
  // Reserves a chunk on a page split into `chunk_size` chunks and takes it.
  // Returns nullptr when reserve fails. `split_clean`: the caller split the
  // page from clean and holds its first reservation already (I1c: index 0,
  // no segment marked), so it only takes. Both kinds of lane go to one
  // take: the lanes of a warp that split pages and those that reserved on
  // pages split before set their bits with one instruction, not one group
  // after the other.
  template <class Acc>
  MANYALLOC_FN static void* try_use(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                    std::uint32_t chunk_size, std::uint32_t fill_seen, bool split_clean = false) {
    const PageGeometry g = page_geometry(pagesize, chunk_size);
    std::uint32_t reserved = 0, marked = 0;
    if (!split_clean && !reserve(acc, h, page, g, chunk_size, fill_seen, reserved, marked)) return nullptr;
    return take_reserved(acc, h, page, g, chunk_size, reserved, marked);
  }

  // Takes a chunk for reservation `reserved` (< g.chunks) of a page split
  // into `chunk_size` chunks of geometry `g`: a reservation of reserve's,
  // or the first chunk of a clean page that the caller split (I1c:
  // reservation 0, no segment marked full): try_use's, for both.
  // `marked`: the segments' full marks as read with the reservation (I5).
  // Returns nullptr, the reservation given back, when no bit came free
  // within the walk's bound.
  template <class Acc>
  MANYALLOC_FN static void* take_reserved(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                          const PageGeometry& g, std::uint32_t chunk_size, std::uint32_t reserved,
                                          std::uint32_t marked) {
    PageEntry& e = h.pages[page];
    // The reservation of the page's last chunk marks the page full, the
    // mark sent before the take and waited for after it (two round trips to
    // memory in flight at once, not one after the other).
    const bool fills = reserved + 1u == g.chunks;
    const std::uint32_t marks = fills ? start_mark_page_full(acc, h, page) : 0u;
    // Start at the reservation index rather than the lane id of [Steinberger2012]:
    // it is distinct for every worker on the page, so warps that share a
    // page do not collide, and lanes of one warp still get neighbouring chunks.
    // The first try is one OR at one place in the code for either geometry
    // (none for a page of one chunk, whose lanes' OR is predicated off):
    // the lanes of a warp of mixed sizes (flat and hierarchical pages) send
    // theirs in one instruction and wait for them once, not one geometry
    // after the other (docs/results/heap/peers/scatter_one_or). A spot found
    // taken (frees returned chunks out of order) sends the lane on the
    // geometry's walk; a hierarchical walk tries the spot once more.
    std::uint32_t segment = 0, spot = reserved;  // reserved < g.chunks (above)
    std::uint32_t* word = &e.mask;
    if (g.hierarchical) {
      segment = first_segment(g, reserved, marked);
      word = segment_word(h, page, segment);
      spot = small_remainder(reserved, g.chunks_in_segment(segment));
    }
    const std::uint32_t bit = 1u << spot;
    // A page of one chunk keeps no bit (I2): its reservation is the chunk.
    const std::uint32_t old = g.keeps_bits() ? acc.atomic_or(word, bit) : 0u;
    std::uint32_t index = segment * 32u + spot;
    if ((old & bit) != 0u) {
      index = g.hierarchical ? take_in_segments(acc, h, page, g, reserved, marked)
                             : take_in_mask(acc, e, g.chunks, spot + 1u == g.chunks ? 0u : spot + 1u);
    }
    return end_take(acc, h, page, g, chunk_size, index, fills, marks);
  }

  // The end of a take (take_reserved; GroupTake::take): the full mark's
  // re-check when the reservation was the page's last (`fills`, `marks`:
  // start_mark_page_full's), then chunk `index`, or nullptr with the
  // reservation given back when the walk found no bit (index == g.chunks).
  template <class Acc>
  MANYALLOC_FN static void* end_take(const Acc& acc, const HeapLayout& h, std::uint32_t page, const PageGeometry& g,
                                     std::uint32_t chunk_size, std::uint32_t index, bool fills, std::uint32_t marks) {
    if (fills) finish_mark_page_full(acc, h, page, g.chunks, marks);
    if (index == g.chunks) {  // no bit came free within the walk's bound
      release_reservation(acc, h, page, g.chunks);
      return nullptr;
    }
    return h.page_data(page, pagesize) + static_cast<std::size_t>(index) * chunk_size;
  }
  template <class Acc>
  MANYALLOC_FN static void* try_use(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                    std::uint32_t chunk_size) {
    return try_use(acc, h, page, chunk_size, acc.load(&h.pages[page].fill));
  }

  // A worker holding a reservation finds every bit taken when a free has
  // returned its reservation but not yet cleared its bit (free_chunks sends
  // both at once), or, after a double free, for good: it walks on for this
  // many words found full, then gives its reservation back (the page is
  // then just not used for this request).
  static constexpr std::uint32_t full_words_bound = 64;

  // Flat page: set a free bit of the table's mask (6.1, tryUsePage 8-18).
  // Returns the chunk's index, or `chunks` when no bit came free (bound above).
  template <class Acc>
  MANYALLOC_FN static std::uint32_t take_in_mask(const Acc& acc, PageEntry& e, std::uint32_t chunks,
                                                 std::uint32_t spot) {
    for (std::uint32_t full_seen = 0;;) {
      const std::uint32_t bit = 1u << spot;
      const std::uint32_t old = acc.atomic_or(&e.mask, bit);
      if ((old & bit) == 0u) return spot;
      const std::uint32_t next = bits::next_free_spot(old, spot, chunks);
      if (next == chunks && ++full_seen > full_words_bound) return chunks;
      spot = next == chunks ? (spot + 1u) % chunks : next;
    }
  }

  // The segment a reservation tries first: its own, or the next one not
  // marked full. Every segment marked full while we hold a reservation means
  // stale marks (I5): the segments are then walked one by one.
  MANYALLOC_FN static std::uint32_t unmarked_segment(std::uint32_t segments, std::uint32_t segment,
                                                     std::uint32_t marked) {
    if (((marked >> segment) & 1u) == 0u) return segment;
    const std::uint32_t next = bits::next_free_spot(marked, segment, segments);
    return next != segments ? next : segment;
  }
  // A reservation below g.chunks lies in segment reserved / 32 (< segments:
  // the partial segment holds the chunks from 32 * full_segments on): no
  // division by the segment count on the way.
  MANYALLOC_FN static std::uint32_t first_segment(const PageGeometry& g, std::uint32_t reserved,
                                                  std::uint32_t marked) {
    return unmarked_segment(g.segments(), reserved / 32u, marked);
  }
  // Hierarchical page: pick a segment not marked full, then a bit in its word.
  // Returns the chunk's index, or g.chunks when no bit came free (full_words_bound).
  template <class Acc>
  MANYALLOC_FN static std::uint32_t take_in_segments(const Acc& acc, const HeapLayout& h,
                                                     std::uint32_t page, const PageGeometry& g,
                                                     std::uint32_t reserved, std::uint32_t marked) {
    PageEntry& e = h.pages[page];
    const std::uint32_t segments = g.segments();
    std::uint32_t segment = reserved / 32u;  // < segments (first_segment)
    for (std::uint32_t full_seen = 0, first = 1;; first = 0) {
      if (!first) marked = acc.load(&e.mask);
      segment = unmarked_segment(segments, segment, marked);
      const std::uint32_t n = g.chunks_in_segment(segment);
      std::uint32_t* word = segment_word(h, page, segment);
      std::uint32_t spot = small_remainder(reserved, n);
      for (;;) {
        const std::uint32_t bit = 1u << spot;
        const std::uint32_t old = acc.atomic_or(word, bit);
        // The worker that takes a segment's last chunk does not mark it
        // (that cost the warps of 16-64-byte requests two more round trips
        // to memory); the first one to find it full does, below.
        if ((old & bit) == 0u) return segment * 32u + spot;
        const std::uint32_t next = bits::next_free_spot(old, spot, n);
        if (next == n) {
          mark_segment_full(acc, e, word, segment, n);
          if (++full_seen > segments + full_words_bound) return g.chunks;
          break;
        }
        spot = next;
      }
      segment = (segment + 1u) % segments;
    }
  }

  // I5. No fence between marking and re-reading: the mark is a hint that a
  // reservation looks past (take_in_segments), so a mark that the re-read
  // misses costs a probe, never a chunk.
  template <class Acc>
  MANYALLOC_FN static void mark_segment_full(const Acc& acc, PageEntry& e, std::uint32_t* word,
                                             std::uint32_t segment, std::uint32_t n) {
    const std::uint32_t bit = 1u << segment;
    acc.atomic_or(&e.mask, bit);
    if (acc.load(word) != bits::low_mask(n)) acc.atomic_and(&e.mask, ~bit);
  }

  // --- free (6.2) --------------------------------------------------------------
  // The chunk at byte `offset` of a page of geometry `g`, split into
  // `chunk_size` chunks: its index, or g.chunks when the offset is not a
  // chunk's start.
  MANYALLOC_FN static std::uint32_t chunk_index(const PageGeometry& g, std::uint32_t chunk_size,
                                                std::uint32_t offset) {
    const std::uint32_t index = small_quotient(offset, chunk_size);
    return index * chunk_size == offset && index < g.chunks ? index : g.chunks;
  }
  // The bit-field word that holds chunk `index`'s bit: the table's mask of
  // a flat page, its segment's in-page word of a hierarchical one.
  MANYALLOC_FN static std::uint32_t bit_word(const PageGeometry& g, std::uint32_t index) {
    return g.hierarchical ? index / 32u : 0u;
  }

  // Clears `bits` of bit-field word `word` (bit_word) of `page`; returns
  // the word as it was. With Config::ordered_frees the clear is a release:
  // it publishes the freeing lanes' writes to their chunks before another
  // worker can find the chunks free and take them.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t clear_bits(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                               const PageGeometry& g, std::uint32_t word, std::uint32_t bits) {
    std::uint32_t* const bit_field = g.hierarchical ? segment_word(h, page, word) : &h.pages[page].mask;
    return Config::ordered_frees ? acc.atomic_and_release(bit_field, ~bits) : acc.atomic_and(bit_field, ~bits);
  }
  // A clear that found hierarchical segment `word` full (`old`) takes the
  // segment's full mark away (I5).
  template <class Acc>
  MANYALLOC_FN static void unmark_full_segment(const Acc& acc, PageEntry& e, const PageGeometry& g,
                                               std::uint32_t word, std::uint32_t old) {
    if (g.hierarchical && old == bits::low_mask(g.chunks_in_segment(word))) acc.atomic_and(&e.mask, ~(1u << word));
  }
  // A return of reservations that found the page's fill at `before`: when
  // the page was full (and not locked), the free made room and the page's
  // full mark goes. Returns whether it did.
  template <class Acc>
  MANYALLOC_FN static bool unmark_full_page(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                            const PageGeometry& g, std::uint32_t before) {
    if (before < g.chunks || before >= page_locked) return false;
    mark_page_not_full(acc, h, page);
    return true;
  }

  struct FreeResult {
    Misuse misuse = Misuse::none;  // this lane's chunk was freed by a lower lane of its group too
    std::uint32_t stale = 0;       // bits of the word found already clear: the group's, at its lowest lane
    bool made_room = false;        // at the group's lowest lane: the page was full before these frees
  };

  // Groups of at most this many lanes (a page of 1 KiB chunks holds four)
  // gather their bits with shuffles of the whole warp while its lanes are
  // still together (gather_small_groups); larger groups (smaller chunks)
  // reduce theirs within the group (free_chunks). Either way one lane
  // clears the group's bits with one atomic and returns their reservations
  // with another: one atomic per lane on one word queues up in memory
  // (docs/results/heap/ab/2026-11-25-scatter-free; for groups of up to
  // four, docs/results/heap/peers/scatter_release_pair).
  static constexpr std::uint32_t gathered_group_max = 4;

  MANYALLOC_FN static std::uint32_t chunk_bit(const PageGeometry& g, std::uint32_t index) {
    return 1u << (g.hierarchical ? index % 32u : index);
  }

  // Called by all `lanes` together, right after match_any formed their
  // groups (`group`: this lane's): every lane of a group of 2 to
  // gathered_group_max lanes gets the OR of their bits (`bit`: this lane's),
  // every other lane its own bit. It takes gathered_group_max - 1 shuffles
  // of the whole warp, where a reduction per group would run once per
  // distinct group, one group after the other (eight of them for a warp
  // freeing 1 KiB chunks). The lanes then meet at a barrier, so that the
  // lowest lane's atomics come after every lane's writes to its chunk:
  // its release (the clear with ordered frees, the return with
  // resetfreedpages or on a page of one chunk) orders them as each lane's
  // own release would, and with
  // relaxed frees a lane's own fence before its free (scatter_config.hpp)
  // still comes before the clear of its bit. A shuffle alone orders no
  // memory access.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t gather_small_groups(const Acc& acc, std::uint32_t lanes, std::uint32_t group,
                                                        std::uint32_t bit) {
    const std::uint32_t me = acc.lane_id();
    const std::uint32_t size = bits::popcount(group);
    const bool small = size > 1u && size <= gathered_group_max;
    if (acc.ballot(lanes, small) == 0u) return bit;  // the same answer in every lane of `lanes`
    std::uint32_t others = small ? group & ~(1u << me) : 0u;
    std::uint32_t all = bit;
    for (std::uint32_t i = 1; i < gathered_group_max; ++i) {
      const std::uint32_t from = others != 0u ? heap::acc::lowest_lane(others) : me;
      all |= acc.shfl(lanes, bit, from);
      others &= others - 1u;
    }
    acc.sync_lanes(lanes);
    return all;
  }

  // Frees chunks of one page with one atomic per bit-field word and one on
  // the page's fill (on a page of one chunk that one alone,
  // free_only_chunk). Called by every lane of `group`, the lanes freeing
  // chunks `index` (valid, chunk_index) of `page`, of geometry `g` (the
  // caller's, computed once per free), whose bits share one bit-field word
  // (bit_word). The lowest lane does the atomics for all: the 32 lanes of
  // a warp freeing 16-byte chunks cost two atomics, not 64
  // ([Steinberger2012] 6.2 frees one chunk per call). `gathered` is what
  // gather_small_groups gave this lane; it must be the group's OR in a
  // group of 2 to gathered_group_max lanes (else the lowest lane clears
  // only its own bit), and is unused in other groups.
  // A bit already clear (`stale`: a chunk freed twice or never handed out)
  // is not counted, so nothing changes for it.
  template <class Acc>
  MANYALLOC_FN static FreeResult free_chunks(const Acc& acc, const HeapLayout& h, std::uint32_t group,
                                             std::uint32_t page, const PageGeometry& g, std::uint32_t index,
                                             std::uint32_t gathered) {
    const std::uint32_t word = bit_word(g, index);
    const std::uint32_t bit = chunk_bit(g, index);
    FreeResult r;
    std::uint32_t bits = bit;
    if (group != (1u << acc.lane_id())) {  // a lane alone needs no collective
      if (bits::popcount(group) <= gathered_group_max) {
        bits = gathered;  // gathered while the warp was together, its writes ordered by the barrier there
      } else {
        // The barrier orders every lane's writes to its chunk before the
        // lowest lane's release below (the clear of their bits), as each
        // lane's own release would.
        acc.sync_lanes(group);
        bits = acc.reduce_or(group, bit);
      }
      // Two lanes freeing one chunk: the lowest of them frees it, the others
      // free it a second time.
      if (bits::popcount(bits) != bits::popcount(group)) {
        const std::uint32_t same = acc.match_any(group, bit);
        if (acc.lane_id() != heap::acc::lowest_lane(same)) r.misuse = Misuse::double_free;
      }
      if (acc.lane_id() != heap::acc::lowest_lane(group)) return r;
    }
    if (!g.keeps_bits()) return free_only_chunk(acc, h, page, g);
    PageEntry& e = h.pages[page];
    const std::uint32_t old = clear_bits(acc, h, page, g, word, bits);
    std::uint32_t before = 0, freed = 0;
    if constexpr (Config::resetfreedpages) {
      // A page whose fill reaches 0 may at once be reset and split anew (a
      // claim, a run): the bits must be clear before the
      // reservations return (I2), or the clear lands on the new split
      // (GPU test NoMemoryLossWithResetFreedPages: chunks handed out twice).
      // So must the segment's full mark go (I5): a late clear of it landed
      // on the mask of the page's next split (a flat page's taken chunk then
      // handed out again) or of a run's first page (its length). The
      // release below orders both.
      freed = bits::popcount(old & bits);
      unmark_full_segment(acc, e, g, word, old);
      if (freed != 0u) before = acc.atomic_sub_release(&e.fill, freed);
    } else {
      // A split page keeps its split (I2): the reservations go back at the
      // same time as the clear, not once it is done, one round trip to
      // memory instead of two. A worker whose reservation gets ahead of the
      // clear walks on until it sees the bit (take_in_mask).
      const std::uint32_t asked = bits::popcount(bits);
      before = acc.atomic_sub(&e.fill, asked);
      freed = bits::popcount(old & bits);
      // Bits that were clear already (a double free): their reservations
      // were not ours to return; add them back.
      if (freed != asked) acc.atomic_add(&e.fill, asked - freed);
    }
    r.stale = bits & ~old;
    if constexpr (!Config::resetfreedpages) unmark_full_segment(acc, e, g, word, old);
    if (freed == 0u) return r;
    r.made_room = unmark_full_page(acc, h, page, g, before);
    if (Config::resetfreedpages && before == freed) try_reset(acc, h, page);
    return r;
  }

  // free_chunks on a page of one chunk, which keeps no bit (I2): the return
  // of the page's one reservation frees the chunk, one atomic where a page
  // of more chunks takes two (the clear and the return). The return is then
  // the free's release where the clear would be one (ordered frees), and
  // where the return is one anyway (resetfreedpages). Such a page's fill is
  // only ever 0, 1 or a reset's lock (I4): reservations are CAS(0, 1) and
  // fail without touching it. So a return that finds 0 or the lock frees a
  // chunk that is not handed out: it is added back and reported as a stale
  // bit. (A second free after the chunk was handed out again frees the new
  // holder's chunk, as on a page of more chunks.)
  template <class Acc>
  MANYALLOC_FN static FreeResult free_only_chunk(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                                 const PageGeometry& g) {
    FreeResult r;
    std::uint32_t* const fill = &h.pages[page].fill;
    const std::uint32_t before =
        Config::ordered_frees || Config::resetfreedpages ? acc.atomic_sub_release(fill, 1u) : acc.atomic_sub(fill, 1u);
    if (before == 0u || before >= page_locked) {
      acc.atomic_add(fill, 1u);
      r.stale = 1u;
      return r;
    }
    r.made_room = unmark_full_page(acc, h, page, g, before);
    if (Config::resetfreedpages && before == 1u) try_reset(acc, h, page);
    return r;
  }

  // One worker frees the chunk at byte `offset` of a page split into
  // chunks. Returns Misuse::none, or what was wrong (nothing is changed
  // then). `made_room` (when given) is set when the page was full before.
  template <class Acc>
  MANYALLOC_FN static Misuse free_chunk(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                        std::uint32_t chunk_size, std::uint32_t offset,
                                        bool* made_room = nullptr) {
    const PageGeometry g = page_geometry(pagesize, chunk_size);
    const std::uint32_t index = chunk_index(g, chunk_size, offset);
    if (index == g.chunks) return Misuse::not_a_chunk_start;
    const FreeResult r = free_chunks(acc, h, 1u << acc.lane_id(), page, g, index, chunk_bit(g, index));
    if (made_room != nullptr) *made_room = r.made_room;
    return r.stale != 0u ? Misuse::double_free : r.misuse;
  }

  // Undoes a reservation that could not be used on a page of `chunks`
  // chunks. Whoever takes `fill` to 0 tries the reset, also here: a failed
  // reservation may have been counted when the page's last chunk was freed,
  // so that free saw fill 2, not 1. Likewise whoever takes `fill` below
  // `chunks` clears the page's full mark: the worker that filled the page
  // may have re-read a fill that still counted this reservation, after the
  // free that made room had cleared the mark already (region words in
  // scatter/invariants.hpp). Left set, such a mark stayed on a page with room until
  // the page filled up again; a region of such pages is skipped as closed
  // (scatter_anomalies.md: 1-3 of them after each churn repetition).
  // A group's leader gives back `k` at once (group_take.hpp): the same rules,
  // for a return that takes fill from `before` to `before - k`.
  template <class Acc>
  MANYALLOC_FN static void release_reservations(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                                std::uint32_t chunks, std::uint32_t k) {
    const std::uint32_t before = acc.atomic_sub(&h.pages[page].fill, k);
    if (before >= chunks && before - k < chunks) mark_page_not_full(acc, h, page);
    if (Config::resetfreedpages && before == k) try_reset(acc, h, page);
  }
  template <class Acc>
  MANYALLOC_FN static void release_reservation(const Acc& acc, const HeapLayout& h, std::uint32_t page,
                                               std::uint32_t chunks) {
    release_reservations(acc, h, page, chunks, 1u);
  }

  // Gives an emptied page back its unused state (6.2, free lines 10-16),
  // with resetfreedpages: under the page lock (I4), so that no reservation
  // succeeds meanwhile. Under the lock a split page's size cannot change by
  // anything but this reset, and a fill of 0 means none of its chunks is
  // allocated, whatever size it has: it goes to 0. A page that is not split
  // is left as it is. Its mask is left too: the claim of a page at 0 zeroes
  // it (I1b), a run sets it (I3).
  // A page at 0 may be claimed while we hold the lock: the claimer's
  // reservation then fails on the lock, and the page would stay split with
  // no chunk in use and no free to come that could reset it (GPU tests
  // GpuCoalescing.FullOccupancyAllocWriteFree, HeapTest.ChurnRandomSizesUpToFourPages:
  // pages split and empty after everything was freed). So when our unlock
  // takes fill to 0, the page is looked at again, a split in progress
  // waited for (the claimer's size may become visible after its failed
  // reservation did). (When the unlock does not take fill to 0, a
  // reservation that failed on the lock is still to be given back, and
  // that return, taking fill to 0, resets the page.) A page split since
  // our unlock whose claimer has not reserved yet is reset too; its
  // claimer's reservation then fails its re-check and it searches on.
  template <class Acc>
  MANYALLOC_FN static void try_reset(const Acc& acc, const HeapLayout& h, std::uint32_t page) {
    PageEntry& e = h.pages[page];
    for (;;) {
      if (acc.atomic_cas(&e.fill, 0u, page_locked) != 0u) return;  // reused meanwhile
      acc.fence();  // the size read under the lock, not before it
      if (settled(acc.load(&e.chunk_size)) != 0u) acc.store(&e.chunk_size, 0u);
      if (acc.atomic_sub_release(&e.fill, page_locked) != page_locked) return;
      std::uint32_t chunk = acc.load(&e.chunk_size);
      if (chunk == claiming) chunk = wait_for_claim(acc, e);
      if (settled(chunk) == 0u) return;
    }
  }
};

// init_heap's pass over pages [begin, end) of a heap whose metadata it has
// just zeroed: every bit-field word a split can use is zeroed and the page
// is marked clean (I1c). Plain stores: no worker runs yet, and the back
// end's map_ranges returns once they are done.
template <class Config>
struct MarkPagesClean {
  HeapLayout layout;
  MANYALLOC_FN std::uint64_t operator()(std::uint64_t begin, std::uint64_t end) const {
    constexpr std::uint32_t words = max_segments(Config::pagesize);
    for (std::uint64_t p = begin; p < end; ++p) {
      const auto page = static_cast<std::uint32_t>(p);
      for (std::uint32_t s = 0; s < words; ++s) *PageOps<Config>::segment_word(layout, page, s) = 0u;
      layout.pages[page].chunk_size = clean_page;
      layout.pages[page].fill = 1u;  // the reservation of the chunk its split takes (I1c)
    }
    return 0;
  }
};

// init_heap's pass after MarkPagesClean (whose writes of every page's last
// bytes push the metadata out of the GPU's L2): reads the metadata that a
// launch on the fresh heap reads first (the shared word, and the page
// entries and region words of block 0, the active block after init) over
// pages [begin, end) of block 0, so that as much of it as the L2 holds is
// there rather than in DRAM when the user's first kernel runs: its first
// read of a page entry then costs an L2 hit, as on every later launch. The
// heap's creation pays for it, not the user's first launch (as
// acc::Cuda::fill_zero does for the pool's first touch). The sum returned
// keeps the loads.
template <class Config>
struct ReadActiveBlockMetadata {
  HeapLayout layout;
  MANYALLOC_FN std::uint64_t operator()(std::uint64_t begin, std::uint64_t end) const {
    std::uint64_t sum = begin == 0 ? layout.shared->active_block : 0u;
    for (std::uint64_t p = begin; p < end; ++p) {
      const PageEntry& e = layout.pages[p];
      sum += e.chunk_size + e.fill + e.mask;
      if (p % Config::regionsize == 0) sum += layout.regions[p / Config::regionsize];
    }
    return sum;
  }
};

}  // namespace manyalloc::heap::detail
