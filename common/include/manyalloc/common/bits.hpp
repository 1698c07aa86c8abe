// Bit-field helpers, shared by host and device code.
//
// The heap's page usage tables ([Steinberger2012] 5.2) and the slab/registry
// bitmaps of the other layers use these. On the device they map to single
// instructions (__ffs, __popc); on the host to the GCC builtins.
#pragma once

#include <cstdint>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::bits {

// Word with the lowest n bits set, for 0 <= n <= 32.
MANYALLOC_FN constexpr std::uint32_t low_mask(unsigned n) {
  return n >= 32 ? 0xffffffffu : ((1u << n) - 1u);
}

// 64-bit word with the lowest n bits set, for 0 <= n <= 64.
MANYALLOC_FN constexpr std::uint64_t low_mask64(unsigned n) {
  return n >= 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << n) - 1u);
}

// 1-based index of the lowest set bit, 0 when no bit is set (like ffs(3)).
MANYALLOC_FN MANYALLOC_INLINE unsigned find_first_set(std::uint32_t word) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned>(__ffs(static_cast<int>(word)));
#else
  return static_cast<unsigned>(__builtin_ffs(static_cast<int>(word)));
#endif
}

// Number of consecutive set bits from the highest bit down (32 for all ones).
MANYALLOC_FN MANYALLOC_INLINE unsigned count_leading_ones(std::uint32_t word) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned>(__clz(static_cast<int>(~word)));
#else
  return word == 0xffffffffu ? 32u : static_cast<unsigned>(__builtin_clz(~word));
#endif
}

MANYALLOC_FN MANYALLOC_INLINE unsigned popcount(std::uint32_t word) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned>(__popc(word));
#else
  return static_cast<unsigned>(__builtin_popcount(word));
#endif
}

// [Steinberger2012] 6.1, tryUsePage lines 14-18: given the `used` word of a bit
// field with `spots` valid bits (1..32) in which bit `spot` turned out to be
// taken, return the nearest free spot after `spot`, wrapping around, or
// `spots` when every valid bit is set. The rotation makes the search start
// right after the collision so that lanes spread over the free bits.
MANYALLOC_FN MANYALLOC_INLINE unsigned next_free_spot(std::uint32_t used, unsigned spot,
                                                      unsigned spots) {
  const std::uint32_t valid = low_mask(spots);
  const std::uint32_t free_bits = ~used & valid;
  if (free_bits == 0) return spots;
  const unsigned shift = (spot + 1) % spots;
  // Rotate the free bits right by `shift` within `spots` bits.
  const std::uint32_t rotated =
      shift == 0 ? free_bits
                 : ((free_bits >> shift) | (free_bits << (spots - shift))) & valid;
  const unsigned step = find_first_set(rotated) - 1;
  return (shift + step) % spots;
}

}  // namespace manyalloc::bits
