// The heap configurations the PIC benchmark compares, for one back end's
// reserve pool: HeapBuffer split for N species, Scatter with 8 KiB pages
// ([Eckert2014] 5.2.1: a page that fits one frame), SizeClassSlabs as it
// ships. All with NoOp distribution (5.2.1: a varying number of threads
// allocates, so combining requests only fragments).
#pragma once

#include <cstdint>
#include <tuple>
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

// One heap configuration of ours with its name in the records.
template <class Heap, class Name>
struct Entry {
  using heap = Heap;
  static constexpr const char* name = Name::value;
};
struct ScatterName {
  static constexpr const char* value = "Scatter";
};
struct SlabsName {
  static constexpr const char* value = "SizeClassSlabs";
};

template <class Pool>
struct Heaps {
  template <class Creation>
  using With = Allocator<Creation, DistributionPolicies::NoOp, OOMPolicies::ReturnNull, Pool,
                         AlignmentPolicies::Shrink<16>>;
  template <std::uint32_t N>
  using HeapBuffer = With<CreationPolicies::HeapBuffer<SplitFor<N>>>;
  using Scatter = With<CreationPolicies::Scatter<FramePages>>;
  // Frames (8 KiB by default) are of a class whose freed chunks of partly
  // used pages are reused once the pool is full (slabs/invariants.hpp C6).
  using Slabs = With<CreationPolicies::SizeClassSlabs<>>;
  // Our policies that share one pool among all species, in the order of the
  // records; a new creation policy is one more Entry here.
  using shared_pool = std::tuple<Entry<Scatter, ScatterName>, Entry<Slabs, SlabsName>>;
  // The splits built: the species counts of Figure 5.6's measured points.
  using heap_buffer_splits = std::integer_sequence<std::uint32_t, 1, 2, 4, 8, 16>;
};

}  // namespace manyalloc::heap::pic
