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

template <class Runner, class Creation>
using ListHeap = Allocator<Creation, DistributionPolicies::NoOp, OOMPolicies::ReturnNull, typename Runner::Pool,
                           AlignmentPolicies::Shrink<16>>;

// The list-based baselines of [Steinberger2012] section 4. They have no
// pages: page_bytes only scales the suite's large requests. A MultiList
// request must fit into one of its lists, so the requests of half the heap
// are left out for it (serves_whole_heap). A list serves one request at a
// time, so the suite gives them the paper's heap (16 MiB) and at most 4096
// workers (the largest count of its Figure 4) instead of a GPU's full
// occupancy.
template <class Runner, class Creation, bool WholeHeap>
struct ListCaseOf : Runner {
  using Heap = ListHeap<Runner, Creation>;
  using ReuseHeap = Heap;
  static constexpr bool scatter = false;
  static constexpr bool serves_whole_heap = WholeHeap;
  static constexpr std::size_t page_bytes = 4096;
  static constexpr const char* case_name = WholeHeap ? "ListBased" : "MultiList";
  // A quarter of the runner's heap, from 2 MiB (MultiList's lists, one per
  // processor, each hold the largest test size) to 16 MiB: a list allocator
  // serves one request at a time, so filling a heap costs time in proportion
  // to its chunks; what the tests check does not depend on the size.
  static std::size_t heap_bytes() {
    return std::clamp<std::size_t>(Runner::heap_bytes() / 4, std::size_t{2} << 20, std::size_t{16} << 20);
  }
  static std::uint32_t many_workers() { return std::min<std::uint32_t>(Runner::many_workers(), 4096u); }
};
template <class Runner>
using ListCase = ListCaseOf<Runner, CreationPolicies::ListBased<>, true>;
template <class Runner>
using MultiListCase = ListCaseOf<Runner, CreationPolicies::MultiList<>, false>;

// Whether a case serves one request as large as half its heap (every case
// that does not say otherwise).
template <class Case>
constexpr bool serves_whole_heap() {
  if constexpr (requires { Case::serves_whole_heap; }) return Case::serves_whole_heap;
  else return true;
}

// Bytes a heap hands out from: pages for the page-based policies, the lists'
// data area for the list-based ones.
template <class Heap>
std::uint64_t heap_data_bytes(const Heap& heap, std::size_t page_bytes) {
  const auto& l = heap.creation().layout();
  if constexpr (requires { l.page_count; }) return std::uint64_t{l.page_count} * page_bytes;
  else return l.data_bytes();
}

// Used chunks, pages or segments left (0 once everything was freed).
template <class Statistics>
std::uint64_t in_use(const Statistics& st) {
  if constexpr (requires { st.pages_in_use; }) return st.pages_in_use;
  else return st.segments_in_use;
}

// Test names: "Host/HeapTest/Scatter.OverlapUntilFull", ...
struct CaseName {
  template <class Case>
  static std::string GetName(int) {
    if constexpr (requires { Case::case_name; }) return Case::case_name;
    else return Case::scatter ? "Scatter" : "SizeClassSlabs";
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
