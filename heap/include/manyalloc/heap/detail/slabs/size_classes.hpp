// Size classes of the SizeClassSlabs heap: 16, 32, 48 and 64 bytes, then two
// classes per doubling (96, 128, 192, 256, ..., 24576, 32768), so that a
// request wastes at most a third of its chunk above 64 bytes. Every class is
// a multiple of 16, and a class of the form 3 * 2^k is a multiple of 2^k:
// a request padded to a multiple of a power of two A (AlignmentPolicies::
// Shrink<A>) always lands in a class that is a multiple of A, so its chunks,
// which start at multiples of the class size in an aligned page, stay
// A-aligned.
#pragma once

#include <cstdint>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::detail::slabs {

inline constexpr std::uint32_t all_classes = 22;

MANYALLOC_FN constexpr std::uint32_t class_bytes(std::uint32_t cls) {
  if (cls < 4) return 16u * (cls + 1u);
  const std::uint32_t k = 6u + (cls - 4u) / 2u;  // class lies in (2^k, 2^(k+1)]
  return (cls - 4u) % 2u == 0u ? 3u << (k - 1u) : 2u << k;
}

// Index of the smallest class of at least `bytes` (1 <= bytes <= 32768).
MANYALLOC_FN constexpr std::uint32_t class_of(std::uint32_t bytes) {
  if (bytes <= 64u) return (bytes + 15u) / 16u - 1u;
  std::uint32_t k = 6;  // bytes in (2^k, 2^(k+1)]
  while ((2u << k) < bytes) ++k;
  return 4u + 2u * (k - 6u) + (bytes > (3u << (k - 1u)) ? 1u : 0u);
}

// Classes whose chunks fit at least twice into a slab of `slab_bytes`.
MANYALLOC_FN constexpr std::uint32_t class_count(std::uint32_t slab_bytes) {
  std::uint32_t n = 0;
  while (n < all_classes && class_bytes(n) * 2u <= slab_bytes) ++n;
  return n;
}

// Pages a class's segment spans: enough for about `segment_chunks` chunks,
// so that a refill (C2) serves many warps, at most 32 pages (one word of
// the page bitmap).
MANYALLOC_FN constexpr std::uint32_t segment_log_pages(std::uint32_t chunks_per_page,
                                                       std::uint32_t segment_chunks) {
  std::uint32_t log = 0;
  while (log < 5u && (chunks_per_page << log) < segment_chunks) ++log;
  return log;
}

}  // namespace manyalloc::heap::detail::slabs
