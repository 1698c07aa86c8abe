// The warp-level dynamic coalescing engine ([Blach2022] 3.2) behind
// DistributionPolicies::DynamicWarp and DistributionPolicies::XMallocSIMD.
//
//  collect: the active lanes share their sizes by shuffles; every lane lays
//           out the same superblock (segments in lane order, detail/segments.hpp)
//           and knows its payload offset; the lowest coalescing lane (the
//           leader) asks the creation policy for the whole superblock. Lanes
//           whose request is too large for the group (Limits) allocate a
//           one-segment superblock of their own; lanes asking 0 bytes get
//           nullptr and change nothing.
//  distribute: the leader's pointer is handed to the group
//           (acc::group_hand_over, safe after the leader's divergent create);
//           each lane writes its segment header and returns its payload; a
//           group barrier orders the headers before any lane may free.
//  release: whole superblocks freed by their lanes together go back at once
//           (segment_warp_free.hpp); otherwise free_segment (wait-free unless
//           last; the last returns the superblock).
//
// Limits: max_part (largest request that is coalesced) and max_total (largest
// superblock; lanes that would push the superblock over it allocate alone).
#pragma once

#include <cstddef>
#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/heap/acc/collectives.hpp"
#include "manyalloc/common/platform.hpp"
#include "manyalloc/heap/distribution/detail/segment_warp_free.hpp"
#include "manyalloc/heap/distribution/detail/segments.hpp"

namespace manyalloc::heap::distribution::detail {

using acc::lowest_lane;
using acc::highest_lane;

// Requests at or above this size never fit a 32-bit shuffle: they go alone.
inline constexpr std::uint64_t shuffle_limit = std::uint64_t{1} << 31;

template <std::uint64_t MaxPart, std::uint64_t MaxTotal>
class SegmentCoalescing {
 public:
  static constexpr std::uint64_t max_part = MaxPart < shuffle_limit ? MaxPart : shuffle_limit - 1u;
  static constexpr std::uint64_t max_total = MaxTotal;

  template <class Acc>
  MANYALLOC_FN explicit SegmentCoalescing(const Acc&) {}

  template <class Acc>
  MANYALLOC_FN std::size_t collect(const Acc& acc, std::size_t bytes) {
    mask_ = acc.active_mask();
    lane_ = acc.lane_id();
    bytes_ = bytes;
    const bool small = bytes > 0 && bytes <= max_part;
    const std::uint32_t mine = small ? static_cast<std::uint32_t>(bytes) : 0u;
    const std::uint32_t candidates = acc.ballot(mask_, small);
    group_ = 0;
    if (candidates != 0u) {
      // Uniform sizes below 4 KiB (no header grows past its first choice):
      // closed form from the first two segments, one shuffle.
      const unsigned first = lowest_lane(candidates);
      const std::uint32_t s0 = acc.shfl(mask_, mine, first);
      const bool uniform = acc.ballot(mask_, small && mine != s0) == 0u && s0 < 4096u;
      if (uniform) {
        layout_uniform(candidates, s0);
      } else {
        layout_general(acc, candidates, mine);
      }
    }
    in_group_ = ((group_ >> lane_) & 1u) != 0u;
    if (in_group_) {
      leader_ = lowest_lane(group_);
      return lane_ == leader_ ? static_cast<std::size_t>(total_) : 0u;
    }
    if (bytes == 0) return 0;
    // Alone: a superblock of one segment.
    const Placement pl = place_segment(0, 0, bytes);
    my_payload_ = pl.payload;
    my_header_ = pl.header;
    my_offset_ = pl.payload;
    const std::uint64_t total = pl.payload + bytes;
    if (total < bytes) return ~std::size_t{0};  // overflow: let the creation policy fail
    return static_cast<std::size_t>(round_up(total, 16u));
  }

