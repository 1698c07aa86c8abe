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

}  // namespace manyalloc
