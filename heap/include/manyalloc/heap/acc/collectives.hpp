// Small warp collectives built from an Accelerator's primitives, shared by
// the creation and distribution policies (CUB-style reusable pieces).
#pragma once

#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::acc {

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
// at different times. (A plain barrier of such a group is sync_lanes(group):
// a warp barrier may be reached from different places.)
//
// Why not shfl(group, ...) as right after collect: on the GPU the shuffle of a
// mask carried across the root's divergent create lost the root's value for
// some lanes when two inlined copies of alloc ran in divergent branches
// (docs/results/coalescing/warp_uniform_gpu_failure.md). Each accelerator
// states whether its shuffle is safe there (Accelerator::
// shuffle_after_divergence): host threads and emulated warps, whose
// collectives are barriers of exactly the named lanes, say yes; CUDA says no
// and provides group_broadcast64 (the store / __syncwarp / load pattern
// through shared memory that the CUDA guide documents for divergent lanes).
template <class Acc>
MANYALLOC_FN std::uint64_t group_hand_over(const Acc& acc, std::uint32_t group, unsigned root, std::uint64_t value) {
  if constexpr (Acc::shuffle_after_divergence) {
    return shfl64(acc, group, value, root);
  } else {
    return acc.group_broadcast64(group, root, value);
  }
}

}  // namespace manyalloc::heap::acc
