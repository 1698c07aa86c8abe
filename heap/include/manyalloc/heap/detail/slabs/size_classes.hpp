// Size classes of the SizeClassSlabs heap: `per_doubling` classes in every
// doubling of sizes. The first classes are the multiples of 16 up to
// 16 * per_doubling; after that each doubling (b, 2b] is cut into
// per_doubling equal steps of b / per_doubling, up to 32 KiB:
//
//   per_doubling 2:  16 32 | 48 64 | 96 128 | 192 256 | ... | 24576 32768
//   per_doubling 16: 16 32 ... 256 | 272 288 ... 512 | 544 576 ... 1024 | ...
//
// A request wastes at most 1/per_doubling of its size (above the first
// classes), so for requests of many sizes the share of the pool that holds
// requested bytes grows with per_doubling; more classes cost more open
// segments (one per class and shard) and, for a warp asking for mixed
// sizes, more groups.
//
// Alignment: every class in (b, 2b] is a multiple of its step s = b /
// per_doubling (a power of two, at least 16), and every multiple of s in
// (b, 2b] is a class. So a request padded to a multiple of a power of two
// A (AlignmentPolicies::Shrink<A>) lands in a class that is a multiple of A:
// if A <= s, every class of the doubling is; if A > s, the request itself is
// a multiple of s and so a class. Chunks start at multiples of the class
// size in an aligned page, so they stay A-aligned.
#pragma once

#include <cstdint>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::detail::slabs {

inline constexpr std::uint32_t class_granule = 16;      // smallest class, and the step of the first ones
inline constexpr std::uint32_t largest_class_bytes = 32768;

template <std::uint32_t PerDoubling>
struct SizeClasses {
  static_assert(PerDoubling >= 2 && PerDoubling <= 32 && (PerDoubling & (PerDoubling - 1u)) == 0u,
                "classes per doubling: a power of two from 2 to 32");
  static constexpr std::uint32_t per_doubling = PerDoubling;
  // The first classes end at `linear_end`; doublings of it follow.
  static constexpr std::uint32_t linear_end = class_granule * PerDoubling;
  static_assert(linear_end < largest_class_bytes, "classes per doubling too large for 32 KiB classes");

  static constexpr std::uint32_t log2(std::uint32_t x) {
    std::uint32_t l = 0;
    while ((2u << l) <= x) ++l;
    return l;
  }
  static constexpr std::uint32_t doublings = log2(largest_class_bytes / linear_end);
  static constexpr std::uint32_t all = PerDoubling + PerDoubling * doublings;

  MANYALLOC_FN static constexpr std::uint32_t bytes(std::uint32_t cls) {
    if (cls < PerDoubling) return class_granule * (cls + 1u);
    const std::uint32_t t = (cls - PerDoubling) / PerDoubling;  // doubling (linear_end << t, linear_end << (t+1)]
    const std::uint32_t r = (cls - PerDoubling) % PerDoubling;
    return (linear_end << t) + (r + 1u) * (class_granule << t);
  }

  // Index of the smallest class of at least `request` bytes
  // (1 <= request <= 32768).
  MANYALLOC_FN static constexpr std::uint32_t of(std::uint32_t request) {
    if (request <= linear_end) return (request + class_granule - 1u) / class_granule - 1u;
    const std::uint32_t q = (request - 1u) / linear_end;  // in [2^t, 2^(t+1))
    std::uint32_t t = 0;
    while ((2u << t) <= q) ++t;
    const std::uint32_t step_shift = log2(class_granule) + t;
    const std::uint32_t above = request - (linear_end << t);  // in (0, linear_end << t]
    return PerDoubling + t * PerDoubling + ((above - 1u) >> step_shift);
  }

  // Classes whose chunks fit at least twice into a slab of `slab_bytes`.
  MANYALLOC_FN static constexpr std::uint32_t count(std::uint32_t slab_bytes) {
    std::uint32_t n = 0;
    while (n < all && bytes(n) * 2u <= slab_bytes) ++n;
    return n;
  }
};

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
