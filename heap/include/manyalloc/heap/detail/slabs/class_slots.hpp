// Handing out chunks of one size class (C1-C6 of slabs/invariants.hpp). One
// elected lane per group of same-class lanes (the leader) calls gather()
// for the whole group and gets up to `max_extents` extents: runs of
// consecutive chunk indices of one segment, whose chunk bits are set (S3:
// by the claim, or for a class with C6 or with its bits in the slab's state
// (S2) by the refill that opened the segment). Order of the sources:
//   1. whole private pages, when the group needs at least a page of chunks
//      (a warp of 32 lanes asking for 4 KiB takes two fresh pages itself);
//   2. its shard's slot: one 64-bit atomic add claims chunks (C1); the
//      unique claim that crosses the segment's end refills the slot (C2);
//   3. when no page is left: the other shards' segments of the class that
//      still hand out chunks;
//   4. (each lane still without a chunk, from_freed_chunks, for classes of
//      at least Config::reuse_freed_chunks_from_bytes, when its group's
//      refill found no free page) a freed chunk of a slab of its class (C6);
//   5. (from_larger_class) a chunk of a larger class whose flag (C7) says
//      a slot of it may have room;
//   6. (lanes of those classes that skipped 4) from_freed_chunks;
//   7. (every lane still without a chunk) a freed chunk of a slab of a
//      larger class with C6, in a bounded part of the pool.
#pragma once

#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/math.hpp"
#include "manyalloc/heap/detail/slabs/page_pool.hpp"
#include "manyalloc/heap/detail/slabs/size_classes.hpp"
#include "manyalloc/heap/detail/slabs/invariants.hpp"

namespace manyalloc::heap::detail::slabs {

// A run of `count` consecutive chunk indices from `start` in the segment
// whose first page is `base` (chunk i lies in page base + i / chunks_per_page).
struct Extent {
  std::uint32_t base = 0;
  std::uint32_t start = 0;
  std::uint32_t count = 0;  // 0: no extent

  MANYALLOC_FN std::uint64_t pack() const {
    return (static_cast<std::uint64_t>(base) << 32) | (static_cast<std::uint64_t>(start) << 8) | count;
  }
  MANYALLOC_FN static Extent unpack(std::uint64_t v) {
    return {static_cast<std::uint32_t>(v >> 32), static_cast<std::uint32_t>(v >> 8) & 0xffffffu,
            static_cast<std::uint32_t>(v) & 0xffu};
  }
};

template <class Config>
struct ClassSlots {
  static constexpr std::uint32_t slab_bytes = Config::slab_bytes;
  static constexpr std::uint32_t max_extents = 6;
  // Hint words (32 words of the page bitmap each) a refill reads looking
  // for an empty word before it settles for a shorter segment.
  static constexpr std::uint32_t refill_hint_words = 8;
  // `partial` hint words (32 pages each) a request reads, and hinted pages
  // it visits, looking for a freed chunk of a larger class before it fails
  // (C6's last resort): the search is bounded, as every failing request of a
  // full pool makes it.
  static constexpr std::uint32_t larger_freed_search_words = 64;
  static constexpr std::uint32_t larger_freed_search_pages = 128;
  // A refill that finds no page shrinks the segments of every class, not only
  // of the classes whose shrink_flag is set, once in this many (C7).
  static constexpr std::uint32_t full_shrink_every = 64;
  using Classes = SizeClasses<Config::classes_per_doubling>;
  static constexpr std::uint32_t class_count = Classes::count(slab_bytes);
  // Chunks of the longest segment (the smallest class's): an extent's start
  // lies below it, and the hand-over of extents keeps bits 28-31 for itself.
  static constexpr std::uint32_t max_segment_chunks =
      (slab_bytes / class_granule) << segment_log_pages(slab_bytes / class_granule, Config::segment_chunks);
  static_assert(max_segment_chunks <= (1u << 20),
                "SizeClassSlabs: a segment of the smallest class must hold at most 2^20 chunks "
                "(lower segment_chunks or slab_bytes)");

  MANYALLOC_FN static std::uint32_t class_bytes(std::uint32_t cls) { return Classes::bytes(cls); }

  // C6 serves the classes from this one on (Config::reuse_freed_chunks_from_bytes).
  static constexpr std::uint32_t reuse_from = Config::reuse_freed_chunks_from_bytes;
  static constexpr std::uint32_t first_reuse_class =
      reuse_from <= class_granule                      ? 0u
      : reuse_from > Classes::bytes(class_count - 1u) ? class_count
                                                       : Classes::of(reuse_from);
  // (Written without `cls >= 0`, which compilers flag for the every-class configuration.)
  MANYALLOC_FN static constexpr bool reuses(std::uint32_t cls) {
    if constexpr (first_reuse_class == 0u) {
      return true;
    } else {
      return cls >= first_reuse_class;
    }
  }

