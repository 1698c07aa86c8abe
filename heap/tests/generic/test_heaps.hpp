// Heap configurations and reference formulas shared by the heap tests.
#pragma once

#include <algorithm>
#include <cstdint>

#include "manyalloc/heap/heap.hpp"

namespace manyalloc::testing {

struct ResetPagesConfig : CreationPolicies::ScatterHeapConfig {
  static constexpr bool resetfreedpages = true;
};

template <class Runner, class Config = CreationPolicies::ScatterHeapConfig>
using ScatterHeap = Allocator<CreationPolicies::Scatter<Config>, DistributionPolicies::NoOp,
                              OOMPolicies::ReturnNull, typename Runner::Pool, AlignmentPolicies::Shrink<16>>;

// Chunks of `s` bytes in a page of `p` bytes, by the thesis's formula (4.3.5,
// countFreeChunksInPage; its "fullSegments + additional" counts 32 chunks
// per full segment).
inline std::uint64_t thesis_chunks_in_page(std::uint64_t p, std::uint64_t s) {
  const std::uint64_t threshold = (p - 2 * sizeof(std::uint32_t)) / 33;
  if (s > threshold) return std::min<std::uint64_t>(p / s, 32);
  const std::uint64_t segment = s * 32 + sizeof(int);
  const std::uint64_t full = p / segment;
  const std::uint64_t used = full * segment + sizeof(int);
  const std::uint64_t additional = p > used ? (p - used) / s : 0;
  return full * 32 + additional;
}

}  // namespace manyalloc::testing
