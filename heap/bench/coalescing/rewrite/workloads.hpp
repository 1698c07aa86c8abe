// Device code shared by the plain-malloc kernels and the hand-written ones of
// the rewrite comparison: everything except the allocation calls, so the two
// variants differ only where the tool rewrites.
#pragma once

#include <cstdint>

namespace manyalloc::heap::bench::rewrite {

inline constexpr std::uint32_t alltoall_group = 32;
inline constexpr std::uint32_t alltoall_elems = 4;  // doubles per message

__device__ inline double alltoall_message(std::uint32_t from, std::uint32_t to, std::uint32_t e) {
  return static_cast<double>(from) * 1e3 + to + e * 0.25;
}

__device__ inline void unit_init(float* p, std::uint32_t n) {
  for (std::uint32_t i = 0; i < n; ++i) p[i] = static_cast<float>(i);
}

// The Linear or Quadratic workload of [Blach2022] Listing 2; the sum goes to d[0].
__device__ inline void unit_workload(float* d, std::uint32_t n, bool quadratic) {
  float sum = 0;
  if (quadratic) {
    for (std::uint32_t i = 0; i < n; ++i) {
      const float a = d[i];
      for (std::uint32_t j = 0; j < n; ++j) sum = __fmaf_rn(a, d[j], sum);
    }
  } else {
    for (std::uint32_t i = 0; i < n; ++i) sum += d[i];
  }
  d[0] = sum;
}

// Whether d holds the workload's result and, after it, the initial values
// (no other thread wrote into this part).
__device__ inline bool unit_verified(const float* d, std::uint32_t n, bool quadratic) {
  float expect = 0;
  if (quadratic) {
    for (std::uint32_t i = 0; i < n; ++i) {
      for (std::uint32_t j = 0; j < n; ++j) expect = __fmaf_rn(static_cast<float>(i), static_cast<float>(j), expect);
    }
  } else {
    for (std::uint32_t i = 0; i < n; ++i) expect += static_cast<float>(i);
  }
  bool ok = d[0] == expect;
  for (std::uint32_t i = 1; i < n && ok; ++i) ok = d[i] == static_cast<float>(i);
  return ok;
}

}  // namespace manyalloc::heap::bench::rewrite