  // Divisions by a class's size or chunk count take small_quotient (math.hpp):
  // the configuration's concept bounds slab_bytes so that offsets and chunk
  // indices stay within its range.
  MANYALLOC_FN static std::uint32_t chunks_per_page(std::uint32_t bytes) { return small_quotient(slab_bytes, bytes); }
  MANYALLOC_FN static std::uint32_t per_page(std::uint32_t cls) { return chunks_per_page(class_bytes(cls)); }

  // S2: a slab of class `cls` keeps one bit per chunk in `used` instead of a
  // count (the class has at most state_bit_chunks chunks per page, and a
  // slab of several pages at most that many chunks in all).
  // (Classes grow with their index: a comparison, no division.)
  static constexpr std::uint32_t first_class_with_bits_in_state() {
    std::uint32_t c = 0;
    while (c < class_count && slab_bytes / Classes::bytes(c) > state_bit_chunks) ++c;
    return c;
  }
  MANYALLOC_FN static bool bits_in_state(std::uint32_t cls) { return cls >= first_class_with_bits_in_state(); }

  // Whether a state whose class half reads c (class + 1, S0) holds bits.
  MANYALLOC_FN static bool state_has_bits(std::uint32_t c) {
    return c != 0u && c <= class_count && bits_in_state(c - 1u);
  }

  // The chunks not free of a slab whose state reads (c, used): `used`
  // itself, or its set bits (S2).
  MANYALLOC_FN static std::uint32_t in_use(std::uint32_t c, std::uint32_t used) {
    return state_has_bits(c) ? bits::popcount(used) : used;
  }

  // One of the set bits of `free` (not 0) for a lane to take: the lanes of
  // a warp start at different bits, so that they do not all race for one.
  template <class Acc>
  MANYALLOC_FN static std::uint32_t spread_pick(const Acc& acc, std::uint32_t free) {
    const std::uint32_t later = free & ~bits::low_mask(acc.lane_id() * 7u % 32u);
    return 1u << (bits::find_first_set(later != 0u ? later : free) - 1u);
  }

  // Frees chunks `freed` (bits of the state, S2) of the slab of class `cls`
  // whose first page is `first` and whose shape is `run` pages: one AND on
  // its state word (no release: the callers free chunks no worker wrote).
  // The AND that leaves no bit set retires the slab (bits and count are one
  // word, so no other order is needed); one that frees a chunk of a slab
  // whose chunks were all in use sets its C6 hint. Returns the bits before.
  // (SizeClassSlabs::free_chunk does the same for a warp's frees, beside the
  // other classes' path.)
  template <class Acc>
  MANYALLOC_FN static std::uint32_t free_state_bits(const Acc& acc, const SlabLayout& h, std::uint32_t cls,
                                                    std::uint32_t first, std::uint32_t run, std::uint32_t freed) {
    const std::uint64_t keep = ~(static_cast<std::uint64_t>(freed) << 32);
    const std::uint32_t old = state_used(acc.atomic_and64(state_of(h.pages[first]), keep));
    const std::uint32_t all = bits::low_mask(run * per_page(cls));
    if ((old & freed) != 0u) {
      if ((old & ~freed) == 0u) {
        retire(acc, h, first, run);
      } else if (reuses(cls) && (old & all) == all) {
        mark_partial(acc, h, first);
      }
    }
    return old;
  }

  MANYALLOC_FN static std::byte* address(const SlabLayout& h, std::uint32_t cls, const Extent& e,
                                         std::uint32_t offset) {
    const std::uint32_t n = per_page(cls);
    const std::uint32_t index = e.start + offset;
    const std::uint32_t page = small_quotient(index, n);
    return h.page_data(e.base + page) + static_cast<std::size_t>(index - page * n) * class_bytes(cls);
  }

  // Calls f(word, mask) for each bitmap word of chunks [from, to) of the
  // segment whose first page is `base` (a slab per page of n chunks), with
  // the mask of those chunks' bits in the word.
  template <class F>
  MANYALLOC_FN static void for_each_bit_word(const SlabLayout& h, std::uint32_t n, std::uint32_t base,
                                             std::uint32_t from, std::uint32_t to, F f) {
    for (std::uint32_t index = from; index < to;) {
      const std::uint32_t page = small_quotient(index, n);
      const std::uint32_t in_page = index - page * n;
      std::uint32_t take = to - index;
      if (take > n - in_page) take = n - in_page;
      if (take > 32u - in_page % 32u) take = 32u - in_page % 32u;
      f(h.chunk_word(base + page, n, in_page), bits::low_mask(take) << (in_page % 32u));
      index += take;
    }
  }

  // Marks the chunks of segment extent `e` allocated (S3; a slab per page):
  // one atomic OR per bitmap word. For classes without C6 whose slabs count
  // with a number only: for the others the refill has set them all.
  template <class Acc>
  MANYALLOC_FN static void set_bits(const Acc& acc, const SlabLayout& h, std::uint32_t cls, const Extent& e) {
    if (reuses(cls) || bits_in_state(cls)) return;
    for_each_bit_word(h, per_page(cls), e.base, e.start, e.start + e.count,
                      [&](std::uint32_t* word, std::uint32_t mask) { acc.atomic_or(word, mask); });
  }

