// Heap configurations and reference formulas shared by the heap tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "manyalloc/heap/heap.hpp"

namespace manyalloc::heap::testing {

struct ResetPagesConfig : CreationPolicies::ScatterHeapConfig {
  static constexpr bool resetfreedpages = true;
};

template <class Runner, class Config = CreationPolicies::ScatterHeapConfig>
using ScatterHeap = Allocator<CreationPolicies::Scatter<Config>, DistributionPolicies::NoOp,
                              OOMPolicies::ReturnNull, typename Runner::Pool, AlignmentPolicies::Shrink<16>>;

template <class Runner, class Config = CreationPolicies::SizeClassSlabsConfig>
using SlabsHeap = Allocator<CreationPolicies::SizeClassSlabs<Config>, DistributionPolicies::NoOp,
                            OOMPolicies::ReturnNull, typename Runner::Pool, AlignmentPolicies::Shrink<16>>;

// What the generic suite (heap_typed_tests.hpp) is instantiated for: a back
// end's Runner (inherited: run, Buffer, sizes) and a creation policy.
// `Heap` is the policy as users get it; `ReuseHeap` the configuration that
// gives emptied memory back to every size (Scatter: resetfreedpages).
template <class Runner>
struct ScatterCase : Runner {
  using Heap = ScatterHeap<Runner>;
  using ReuseHeap = ScatterHeap<Runner, ResetPagesConfig>;
  static constexpr bool scatter = true;
  static constexpr std::size_t page_bytes = 4096;
};

template <class Runner>
struct SlabsCase : Runner {
  using Heap = SlabsHeap<Runner>;
  using ReuseHeap = SlabsHeap<Runner>;
  static constexpr bool scatter = false;
  static constexpr std::size_t page_bytes = CreationPolicies::SizeClassSlabsConfig::slab_bytes;
};

// Test names: "Host/HeapTest/Scatter.OverlapUntilFull", ...
struct CaseName {
  template <class Case>
  static std::string GetName(int) {
    return Case::scatter ? "Scatter" : "SizeClassSlabs";
  }
};

// Chunks of `s` bytes in a page of `p` bytes, by [Eckert2014]'s formula (4.3.5,
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

}  // namespace manyalloc::heap::testing
