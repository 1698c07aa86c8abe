// The heap configurations the PIC benchmark compares, for one back end's
// reserve pool: HeapBuffer split for N species, Scatter with 8 KiB pages
// ([Eckert2014] 5.2.1: a page that fits one frame), SizeClassSlabs as it
// ships. All with NoOp distribution (5.2.1: a varying number of threads
// allocates, so combining requests only fragments).
#pragma once

#include <cstdint>
#include <utility>

#include "manyalloc/heap/heap.hpp"

namespace manyalloc::heap::pic {

template <std::uint32_t N>
struct SplitFor : CreationPolicies::HeapBufferConfig {
  static constexpr std::uint32_t species = N;
};

struct FramePages : CreationPolicies::ScatterHeapConfig {
  static constexpr std::uint32_t pagesize = 8192;
};

template <class Pool>
struct Heaps {
  template <class Creation>
  using With = Allocator<Creation, DistributionPolicies::NoOp, OOMPolicies::ReturnNull, Pool,
                         AlignmentPolicies::Shrink<16>>;
  template <std::uint32_t N>
  using HeapBuffer = With<CreationPolicies::HeapBuffer<SplitFor<N>>>;
  using Scatter = With<CreationPolicies::Scatter<FramePages>>;
  using Slabs = With<CreationPolicies::SizeClassSlabs<>>;
  // The splits built: the species counts of Figure 5.6's measured points.
  using heap_buffer_splits = std::integer_sequence<std::uint32_t, 1, 2, 4, 8, 16>;
};

}  // namespace manyalloc::heap::pic
