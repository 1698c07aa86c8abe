// The data structures of the list-based baselines (CreationPolicies::ListBased
// and CreationPolicies::MultiList, [Steinberger2012] section 4) and the
// invariants every operation keeps. Everything else in detail/lists/ is
// algorithms over these.
//
// Pool layout (one contiguous pool from the ReservePoolPolicy):
//
//   [ ListShared | ListHead 0 | ... | ListHead L-1 | pad ][ list 0 | ... | list L-1 ]
//
// The data area is split into L lists of equal size (`list_bytes`, a multiple
// of the 16-byte granule). ListBased has one list ("size list" in section 8
// of the paper); MultiList has one per multiprocessor ("mp lists": bins per
// multiprocessor, so that different multiprocessors allocate from different
// memory). Positions inside a list are granule indices (32 bits: a list
// reaches 64 GiB).
//
// Segment-list (section 4): a list's memory is a sequence of consecutive
// segments. Each segment starts with a SegmentHeader ("management
// information ... stored right before the actual memory block"); the payload
// handed to a worker starts header_bytes after it.
//  L1 The segments of a list tile it: the first starts at index 0; a
//     segment's seg_next is the index of the next header or list_granules for
//     the last; seg_prev is the previous header or `none` for the first. A
//     segment never crosses into another list, so a list's segments and
//     headers are touched only under that list's lock (L6).
//  L2 A segment's size is seg_next - its index (granules), at least
//     min_segment_granules (header plus one payload granule).
//  L3 `state` is state_used (handed to a worker) or state_free; `check`
//     is check_of(index). A header absorbed by a merge has both cleared, so a
//     free of a pointer whose header does not carry both is reported (not a
//     chunk start) instead of being acted on.
//  L4 No two neighbouring segments are both free once the free that made
//     them neighbours has finished. The paper merges a freed segment with its
//     immediate successor; we also let a free predecessor absorb the freed
//     segment (the same merge seen from the predecessor), so that memory
//     freed in any order coalesces and the slot count of an emptied heap is
//     that of a fresh one.
//
// Free-list (section 4): one doubly linked list per list, through
// free_prev/free_next, of exactly the free segments.
//  F1 It is partially ordered by bin (detail/lists/bins.hpp: bin b holds
//     segments of [smallest_bin_bytes << (b-1), smallest_bin_bytes << b)
//     bytes; the last bin everything larger): all segments of bin b come
//     before those of bin b+1. `bin_head[b]` is the first segment of bin b,
//     or `none` when the bin is empty ("bins store entry points to the
//     sublists"). A free segment's `bin` field names its bin.
//  F2 first_free / last_free are the ends of the whole list; the sublists
//     are connected, so a search that starts at its request's bin and finds
//     nothing fitting there runs over into larger bins (first fit over the
//     rest of the list).
//
// Allocation and free (section 4, with the locking it calls for):
//  L5 An allocation takes the first segment of its search that fits, marks
//     it used and removes it from the free-list; when the rest is at least
//     min_segment_granules it is split off as a new free segment and
//     inserted into its bin. The first part is handed out.
//  L6 Every read or write of a list's headers and ListHead (except the
//     lock word itself) happens between acquire() and release() of that
//     list's lock (detail/lists/list_lock.hpp). The paper sets an allocated
//     flag atomically and synchronises the pointers; one lock per list does
//     both and can never leave a half-linked list. It serialises a list's
//     operations, which is the contention the paper measures for the
//     single list; MultiList spreads workers over lists by processor.
//  L7 A MultiList worker starts at the list of its processor and moves on to
//     the following lists (wrapping around) when its list has nothing that
//     fits: a request fails only when no list had a fitting segment while
//     it was searched. A request larger than one list's payload fails at
//     once.
//  L8 `segments_used` counts the used segments of the list (statistics).
//
// Counting slots (getAvailableSlots): a free segment of g granules holds
// floor(g / (2 + ceil(s / 16))) requests of s bytes one after the other
// (each allocation splits off the front, L5), so the count of a list is the
// sum of that over its free-list, exact while no worker changes the list.
#pragma once

#include <cstddef>
#include <cstdint>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::detail::lists {

inline constexpr std::uint32_t granule_bytes = 16;
inline constexpr std::uint32_t header_bytes = 32;
inline constexpr std::uint32_t header_granules = header_bytes / granule_bytes;
inline constexpr std::uint32_t min_segment_granules = header_granules + 1;
inline constexpr std::uint32_t none = 0xffffffffu;
inline constexpr std::uint32_t max_bins = 30;
inline constexpr std::uint32_t max_list_granules = 0xfffffff0u;
// Tags of `state` (L3), far from 0 and from small integers so that stray data
// is unlikely to pass for a header.
inline constexpr std::uint32_t state_free = 0xf4ee5e90u;
inline constexpr std::uint32_t state_used = 0xa110c8edu;

MANYALLOC_FN constexpr std::uint32_t check_of(std::uint32_t index) { return index ^ 0x5e9c4eadu; }

// Eight 32-bit words in front of every segment's payload (the payload stays
// 16-byte aligned).
struct SegmentHeader {
  std::uint32_t state;
  std::uint32_t check;
  std::uint32_t seg_prev;
  std::uint32_t seg_next;
  std::uint32_t free_prev;
  std::uint32_t free_next;
  std::uint32_t bin;
  std::uint32_t request;  // bytes asked for (saturated), 0 when free: alloc(r) of eq. (1)
};
static_assert(sizeof(SegmentHeader) == header_bytes, "the header must keep payloads 16-byte aligned");

// One per list, on a cache line of its own.
struct alignas(128) ListHead {
  std::uint32_t lock;
  std::uint32_t first_free;
  std::uint32_t last_free;
  std::uint32_t segments_used;
  std::uint32_t bin_head[max_bins];
};

struct ListShared {
  std::uint32_t misuse;       // bad or double frees reported
  std::uint32_t last_misuse;  // the last one's Misuse
};

struct ListLayout {
  ListShared* shared = nullptr;
  ListHead* heads = nullptr;
  std::byte* data = nullptr;
  std::uint32_t lists = 0;
  std::uint32_t list_granules = 0;
  std::size_t list_bytes = 0;
  std::size_t metadata_bytes = 0;

  MANYALLOC_FN std::size_t data_bytes() const { return list_bytes * lists; }
  MANYALLOC_FN std::byte* list_data(std::uint32_t list) const { return data + list_bytes * list; }
  MANYALLOC_FN SegmentHeader* header(std::uint32_t list, std::uint32_t index) const {
    return reinterpret_cast<SegmentHeader*>(list_data(list) + std::size_t{index} * granule_bytes);
  }
  MANYALLOC_FN void* payload(std::uint32_t list, std::uint32_t index) const {
    return list_data(list) + std::size_t{index} * granule_bytes + header_bytes;
  }
  // Largest request one list can serve.
  MANYALLOC_FN std::size_t largest_request() const {
    return std::size_t{list_granules - header_granules} * granule_bytes;
  }
};

}  // namespace manyalloc::heap::detail::lists
