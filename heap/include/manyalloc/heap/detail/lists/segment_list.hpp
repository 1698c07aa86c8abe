// The segment-list operations of one list ([Steinberger2012] section 4):
// first-fit allocation with splitting (L5) and deallocation with merging
// (L4). Callers hold the list's lock (L6).
#pragma once

#include <cstdint>

#include "manyalloc/common/platform.hpp"
#include "manyalloc/common/report.hpp"
#include "manyalloc/heap/detail/lists/bins.hpp"
#include "manyalloc/heap/detail/lists/free_list.hpp"
#include "manyalloc/heap/detail/lists/invariants.hpp"
#include "manyalloc/heap/detail/lists/list_view.hpp"

namespace manyalloc::heap::detail::lists {

// Bin parameters of a list heap (from its configuration).
struct BinShape {
  std::uint32_t smallest_bin_bytes;
  std::uint32_t bin_count;
  MANYALLOC_FN std::uint32_t of(std::uint32_t granules) const { return bin_of(granules, smallest_bin_bytes, bin_count); }
};

// Granules of a segment that serves `bytes` (header included); 0 when no
// list could hold it.
MANYALLOC_FN inline std::uint32_t segment_granules_for(std::size_t bytes, std::uint32_t list_granules) {
  const std::size_t payload = bytes / granule_bytes + (bytes % granule_bytes != 0 ? 1u : 0u);
  if (payload == 0 || payload > std::size_t{list_granules} - header_granules) return 0;
  return static_cast<std::uint32_t>(payload) + header_granules;
}

// Writes the header of a free segment [index, next) linked after `prev`.
template <class Acc>
MANYALLOC_FN void write_free_header(const ListView<Acc>& v, std::uint32_t index, std::uint32_t prev,
                                    std::uint32_t next) {
  v.set(index, Field::seg_prev, prev);
  v.set(index, Field::seg_next, next);
  v.set(index, Field::request, 0u);
  v.set(index, Field::check, check_of(index));
  v.set(index, Field::state, state_free);
}

// Clears the header at `index` after a merge absorbed it (L3).
template <class Acc>
MANYALLOC_FN void clear_header(const ListView<Acc>& v, std::uint32_t index) {
  v.set(index, Field::state, 0u);
  v.set(index, Field::check, 0u);
}

// L5: takes the first free segment of at least `need` granules, searching
// from the bin of `need` through the rest of the free-list (F2); splits off
// the rest when it can stand as a segment. Returns its index or `none`.
template <class Acc>
MANYALLOC_FN std::uint32_t take_first_fit(const ListView<Acc>& v, std::uint32_t need, std::size_t request,
                                          BinShape bins) {
  std::uint32_t s = first_from_bin(v, bins.of(need), bins.bin_count);
  while (s != none && v.size(s) < need) s = v.get(s, Field::free_next);
  if (s == none) return none;
  remove_free(v, s);
  const std::uint32_t size = v.size(s);
  if (size - need >= min_segment_granules) {
    const std::uint32_t rest = s + need, next = v.get(s, Field::seg_next);
    write_free_header(v, rest, s, next);
    if (next != v.granules()) v.set(next, Field::seg_prev, rest);
    v.set(s, Field::seg_next, rest);
    insert_free(v, rest, bins.of(size - need), bins.bin_count);
  }
  v.set(s, Field::request, request > 0xffffffffu ? 0xffffffffu : static_cast<std::uint32_t>(request));
  v.set(s, Field::state, state_used);
  v.count_used(+1);
  return s;
}

// L4: segment `s` absorbs its successor `next` (free, and already out of
// the free-list).
template <class Acc>
MANYALLOC_FN void absorb(const ListView<Acc>& v, std::uint32_t s, std::uint32_t next) {
  const std::uint32_t after = v.get(next, Field::seg_next);
  v.set(s, Field::seg_next, after);
  if (after != v.granules()) v.set(after, Field::seg_prev, s);
  clear_header(v, next);
}

// Frees the used segment at `index` and merges it with free neighbours (L4).
// Returns what is wrong with the free instead when the header at `index` is
// no segment's (L3) or the segment is not in use.
template <class Acc>
MANYALLOC_FN Misuse give_back(const ListView<Acc>& v, std::uint32_t index, BinShape bins) {
  if (v.get(index, Field::check) != check_of(index)) return Misuse::not_a_chunk_start;
  const std::uint32_t state = v.get(index, Field::state);
  if (state == state_free) return Misuse::double_free;
  if (state != state_used) return Misuse::not_a_chunk_start;
  v.set(index, Field::state, state_free);
  v.set(index, Field::request, 0u);
  v.count_used(-1);
  const std::uint32_t next = v.get(index, Field::seg_next);
  if (next != v.granules() && v.is_free(next)) {
    remove_free(v, next);
    absorb(v, index, next);
  }
  std::uint32_t merged = index;
  const std::uint32_t prev = v.get(index, Field::seg_prev);
  if (prev != none && v.is_free(prev)) {
    remove_free(v, prev);
    absorb(v, prev, index);
    merged = prev;
  }
  insert_free(v, merged, bins.of(v.size(merged)), bins.bin_count);
  return Misuse::none;
}

// Requests of `need` granules the free segments of the list hold one after
// the other (the count of invariants.hpp).
template <class Acc>
MANYALLOC_FN std::uint64_t count_slots(const ListView<Acc>& v, std::uint32_t need) {
  std::uint64_t n = 0;
  for (std::uint32_t s = v.first_free(); s != none; s = v.get(s, Field::free_next)) n += v.size(s) / need;
  return n;
}

}  // namespace manyalloc::heap::detail::lists