  // Clears the bits of chunks [from, to) of the one-page slab `page`: one
  // atomic AND per bitmap word (frees of other chunks of a word may run at
  // the same time).
  template <class Acc>
  MANYALLOC_FN static void clear_bits(const Acc& acc, const SlabLayout& h, std::uint32_t n, std::uint32_t page,
                                      std::uint32_t from, std::uint32_t to) {
    for_each_bit_word(h, n, page, from, to,
                      [&](std::uint32_t* word, std::uint32_t mask) { acc.atomic_and(word, ~mask); });
  }

  // Makes pages [first, first + k) slabs of `cls` with every chunk counted
  // as not free (S2): a slab per page (a segment's pages, whose chunk bits
  // are all set here with C6 or in the state, else by the claims, S3), or
  // one slab of all k pages (a group's own pages, at most 32 chunks, whose
  // bits are in the state). An entry's first half (class and count or bits,
  // S0; run and lead) is one 16-byte store, and so are every four words of
  // chunk bits.
  // The caller orders these stores before the chunks reach other workers
  // (a fence before the slot exchange; the hand-over for private pages).
  enum class SlabShape { page_each, one_slab };

  template <class Acc>
  MANYALLOC_FN static void init_pages(const Acc& acc, const SlabLayout& h, std::uint32_t cls, std::uint32_t first,
                                      std::uint32_t k, SlabShape shape) {
    const bool one = shape == SlabShape::one_slab;
    const std::uint32_t n = per_page(cls);
    const bool in_state = bits_in_state(cls);
    for (std::uint32_t p = first; p < first + k; ++p) {
      if (reuses(cls) && !one && !in_state) {
        for (std::uint32_t w = 0; w * 32u < n; w += 4u) {
          auto* four = reinterpret_cast<std::uint64_t*>(h.chunk_word(p, n, w * 32u));
          // Word w of a page of n chunks, all set: the bits of word w that name chunks.
          auto all_set = [n](std::uint32_t w) -> std::uint64_t { return PagePool::valid_bits(w, n); };
          acc.store128(four, all_set(w) | all_set(w + 1u) << 32, all_set(w + 2u) | all_set(w + 3u) << 32);
        }
      }
      const std::uint32_t chunks = !one ? n : p == first ? k * n : 0u;
      const std::uint32_t used = in_state ? bits::low_mask(chunks) : chunks;
      const std::uint64_t shape_word = (one ? k : 1u) | static_cast<std::uint64_t>(one ? p - first : 0u) << 32;
      acc.store128(state_of(h.pages[p]), state(cls + 1u, used), shape_word);
    }
  }

  // A word below the large-request zone picked by a hash of a and b, where
  // the searches of runs of at most 32 pages start (P4).
  MANYALLOC_FN static std::uint32_t hash_start(const SlabLayout& h, std::uint32_t a, std::uint32_t b) {
    const std::uint64_t x = (static_cast<std::uint64_t>(a) * 2654435761u) ^ (static_cast<std::uint64_t>(b) * 40503u);
    return static_cast<std::uint32_t>(x % h.small_words);
  }
  // A second hash of a and b: the place in hash_start's word where a claim
  // tries first (PagePool::claim_in_word), so that claims of different
  // (a, b) that start at one word mostly try different places. Equal (a, b)
  // give the same word and the same place.
  MANYALLOC_FN static std::uint32_t hash_place(std::uint32_t a, std::uint32_t b) {
    std::uint32_t x = a * 0x85ebca6bu ^ (b + 0x9e3779b9u);
    x ^= x >> 15;
    x *= 0xc2b2ae35u;
    return x ^ (x >> 13);
  }

  struct Gathered {
    Extent extents[max_extents];
    std::uint32_t count = 0;
    std::uint32_t need = 0;
    bool dry = false;  // a refill of the group's own slot found no free page (C6 may help)
    MANYALLOC_FN bool room(std::uint32_t n = 1) const { return count + n <= max_extents; }
    MANYALLOC_FN void add(const Extent& e) {
      extents[count++] = e;
      need -= e.count;
    }
  };

  // 1. Whole pages for the group alone, as one slab (S2) of at most 32
  // chunks: its chunk bits are in the first page's state, set by init_pages.
  template <class Acc>
  MANYALLOC_FN static void take_private_pages(const Acc& acc, const SlabLayout& h, std::uint32_t cls,
                                              std::uint32_t start, std::uint32_t place, Gathered& g) {
    const std::uint32_t n = per_page(cls);
    std::uint32_t k = g.need / n;
    if (k * n > 32u) k = 32u / n;  // a slab of several pages has at most 32 chunks: its bits are the state (S2)
    if (k == 0u || !g.room()) return;
    const std::uint32_t page = PagePool::claim_in_word(acc, h, k, start, place);
    if (page == no_page) return;
    // No fence: the pages reach other workers only through the group's
    // hand-over (a warp barrier) and what the user does to pass pointers on.
    init_pages(acc, h, cls, page, k, SlabShape::one_slab);
    g.add(Extent{page, 0u, k * n});
  }

