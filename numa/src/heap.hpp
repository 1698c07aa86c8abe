// Per-thread local heaps (types.hpp, struct Heap and struct Run, for the
// invariants). The fast paths are inline: allocation pops the lowest free bit
// of the current run of the class; a local free sets a bit. No lock and no
// atomic read-modify-write on either path; a free by another thread goes to
// the owner's remote free queue (remote_free).
#pragma once

#include <cstddef>
#include <cstdint>

#include "context.hpp"

namespace manyalloc::numa {

void heap_init(Heap& h, Context& c, Source& s);

// Slow path of heap_alloc: current run exhausted or missing.
void* heap_alloc_slow(Heap& h, unsigned cls);

// Merges the frees queued by other threads (owner only).
void heap_flush_remote(Heap& h);

// State change after chunks of r were freed and merged (owner only).
void heap_after_free(Heap& h, Run& r);

// Another thread (or one without a heap) frees chunk `idx` of run r.
void heap_free_remote(Context& c, Run& r, std::uint32_t idx);

// Thread exit: flush, give back empty segments, keep the rest for adoption.
void heap_abandon(Heap& h);

// Gives back every empty segment the heap keeps (malloc_trim).
void heap_trim(Heap& h);

// Purge: decommits (madvise(MADV_DONTNEED)) the OS pages of the heap's runs
// that hold only free chunks, so that the resident memory follows the bytes
// in use instead of the high-water mark of every size class. Triggered when
// the bytes merged into run bitmaps since the last purge reach `purge_at`
// (a small amount in the lowmem profile, a large one otherwise); lowmem
// also writes the free caches back first. The bins' current runs are left
// alone unless `all` (thread exit in lowmem, malloc_trim). Owner only.
void heap_purge(Heap& h, bool all = false);
inline void heap_maybe_purge(Heap& h) {
  if (h.purge_credit >= h.purge_at) [[unlikely]]
    heap_purge(h);
}

// Finds the run and chunk index of p inside a small segment. Returns nullptr
// (and reports the misuse as `where`) when p is not the start of a chunk of
// a live run. The fields read here are stable while the chunk is allocated.
inline Run* small_chunk_of(Context& c, SmallSegment& seg, const void* p, std::uint32_t* idx,
                           const char* where) {
  const std::size_t off = static_cast<std::size_t>(static_cast<const std::uint8_t*>(p) - seg.base);
  const unsigned page = static_cast<unsigned>(off >> kPageShift);
  if (seg.heap.load(std::memory_order_relaxed) == nullptr ||
      !((seg.used_pages.load(std::memory_order_relaxed) >> page) & 1u)) [[unlikely]] {
    misuse(c, where, Misuse::not_a_chunk_start, p);
    return nullptr;
  }
  Run& r = seg.runs[seg.page_run[page].load(std::memory_order_relaxed)];
  const std::size_t roff = static_cast<std::size_t>(static_cast<const std::uint8_t*>(p) - r.base);
  const std::uint32_t i = divide(roff, r.recip);
  if (i >= r.nchunks || static_cast<std::size_t>(i) * r.chunk_size != roff) [[unlikely]] {
    misuse(c, where, Misuse::not_a_chunk_start, p);
    return nullptr;
  }
  *idx = i;
  return &r;
}

// Owner frees chunk `idx` of run r.
inline void heap_free_local(Heap& h, Run& r, std::uint32_t idx) {
  const std::uint32_t w = idx >> 6;
  const std::uint64_t bit = std::uint64_t{1} << (idx & 63);
  if (r.free_bits[w] & bit) [[unlikely]] {
    misuse(*h.ctx, "free", Misuse::double_free, r.base + static_cast<std::size_t>(idx) * r.chunk_size);
    return;
  }
  r.free_bits[w] |= bit;
  if (w < r.cursor) r.cursor = w;
  r.dirty = 1;
  h.purge_credit += r.chunk_size;
  h.small_in_use.store(h.small_in_use.load(std::memory_order_relaxed) - r.chunk_size,
                       std::memory_order_relaxed);
  if (++r.free_count == r.nchunks || r.state == RunState::full) [[unlikely]]
    heap_after_free(h, r);
}

inline void* run_pop(Heap& h, Run& r) {
  std::uint32_t w = r.cursor;
  std::uint64_t bits;
  while ((bits = r.free_bits[w]) == 0) ++w;  // free_count > 0: a bit is set at >= cursor
  const unsigned b = static_cast<unsigned>(__builtin_ctzll(bits));
  r.free_bits[w] = bits & (bits - 1);
  r.cursor = w;
  if (w > r.hw) r.hw = static_cast<std::uint8_t>(w);
  --r.free_count;
  h.small_in_use.store(h.small_in_use.load(std::memory_order_relaxed) + r.chunk_size,
                       std::memory_order_relaxed);
  return r.base + (static_cast<std::size_t>(w) * 64 + b) * r.chunk_size;
}

// Writes the cached chunks of class cls back to their runs (all, or the
// older half when `half`).
void heap_cache_flush(Heap& h, unsigned cls, bool half);
void heap_cache_flush_all(Heap& h);

inline void* heap_alloc(Heap& h, unsigned cls) {
  // Check mode merges remote frees at every operation, so that a double
  // free across threads is reported right away.
  if (!h.cache_on && !h.rfq.maybe_empty()) [[unlikely]]
    heap_flush_remote(h);
  FreeCache& fc = h.cache[cls];
  if (fc.count != 0) {
    h.small_in_use.store(h.small_in_use.load(std::memory_order_relaxed) + kClasses.info[cls].size,
                         std::memory_order_relaxed);
    return fc.items[--fc.count];
  }
  Run* r = h.bins[cls].current;
  if (r != nullptr && r->free_count != 0) [[likely]]
    return run_pop(h, *r);
  return heap_alloc_slow(h, cls);
}

// Frees p, a pointer into small segment seg; self is the calling thread's
// heap or nullptr.
inline void small_free(Context& c, Heap* self, SmallSegment& seg, void* p) {
  if (self != nullptr && self->cache_on && seg.heap.load(std::memory_order_relaxed) == self) {
    // Owner's fast path: validate p with the per-page class and the class
    // tables only, then push it on the bin's free cache.
    const std::size_t off = static_cast<std::size_t>(static_cast<std::uint8_t*>(p) - seg.base);
    const unsigned page = static_cast<unsigned>(off >> kPageShift);
    if ((seg.used_pages.load(std::memory_order_relaxed) >> page) & 1u) [[likely]] {
      const unsigned cls = seg.page_cls[page].load(std::memory_order_relaxed);
      const ClassInfo& ci = kClasses.info[cls];
      const std::size_t roff =
          off - static_cast<std::size_t>(seg.page_run[page].load(std::memory_order_relaxed)) * kPage;
      const std::uint32_t i = divide(roff, ci.recip);
      FreeCache& fc = self->cache[cls];
      if (fc.count != 0 && fc.items[fc.count - 1] == p) [[unlikely]] {
        misuse(c, "free", Misuse::double_free, p);  // the most common double free
        return;
      }
      if (i < ci.chunks && static_cast<std::size_t>(i) * ci.size == roff) [[likely]] {
        if (fc.count == ci.cache_cap) [[unlikely]] {
          if (ci.cache_cap == 0) goto bitmap;
          heap_cache_flush(*self, cls, true);
          heap_maybe_purge(*self);
        }
        fc.items[fc.count++] = p;
        self->small_in_use.store(self->small_in_use.load(std::memory_order_relaxed) - ci.size,
                                 std::memory_order_relaxed);
        return;
      }
    }
  }
bitmap:
  std::uint32_t idx;
  Run* r = small_chunk_of(c, seg, p, &idx, "free");
  if (r == nullptr) return;
  if (self != nullptr && seg.heap.load(std::memory_order_relaxed) == self) {
    if (!self->cache_on && !self->rfq.maybe_empty()) [[unlikely]]
      heap_flush_remote(*self);
    heap_free_local(*self, *r, idx);
    heap_maybe_purge(*self);
  } else {
    heap_free_remote(c, *r, idx);
  }
}

}  // namespace manyalloc::numa
