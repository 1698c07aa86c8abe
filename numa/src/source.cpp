// Memory sources (source.hpp).
#include "source.hpp"

#include <bit>
#include <cerrno>
#include <cstdint>

#include "topology.hpp"

namespace manyalloc::numa {

namespace {

// Bounds on the count of cached large blocks (large_slots): the best-fit
// scan of the cache runs under the source's lock.
constexpr std::size_t min_cached_large = 64;
constexpr std::size_t max_cached_large = 4096;

void push(Segment*& head, Segment* s) {
  s->prev = nullptr;
  s->next = head;
  if (head) head->prev = s;
  head = s;
}
void unlink(Segment*& head, Segment* s) {
  if (s->prev) s->prev->next = s->next;
  else head = s->next;
  if (s->next) s->next->prev = s->prev;
  s->next = s->prev = nullptr;
}

// The resident idle pages of a small segment (SmallSegment::idle_pages).
unsigned idle_count(const Segment* seg) {
  return static_cast<unsigned>(std::popcount(static_cast<const SmallSegment*>(seg)->idle_pages));
}

void unmap_segment(Context& c, Segment* seg) {
  Source& s = *seg->source;
  if (seg->kind == SegKind::small) {
    // Resident idle pages a heap kept on the shared allowance
    // (heap_runs.cpp, segment_release) go with the mapping.
    if (const unsigned n = idle_count(seg); n != 0) shared_idle_give(c, n);
    static_cast<SmallSegment*>(seg)->idle_pages = 0;
  }
  c.registry.clear(seg->base, seg->bytes);
  os_unmap(c, seg->base, seg->bytes);
  s.mapped_bytes.fetch_sub(seg->bytes, std::memory_order_relaxed);
  s.os_unmaps.fetch_add(1, std::memory_order_relaxed);
  const std::size_t meta = seg->kind == SegKind::small
                               ? c.small_pool.destroy(static_cast<SmallSegment*>(seg), *c.os)
                               : c.large_pool.destroy(static_cast<LargeSegment*>(seg), *c.os);
  if (meta != 0) {  // the pool decommitted the descriptor's pages (meta_pool.hpp)
    constexpr auto k = static_cast<unsigned>(Giveback::meta);
    c.os_calls.decommits[k].fetch_add(1, std::memory_order_relaxed);
    c.os_calls.decommit_bytes[k].fetch_add(meta, std::memory_order_relaxed);
  }
}

// How long a segment of `kind` stays cached (options: decay_ms, large_decay_ms).
std::uint64_t decay_ns(const Context& c, SegKind kind) {
  return std::uint64_t{kind == SegKind::large ? c.opts.large_decay_ms : c.opts.decay_ms} * 1000000u;
}

// Puts seg at the head of a cache list of s (under s.lock): the lists stay
// ordered by cached_at, newest first.
void cache_push(Context& c, Source& s, Segment*& list, Segment* seg, std::uint64_t now) {
  seg->cached_at = now;
  push(list, seg);
  s.cached_bytes.fetch_add(seg->bytes, std::memory_order_relaxed);
  const std::uint64_t expires = now + decay_ns(c, seg->kind);
  const std::uint64_t next = s.decay_next.load(std::memory_order_relaxed);
  if (next == 0 || expires < next) s.decay_next.store(expires, std::memory_order_relaxed);
}

void advise(Context& c, Source& s, void* p, std::size_t bytes) {
  if (c.opts.huge_pages) c.os->advise_huge(p, bytes);
  const int node = c.source_node(s);
  if (node >= 0 && c.opts.bind) topology_bind(c, p, bytes, node, false);
}

// The bytes the cache of s may hold: cache_max, and in lowmem at least a
// quarter of the bytes of its large blocks in use (options.hpp,
// lowmem_large_live_share), so that blocks replaced by others of other sizes
// find a cached one that fits while the resident set stays within about
// 1.25x the live large bytes (plus cache_max and the newest block).
std::size_t cache_budget(const Context& c, const Source& s) {
  if (c.opts.profile != Profile::lowmem || c.opts.cache_max == 0) return c.opts.cache_max;
  const std::size_t share = s.large_in_use_bytes.load(std::memory_order_relaxed) / lowmem_large_live_share;
  return share > c.opts.cache_max ? share : c.opts.cache_max;
}

// The oldest segment of a cache list (the lists are ordered newest first),
// or nullptr when the list is empty.
Segment* oldest_of(Segment* list) {
  while (list != nullptr && list->next != nullptr) list = list->next;
  return list;
}

// Takes the large segment seg out of the cache of s (under s.lock).
void uncache_large(Source& s, Segment* seg) {
  unlink(s.large_cache, seg);
  --s.large_count;
  s.cached_bytes.fetch_sub(seg->bytes, std::memory_order_relaxed);
}

// How many large blocks the cache of s may hold: as many 2 MiB segments as
// its budget holds (at least min_cached_large, at most max_cached_large), so
// that the budget in bytes, not the count, decides what stays cached
// (numa/DESIGN.md, "Large cache").
std::size_t large_slots(const Context& c, const Source& s) {
  const std::size_t n = cache_budget(c, s) / segment_bytes;
  return n < min_cached_large ? min_cached_large : n > max_cached_large ? max_cached_large : n;
}

// Unmaps the cached large segments beyond the cache's budget
// (cache_budget), the oldest first, all but `keep`. The newest large
// segment freed is cached even when it exceeds the budget
// (source_give_large); called without `keep` before the source maps fresh
// memory or grows a segment, this takes the cache back within the budget,
// so that a block kept that way never adds to the peak of the resident set.
void restore_budget(Context& c, Source& s, const Segment* keep = nullptr) {
  const std::size_t limit = cache_budget(c, s);
  if (s.cached_bytes.load(std::memory_order_relaxed) <= limit) return;
  Segment* evicted = nullptr;
  {
    SpinGuard g(s.lock);
    // From the oldest towards the newest (prev), skipping keep.
    for (Segment* it = oldest_of(s.large_cache); it != nullptr && s.cached_bytes.load(std::memory_order_relaxed) > limit;) {
      Segment* newer = it->prev;
      if (it != keep) {
        uncache_large(s, it);
        it->next = evicted;
        evicted = it;
      }
      it = newer;
    }
  }
  while (evicted != nullptr) {
    Segment* after = evicted->next;
    unmap_segment(c, evicted);
    evicted = after;
  }
}

// Caches the large segment seg, the newest: when the cache holds
// large_slots blocks already, the oldest makes room, and then those beyond
// the budget in bytes, all but `keep` (restore_budget).
void cache_large(Context& c, Source& s, Segment* seg, const Segment* keep) {
  Segment* evicted = nullptr;
  {
    SpinGuard g(s.lock);
    if (s.large_count >= large_slots(c, s)) {
      evicted = oldest_of(s.large_cache);
      uncache_large(s, evicted);
    }
    cache_push(c, s, s.large_cache, seg, c.os->now());
    ++s.large_count;
  }
  if (evicted != nullptr) unmap_segment(c, evicted);
  restore_budget(c, s, keep);
}

// Cuts the cached segment seg (taken out of the cache by the caller) to
// `bytes` and caches the rest as a segment of its own (same mapping; the
// kernel knows nothing of the cut). False when no descriptor could be
// made (seg unchanged).
bool split_large(Context& c, LargeSegment* seg, std::size_t bytes) {
  Source& s = *seg->source;
  LargeSegment* tail = c.large_pool.create(*c.os);
  if (tail == nullptr) return false;
  tail->kind = SegKind::large;
  tail->base = seg->base + bytes;
  tail->bytes = seg->bytes - bytes;
  tail->source = &s;
  tail->bound_node = seg->bound_node;
  tail->touched = seg->touched > bytes ? seg->touched - bytes : 0;
  seg->bytes = bytes;
  if (seg->touched > bytes) seg->touched = bytes;
  c.registry.set(tail->base, tail->bytes, tail);  // publishes the initialised descriptor
  cache_large(c, s, tail, nullptr);
  return true;
}

// Decommits the resident idle pages of the cached small segments of s, the
// oldest segments first, while the shares of the shared allowance exceed it
// (its peak aged since they were kept), or, with `need` != 0, until at
// least `need` pages went back: they were kept on it only (heap_runs.cpp,
// segment_release). Under the lock: a few madvise calls, at a decay that
// finds the process over its allowance or for a heap that found no room on
// it. Returns the pages given back.
std::uint64_t trim_resident_idle(Context& c, Source& s, std::uint64_t need = 0) {
  if (s.idle_resident.load(std::memory_order_relaxed) == 0 || (need == 0 && !shared_idle_over(c))) return 0;
  std::uint64_t given = 0;
  SpinGuard g(s.lock);
  for (Segment* it = oldest_of(s.small_cache); it != nullptr && (need != 0 ? given < need : shared_idle_over(c));
       it = it->prev) {
    auto* seg = static_cast<SmallSegment*>(it);
    const unsigned n = idle_count(seg);
    if (n == 0) continue;
    os_decommit_pages(c, seg->base, seg->idle_pages, Giveback::idle);
    seg->idle_pages = 0;
    s.idle_resident.fetch_sub(n, std::memory_order_relaxed);
    shared_idle_give(c, n);
    given += n;
  }
  return given;
}

}  // namespace

std::uint64_t source_reclaim_resident(Context& c, Source& s, std::uint64_t need) {
  return need == 0 ? 0 : trim_resident_idle(c, s, need);
}

void source_decay(Context& c, Source& s) {
  trim_resident_idle(c, s);
  // Read without the lock: a source with nothing cached, or nothing old
  // enough, is not written (node sources' pages stay untouched).
  if (s.cached_bytes.load(std::memory_order_relaxed) == 0) return;
  const std::uint64_t next = s.decay_next.load(std::memory_order_relaxed);
  if (next == 0) return;
  const std::uint64_t now = c.os->now();
  if (now < next) return;
  Segment* expired = nullptr;
  {
    SpinGuard g(s.lock);
    std::uint64_t new_next = 0;
    for (Segment** list : {&s.small_cache, &s.large_cache}) {
      for (Segment* it = *list; it != nullptr;) {
        Segment* after = it->next;
        const std::uint64_t delay = decay_ns(c, it->kind);
        if (it->cached_at + delay <= now) {
          unlink(*list, it);
          if (it->kind == SegKind::large) --s.large_count;
          else s.idle_resident.fetch_sub(idle_count(it), std::memory_order_relaxed);
          s.cached_bytes.fetch_sub(it->bytes, std::memory_order_relaxed);
          it->next = expired;
          expired = it;
        } else if (new_next == 0 || it->cached_at + delay < new_next) {
          new_next = it->cached_at + delay;
        }
        it = after;
      }
    }
    s.decay_next.store(new_next, std::memory_order_relaxed);
  }
  while (expired != nullptr) {
    Segment* after = expired->next;
    c.os_calls.decayed.fetch_add(1, std::memory_order_relaxed);
    c.os_calls.decayed_bytes.fetch_add(expired->bytes, std::memory_order_relaxed);
    unmap_segment(c, expired);
    expired = after;
  }
}

bool source_map(Context& c, Source& s, Segment* seg, std::size_t bytes) {
  restore_budget(c, s);  // within the budget before the resident set grows
  const int saved = errno;
  unsigned trims = 0;
  auto* base = static_cast<std::uint8_t*>(map_aligned(*c.os, bytes, &trims));
  count_unmaps(c, trims);
  if (base == nullptr || !c.registry.reserve(*c.os, base, bytes)) {
    if (base) os_unmap(c, base, bytes);
    errno = saved;
    return false;
  }
  seg->base = base;
  seg->bytes = bytes;
  seg->source = &s;
  advise(c, s, base, bytes);
  s.mapped_bytes.fetch_add(bytes, std::memory_order_relaxed);
  s.os_maps.fetch_add(1, std::memory_order_relaxed);
  c.registry.set(base, bytes, seg);  // publishes the initialised descriptor
  return true;
}

SmallSegment* source_take_small(Context& c, Source& s) {
  source_decay(c, s);
  SmallSegment* seg = nullptr;
  {
    SpinGuard g(s.lock);
    if (s.small_cache != nullptr) {
      seg = static_cast<SmallSegment*>(s.small_cache);
      unlink(s.small_cache, seg);
      s.cached_bytes.fetch_sub(segment_bytes, std::memory_order_relaxed);
      s.idle_resident.fetch_sub(idle_count(seg), std::memory_order_relaxed);
    }
  }
  if (seg != nullptr) {
    // Its resident idle pages leave the shared allowance: the taking heap
    // counts them as its own (heap_runs.cpp, run_new).
    if (seg->idle_pages != 0) shared_idle_give(c, idle_count(seg));
    s.reuses.fetch_add(1, std::memory_order_relaxed);
    return seg;
  }
  seg = c.small_pool.create(*c.os);
  if (seg == nullptr) return nullptr;
  seg->kind = SegKind::small;
  if (!source_map(c, s, seg, segment_bytes)) {
    c.small_pool.destroy(seg, *c.os);
    return nullptr;
  }
  return seg;
}

void source_give_small(Context& c, SmallSegment* seg) {
  Source& s = *seg->source;
  seg->heap.store(nullptr, std::memory_order_relaxed);
  seg->used_pages.store(0, std::memory_order_relaxed);
  const std::uint64_t now = c.os->now();
  bool cached = false;
  {
    SpinGuard g(s.lock);
    // Lowmem keeps its small cache for large blocks (a heap keeps an empty
    // segment of its own until its next purge, heap_purge.cpp).
    if (c.opts.profile != Profile::lowmem &&
        s.cached_bytes.load(std::memory_order_relaxed) + segment_bytes <= c.opts.cache_max) {
      cache_push(c, s, s.small_cache, seg, now);
      s.idle_resident.fetch_add(idle_count(seg), std::memory_order_relaxed);
      cached = true;
    }
  }
  if (!cached) unmap_segment(c, seg);
  source_decay(c, s);
}

LargeSegment* source_take_large(Context& c, Source& s, std::size_t bytes) {
  if (bytes > SIZE_MAX - segment_bytes) return nullptr;
  source_decay(c, s);
  bytes = (bytes + segment_bytes - 1) & ~(segment_bytes - 1);
  LargeSegment* seg = nullptr;
  {
    SpinGuard g(s.lock);
    LargeSegment* best = nullptr;     // smallest >= bytes
    LargeSegment* smaller = nullptr;  // largest < bytes
    for (Segment* it = s.large_cache; it != nullptr; it = it->next) {
      auto* l = static_cast<LargeSegment*>(it);
      if (l->bytes >= bytes) {
        if (best == nullptr || l->bytes < best->bytes) best = l;
        if (l->bytes == bytes) break;  // nothing fits better; the newest such block
      } else if (smaller == nullptr || l->bytes > smaller->bytes) {
        smaller = l;
      }
    }
    seg = best ? best : smaller;
    if (seg != nullptr) uncache_large(s, seg);
  }
  if (seg != nullptr) {
    const std::size_t reused = seg->touched < bytes ? seg->touched : bytes;
    // A much larger segment is split: its tail becomes a cached segment of
    // its own, whose touched pages the next blocks reuse (unmapping the
    // tail made malloc-large fault far more pages than glibc: numa/DESIGN.md).
    // A smaller one is grown in
    // place or moved by mremap: either way the touched pages are kept,
    // which is the point of recycling. Lowmem splits any larger one: the
    // touched pages of the rest would stay resident while the block is in
    // use (raising peak RSS; numa/DESIGN.md), and the rest goes to the
    // cache, within its budget, or back to the OS.
    const bool much_larger = c.opts.profile == Profile::lowmem ? seg->bytes > bytes
                                                               : seg->bytes >= 2 * bytes + segment_bytes;
    if (much_larger && split_large(c, seg, bytes)) {
      s.reuses.fetch_add(1, std::memory_order_relaxed);
      s.faults_avoided.fetch_add(reused / os_page, std::memory_order_relaxed);
      return seg;
    }
    const bool resize = seg->bytes < bytes || much_larger;
    if (!resize || source_resize_large(c, seg, bytes)) {
      s.reuses.fetch_add(1, std::memory_order_relaxed);
      s.faults_avoided.fetch_add(reused / os_page, std::memory_order_relaxed);
      return seg;
    }
    unmap_segment(c, seg);  // could not resize: start afresh
  }
  seg = c.large_pool.create(*c.os);
  if (seg == nullptr) return nullptr;
  seg->kind = SegKind::large;
  seg->bound_node = -1;
  if (!source_map(c, s, seg, bytes)) {
    c.large_pool.destroy(seg, *c.os);
    return nullptr;
  }
  return seg;
}

void source_give_large(Context& c, LargeSegment* seg) {
  Source& s = *seg->source;
  // The newest freed block is cached whatever its size (unless the cache
  // is off): a program that frees a block and allocates another soon
  // reuses its pages instead of unmapping them and faulting in new ones
  // (mimalloc-bench's malloc-large: numa/DESIGN.md). Older ones beyond the
  // budget make room (restore_budget).
  if (c.opts.cache_max == 0) unmap_segment(c, seg);
  else cache_large(c, s, seg, seg);
  source_decay(c, s);
}

bool source_resize_large(Context& c, LargeSegment* seg, std::size_t new_bytes) {
  const std::size_t old_bytes = seg->bytes;
  if (new_bytes == old_bytes) return true;
  Source& s = *seg->source;
  const int saved = errno;
  // The registry forgets a range before the kernel releases it, never after:
  // as soon as munmap or a moving mremap returns, another thread's mmap may
  // get those addresses for a segment of its own and register it, and a late
  // clear would erase that thread's entries (its pointers would then look
  // foreign: realloc failing with EINVAL, free ignoring them).
  if (new_bytes < old_bytes) {
    c.registry.clear(seg->base + new_bytes, old_bytes - new_bytes);
    if (os_unmap(c, seg->base + new_bytes, old_bytes - new_bytes) != 0) {
      c.registry.set(seg->base + new_bytes, old_bytes - new_bytes, seg);
      errno = saved;
      return false;
    }
    seg->bytes = new_bytes;
    if (seg->touched > new_bytes) seg->touched = new_bytes;
    s.mapped_bytes.fetch_sub(old_bytes - new_bytes, std::memory_order_relaxed);
    return true;
  }
  restore_budget(c, s);  // the resident set grows
  // Registry leaves are reserved before any page moves, so that once the
  // kernel has moved the pages nothing can fail any more.
  std::uint8_t* q = nullptr;
  if (c.registry.reserve(*c.os, seg->base, new_bytes))
    q = static_cast<std::uint8_t*>(c.os->remap(seg->base, old_bytes, new_bytes, nullptr));
  if (q == nullptr) {
    // Not in place: move the pages (no copy) onto a fresh aligned reservation.
    // The old range is forgotten before the move (see above); the segment
    // is in the middle of its owner's realloc, so no other thread may look
    // its pointer up meanwhile.
    unsigned trims = 0;
    auto* target = static_cast<std::uint8_t*>(map_aligned(*c.os, new_bytes, &trims));
    count_unmaps(c, trims);
    if (target != nullptr && c.registry.reserve(*c.os, target, new_bytes)) {
      c.registry.clear(seg->base, old_bytes);
      q = static_cast<std::uint8_t*>(c.os->remap(seg->base, old_bytes, new_bytes, target));
      if (q == nullptr) c.registry.set(seg->base, old_bytes, seg);
    }
    if (q == nullptr) {
      if (target != nullptr) os_unmap(c, target, new_bytes);
      errno = saved;
      return false;
    }
    advise(c, s, q, new_bytes);
  } else {
    advise(c, s, q + old_bytes, new_bytes - old_bytes);
  }
  seg->base = q;
  seg->bytes = new_bytes;
  c.registry.set(q, new_bytes, seg);
  s.mapped_bytes.fetch_add(new_bytes - old_bytes, std::memory_order_relaxed);
  s.remaps.fetch_add(1, std::memory_order_relaxed);
  errno = saved;
  return true;
}

void source_release_cache(Context& c, Source& s) {
  // A source with nothing cached is only read: taking its lock would make
  // resident the pages of node sources that the process never used.
  if (s.cached_bytes.load(std::memory_order_relaxed) == 0) return;
  Segment* list[2];
  {
    SpinGuard g(s.lock);
    list[0] = s.small_cache;
    list[1] = s.large_cache;
    s.small_cache = s.large_cache = nullptr;
    s.large_count = 0;
    s.idle_resident.store(0, std::memory_order_relaxed);  // unmap_segment gives them back
    s.cached_bytes.store(0, std::memory_order_relaxed);
    s.decay_next.store(0, std::memory_order_relaxed);
  }
  for (Segment* head : list) {
    while (head != nullptr) {
      Segment* next = head->next;
      unmap_segment(c, head);
      head = next;
    }
  }
}

}  // namespace manyalloc::numa
