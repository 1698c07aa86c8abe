// Memory-efficiency measures of a SizeClassSlabs heap, computed on the host
// from a copy of its page table, chunk bitmaps and page bitmap, by the
// definitions of [Steinberger2012] section 3 (as scatter_metrics.hpp does for
// Scatter):
//   internal fragmentation (1): mean over live chunks of
//       (size(r) - alloc(r)) / size(r), size(r) the request's size class
//       (or its run of whole pages);
//   external fragmentation (2): 1 - largest free region / all free memory;
//       free regions are the free chunks of slab pages (chunk bit clear,
//       whether or not the heap reuses them before the page empties,
//       slabs/invariants.hpp S2) and runs of free pages.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/heap/heap.hpp"

namespace manyalloc::heap::bench {

template <class Heap>
concept HasSlabPages = requires(const Heap& h) { h.creation().layout().chunk_bits; };

struct SlabStats {
  double internal = 0;
  double external = 0;
  double free_bytes = 0;
  double largest_free = 0;
};

template <class Heap>
SlabStats slab_stats(const Heap& heap, const std::vector<void*>& live, const std::vector<std::size_t>& requests) {
  namespace slabs = heap::detail::slabs;
  using CP = typename Heap::CreationPolicy;
  const auto& l = heap.creation().layout();
  const std::size_t slab = l.slab_bytes();
  SlabStats s;
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < live.size(); ++i) {
    if (live[i] == nullptr) continue;
    const std::size_t r = requests[i];
    const double size = r <= CP::largest_class ? CP::Classes::bytes(CP::Classes::of(static_cast<std::uint32_t>(r)))
                                               : static_cast<double>((r + slab - 1) / slab * slab);
    sum += (size - static_cast<double>(r)) / size;
    ++n;
  }
  s.internal = n ? sum / static_cast<double>(n) : 0.0;

  std::vector<slabs::SlabPage> pages(l.page_count);
  std::vector<std::uint32_t> bits(std::size_t{l.page_count} * l.bitmap_words), taken(l.words);
  Heap::backend::copy_to_host(pages.data(), l.pages, pages.size() * sizeof(pages[0]));
  Heap::backend::copy_to_host(bits.data(), l.chunk_bits, bits.size() * sizeof(bits[0]));
  Heap::backend::copy_to_host(taken.data(), l.taken, taken.size() * sizeof(taken[0]));
  std::vector<bool> large(l.page_count, false);
  for (std::uint32_t p = 0; p < l.page_count; ++p)
    if (pages[p].cls == slabs::large_head)
      for (std::uint32_t q = p; q < std::min<std::uint64_t>(l.page_count, std::uint64_t{p} + pages[p].run); ++q) large[q] = true;
  std::uint64_t run = 0, best_run = 0;
  double largest_chunk = 0;
  for (std::uint32_t p = 0; p < l.page_count; ++p) {
    const bool is_taken = ((taken[p / 32] >> (p % 32)) & 1u) != 0u;
    if (!is_taken) {
      best_run = std::max(best_run, ++run);
      s.free_bytes += static_cast<double>(slab);
      continue;
    }
    run = 0;
    const std::uint32_t cls = pages[p].cls;
    // A slab's chunk bits are all on its first page (lead 0; slabs/invariants.hpp S2).
    if (large[p] || cls == 0 || cls > CP::class_count || pages[p].lead != 0) continue;
    const std::uint32_t bytes = CP::Classes::bytes(cls - 1);
    const auto per_page = static_cast<std::uint32_t>(slab / bytes);
    const std::uint32_t chunks = per_page * pages[p].run;
    std::uint32_t used = 0;
    if (slabs::ClassSlots<typename CP::Properties>::state_has_bits(cls)) {
      used = bits::popcount(pages[p].used);  // the bits are the state's count half (S2)
    } else if (per_page <= slabs::entry_chunks) {
      for (std::uint32_t word : pages[p].bits) used += bits::popcount(word);  // SlabLayout::chunk_word
    } else {
      for (std::uint32_t w = 0; w < l.bitmap_words; ++w) used += bits::popcount(bits[std::size_t{p} * l.bitmap_words + w]);
    }
    if (used < chunks) {
      s.free_bytes += static_cast<double>(chunks - used) * bytes;
      largest_chunk = std::max<double>(largest_chunk, bytes);
    }
  }
  s.largest_free = std::max(largest_chunk, static_cast<double>(best_run) * static_cast<double>(slab));
  s.external = s.free_bytes > 0 ? 1.0 - s.largest_free / s.free_bytes : 0.0;
  return s;
}

}  // namespace manyalloc::heap::bench
