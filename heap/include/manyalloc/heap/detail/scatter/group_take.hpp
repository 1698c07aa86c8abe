// The lanes of a warp whose requests of one size hash to one page take
// their chunks there together: tryUsePage ([Steinberger2012] 6.1) once for
// the group, by one elected lane, as XMallocSIMD elects one lane per warp
// ([Huang2010]); the rest of the search (search.hpp) is per lane.
//
// Why: a warp of 32 lanes asking for 16 B hashes all of them to one page,
// and per lane that is 32 additions to its fill and 32 ORs into one
// bit-field word (and 32 CASes on its chunk size when it is unused), all on
// the same addresses, which memory serves one after the other. Together it
// is one of each (two ORs where the group's chunks span two segments).
#pragma once

#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/math.hpp"
#include "manyalloc/heap/acc/collectives.hpp"
#include "manyalloc/heap/detail/scatter/invariants.hpp"
#include "manyalloc/heap/detail/scatter/page_geometry.hpp"
#include "manyalloc/heap/detail/scatter/page_ops.hpp"

namespace manyalloc::heap::detail {

template <class Config>
struct GroupTake {
  using Ops = PageOps<Config>;
  static constexpr std::uint32_t pagesize = Config::pagesize;

  // What the leader hands to its group, in one 64-bit word: the page's
  // chunk size (0: the page does not serve the group), the first of the
  // spots the group's reservations start at (the reservations themselves
  // where the leader split a clean page: 0 and what its addition returned,
  // see reserve), how many of them hold (the lowest `granted` lanes of the
  // group get one each) and the full marks (I5) of the two segments those
  // spots fall in.
  static_assert(pagesize < (1u << 21), "a chunk size must fit the grant's 21 bits (pagesize < small_quotient_limit)");
  struct Grant {
    std::uint32_t chunk_size = 0;  // < 2^21
    std::uint32_t first = 0;       // < chunks <= 1024
    std::uint32_t granted = 0;     // <= 32
    std::uint32_t marks = 0;       // bit 0: first / 32's segment, bit 1: the next one
    MANYALLOC_FN std::uint64_t pack() const {
      return chunk_size | (std::uint64_t{first} << 21) | (std::uint64_t{granted} << 32) | (std::uint64_t{marks} << 38);
    }
    MANYALLOC_FN static Grant unpack(std::uint64_t w) {
      return {static_cast<std::uint32_t>(w & 0x1fffffu), static_cast<std::uint32_t>((w >> 21) & 0x7ffu),
              static_cast<std::uint32_t>((w >> 32) & 0x3fu), static_cast<std::uint32_t>((w >> 38) & 3u)};
    }
  };

  // The leader's part: reserves `n` chunks of `page` for requests of
  // `request` bytes (chunk sizes up to `max_chunk`), splitting the page
  // first when it is unused, as use_page does for one lane. Reservations
  // past the page's last chunk are given back at once.
  template <class Acc>
  MANYALLOC_FN static Grant reserve(const Acc& acc, const HeapLayout& h, std::uint32_t page, std::uint32_t request,
                                    std::uint32_t max_chunk, std::uint32_t n) {
    PageEntry& e = h.pages[page];
    const std::uint32_t chunk = acc.load(&e.chunk_size);
    const std::uint32_t fill = acc.load(&e.fill);
    bool split_clean = false;
    const std::uint32_t now = Ops::size_for_request(acc, h, page, chunk, request, max_chunk, split_clean);
    if (now == 0u) return {};
    const PageGeometry g = page_geometry(pagesize, now);
    if (!split_clean && now == chunk && fill >= g.chunks) return {};  // the fill counts only for the split it was read with
    // Read with the reservation in flight, as PageOps::reserve does.
    const std::uint32_t marked = g.hierarchical && !split_clean ? acc.load(&e.mask) : 0u;
    // The split of a clean page holds its first reservation already (I1c):
    // the leader adds n - 1. The group's spots start one below what the
    // addition returned, at 0 unless another worker reserved in between
    // (then two holders share a spot, and one of them looks for another
    // bit, as after frees). A page of one chunk is reserved as
    // PageOps::reserve_only_chunk says instead: the leader holds at most
    // that one reservation.
    std::uint32_t first = 0, held = n;
    if (g.keeps_bits()) {
      first = split_clean ? (n > 1u ? acc.atomic_add(&e.fill, n - 1u) : 1u) - 1u : acc.atomic_add(&e.fill, n);
    } else {
      first = split_clean ? 0u : Ops::reserve_only_chunk(acc, e);
      held = first == 0u ? 1u : 0u;
    }
    if constexpr (Config::resetfreedpages) {
      acc.fence();
      if (held != 0u && acc.load(&e.chunk_size) != now) {  // emptied and re-split since we read its size
        Ops::release_reservations(acc, h, page, g.chunks, held);
        return {};
      }
    }
    const std::uint32_t granted = first < g.chunks ? (n < g.chunks - first ? n : g.chunks - first) : 0u;
    if (granted < held) Ops::release_reservations(acc, h, page, g.chunks, held - granted);
    if (granted == 0u) return {};
    std::uint32_t marks = 0;
    if (g.hierarchical) {
      const std::uint32_t segment = first / 32u;  // < segments: first < chunks
      marks = ((marked >> segment) & 1u) | (segment + 1u < g.segments() ? ((marked >> (segment + 1u)) & 1u) << 1 : 0u);
    }
    return {now, first, granted, marks};
  }

