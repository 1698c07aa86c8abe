// Freeing whole superblocks at once: the common case of dynamic coalescing,
// where the lanes that allocated a superblock together free their parts
// together (same warp, same call). The chain protocol of segments.hpp then
// costs every lane a fence and a compare-and-swap on neighbouring headers,
// and the lane holding is_last a walk of dependent loads down the whole chain
// (up to 31 L2 round trips) -- twice the time of freeing 16-byte chunks
// one by one (docs/results/coalescing/README.md, small16_free).
//
// Fast path: the lanes executing the free together (one active_mask, so every
// collective below is uniform) read their own header, and by two shuffles and
// three ballots find the *complete runs*: consecutive active lanes l_s..l_e
// where l_s holds the superblock's first segment, each later lane's previous
// segment is the payload of the active lane below it, and l_e holds is_last.
// A complete run owns every live segment of its superblock (segments above
// l_e are free, since is_last is held by the highest live one; none lies
// below the first), so no other worker touches these headers: the lanes mark
// their segments free with plain stores (a later double free is still seen)
// and l_s returns the superblock. All other lanes take the chain protocol.
#pragma once

#include <cstddef>
#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/platform.hpp"
#include "manyalloc/heap/acc/collectives.hpp"
#include "manyalloc/heap/distribution/detail/segments.hpp"

namespace manyalloc::heap::distribution::detail {


// Whether `lane` lies in a complete run, given the uniform masks of the
// active lanes (`now`), of those whose previous segment is the payload of the
// active lane below (`linked`, first segments included), of first segments
// (`first`) and of is_last holders (`last`).
MANYALLOC_FN inline bool in_complete_run(unsigned lane, std::uint32_t now, std::uint32_t linked, std::uint32_t first,
                                         std::uint32_t last) {
  if (((linked >> lane) & 1u) == 0u) return false;
  const std::uint32_t at_or_below = now & bits::low_mask(lane + 1u);
  const std::uint32_t starts = at_or_below & first;
  if (starts == 0u) return false;
  const unsigned s = acc::highest_lane(starts);
  if ((at_or_below & ~bits::low_mask(s) & ~linked) != 0u) return false;  // a gap between start and lane
  const std::uint32_t at_or_above = now & ~bits::low_mask(lane);
  const std::uint32_t ends = at_or_above & last;
  if (ends == 0u) return false;
  const unsigned e = bits::find_first_set(ends) - 1u;
  const std::uint32_t between = at_or_above & bits::low_mask(e + 1u) & ~bits::low_mask(lane + 1u);
  return (between & (~linked | first)) == 0u;  // linked, and no other superblock starts before the end
}

// Frees the segment at `ptr` (called by every lane that frees in this call;
// nullptr takes part and frees nothing). Returns the superblock start when
// this lane must give it back.
template <class Acc>
MANYALLOC_FN void* free_segment_warp(const Acc& acc, void* ptr, const char* who) {
  auto* p = static_cast<std::byte*>(ptr);
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  const unsigned h = ptr != nullptr ? header_bytes_at(addr) : 0u;
  const std::uint32_t word = h != 0u ? load_flags_word(acc, p, h) : seg_free;
  const bool live = h != 0u && (word & seg_free) == 0u;
  const std::uint64_t prev = live ? addr - load_offset(acc, p, h, word) : 0u;  // first: the superblock

  const std::uint32_t now = acc.active_mask();
  const unsigned lane = acc.lane_id();
  const std::uint32_t below = now & bits::low_mask(lane);
  const std::uint64_t lower = acc::shfl64(acc, now, addr, below != 0u ? acc::highest_lane(below) : lane);
  const bool is_first = live && (word & seg_superblock) != 0u;
  const bool is_linked = is_first || (live && below != 0u && lower == prev);
  const std::uint32_t linked = acc.ballot(now, is_linked);
  const std::uint32_t first = acc.ballot(now, is_first);
  const std::uint32_t last = acc.ballot(now, live && (word & seg_last) != 0u);
  const bool whole = in_complete_run(lane, now, linked, first, last);
  if (whole) {
    if (h == 2u) {
      acc.store16(reinterpret_cast<std::uint16_t*>(p - 2), static_cast<std::uint16_t>(word | seg_free));
    } else {
      acc.store(reinterpret_cast<std::uint32_t*>(p - h), word | seg_free);
    }
  }
  // Every lane of `now` (no mask carried into divergent code): the payload
  // accesses and marks of a run before its superblock goes back.
  acc.sync_lanes(now);
  if (!whole) return ptr != nullptr ? free_segment(acc, ptr, who) : nullptr;
  if (!is_first) return nullptr;
  acc.fence();
  return reinterpret_cast<void*>(prev);
}

}  // namespace manyalloc::heap::distribution::detail
