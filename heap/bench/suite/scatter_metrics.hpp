// Memory-efficiency measures of a Scatter heap, computed on the host from a
// copy of its page table (scatter/invariants.hpp), by the definitions of the
// [Steinberger2012] section 3:
//   internal fragmentation (1): mean over allocated regions r of
//       (size(r) - alloc(r)) / size(r), size(r) being the chunk size of r's
//       page (or the pages of a multi-page run), alloc(r) the request;
//   external fragmentation (2): 1 - largest free region / all free memory,
//       where a free region is a free chunk of a split page or a run of
//       consecutive unused pages (what a later request could get);
//   overhead: metadata in front of the pages plus the in-page bit-field
//       words of hierarchical pages, relative to the heap.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "manyalloc/heap/heap.hpp"

namespace manyalloc::heap::bench {

struct FreeStats {
  double free_bytes = 0;       // allocatable bytes
  double largest_free = 0;     // bytes of the largest free region
  double external = 0;         // equation (2)
  double overhead_bytes = 0;   // metadata + in-page bit fields
  double pages_in_use = 0;     // share of pages split or in runs
  double data_bytes = 0;       // page_count * pagesize
};

template <class Heap>
class PageTableSnapshot {
 public:
  using CP = typename Heap::CreationPolicy;
  static constexpr std::uint32_t pagesize = CP::pagesize;

  explicit PageTableSnapshot(const Heap& heap) : layout_(heap.creation().layout()), pages_(layout_.page_count) {
    Heap::backend::copy_to_host(pages_.data(), layout_.pages, pages_.size() * sizeof(heap::detail::PageEntry));
  }

  // size(r) of the chunk at p (0 if p is not in a used page).
  std::size_t extent(const void* p) const {
    if (p == nullptr || !layout_.contains(p, pagesize)) return 0;
    const auto off = static_cast<std::size_t>(static_cast<const std::byte*>(p) - layout_.data);
    const auto& e = pages_[off / pagesize];
    if (e.chunk_size == heap::detail::multi_page) return std::size_t{e.mask} * pagesize;
    return e.chunk_size;
  }

  // Equation (1) over the given live chunks and their requests.
  double internal(const std::vector<void*>& ptrs, const std::vector<std::size_t>& requests) const {
    double sum = 0;
    std::size_t n = 0;
    for (std::size_t i = 0; i < ptrs.size(); ++i) {
      const std::size_t s = extent(ptrs[i]);
      if (s == 0) continue;
      sum += static_cast<double>(s - std::min(s, requests[i])) / static_cast<double>(s);
      ++n;
    }
    return n ? sum / static_cast<double>(n) : 0.0;
  }

  FreeStats free_stats() const {
    using namespace heap::detail;
    FreeStats f;
    std::uint64_t run = 0, best_run = 0, used = 0, bitfield = 0;
    double largest_chunk = 0;
    for (const auto& e : pages_) {
      if (free_page<CP::HeapProperties::resetfreedpages>(e.chunk_size, e.fill)) {  // clean pages too (I1c)
        best_run = std::max(best_run, ++run);
        f.free_bytes += pagesize;
        continue;
      }
      run = 0;
      ++used;
      if (unused_page(e.chunk_size) || e.chunk_size > pagesize) continue;  // locked or multi-page
      const PageGeometry g = page_geometry(pagesize, e.chunk_size);
      bitfield += g.segments() * 4u;
      const std::uint32_t fill = std::min(e.fill, g.chunks);
      if (fill < g.chunks) {
        f.free_bytes += static_cast<double>(g.chunks - fill) * e.chunk_size;
        largest_chunk = std::max<double>(largest_chunk, e.chunk_size);
      }
    }
    f.largest_free = std::max(largest_chunk, static_cast<double>(best_run) * pagesize);
    f.external = f.free_bytes > 0 ? 1.0 - f.largest_free / f.free_bytes : 0.0;
    f.overhead_bytes = static_cast<double>(layout_.metadata_bytes + bitfield);
    f.pages_in_use = pages_.empty() ? 0 : static_cast<double>(used) / static_cast<double>(pages_.size());
    f.data_bytes = static_cast<double>(pages_.size()) * pagesize;
    return f;
  }

 private:
  heap::detail::HeapLayout layout_;
  std::vector<heap::detail::PageEntry> pages_;
};

}  // namespace manyalloc::heap::bench