  // C4's demand-sized segments: log2 of the pages of the segment that
  // replaces `seen` when the slot's cursor reads `cursor`, the chunks
  // claimed from the slot so far. Enough pages for the chunks claimed past
  // the old segment's end, at least twice the old segment's, one page where
  // the slot had none; at most `full`.
  MANYALLOC_FN static std::uint32_t demand_log_pages(std::uint32_t n, std::uint32_t full, const SlotWord& seen,
                                                     std::uint32_t cursor) {
    const std::uint32_t old_end = seen.base_plus_one != 0u ? n << seen.log_pages : 0u;
    const std::uint32_t waiting = cursor - old_end;
    std::uint32_t log = seen.base_plus_one != 0u ? seen.log_pages + 1u : 0u;
    while (log < full && (n << log) < waiting) ++log;
    return log < full ? log : full;
  }

  // A fresh segment for slot (cls, shard), whose claim `seen` crossed the
  // end (C2). Takes what the group still needs from it first.
  template <class Acc>
  MANYALLOC_FN static bool refill(const Acc& acc, const SlabLayout& h, std::uint32_t cls, std::uint32_t shard,
                                  const SlotWord& seen, Gathered& g) {
    std::uint64_t* slot = h.slot(cls, shard);
    const std::uint32_t n = per_page(cls);
    const std::uint32_t start = hash_start(h, cls * 977u + shard, seen.generation);
    // The segment being replaced is used up: its pages leave the open count (C4).
    if (seen.base_plus_one != 0u) acc.atomic_sub(&h.shared->open_pages.value, 1u << seen.log_pages);
    // Reserve the segment's pages in the open count before claiming them,
    // and shorten it to what the budget had room for: refills of many slots
    // at once (a fresh heap, mixed sizes) then cannot all see room and
    // overshoot the budget together. One page is always allowed.
    // With Config::demand_sized_segments the slot word is read beside the
    // reservation (both in flight together) to size the segment by its
    // waiting demand (C4).
    const std::uint32_t full = segment_log_pages(n, Config::segment_chunks);
    const std::uint32_t reserved = 1u << full;
    std::uint64_t now = 0;
    if constexpr (Config::demand_sized_segments) now = acc.load64(slot);
    const std::uint32_t open = acc.atomic_add(&h.shared->open_pages.value, reserved);
    std::uint32_t log = full;
    if constexpr (Config::demand_sized_segments) log = demand_log_pages(n, full, seen, SlotWord::decode(now).cursor);
    while (log > 0u && open + (1u << log) > h.open_budget) --log;
    // Where the pages come from, cheapest first (a refill keeps its slot's
    // waiters waiting, so it reads few words): the hashed word; an empty
    // word found through the hints near it; a shorter segment in the hashed
    // word; one page anywhere. A segment of several pages never comes from
    // a search of the words themselves: once single pages are spread over
    // most words, such searches read thousands of words one after another.
    const std::uint32_t limit = PagePool::usable(acc, h);
    std::uint32_t page = PagePool::try_word(acc, h, start, 1u << log, limit);
    if (page == no_page && log > 0u)
      page = PagePool::claim_in_empty_word(acc, h, 1u << log, 0u, h.small_words, start, refill_hint_words);
    for (std::uint32_t l = log; page == no_page && l-- > 0u;) {
      page = PagePool::try_word(acc, h, start, 1u << l, limit);
      if (page != no_page) log = l;
    }
    if (page == no_page) {
      page = PagePool::claim_in_word(acc, h, 1u, start, hash_place(cls, seen.generation));
      log = 0;
    }
    // Keep only the reservation of the pages claimed.
    const std::uint32_t kept = page != no_page ? 1u << log : 0u;
    if (kept != reserved) acc.atomic_sub(&h.shared->open_pages.value, reserved - kept);
    // No page left: the open segments give back the pages they have not
    // started (end_segment's shrink; C7 says which classes), then one more
    // try when some came back.
    if (page == no_page) {
      const std::uint32_t dry = acc.atomic_add(&h.shared->dry_refills, 1u);
      if (acc.load(&h.shared->open_pages.value) != 0u &&
          shrink_segments(acc, h, dry % full_shrink_every == 0u) != 0u) {
        page = PagePool::claim_in_word(acc, h, 1u, start, hash_place(cls, seen.generation));
        log = 0;
        if (page != no_page) acc.atomic_add(&h.shared->open_pages.value, 1u);
      }
    }
    SlotWord next{seen.generation + 1u, 0u, 0u, 0u};
    if (page != no_page) {
      init_pages(acc, h, cls, page, 1u << log, SlabShape::page_each);
      const std::uint32_t end = n << log;
      const std::uint32_t take = g.need < end ? g.need : end;
      take_extent(acc, h, cls, Extent{page, 0u, take}, g);
      next.log_pages = log;
      next.base_plus_one = page + 1u;
      next.cursor = take;
    }
    acc.fence();
    acc.atomic_exch64(slot, next.encode());
    // C7's hints, after the exchange (the old value is not waited for).
    if (page != no_page) acc.atomic_or(&h.class_flags[cls], log > 0u ? room_flag | shrink_flag : room_flag);
    return page != no_page;
  }

