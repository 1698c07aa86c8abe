// Small warp collectives built from an Accelerator's primitives, shared by
// the creation and distribution policies (CUB-style reusable pieces).
#pragma once

#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/platform.hpp"

namespace manyalloc::acc {

// Lowest lane named in a non-empty lane mask.
MANYALLOC_FN inline unsigned lowest_lane(std::uint32_t mask) { return bits::find_first_set(mask) - 1u; }

// Highest lane named in a non-empty lane mask.
MANYALLOC_FN inline unsigned highest_lane(std::uint32_t mask) {
#if defined(__CUDA_ARCH__)
  return 31u - static_cast<unsigned>(__clz(static_cast<int>(mask)));
#else
  return 31u - static_cast<unsigned>(__builtin_clz(mask));
#endif
}

// The 64-bit value `v` of `lane`, for the lanes in `mask` (two 32-bit shuffles).
template <class Acc>
MANYALLOC_FN std::uint64_t shfl64(const Acc& acc, std::uint32_t mask, std::uint64_t v, unsigned lane) {
  const std::uint32_t lo = acc.shfl(mask, static_cast<std::uint32_t>(v), lane);
  const std::uint32_t hi = acc.shfl(mask, static_cast<std::uint32_t>(v >> 32), lane);
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

// Hands `value` of lane `root` to every lane of `group` (root in group) after
// the lanes diverged since the group was formed, typically because only the
// root ran the creation policy. Every lane of `group` calls it once, possibly
// at different times; with `barrier`, no lane returns before every lane of the
// group has called it (orders what the lanes wrote before the call).
//
// Why not shfl(group, ...): a mask carried across divergent code is not
// uniform among the lanes that later execute the shuffle together. When two
// groups of one warp meet at the same shuffle with different masks, the GPU
// compiler's converged fast path (it takes the mask of one lane for the whole
// convergent set, sm_70+) lets one group's root skip the other's rendezvous
// and its lanes read another lane's register: the lost or garbage parts of
// docs/results/coalescing/warp_uniform_gpu_failure.md. Here every collective
// takes the mask active_mask() returned to exactly the lanes executing it, so
// it is uniform by construction; a lane whose root is not among them (and a
// root still missing members) goes round again. The only collective on the
// carried mask is the group's own barrier (sync_lanes(group)): the groups of
// one warp are disjoint and each lane names its own group, which a warp
// barrier allows (PTX bar.warp.sync).
template <class Acc>
MANYALLOC_FN std::uint64_t group_hand_over(const Acc& acc, std::uint32_t group, unsigned root, std::uint64_t value,
                                           bool barrier) {
  const bool is_root = acc.lane_id() == root;
  std::uint32_t arrived = 0;  // root: members seen so far
  std::uint32_t served = 0;   // root: members that have the value
  for (;;) {
    // Lanes that arrive early (the members, while the root still runs its
    // divergent code) wait here for the group; without it a member and the
    // root can spin in this loop for ever without being scheduled together.
    acc.sync_lanes(group);
    const std::uint32_t now = acc.active_mask();
    const bool root_here = ((now >> root) & 1u) != 0u;
    if (is_root) arrived |= now & group;
    const bool ready = is_root && (!barrier || arrived == group);
    const unsigned source = root_here ? root : acc.lane_id();
    const std::uint64_t got = shfl64(acc, now, value, source);
    const bool root_ready = acc.shfl(now, ready ? 1u : 0u, source) != 0u;
    acc.sync_lanes(now);  // memory of the lanes in `now` ordered before any returns
    if (is_root) {
      if (ready) served |= now & group;
      if (ready && served == group) return value;
    } else if (root_here && root_ready) {
      return got;
    }
  }
}

}  // namespace manyalloc::acc
