// Small warp collectives built from an Accelerator's primitives, shared by
// the creation and distribution policies (CUB-style reusable pieces).
#pragma once

#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/platform.hpp"

namespace manyalloc::acc {

// Lowest lane named in a non-empty lane mask.
MANYALLOC_FN inline unsigned lowest_lane(std::uint32_t mask) { return bits::find_first_set(mask) - 1u; }

// The 64-bit value `v` of `lane`, for the lanes in `mask` (two 32-bit shuffles).
template <class Acc>
MANYALLOC_FN std::uint64_t shfl64(const Acc& acc, std::uint32_t mask, std::uint64_t v, unsigned lane) {
  const std::uint32_t lo = acc.shfl(mask, static_cast<std::uint32_t>(v), lane);
  const std::uint32_t hi = acc.shfl(mask, static_cast<std::uint32_t>(v >> 32), lane);
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

}  // namespace manyalloc::acc