  // A claimed extent of a segment goes to the group with its chunk bits set.
  template <class Acc>
  MANYALLOC_FN static void take_extent(const Acc& acc, const SlabLayout& h, std::uint32_t cls, const Extent& e,
                                       Gathered& g) {
    set_bits(acc, h, cls, e);
    g.add(e);
  }

  enum class SlotResult { served, dry, busy };

  // 2./3. Claims from slot (cls, shard). `wait`: wait for a refill in
  // progress instead of reporting busy.
  template <class Acc>
  MANYALLOC_FN static SlotResult from_slot(const Acc& acc, const SlabLayout& h, std::uint32_t cls,
                                           std::uint32_t shard, bool wait, Gathered& g) {
    std::uint64_t* slot = h.slot(cls, shard);
    const std::uint32_t n = per_page(cls);
    // A waiter retries as long as other workers refill the slot with fresh
    // segments (progress); it gives up after a few refills that found no
    // page (the slot stayed empty).
    for (std::uint32_t dry_refills = 0; dry_refills < 4u;) {
      const SlotWord seen = SlotWord::decode(acc.atomic_add64(slot, g.need));
      const std::uint32_t end = seen.base_plus_one == 0u ? 0u : n << seen.log_pages;
      if (seen.cursor <= end) {
        const std::uint32_t have = end - seen.cursor;
        if (have != 0u) {
          take_extent(acc, h, cls, Extent{seen.base_plus_one - 1u, seen.cursor, have < g.need ? have : g.need}, g);
        }
        if (g.need == 0u) return SlotResult::served;
        // We crossed the end: ours alone to refill (C2).
        if (!refill(acc, h, cls, shard, seen, g)) return SlotResult::dry;
        if (g.need == 0u) return SlotResult::served;
        if (!g.room(2)) return SlotResult::busy;
        continue;  // the new segment was smaller than the group
      }
      if (!wait) return SlotResult::busy;
      // Another worker is refilling this slot: wait for the exchange. After
      // many reads claim again anyway (a wrapped generation looks unchanged).
      std::uint64_t now = 0;
      for (int spin = 0; spin < 4096; ++spin) {
        now = acc.load64(slot);
        if (static_cast<std::uint32_t>(now >> 32) != seen.high()) break;
        acc.relax();
      }
      if (SlotWord::decode(now).base_plus_one == 0u) ++dry_refills;
    }
    return SlotResult::dry;
  }

  // Ends the segment of slot (cls, shard) if it still has chunks to hand
  // out: the slot is replaced by a CAS (so no claim is in between, C1), and
  // the pages free the chunks they will never hand out (with C6 their bits,
  // which the refill set, then `used`, as a free does; for bits in the
  // state both with one AND), so that each goes
  // back to the pool once its handed-out chunks are freed (S2), and until
  // then its unused chunks can be reused (C6).
  // Safe while workers allocate and free. Returns the chunks dropped.
  //   close: the slot becomes empty (release_open_segments).
  //   shrink: what a refill that found no page does (C5): the page the
  //     cursor is in stays in the slot when it still holds chunks in use,
  //     so its other chunks can still be handed out; only the pages after
  //     it go back. A page whose handed-out chunks have all come back is
  //     dropped as by close. Both choices are safe at any time; the check
  //     of `used` only picks the one that loses less.
  enum class SegmentEnd { close, shrink };

  template <class Acc>
  MANYALLOC_FN static std::uint32_t end_segment(const Acc& acc, const SlabLayout& h, std::uint32_t cls,
                                                std::uint32_t shard, SegmentEnd how) {
    std::uint64_t* slot = h.slot(cls, shard);
    const std::uint32_t n = per_page(cls);
    for (;;) {
      const std::uint64_t word = acc.load64(slot);
      const SlotWord seen = SlotWord::decode(word);
      const std::uint32_t end = seen.base_plus_one == 0u ? 0u : n << seen.log_pages;
      if (seen.cursor >= end) return 0;  // empty, or a refill is under way
      const std::uint32_t base = seen.base_plus_one - 1u;
      const std::uint32_t pages = 1u << seen.log_pages;
      const std::uint32_t at = seen.cursor / n;  // the page the cursor is in
      const std::uint32_t left_in_page = n - seen.cursor % n;
      const bool keep = how == SegmentEnd::shrink && left_in_page != n &&
                        in_use(cls + 1u, acc.load(&h.pages[base + at].used)) > left_in_page;
      if (keep && at + 1u == pages) return 0;  // nothing after the kept page
      SlotWord next{seen.generation + 1u, 0u, 0u, 0u};
      if (keep) {
        next.base_plus_one = base + at + 1u;
        next.cursor = seen.cursor % n;
      }
      if (acc.atomic_cas64(slot, word, next.encode()) != word) continue;
      acc.atomic_sub(&h.shared->open_pages.value, pages - (keep ? 1u : 0u));
      std::uint32_t dropped = 0;
      for (std::uint32_t p = keep ? at + 1u : at; p < pages; ++p) {
        const std::uint32_t drop = p == at ? left_in_page : n;
        dropped += drop;
        if (bits_in_state(cls)) {  // the chunks [n - drop, n), after the slot's exchange (as below)
          acc.fence();
          (void)free_state_bits(acc, h, cls, base + p, 1u, bits::low_mask(n) & ~bits::low_mask(n - drop));
          continue;
        }
        if (reuses(cls)) clear_bits(acc, h, n, base + p, n - drop, n);
        acc.fence();
        const std::uint32_t before = acc.atomic_sub(&h.pages[base + p].used, drop);
        if (before == drop) {
          retire(acc, h, base + p);
        } else if (reuses(cls) && before == n) {
          mark_partial(acc, h, base + p);
        }
      }
      return dropped;
    }
  }

