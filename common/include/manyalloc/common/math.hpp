// Integer helpers used by every layer (host and device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "manyalloc/common/platform.hpp"

namespace manyalloc {

template <class T>
MANYALLOC_FN constexpr bool is_power_of_two(T x) {
  static_assert(std::is_unsigned_v<T>, "is_power_of_two needs an unsigned type");
  return x != 0 && (x & (x - 1)) == 0;
}

// ceil(a / b) for b > 0.
template <class T>
MANYALLOC_FN constexpr T ceil_div(T a, T b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

// Smallest multiple of `multiple` that is >= x, or 0 when that overflows T
// (callers treat 0 as "too large"). `multiple` must be > 0.
template <class T>
MANYALLOC_FN constexpr T round_up_or_zero(T x, T multiple) {
  const T rem = x % multiple;
  if (rem == 0) return x;
  const T add = multiple - rem;
  if (x > std::numeric_limits<T>::max() - add) return 0;
  return x + add;
}

template <class T>
MANYALLOC_FN constexpr T round_down(T x, T multiple) {
  return x - x % multiple;
}

// y / d for y < 2^21 and 1 <= d < 2^21 (offsets in a page, chunk indices in
// a segment, by a chunk size or a chunk count that is known only at run
// time). On the device an unsigned division by a variable is a sequence of
// about twenty instructions; a free of the heaps does up to three, which
// made them cost several times the instructions of a free with
// power-of-two sizes. Here y times the fast reciprocal of d ([PTX ISA]
// rcp.approx.ftz.f32, within one unit in the last place; no subnormals
// arise from integers) is within y / d * 2^-22 of y / d. Below a multiple of
// d, y / d lies at least 1/d under the next integer, more than that error
// while y < 2^22, so the truncation is never above the quotient; at a
// multiple it may fall just short, one below. One multiply-subtract settles
// that. Host code and constant evaluation divide.
MANYALLOC_FN MANYALLOC_INLINE constexpr std::uint32_t small_quotient(std::uint32_t y, std::uint32_t d) {
  if (std::is_constant_evaluated()) return y / d;
#if defined(__CUDA_ARCH__)
  float reciprocal;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(reciprocal) : "f"(static_cast<float>(d)));
  const auto q = static_cast<std::uint32_t>(static_cast<float>(y) * reciprocal);
  return y - q * d >= d ? q + 1u : q;
#else
  return y / d;
#endif
}

// y % d under small_quotient's bounds.
MANYALLOC_FN MANYALLOC_INLINE constexpr std::uint32_t small_remainder(std::uint32_t y, std::uint32_t d) {
  return y - small_quotient(y, d) * d;
}

// Bound of small_quotient's arguments (exclusive).
inline constexpr std::uint32_t small_quotient_limit = 1u << 21;

}  // namespace manyalloc
