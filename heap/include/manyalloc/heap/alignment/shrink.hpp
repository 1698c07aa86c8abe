// AlignmentPolicies::Shrink ([Eckert2014] 4.3.2): moves the pool start up to the
// next multiple of `dataAlignment` (shrinking the pool) and pads every
// request to a multiple of it, so that chunks that start aligned stay aligned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "manyalloc/common/math.hpp"
#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::AlignmentPolicies {

template <std::uint32_t dataAlignment = 16>
struct Shrink {
  static_assert(is_power_of_two(dataAlignment), "Shrink: dataAlignment must be a power of two");
  static constexpr std::uint32_t alignment = dataAlignment;

  static std::pair<void*, std::size_t> align_pool(void* pool, std::size_t bytes) {
    const auto p = reinterpret_cast<std::uintptr_t>(pool);
    const std::uintptr_t aligned = round_up_or_zero<std::uintptr_t>(p, dataAlignment);
    const std::size_t cut = aligned - p;
    if (aligned == 0 || cut >= bytes) return {nullptr, 0};
    return {reinterpret_cast<void*>(aligned), bytes - cut};
  }

  // 0 stays 0; a size whose padding overflows becomes SIZE_MAX, which no
  // heap can serve, so the request fails through the OOM policy. With a
  // power-of-two alignment the padding is an add and a mask (no remainder):
  // it runs on every request, ahead of the creation policy's first read.
  MANYALLOC_FN static std::size_t apply_padding(std::size_t bytes) {
    constexpr std::size_t low = dataAlignment - 1u;
    if (bytes > std::numeric_limits<std::size_t>::max() - low) return std::numeric_limits<std::size_t>::max();
    return (bytes + low) & ~low;
  }

  static std::string classname() { return "Shrink[" + std::to_string(dataAlignment) + "]"; }
};

}  // namespace manyalloc::heap::AlignmentPolicies