  // Chunks that slot word `w` of class `cls` still hands out (0: no segment,
  // or its cursor has passed the end).
  MANYALLOC_FN static std::uint32_t segment_room(std::uint32_t cls, std::uint64_t w) {
    const SlotWord s = SlotWord::decode(w);
    if (s.base_plus_one == 0u) return 0u;
    const std::uint32_t end = per_page(cls) << s.log_pages;
    return s.cursor < end ? end - s.cursor : 0u;
  }

  // C5's shrink, for the classes whose shrink_flag is set (every class when
  // `every_class`), clearing the flags first (C7). Returns the chunks the
  // segments dropped. (The flags are read one by one: loads batched in an
  // array cost the alloc kernels stack and registers.)
  template <class Acc>
  MANYALLOC_FN static std::uint64_t shrink_segments(const Acc& acc, const SlabLayout& h, bool every_class) {
    std::uint64_t dropped = 0;
    for (std::uint32_t c = 0; c < class_count; ++c) {
      const std::uint32_t flags = acc.load(&h.class_flags[c]);
      if ((flags & shrink_flag) != 0u) acc.atomic_and(&h.class_flags[c], ~shrink_flag);
      else if (!every_class) continue;
      for (std::uint32_t s = 0; s < h.shards; ++s) dropped += end_segment(acc, h, c, s, SegmentEnd::shrink);
    }
    return dropped;
  }

  // ---- C6: freed chunks of live slabs ---------------------------------------
  // Sets the `partial` hint of slab `page`, whose count an update has just
  // lowered from its chunk count.
  template <class Acc>
  MANYALLOC_FN static void mark_partial(const Acc& acc, const SlabLayout& h, std::uint32_t page) {
    acc.atomic_or(&h.partial[page / 32u], 1u << (page % 32u));
  }

  // Chunks of the slab whose first page's entry is `e`, read beside a state
  // of class c + 1, when that class has C6 (0 for other pages: free, large,
  // or a slab of a class without C6, whose hint a search may clear).
  template <class Acc>
  MANYALLOC_FN static std::uint32_t chunks_of(const Acc& acc, const SlabPage& e, std::uint32_t c) {
    if (c == 0u || c > class_count || !reuses(c - 1u)) return 0u;
    return acc.load(&e.run) * per_page(c - 1u);
  }

  // Clears the hint of `page`, which was found with no free chunk, unless
  // a free has meanwhile given it one (the re-check after the clear; a clear
  // that finds the bit already clear leaves the re-check to whoever cleared it).
  template <class Acc>
  MANYALLOC_FN static void drop_partial_hint(const Acc& acc, const SlabLayout& h, std::uint32_t page) {
    // Waiting for the old value orders the re-read after the clear.
    if ((acc.atomic_and(&h.partial[page / 32u], ~(1u << (page % 32u))) & (1u << (page % 32u))) == 0u) return;
    const std::uint64_t now = acc.atomic_add64(state_of(h.pages[page]), 0u);
    const std::uint32_t c = state_cls(now);
    if (offers_freed_chunk(c, state_used(now), chunks_of(acc, h.pages[page], c))) mark_partial(acc, h, page);
  }

  // Whether a slab whose state reads (c, used) and that has `chunks` chunks
  // (0: not a slab of a class with C6) has a freed chunk for C6: in the bit
  // form a clear bit among its chunks (a reservation may hold a bit beyond
  // them, which the count of set bits would take for a chunk in use).
  MANYALLOC_FN static bool offers_freed_chunk(std::uint32_t c, std::uint32_t used, std::uint32_t chunks) {
    if (used == 0u || chunks == 0u) return false;
    if (state_has_bits(c)) return (~used & bits::low_mask(chunks)) != 0u;
    return used < chunks;
  }

  // Which slabs a search for freed chunks takes from: those of the class
  // asked for, or those of any larger class (C6's last resort).
  enum class FreedOf { same_class, larger_class };