  template <class Acc>
  MANYALLOC_FN void* distribute(const Acc& acc, void* mem) {
    std::uint64_t base = reinterpret_cast<std::uintptr_t>(mem);
    if (in_group_) base = acc::group_hand_over(acc, group_, leader_, base);
    void* result = nullptr;
    if (base != 0u && (in_group_ || bytes_ > 0)) {
      auto* p = reinterpret_cast<std::byte*>(base) + my_payload_;
      std::uint32_t flags = 0;
      if (!in_group_ || lane_ == leader_) flags |= seg_superblock;
      if (!in_group_ || lane_ == last_lane_) flags |= seg_last;
      write_header(acc, p, my_header_, my_offset_, flags);
      result = p;
    }
    if (in_group_) acc.sync_lanes(group_);  // every header before any part is freed
    return result;
  }

  static constexpr bool collective_release = true;  // a warp collective (segment_warp_free.hpp)

  template <class Acc>
  MANYALLOC_FN static void* release(const Acc& acc, void* ptr) {
    return free_segment_warp(acc, ptr, "DistributionPolicy::release");
  }

 private:
  MANYALLOC_FN void layout_uniform(std::uint32_t candidates, std::uint32_t s) {
    const Placement p0 = place_segment(0, 0, s);
    const Placement p1 = place_segment(p0.payload + s, p0.payload, s);
    const std::uint64_t stride = p1.payload - p0.payload;
    const unsigned n = bits::popcount(candidates);
    // Members: the first k candidates whose superblock fits max_total.
    // round_up(x, 16) <= max_total  <=>  x <= max_total rounded down to 16.
    constexpr std::uint64_t limit = max_total / 16u * 16u;
    std::uint64_t k = n;
    if (p0.payload + s > limit) {
      k = 0;
    } else if ((limit - p0.payload - s) / stride + 1u < k) {
      k = (limit - p0.payload - s) / stride + 1u;
    }
    if (k == 0) return;
    std::uint32_t members = 0;
    std::uint32_t rest = candidates;
    for (std::uint64_t i = 0; i < k; ++i) {
      const unsigned l = lowest_lane(rest);
      members |= 1u << l;
      rest &= rest - 1u;
    }
    group_ = members;
    last_lane_ = highest_lane(members);
    total_ = round_up(p0.payload + (k - 1u) * stride + s, 16u);
    if (((members >> lane_) & 1u) != 0u) {
      const unsigned rank = bits::popcount(members & bits::low_mask(lane_));
      my_header_ = rank == 0 ? p0.header : p1.header;
      my_payload_ = p0.payload + rank * stride;
      my_offset_ = rank == 0 ? p0.payload : stride;
    }
  }

  template <class Acc>
  MANYALLOC_FN void layout_general(const Acc& acc, std::uint32_t candidates, std::uint32_t mine) {
    std::uint64_t cursor = 0;
    std::uint64_t prev = 0;
    std::uint32_t members = 0;
    for (std::uint32_t rest = mask_; rest != 0u; rest &= rest - 1u) {
      const unsigned l = lowest_lane(rest);
      const std::uint32_t s = acc.shfl(mask_, mine, l);  // every lane of the mask shuffles
      if (((candidates >> l) & 1u) == 0u) continue;
      const Placement pl = place_segment(cursor, prev, s);
      if (round_up(pl.payload + s, 16u) > max_total) continue;  // does not fit: alone
      if (l == lane_) {
        my_payload_ = pl.payload;
        my_header_ = pl.header;
        my_offset_ = members == 0u ? pl.payload : pl.payload - prev;
      }
      members |= 1u << l;
      prev = pl.payload;
      cursor = pl.payload + s;
    }
    group_ = members;
    if (members == 0u) return;
    last_lane_ = highest_lane(members);
    total_ = round_up(cursor, 16u);
  }

  std::uint32_t mask_ = 0;
  std::uint32_t group_ = 0;  // lanes of the superblock
  unsigned lane_ = 0;
  unsigned leader_ = 0;
  unsigned last_lane_ = 0;
  bool in_group_ = false;
  std::size_t bytes_ = 0;
  std::uint64_t total_ = 0;
  std::uint64_t my_payload_ = 0;  // payload offset in the superblock
  std::uint64_t my_offset_ = 0;   // header offset field
  unsigned my_header_ = 8;
};

}  // namespace manyalloc::heap::distribution::detail
