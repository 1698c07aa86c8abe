// The 4 KiB pages of the shared global address space that this process has
// already asked the kernel to map, so that a zero-copy receive prefaults
// only pages it has not mapped before (see prefault.hpp).
//
// Why a per-process set: with zero copy ([Lyberis2012] section 2's global address
// space backed by one memfd per host) the bytes of a received region are
// already in memory, but every process has its own page tables, so without
// a prefault the receiver's first touch of each page is a minor fault. The
// library never unmaps or punches holes in the GAS, so a page once mapped
// stays mapped (the kernel may still drop it under memory pressure; then
// the touch faults as usual, which is only slower).
//
// Invariants:
//   M1  the intervals [start, end) (page indices) are disjoint and never
//       touch: add() merges neighbours, so a contiguous mapped range is one
//       entry and gaps() visits it in O(trie levels);
//   M2  pages() is the number of pages the intervals cover.
#pragma once

#include <algorithm>
#include <cstdint>

#include "invariants.hpp"
#include "manyalloc/common/radix_trie.hpp"

namespace manyalloc::region::detail {

class MappedPages {
 public:
  // Calls f(first, end) for each maximal run of pages in [first, end) that is
  // not in the set, in increasing order.
  template <class F>
  void gaps(std::uint64_t first, std::uint64_t end, F&& f) const {
    std::uint64_t k = first;
    if (auto p = ends_.floor(k); p && *p.value > k) k = *p.value;
    while (k < end) {
      auto q = ends_.ceil(k);
      const std::uint64_t gap_end = q && q.key < end ? q.key : end;
      if (gap_end > k) f(k, gap_end);
      if (!q || q.key >= end) return;
      k = std::max(k, *q.value);
    }
  }

  // Adds [first, end), merging with the intervals it overlaps or touches (M1).
  void add(std::uint64_t first, std::uint64_t end) {
    if (first >= end) return;
    if (auto p = ends_.floor(first); p && *p.value >= first) {
      first = p.key;
      end = std::max(end, *p.value);
      pages_ -= *p.value - p.key;
      ends_.erase(p.key);
    }
    for (auto q = ends_.ceil(first); q && q.key <= end; q = ends_.ceil(first)) {
      end = std::max(end, *q.value);
      pages_ -= *q.value - q.key;
      ends_.erase(q.key);
    }
    ends_.insert(first, end);
    pages_ += end - first;
  }

  std::uint64_t pages() const { return pages_; }
  std::size_t intervals() const { return ends_.size(); }

 private:
  RadixTrie<std::uint64_t, slab_key_bits> ends_;  // start page -> end page
  std::uint64_t pages_ = 0;
};

}  // namespace manyalloc::region::detail