  // Takes one freed chunk of slab `page` if it is a slab of `wanted` (or,
  // with larger_class, of a larger class) with free chunks (C6); nullptr
  // otherwise.
  template <class Acc>
  MANYALLOC_FN static std::byte* take_freed_chunk(const Acc& acc, const SlabLayout& h, std::uint32_t wanted,
                                                  std::uint32_t page, FreedOf of = FreedOf::same_class) {
    SlabPage& e = h.pages[page];
    std::uint64_t seen = acc.load64(state_of(e));
    std::uint32_t bit = 0;  // a slab with its chunk bits in the state: the bit the reservation sets
    for (;;) {
      const std::uint32_t c = state_cls(seen), used = state_used(seen);
      const std::uint32_t chunks = chunks_of(acc, e, c);  // `run` may be stale until the reservation holds
      // A stale `run` may name more chunks than the slab has: a bit taken
      // beyond them in the bit form is given back below.
      if (!offers_freed_chunk(c, used, chunks)) {
        drop_partial_hint(acc, h, page);
        return nullptr;
      }
      // Another class's slab with free chunks.
      if (of == FreedOf::same_class ? c != wanted + 1u : c <= wanted + 1u) return nullptr;
      std::uint64_t next = seen + (std::uint64_t{1} << 32);
      if (bits_in_state(c - 1u)) {  // the reservation is the chunk's bit (S2, S3)
        bit = spread_pick(acc, ~used & bits::low_mask(chunks));  // not 0 (offers_freed_chunk)
        next = seen | static_cast<std::uint64_t>(bit) << 32;
      }
      const std::uint64_t got = acc.atomic_cas64(state_of(e), seen, next);
      if (got == seen) break;
      seen = got;
    }
    // Reserved: the slab cannot retire or change shape now; read its shape again.
    const std::uint32_t cls = state_cls(seen) - 1u;  // the slab's class: the chunk keeps it (S2)
    const std::uint32_t n = per_page(cls);
    const std::uint32_t run = acc.load(&e.run);
    const std::uint32_t chunks = run * n;
    if (bits_in_state(cls)) {
      if ((bit & bits::low_mask(chunks)) != 0u) {
        acc.fence();  // the chunk is written after the reservation
        acc.atomic_add(&h.shared->reused_chunks, 1u);
        return address(h, cls, Extent{page, 0u, 0u}, bits::find_first_set(bit) - 1u);
      }
      // A shape that changed before the reservation: the bit names no
      // chunk; give it back as a free would. A free in between may have
      // found the slab's chunks all in use beside that bit and set no hint:
      // set it unless the slab retired.
      if ((free_state_bits(acc, h, cls, page, run, bit) & ~bit) != 0u) mark_partial(acc, h, page);
      return nullptr;
    }
    if (state_used(seen) < chunks) {
      acc.fence();  // the bits below are read after the reservation
      for (int round = 0; round < 64; ++round) {
        for (std::uint32_t first = 0; first < chunks; first += 32u) {
          std::uint32_t* word = h.chunk_word(page, n, first);
          const std::uint32_t valid = PagePool::valid_bits(first / 32u, chunks);
          for (std::uint32_t free = ~acc.load(word) & valid; free != 0u;) {
            const std::uint32_t bit = spread_pick(acc, free);
            const std::uint32_t old = acc.atomic_or(word, bit);
            if ((old & bit) == 0u) {
              acc.fence();  // the chunk is written after the bit is ours (its free's clear was a release)
              acc.atomic_add(&h.shared->reused_chunks, 1u);
              return address(h, cls, Extent{page, 0u, 0u}, first + bits::find_first_set(bit) - 1u);
            }
            free = ~(old | bit) & valid;
          }
        }
      }
    }
    // A shape that changed before the reservation (or bits that S3 says
    // cannot all be taken): give the reservation back as a free would.
    const std::uint32_t before = acc.atomic_sub(&e.used, 1u);
    if (before == 1u) {
      retire(acc, h, page, run);
    } else if (before == chunks) {
      mark_partial(acc, h, page);
    }
    return nullptr;
  }

  // C6 for one lane: a freed chunk of a slab of class `cls` (or of a larger
  // one, `of`), found through the `partial` hints of at most `max_words`
  // words from word `start` on (one load per 32 pages), visiting at most
  // `max_pages` hinted pages.
  template <class Acc>
  MANYALLOC_FN static std::byte* from_freed_chunks(const Acc& acc, const SlabLayout& h, std::uint32_t cls,
                                                   std::uint32_t start, FreedOf of = FreedOf::same_class,
                                                   std::uint32_t max_words = 0xffffffffu,
                                                   std::uint32_t max_pages = 0xffffffffu) {
    std::uint32_t w = start % h.words;
    const std::uint32_t words = h.words < max_words ? h.words : max_words;
    std::uint32_t visited = 0;
    for (std::uint32_t seen = 0; seen < words; ++seen) {
      for (std::uint32_t hint = acc.load(&h.partial[w]); hint != 0u; hint &= hint - 1u) {
        if (visited++ == max_pages) return nullptr;
        std::byte* p = take_freed_chunk(acc, h, cls, w * 32u + bits::find_first_set(hint) - 1u, of);
        if (p != nullptr) return p;
      }
      w = w + 1u < h.words ? w + 1u : 0u;
    }
    return nullptr;
  }