  // Called by every lane of `group` (lanes of one warp asking for `request`
  // bytes that start on `page`, at least search.hpp's group_min).
  // Returns the lane's chunk, or nullptr: the page did not serve the lane
  // (another size, full, or fewer chunks left than lanes), and the lane
  // searches on its own.
  template <class Acc>
  MANYALLOC_FN static void* take(const Acc& acc, const HeapLayout& h, std::uint32_t page, std::uint32_t request,
                                 std::uint32_t max_chunk, std::uint32_t group) {
    const unsigned lane = acc.lane_id();
    const unsigned leader = heap::acc::lowest_lane(group);
    const std::uint64_t mine =
        lane == leader ? reserve(acc, h, page, request, max_chunk, bits::popcount(group)).pack() : 0u;
    const Grant grant = Grant::unpack(heap::acc::group_hand_over(acc, group, leader, mine));
    const std::uint32_t rank = bits::popcount(group & bits::low_mask(lane));
    const std::uint32_t holders = acc.ballot(group, rank < grant.granted);
    if (rank >= grant.granted) return nullptr;

    // Each holder takes the chunk its reservation names, as take_reserved does
    // from the reservation index; the holders whose chunks share a
    // bit-field word set their bits with one OR.
    PageEntry& e = h.pages[page];
    const PageGeometry g = page_geometry(pagesize, grant.chunk_size);
    const std::uint32_t reserved = grant.first + rank;
    const bool fills = reserved + 1u == g.chunks;
    const std::uint32_t region_marks = fills ? Ops::start_mark_page_full(acc, h, page) : 0u;
    // Reservations below `chunks` name distinct spots: a full segment's 32
    // in order, and the partial segment's chunks_in_segment consecutive ones
    // (after the split of a clean page, one spot may be another worker's
    // too: reserve; the check of `seen` below finds that).
    const std::uint32_t segment = g.hierarchical ? reserved / 32u : 0u;
    const std::uint32_t spot =
        g.hierarchical ? small_remainder(reserved, g.chunks_in_segment(segment)) : reserved;
    const std::uint32_t segment_marked =
        g.hierarchical ? (grant.marks >> (segment - grant.first / 32u)) & 1u : 0u;
    std::uint32_t* const word = g.hierarchical ? Ops::segment_word(h, page, segment) : &e.mask;
    // A segment marked full (I5) is left to each lane's own walk.
    const std::uint32_t sharing = acc.match_any(holders, segment_marked != 0u ? 0x80000000u | lane : segment);
    const std::uint32_t bits_of_word = acc.reduce_or(sharing, 1u << spot);
    const unsigned root = heap::acc::lowest_lane(sharing);
    // Only the root's value is handed over; a lane whose segment is marked
    // is its own root and hands itself "taken". The other lanes pass 0, and
    // the OR stays out of any expression that also yields its operand: g++
    // 12 compiled such a merge into an OR of nothing
    // (docs/results/heap/peers/scatter_group_take).
    // A page of one chunk keeps no bit (I2): its holder's reservation is
    // the chunk.
    std::uint32_t old = 0u;
    if (segment_marked != 0u) {
      old = ~0u;
    } else if (lane == root && g.keeps_bits()) {
      old = acc.atomic_or(word, bits_of_word);
    }
    const auto seen = static_cast<std::uint32_t>(heap::acc::group_hand_over(acc, sharing, root, old));
    std::uint32_t index = segment * 32u + spot;
    if ((seen & (1u << spot)) != 0u) {
      // Taken by another worker (spots follow reservations only until
      // frees return chunks out of order): find another bit on the
      // geometry's walk, from the spot on.
      index = g.hierarchical ? Ops::take_in_segments(acc, h, page, g, reserved, segment_marked << segment)
                             : Ops::take_in_mask(acc, e, g.chunks, reserved);
    }
    return Ops::end_take(acc, h, page, g, grant.chunk_size, index, fills, region_marks);
  }
};

}  // namespace manyalloc::heap::detail
