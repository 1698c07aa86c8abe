// Per-thread local heaps: their entry points (heap.hpp): init, the
// allocation and free slow paths, after_free, abandon and trim. Runs,
// segments and retained pages are in heap_runs.cpp, the purge in
// heap_purge.cpp, the free caches in heap_cache.cpp, remote frees in
// remote_free.cpp.
#include "heap.hpp"

#include <bit>

#include "heap_internal.hpp"

namespace manyalloc::numa {

namespace {

// ---- borrowing ----------------------------------------------------------------

// Before a new run of class cls is made, a free chunk of one of the next
// borrow_classes classes (up to two doublings larger) is handed out
// instead. Runs segregate sizes, so each class needs room for its own peak
// of live chunks, and those peaks come at different times: the sum of the
// per-class peaks exceeds the peak of the sum, which a best-fit allocator
// such as glibc's shares between sizes (numa/DESIGN.md, "Figures moved out
// of the code"). A borrowed chunk wastes up to 3/4
// of itself, but its pages are resident already. While a class borrows,
// each of its allocations takes this slow path, so only classes whose
// chunks are big enough for that not to matter borrow: above 128 B in
// lowmem, above 512 B otherwise (the bounds chosen by peak RSS and speed,
// numa/DESIGN.md). The lending class must be at least as aligned as cls (its
// size has at least as many trailing zero bits), since aligned requests
// choose cls for the alignment of its chunks (class_for_aligned). The
// chunk stays a chunk of its own run and class: malloc_usable_size reports
// that size, and its free finds that run.
constexpr unsigned borrow_classes = 8;
constexpr unsigned borrow_from_lowmem = linear_classes;          // > 128 B
constexpr unsigned borrow_from = size_to_class(512) + 1;        // > 512 B

bool may_borrow(unsigned cls, unsigned from) {
  return std::countr_zero(class_size(from)) >= std::countr_zero(class_size(cls));
}

void* heap_borrow(Heap& h, unsigned cls) {
  if (cls < (h.ctx->opts.profile == Profile::lowmem ? borrow_from_lowmem : borrow_from))
    return nullptr;
  for (unsigned from = cls + 1; from <= cls + borrow_classes && from < num_classes; ++from) {
    if (!may_borrow(cls, from)) continue;
    Bin& bin = h.bins[from];
    if (bin.current != nullptr && bin.current->free_count != 0) return run_pop(h, *bin.current);
    if (Run* r = bin.partial) {
      void* p = run_pop(h, *r);
      if (r->free_count == 0) {  // as when a current run is exhausted
        bin_unlink(bin, *r);
        r->state = RunState::full;
      }
      return p;
    }
  }
  return nullptr;
}

}  // namespace

void heap_init(Heap& h, Context& c, Source& s) {
  h.ctx = &c;
  h.source = &s;
  h.merge_for_owner = c.opts.profile == Profile::lowmem;
  for (unsigned k = 0; k < num_classes; ++k) h.cache[k].stack = h.cache_slots + cache_layout.first[k];
  heap_set_cache(h, !c.abort_on_misuse.load(std::memory_order_relaxed));
  set_purge_threshold(h);
}

std::uint64_t heap_small_in_use(const Heap& h) {
  std::uint64_t cached = 0;
  for (unsigned c = 0; c < num_classes; ++c)
    cached += std::uint64_t{h.cache[c].count.load(std::memory_order_relaxed)} * class_table.info[c].size;
  const std::uint64_t in_use = h.small_in_use.load(std::memory_order_relaxed);
  return in_use > cached ? in_use - cached : 0;  // read racily by statistics
}

namespace {

// small_free_slow for a chunk of the caller's own heap (a full or disabled
// free cache, or a pointer the fast path refused). Out of line, so that
// frees of other heaps' chunks, the common case here, need no stack frame
// for the lock and the cache write-back.
[[gnu::noinline]] void owner_free_slow(Context& c, Heap* self, ChunkRef ch, void* p) {
  OwnerLock hold(*self);
  FreeCache& fc = self->cache[ch.cls];
  const std::uint32_t n = fc.count.load(std::memory_order_relaxed);
  if (n != 0 && self->cache_stack(ch.cls)[n - 1] == p) {
    misuse(c, "free", Misuse::double_free, p);  // the most common double free
    return;
  }
  if (fc.cap != 0) {
    // The cache is full: its older half goes back to the runs.
    heap_cache_flush(*self, ch.cls, true);
    heap_maybe_purge(*self);
    const std::uint32_t k = fc.count.load(std::memory_order_relaxed);
    self->cache_stack(ch.cls)[k] = p;
    fc.count.store(k + 1, std::memory_order_relaxed);
    return;
  }
  if (!self->cache_on && !self->rfq.maybe_empty()) heap_flush_remote(*self);
  heap_free_local(*self, *ch.run, ch.idx);
  heap_maybe_purge(*self);
}

}  // namespace

void small_free_slow(Context& c, Heap* self, SmallSegment& seg, void* p) {
  const ChunkRef ch = small_chunk_of(c, seg, p, "free");
  if (ch.run == nullptr) [[unlikely]]
    return;
  if (self != nullptr && seg.heap.load(std::memory_order_relaxed) == self) [[unlikely]]
    return owner_free_slow(c, self, ch, p);
  if (self != nullptr && self->cache_on) [[likely]]
    return heap_free_remote_batched(*self, ch);
  heap_free_remote(c, *ch.run, ch.idx);
}

void* heap_alloc_run_locked(Heap& h, unsigned cls) {
  OwnerLock hold(h);
  return heap_alloc_run_owned(h, cls);
}

void* heap_alloc_slow(Heap& h, unsigned cls) {
  heap_remote_batch_flush(h);
  if (!h.rfq.maybe_empty()) heap_flush_remote(h);
  heap_maybe_purge(h);
  Bin& bin = h.bins[cls];
  if (bin.current != nullptr && bin.current->free_count != 0)  // refilled by the flush
    return heap_refill(h, *bin.current, cls);
  if (Run* cur = bin.current) {
    // Exhausted (free_count == 0): it becomes full and leaves the bin.
    cur->state = RunState::full;
    bin.current = nullptr;
  }
  Run* r = bin.partial;
  if (r != nullptr) {
    bin_unlink(bin, *r);
  } else {
    if (void* p = heap_borrow(h, cls)) return p;
    r = run_new(h, cls);
    if (r == nullptr) return nullptr;
  }
  r->state = RunState::current;
  bin.current = r;
  return heap_refill(h, *r, cls);
}

void heap_after_free(Heap& h, Run& r) {
  Bin& bin = h.bins[r.cls];
  switch (r.state) {
    case RunState::full:
      if (releasable(r)) {
        run_release(h, r);
      } else {
        r.state = RunState::partial;
        bin_push(bin, r);
      }
      break;
    case RunState::partial:
      if (releasable(r)) {
        bin_unlink(bin, r);
        run_release(h, r);
      }
      break;
    case RunState::current:
      // An empty current run stays current (see "retained empty runs",
      // heap_runs.cpp): a class with one live chunk at a time would
      // otherwise release and re-create its run, and decommit and fault in
      // its pages, at every free. The budget, the decay and trim give its
      // pages back.
      h.kept_empty |= std::uint64_t{1} << r.cls;
      enforce_budget(h, &r);
      break;
    default:
      break;
  }
}

namespace {

// Everything h still holds outside its run bitmaps goes into them: its
// unpublished remote frees, its free caches and its remote-free queue.
void heap_drain(Heap& h) {
  heap_remote_batch_flush(h);
  heap_cache_flush_all(h);
  heap_flush_remote(h);
}

}  // namespace

void heap_abandon(Heap& h) {
  OwnerLock hold(h);
  heap_drain(h);
  for (Bin& bin : h.bins) {
    Run* r = bin.current;
    if (r == nullptr) continue;
    bin.current = nullptr;
    if (releasable(*r)) {
      run_release(h, *r);
    } else if (r->free_count == 0) {
      r->state = RunState::full;
    } else {
      r->state = RunState::partial;
      bin_push(bin, *r);
    }
  }
  h.kept_empty = 0;
  // Empty segments go to the source, resident within the shared allowance
  // (heap_runs.cpp, segment_release); the idle pages of the others stay
  // with the orphan, and its share of the allowance with them, for the
  // thread that adopts it: a program whose threads come and go (mstress)
  // then writes them again without faulting them in (numa/DESIGN.md, "Idle
  // pages traded through the source"). Once an orphan (heap_release), it
  // takes no more of the allowance (shared_idle_hold), and a live heap that
  // finds no room on it takes back what it lacks (reclaim_orphan_shares).
  release_empty_segments(h, 0);
  if (h.ctx->opts.profile == Profile::lowmem) heap_purge(h, true);
}

void heap_trim(Heap& h) {
  OwnerLock hold(h);
  heap_drain(h);
  release_empty_segments(h, 0, false);
  heap_purge(h, true);
}

}  // namespace manyalloc::numa