  // One chunk of class c from any of its open segments that still has
  // chunks (read first, so that empty slots, whose next claim would have to
  // refill them, are left alone); nullptr when none had one.
  template <class Acc>
  MANYALLOC_FN static std::byte* from_open_segments(const Acc& acc, const SlabLayout& h, std::uint32_t c) {
    for (std::uint32_t s = 0; s < h.shards; ++s) {
      if (segment_room(c, acc.load64(h.slot(c, s))) == 0u) continue;
      Gathered g;
      g.need = 1;
      if (from_slot(acc, h, c, s, false, g) == SlotResult::served && g.count == 1u) return address(h, c, g.extents[0], 0);
    }
    return nullptr;
  }

  template <class Acc>
  MANYALLOC_FN static bool any_segment_room(const Acc& acc, const SlabLayout& h, std::uint32_t c) {
    for (std::uint32_t s = 0; s < h.shards; ++s) {
      if (segment_room(c, acc.load64(h.slot(c, s))) != 0u) return true;
    }
    return false;
  }

  // Last resort of a request of class `cls` that found no chunk of its class
  // and no free page (C5): one chunk of a larger class from an open segment,
  // visiting only the classes whose room_flag is set (C7). Sets `cls` to the
  // class it came from.
  template <class Acc>
  MANYALLOC_FN static std::byte* from_larger_class(const Acc& acc, const SlabLayout& h, std::uint32_t& cls) {
    for (std::uint32_t c = cls + 1u; c < class_count; ++c) {
      if ((acc.load(&h.class_flags[c]) & room_flag) == 0u) continue;
      if (std::byte* p = from_open_segments(acc, h, c)) {
        cls = c;
        return p;
      }
      // No slot of class c had room: clear its flag, then look again once
      // the clear is done (its old value is waited for), in case a refill
      // came in between (C7).
      if ((acc.atomic_and(&h.class_flags[c], ~room_flag) & room_flag) != 0u && any_segment_room(acc, h, c))
        acc.atomic_or(&h.class_flags[c], room_flag);
    }
    return nullptr;
  }

  // S2: a slab whose chunks have all come back returns its `run` pages to
  // the pool. Their entries keep class and lead (S1): the next owner
  // rewrites them, and until then a stray free finds the chunk's bit clear
  // and is reported. The caller issues it once the atomic that left no
  // chunk in use (the count update that reached 0, or for bits in the state
  // the AND that cleared the last bit, which are the bit clears themselves)
  // has returned its old value, so that atomic took effect first. (The PTX
  // memory model would ask for a release on `taken` as well; the bit clears
  // and counts are atomics performed at the L2 before it is issued.)
  template <class Acc>
  MANYALLOC_FN static void retire(const Acc& acc, const SlabLayout& h, std::uint32_t first, std::uint32_t run = 1u) {
    PagePool::release_in_word(acc, h, first / 32u, bits::low_mask(run) << (first % 32u));
  }

  // Everything the leader of a group of `need` lanes of class `cls` does.
  template <class Acc>
  MANYALLOC_FN static void gather(const Acc& acc, const SlabLayout& h, std::uint32_t cls, std::uint32_t shard,
                                  std::uint32_t warp, Gathered& g) {
    take_private_pages(acc, h, cls, hash_start(h, warp, shard), hash_place(warp, shard), g);
    if (g.need == 0u) return;
    // Its own shard's slot first (C1, C2); when that found no page left for
    // a new segment, what other shards' segments still hold. Slots that
    // hand out nothing are skipped: a claim on an empty slot would make
    // this group its refiller, and in a full pool every refill is a search
    // that finds no page followed by a shrink of every segment (C5). One
    // call site, so that from_slot is inlined once here: a second copy
    // raises the registers of every kernel that allocates
    // (docs/results/heap/peers/alloc_roofline).
    for (std::uint32_t i = 0; i < h.shards && g.need != 0u && g.room(2); ++i) {
      const std::uint32_t s = (shard + i) & (h.shards - 1u);
      const bool own = i == 0u;
      if (!own && segment_room(cls, acc.load64(h.slot(cls, s))) == 0u) continue;
      const SlotResult r = from_slot(acc, h, cls, s, own, g);
      if (own && r == SlotResult::served) return;
      if (own) g.dry = r == SlotResult::dry;
    }
  }
};

// ClassSlots::end_segment (close) over slot indices [begin, end) (class-major),
// run by a back end's map_ranges (on the GPU: in a kernel). Returns the
// chunks dropped.
template <class Config, class Backend>
struct CloseSegments {
  SlabLayout h;
  template <class Int>
  MANYALLOC_FN std::uint64_t operator()(Int begin, Int end) const {
    const typename Backend::acc_type acc{};
    std::uint64_t dropped = 0;
    for (Int i = begin; i < end; ++i) {
      dropped += ClassSlots<Config>::end_segment(acc, h, static_cast<std::uint32_t>(i / h.shards),
                                                 static_cast<std::uint32_t>(i % h.shards),
                                                 ClassSlots<Config>::SegmentEnd::close);
    }
    return dropped;
  }
};

}  // namespace manyalloc::heap::detail::slabs
