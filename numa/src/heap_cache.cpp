// Local heaps: writing the free caches back to the run bitmaps (heap.hpp,
// heap_cache_flush) and sizing them (heap_set_cache).
#include <cstddef>
#include <cstdint>

#include "heap.hpp"

namespace manyalloc::numa {

void heap_set_cache(Heap& h, bool on) {
  OwnerLock hold(h);
  h.cache_on = on;
  h.rfq_poll = 1;  // the next allocation from a run merges the RFQ
  for (unsigned c = 0; c < num_classes; ++c) {
    const std::uint32_t cap =
        h.ctx->opts.profile == Profile::lowmem ? lowmem_cache_capacity(c) : cache_capacity(c);
    h.cache[c].cap = on ? cap : 0;
    if (h.cache[c].count.load(std::memory_order_relaxed) > h.cache[c].cap) heap_cache_flush(h, c, false);
  }
}

namespace {

// The run of class cls of h whose pages hold p, or nullptr (p lies in no
// small segment of h, or in a page of no run or of a run of another class).
Run* owned_run_of(Heap& h, const void* p, unsigned cls) {
  SmallSegment* seg = owned_small(h.ctx->registry.lookup(p), &h);
  if (seg == nullptr) return nullptr;
  const auto off = static_cast<std::size_t>(static_cast<const std::uint8_t*>(p) - seg->base);
  const std::uint16_t info = seg->page_info[off >> page_shift].load(std::memory_order_relaxed);
  if (info == 0 || page_info_cls(info) != cls) return nullptr;
  return &seg->runs[page_info_first(info)];
}

// Counts `bytes` written back from a free cache to run bitmaps (as
// heap_free_local does chunk by chunk).
void count_freed(Heap& h, std::uint64_t bytes) {
  h.purge_credit += bytes;
  h.small_in_use.store(h.small_in_use.load(std::memory_order_relaxed) - bytes,
                       std::memory_order_relaxed);
}

}  // namespace

void heap_cache_flush(Heap& h, unsigned cls, bool half) {
  FreeCache& fc = h.cache[cls];
  void** items = h.cache_stack(cls);
  const std::uint32_t count = fc.count.load(std::memory_order_relaxed);
  const std::uint32_t n = half ? (count + 1) / 2 : count;
  if (n == 0) return;
  // The oldest entries (bottom of the stack) go back to their runs. The
  // free fast path only checked that p's page belonged to a run of class
  // cls of this heap (heap.hpp). A pointer that was not a chunk start
  // holds no chunk, so its run, even its segment, may have been released
  // and reused since: p must still lie in a small segment of this heap and
  // be a chunk start of a run of cls (same class, same chunk grid: runs of
  // a class start at multiples of their size), and its bit must be clear
  // (a double free that reached the cache).
  //
  // Consecutive entries mostly lie in one run: the run found for an entry
  // is kept with the address range of its chunks, [lo, lo + span), and an
  // entry inside that range is checked against it without looking up its
  // segment and page again. The range is dropped (span = 0) whenever
  // heap_after_free may have released the run. This is heap_free_local
  // with those lookups shared and the byte counters updated once, before
  // heap_after_free (which reads them) and at the end.
  const ClassInfo& ci = class_table.info[cls];
  Run* run = nullptr;
  std::uintptr_t lo = 0, span = 0;
  std::uint64_t freed = 0;
  for (std::uint32_t k = 0; k < n; ++k) {
    void* p = items[k];
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if (a - lo >= span) [[unlikely]] {
      run = owned_run_of(h, p, cls);
      if (run == nullptr) {
        span = 0;
        misuse(*h.ctx, "free", Misuse::not_a_chunk_start, p);
        continue;
      }
      lo = reinterpret_cast<std::uintptr_t>(run->base);
      span = std::uintptr_t{ci.chunks} * ci.size;
    }
    const std::size_t roff = a - lo;
    const std::uint32_t idx = divide(roff, ci.recip);
    if (static_cast<std::size_t>(idx) * ci.size != roff) [[unlikely]] {
      misuse(*h.ctx, "free", Misuse::not_a_chunk_start, p);
      continue;
    }
    const std::uint32_t w = idx >> 6;
    const std::uint64_t bit = std::uint64_t{1} << (idx & 63);
    if (run->free_word_or_all(w) & bit) [[unlikely]] {
      misuse(*h.ctx, "free", Misuse::double_free, p);
      continue;
    }
    run->free_word(w) |= bit;
    if (w < run->cursor) run->cursor = w;
    run->dirty = 1;
    freed += ci.size;
    if (++run->free_count == run->nchunks || run->state == RunState::full) [[unlikely]] {
      count_freed(h, freed);
      freed = 0;
      heap_after_free(h, *run);
      span = 0;
    }
  }
  count_freed(h, freed);
  for (std::uint32_t k = n; k < count; ++k) items[k - n] = items[k];
  fc.count.store(count - n, std::memory_order_relaxed);
}

void heap_cache_flush_all(Heap& h) {
  for (unsigned c = 0; c < num_classes; ++c) heap_cache_flush(h, c, false);
}

}  // namespace manyalloc::numa
