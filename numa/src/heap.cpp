// Per-thread local heaps: runs, bins, segments, purge (heap.hpp); remote
// frees are in remote_free.cpp.
#include "heap.hpp"

#include <bit>
#include <type_traits>

#include "manyalloc/common/bits.hpp"
#include "source.hpp"

namespace manyalloc::numa {

namespace {

// ---- intrusive lists (owner only) -----------------------------------------

void bin_push(Bin& b, Run& r) {
  r.prev = nullptr;
  r.next = b.partial;
  if (b.partial) b.partial->prev = &r;
  b.partial = &r;
}
void bin_unlink(Bin& b, Run& r) {
  if (r.prev) r.prev->next = r.next;
  else b.partial = r.next;
  if (r.next) r.next->prev = r.prev;
  r.next = r.prev = nullptr;
}
void seg_push(SmallSegment*& head, SmallSegment& s) {
  s.prev = nullptr;
  s.next = head;
  if (head) head->prev = &s;
  head = &s;
}
void seg_unlink(SmallSegment*& head, SmallSegment& s) {
  if (s.prev) s.prev->next = s.next;
  else head = static_cast<SmallSegment*>(s.next);
  if (s.next) s.next->prev = s.prev;
  s.next = s.prev = nullptr;
}

static_assert(std::is_same_v<PageMask, std::uint64_t>, "page masks are 64-bit words");
constexpr PageMask page_mask(unsigned npages, unsigned first) {
  return bits::low_mask64(npages) << first;
}

// Empty segments a heap keeps between purges (the next runs take them
// without a trip to the source); lowmem gives them back at its next purge.
constexpr unsigned keep_empty = 1;

// ---- retained empty runs ---------------------------------------------------
//
// The pages of empty runs stay resident ("retained") so that the next runs
// of the heap reuse them without a decommit, page faults and a new run
// (issue 19: a malloc/memset/free loop must not decommit and refault on
// every iteration; measurements in numa/DESIGN.md). Two kinds:
//  * idle pages: a released run's pages (SmallSegment::idle_pages); run_new
//    takes them first;
//  * an empty current run: a bin's current run that becomes empty stays
//    the bin's current run (Heap::kept_empty), so that a class with one
//    live chunk at a time allocates and frees without touching a run
//    descriptor or a page.
// They go back to the OS, never on every free, in three ways:
//  * budget: when a released run or a run kept empty takes the retained
//    pages above the heap's allowance (idle_allowance), the kept empty runs
//    other than the one just kept are released and the idle pages are
//    decommitted down to half the allowance, those idle since the last
//    purge first (enforce_budget): a heap that shrinks makes one madvise
//    per half allowance released, not one per run;
//  * decay: every purge (heap_purge, after purge_at bytes freed: 512 KiB or
//    1/8 of the bytes in use in lowmem, 8 MiB or the bytes in use otherwise)
//    decommits the pages that were idle at the previous purge and still
//    are (SmallSegment::idle_old), and releases and decommits the empty
//    current runs nothing was allocated from since then; lowmem also gives
//    its empty segments back;
//  * trim (malloc_trim) and, in lowmem, thread exit: everything.
// Without a bound every page a heap ever gave to a run would stay resident
// (larson-like workloads, whose heaps refill while the previous generation
// of their chunks is freed by other threads); a fixed small bound makes
// producer/consumer pairs (xmalloc), which release runs in bursts and
// create new ones right after, fault far more pages. So the allowance
// adapts: it starts at idle_limit(h, true) and doubles (up to
// idle_limit(h, false)) when a run has to be placed on non-idle pages after
// the budget decommitted some, and halves at each purge. Outside lowmem:
// 1/8 of the bytes in use (at least 128 KiB) up to 1/4 (at least 512 KiB);
// lowmem: 1/16 (at least 128 KiB) up to 1/8 (at least 256 KiB). Why these
// bounds (the runs that chose them): numa/DESIGN.md, "Giving memory back".
unsigned idle_limit(const Heap& h, bool low) {
  const bool lowmem = h.ctx->opts.profile == Profile::lowmem;
  const std::uint64_t in_use = h.small_in_use.load(std::memory_order_relaxed);
  const std::uint64_t rel = (low ? in_use / 8 : in_use / 4) >> (lowmem ? 1 : 0);
  constexpr std::uint64_t KiB = 1024;
  const std::uint64_t min = low ? 128 * KiB : lowmem ? 256 * KiB : 512 * KiB;
  return static_cast<unsigned>((rel > min ? rel : min) / page_bytes);
}
unsigned idle_allowance(const Heap& h) {
  const unsigned low = idle_limit(h, true);
  return h.idle_cap > low ? h.idle_cap : low;
}

// Decommits the pages `mask` (idle pages of seg): one madvise per range of
// consecutive pages.
void decommit_pages(Heap& h, SmallSegment& seg, PageMask mask) {
  h.idle_pages -= static_cast<unsigned>(std::popcount(mask));
  seg.idle_pages &= ~mask;
  seg.idle_old &= ~mask;
  while (mask != 0) {
    const unsigned first = static_cast<unsigned>(std::countr_zero(mask));
    const unsigned n = static_cast<unsigned>(std::countr_one(mask >> first));
    os_decommit(*h.ctx, seg.base + static_cast<std::size_t>(first) * page_bytes,
                static_cast<std::size_t>(n) * page_bytes, Giveback::idle);
    mask &= ~page_mask(n, first);
  }
}

// Decommits every idle page of seg (before it goes back to its source).
void decommit_idle(Heap& h, SmallSegment& seg) {
  if (seg.idle_pages != 0) decommit_pages(h, seg, seg.idle_pages);
}

// Decommits idle pages until at most `target` remain: first the pages idle
// since the last purge, then the others; segment by segment, the oldest
// (last in the lists) first, the newest taking the next runs. In a segment
// whose old idle pages are not enough, all its idle pages go in one pass,
// so that neighbouring old and new ones make one range (one madvise).
// Returns the bytes decommitted.
std::size_t trim_idle(Heap& h, unsigned target) {
  std::size_t bytes = 0;
  for (int pass = 0; pass < 2 && h.idle_pages > target; ++pass)
    for (SmallSegment* list : {h.full, h.avail})
      for (SmallSegment* seg = list; seg != nullptr && h.idle_pages > target;
           seg = static_cast<SmallSegment*>(seg->next)) {
        PageMask m = seg->idle_pages & seg->idle_old;
        if (pass == 1 || h.idle_pages - static_cast<unsigned>(std::popcount(m)) > target)
          m = seg->idle_pages;
        if (m == 0) continue;
        bytes += static_cast<std::size_t>(std::popcount(m)) * page_bytes;
        decommit_pages(h, *seg, m);
      }
  return bytes;
}

// Pages of the empty current runs the heap keeps (Heap::kept_empty); the
// classes whose current run was allocated from or replaced since are
// dropped from the set.
unsigned kept_pages(Heap& h) {
  unsigned n = 0;
  for (std::uint64_t m = h.kept_empty; m != 0; m &= m - 1) {
    const unsigned c = static_cast<unsigned>(std::countr_zero(m));
    const Run* r = h.bins[c].current;
    if (r != nullptr && r->free_count == r->nchunks) n += r->npages;
    else h.kept_empty &= ~(std::uint64_t{1} << c);
  }
  return n;
}

// ---- runs -------------------------------------------------------------------

void run_init(Run& r, SmallSegment& seg, unsigned first, unsigned cls) {
  r.seg = &seg;
  r.first_page = static_cast<std::uint8_t>(first);
  r.npages = static_cast<std::uint8_t>(run_pages(cls));
  r.base = seg.base + static_cast<std::size_t>(first) * page_bytes;
  r.cls = static_cast<std::uint16_t>(cls);
  r.chunk_size = static_cast<std::uint32_t>(class_size(cls));
  r.nchunks = run_chunks(cls);
  r.remote_bits = seg.remote_rows[first];
  r.hw = 0;  // words 0 and 1 stored, the others implied (invariants.hpp, Run)
  for (std::uint32_t w = 0; w < r.nwords() && w < 2; ++w) r.free_word(w) = r.full_word(w);
  r.free_count = r.nchunks;
  r.cursor = 0;
  r.dirty = 0;
  r.popped = 0;
  r.state = RunState::unused;
  r.next = r.prev = nullptr;
  // remote_bits are all zero and queued is 0 (invariant of unused runs).
}

// A new run for class cls from the heap's segments, or a new segment.
// Idle pages come first (they are resident: no page faults, and fewer idle
// pages means fewer runs decommitted at release, see idle_limit); otherwise
// the first free place.
Run* run_new(Heap& h, unsigned cls) {
  const unsigned np = run_pages(cls);
  const bool want_idle = h.idle_pages >= np;  // else no run fits in idle pages only
  SmallSegment* seg = nullptr;
  unsigned first = pages_per_segment;
  bool done = false;
  for (SmallSegment* s = h.avail; s != nullptr && !done; s = static_cast<SmallSegment*>(s->next)) {
    const PageMask used = s->used_pages.load(std::memory_order_relaxed);
    for (unsigned p = 0; p < pages_per_segment; p += np) {
      const PageMask m = page_mask(np, p);
      if ((used & m) != 0) continue;
      done = !want_idle || (s->idle_pages & m) == m;
      if (seg == nullptr || done) seg = s, first = p;
      if (done) break;
    }
  }
  if (seg == nullptr) {
    seg = source_take_small(*h.ctx, *h.source);
    if (seg == nullptr) return nullptr;
    seg->heap.store(&h, std::memory_order_relaxed);
    seg->used_pages.store(0, std::memory_order_relaxed);
    seg->in_full_list = false;
    seg_push(h.avail, *seg);
    ++h.empty_segments;
    first = 0;
  }
  PageMask used = seg->used_pages.load(std::memory_order_relaxed);
  if (used == 0) --h.empty_segments;
  const PageMask mask = page_mask(np, first);
  if ((seg->idle_pages & mask) != mask && h.idle_decommitted) {
    // A run was decommitted and pages are needed again: allow more idle pages.
    const unsigned high = idle_limit(h, false), twice = 2 * idle_allowance(h);
    h.idle_cap = twice < high ? twice : high;
    h.idle_decommitted = false;
  }
  h.idle_pages -= static_cast<unsigned>(std::popcount(seg->idle_pages & mask));
  seg->idle_pages &= ~mask;
  seg->idle_old &= ~mask;
  Run& r = seg->runs[first];
  run_init(r, *seg, first, cls);
  for (unsigned p = first; p < first + np; ++p)
    seg->page_info[p].store(page_info_of(cls, first), std::memory_order_relaxed);
  used |= mask;
  seg->used_pages.store(used, std::memory_order_relaxed);
  if (used == all_pages) {
    seg_unlink(h.avail, *seg);
    seg_push(h.full, *seg);
    seg->in_full_list = true;
  }
  return &r;
}

void segment_release(Heap& h, SmallSegment& seg) {
  seg_unlink(seg.in_full_list ? h.full : h.avail, seg);
  decommit_idle(h, seg);  // cached segments hold no resident free pages
  source_give_small(*h.ctx, &seg);
}

// Gives empty segments back until at most `keep` remain.
void release_empty_segments(Heap& h, unsigned keep) {
  for (SmallSegment* s = h.avail; s != nullptr && h.empty_segments > keep;) {
    auto* next = static_cast<SmallSegment*>(s->next);
    if (s->used_pages.load(std::memory_order_relaxed) == 0) {
      --h.empty_segments;
      segment_release(h, *s);
    }
    s = next;
  }
}

// Whether r may be released: every chunk free and merged, and no remote
// thread inside a publish to it (invariants.hpp, Run::pins; remote_free.cpp).
bool releasable(const Run& r) {
  return r.free_count == r.nchunks && r.pins.load(std::memory_order_seq_cst) == 0;
}

// All chunks of r are free and merged: its pages go back to the segment as
// idle pages, still resident (see "retained empty runs" above). Empty
// segments are left to the caller.
void run_unuse(Heap& h, Run& r) {
  SmallSegment& seg = *r.seg;
  r.state = RunState::unused;
  const PageMask mask = page_mask(r.npages, r.first_page);
  seg.idle_pages |= mask;
  seg.idle_old &= ~mask;
  h.idle_pages += r.npages;
  for (unsigned p = r.first_page; p < r.first_page + r.npages; ++p)
    seg.page_info[p].store(0, std::memory_order_relaxed);
  const PageMask used = seg.used_pages.load(std::memory_order_relaxed) & ~mask;
  seg.used_pages.store(used, std::memory_order_relaxed);
  if (seg.in_full_list) {
    seg_unlink(h.full, seg);
    seg_push(h.avail, seg);
    seg.in_full_list = false;
  }
  if (used == 0) ++h.empty_segments;
}

// Keeps the retained pages within the allowance (see "retained empty runs"
// above): over it, the empty current runs kept other than `exempt` are
// released and the idle pages decommitted down to half the allowance.
void enforce_budget(Heap& h, const Run* exempt) {
  const unsigned budget = idle_allowance(h);
  if (h.idle_pages + (h.kept_empty != 0 ? kept_pages(h) : 0) <= budget) return;
  for (std::uint64_t m = h.kept_empty; m != 0; m &= m - 1) {
    const unsigned c = static_cast<unsigned>(std::countr_zero(m));
    Run* r = h.bins[c].current;
    if (r == exempt || !releasable(*r)) continue;  // kept_pages left only empty runs
    h.bins[c].current = nullptr;
    h.kept_empty &= ~(std::uint64_t{1} << c);
    run_unuse(h, *r);
  }
  if (h.empty_segments > keep_empty) release_empty_segments(h, keep_empty);
  if (h.idle_pages > budget / 2 && trim_idle(h, budget / 2) != 0) h.idle_decommitted = true;
}

// Releases r (every chunk free and merged, not a current run) and keeps
// the heap within its budget.
void run_release(Heap& h, Run& r) {
  run_unuse(h, r);
  if (h.empty_segments > keep_empty) release_empty_segments(h, keep_empty);
  enforce_budget(h, nullptr);
}

// ---- purge ------------------------------------------------------------------

// Purge thresholds: lowmem purges after every lowmem_purge_min bytes (or
// 1/8 of the bytes in use) merged into bitmaps; the recycling profiles only
// after purge_min (or as many bytes as are in use), i.e. rarely: purged
// pages cost a page fault when reused, and on a 2-core run a 1 MiB
// threshold made the xmalloc-like workload 3x slower. 8 MiB (16 before the
// 32 KiB pages) took t-test1's peak RSS on 16 threads from 1.26x to 1.24x
// glibc's for 50 % more page faults (still fewer than with 64 KiB pages).
// Lowmem's 512 KiB goes with its half-size free caches (size_class.hpp).
constexpr std::uint64_t lowmem_purge_min = 512 * 1024;
constexpr std::uint64_t purge_min = 8 * 1024 * 1024;

void set_purge_threshold(Heap& h) {
  const std::uint64_t in_use = h.small_in_use.load(std::memory_order_relaxed);
  const bool low = h.ctx->opts.profile == Profile::lowmem;
  const std::uint64_t min = low ? lowmem_purge_min : purge_min;
  const std::uint64_t rel = low ? in_use / 8 : in_use;
  h.purge_at = rel > min ? rel : min;
}

// True when chunks [first, last] of r are all free in the bitmap.
bool all_free(const Run& r, std::uint32_t first, std::uint32_t last) {
  std::uint32_t w = first >> 6;
  const std::uint32_t lw = last >> 6;
  std::uint64_t lo = ~std::uint64_t{0} << (first & 63);
  for (; w < lw; ++w, lo = ~std::uint64_t{0})
    if ((r.free_word_or_all(w) & lo) != lo) return false;
  const std::uint64_t m = lo & bits::low_mask64((last & 63) + 1);
  return (r.free_word_or_all(w) & m) == m;
}

// Address ranges to decommit, gathered in address order and given to the OS
// with one call per contiguous stretch (the free tail of a run and the free
// head of the next): every madvise(MADV_DONTNEED) makes the kernel shoot
// down TLB entries on every CPU that runs a thread of the process. t-test1,
// 16 threads: 576 purges, 14 440 calls one per range, 14 054 merged.
class DecommitBatch {
 public:
  explicit DecommitBatch(Heap& h) : h_(h) {}
  void add(std::uint8_t* p, std::size_t n) {
    if (p != end_) {
      flush();
      start_ = p;
    }
    end_ = p + n;
  }
  void flush() {
    if (start_ != nullptr)
      os_decommit(*h_.ctx, start_, static_cast<std::size_t>(end_ - start_), Giveback::purge);
    start_ = end_ = nullptr;
  }

 private:
  Heap& h_;
  std::uint8_t* start_ = nullptr;
  std::uint8_t* end_ = nullptr;
};

// Shortest free range inside a run that a purge gives back outside lowmem.
// A single free page between live chunks is soon written again, and each
// range is one madvise with its TLB shootdown on every CPU of the process.
// t-test1 on the 16-core host (16 threads, 7 runs side by side, time and
// peak RSS relative to glibc's): every range 0.60 / 1.225 with 35 100 page
// faults; ranges of 2 pages up 0.59 / 1.233; of 4 pages up 0.52 / 1.236
// with 18 000 faults (jemalloc 0.60 / 1.34).
constexpr std::size_t min_purge_range = 4 * os_page;

// Decommits (through `batch`) the OS pages of r that hold only free chunks,
// within the part of the run that may have been written (words <= hw):
// every free range at the end of that part, others only from `min_range`
// bytes up. Lowers hw to the word of the highest allocated chunk. Returns
// the bytes decommitted.
std::size_t purge_run(Run& r, DecommitBatch& batch, std::size_t min_range) {
  r.dirty = 0;
  const std::size_t s = r.chunk_size;
  const std::uint32_t n = r.nchunks;
  const std::uint64_t recip = class_table.info[r.cls].recip;
  std::uint32_t limit = (static_cast<std::uint32_t>(r.hw) + 1) * 64;
  if (limit > n) limit = n;
  std::size_t end = (static_cast<std::size_t>(limit) * s + os_page - 1) & ~(os_page - 1);
  const std::size_t run_end = static_cast<std::size_t>(r.npages) * page_bytes;
  if (end > run_end) end = run_end;
  std::size_t range = SIZE_MAX, purged = 0;  // start of the current free range
  auto flush_range = [&](std::size_t stop) {
    if (range == SIZE_MAX) return;
    if (stop < end && stop - range < min_range) {  // short and inside: kept
      range = SIZE_MAX;
      return;
    }
    batch.add(r.base + range, stop - range);
    purged += stop - range;
    range = SIZE_MAX;
  };
  for (std::size_t q = 0; q < end; q += os_page) {
    const std::uint32_t first = divide(q, recip);
    std::uint32_t last = divide(q + os_page - 1, recip);
    if (last >= n) last = n - 1;
    const bool free = first >= n || all_free(r, first, last);
    if (free) {
      if (range == SIZE_MAX) range = q;
    } else {
      flush_range(q);
    }
  }
  flush_range(end);
  // New hw: the highest word with an allocated chunk (pages above it were
  // in the final range, now decommitted, or were never written).
  std::uint32_t top = 0;
  const std::uint32_t stored = r.hw + 2u < r.nwords() ? r.hw + 2u : r.nwords();
  for (std::uint32_t w = stored; w-- > 0;) {
    if (r.free_word(w) != r.full_word(w)) {
      top = w;
      break;
    }
  }
  if (top < r.hw) r.hw = static_cast<std::uint8_t>(top);
  return purged;
}

// Purges the heap's runs (heap_purge without writing the free caches back:
// also called by another thread for an idle owner, heap_merge_for_owner).
void purge_runs(Heap& h, bool all) {
  if (!h.rfq.maybe_empty()) heap_flush_remote(h);
  // Decay (see "retained empty runs"): an empty current run that nothing
  // was allocated from since the last purge (or any, with `all`) is
  // released, its pages marked as idle since then, so that the aging
  // below decommits them. Found through the bins: releasing while walking
  // the segment lists would move segments between them.
  for (unsigned c = 0; c < num_classes; ++c) {
    Run* r = h.bins[c].current;
    if (r == nullptr || !releasable(*r) || (!all && r->popped)) continue;
    h.bins[c].current = nullptr;
    run_unuse(h, *r);
    r->seg->idle_old |= page_mask(r->npages, r->first_page);
  }
  h.kept_empty = 0;  // released, or allocated from since they were kept
  std::size_t purged = 0;
  DecommitBatch batch(h);
  const bool every_range = all || h.ctx->opts.profile == Profile::lowmem;
  const std::size_t min_range = every_range ? os_page : min_purge_range;
  for (SmallSegment* list : {h.avail, h.full}) {
    for (SmallSegment* seg = list; seg != nullptr; seg = static_cast<SmallSegment*>(seg->next)) {
      const PageMask used = seg->used_pages.load(std::memory_order_relaxed);
      for (unsigned p = 0; p < pages_per_segment;) {
        if (!((used >> p) & 1u)) {
          ++p;
          continue;
        }
        Run& r = seg->runs[p];  // p is the first page of its run
        p += r.npages;
        // A bin's current run is where the next chunks of its class come
        // from: its free pages would be faulted in again at once (a
        // producer/consumer pair frees and reuses the same run all the
        // time), so it is purged only when nothing was allocated from it
        // since the last purge, or `all`. Lowmem t-test1 (16 threads, with
        // borrowing of one doubling): peak RSS 1.08x -> 1.02x glibc's.
        const bool idle = r.popped == 0;
        r.popped = 0;
        // `all` also takes runs not freed into since their last purge: it
        // may have kept short free ranges.
        if (all || (r.dirty && (idle || r.state != RunState::current)))
          purged += purge_run(r, batch, min_range);
      }
    }
  }
  batch.flush();
  // Aging: the pages idle at the last purge and still idle are decommitted;
  // the others will be at the next purge unless a run takes them.
  for (SmallSegment* list : {h.avail, h.full})
    for (SmallSegment* seg = list; seg != nullptr; seg = static_cast<SmallSegment*>(seg->next)) {
      if (const PageMask aged = seg->idle_pages & seg->idle_old) decommit_pages(h, *seg, aged);
      seg->idle_old = seg->idle_pages;
    }
  // The allowance halves; idle pages beyond it are decommitted (the oldest
  // segments, last in the lists, first: the newest take new runs).
  h.idle_cap /= 2;
  trim_idle(h, all ? 0 : idle_allowance(h));
  // Empty segments: lowmem gives them all back (with their idle pages).
  const unsigned keep = all || h.ctx->opts.profile == Profile::lowmem ? 0 : keep_empty;
  if (h.empty_segments > keep) release_empty_segments(h, keep);
  if (purged)
    h.purged_bytes.store(h.purged_bytes.load(std::memory_order_relaxed) + purged,
                         std::memory_order_relaxed);
  h.purge_credit = 0;
  set_purge_threshold(h);
}

// ---- borrowing ----------------------------------------------------------------

// Before a new run of class cls is made, a free chunk of one of the next
// borrow_classes classes (up to two doublings larger) is handed out
// instead. Runs segregate sizes, so each class needs room for its own peak
// of live chunks, and those peaks come at different times: in a simulation
// of the t-test1 workload (one thread, 3 M operations) the sum of the
// per-class peaks was 1.43x the peak of the sum, which a best-fit allocator
// such as glibc's shares between sizes. A borrowed chunk wastes up to 3/4
// of itself, but its pages are resident already. While a class borrows,
// each of its allocations takes this slow path, so only classes whose
// chunks are big enough for that not to matter borrow: above 128 B in
// lowmem, above 512 B otherwise. Measured (t-test1, 16 threads, 2-core VM,
// peak RSS relative to glibc's): lowmem without borrowing 1.08, borrowing
// one doubling 1.01, two 0.99 (with the idle current runs purged, see
// heap_purge); uma 1.24 without, 1.13 from 640 B, 1.12 from 160 B at the
// same speed, but larson (16-512 B) was 11 % slower with classes from 160 B
// borrowing. The lending class must be at least as aligned as cls (its
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
  heap_set_cache(h, !c.abort_on_misuse.load(std::memory_order_relaxed));
  set_purge_threshold(h);
}

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

void heap_purge(Heap& h, bool all) {
  if (h.ctx->opts.profile == Profile::lowmem) heap_cache_flush_all(h);
  purge_runs(h, all);
  // The owner only: h.source is the owner's (a thread merging for an idle
  // owner, heap_merge_for_owner, must not read it while a new thread
  // adopts the heap).
  source_decay(*h.ctx, *h.source);
}

void* heap_alloc_run_locked(Heap& h, unsigned cls) {
  OwnerLock hold(h);
  return heap_alloc_run_owned(h, cls);
}

void heap_merge_for_owner(Heap& h) {
  if (!h.merge_lock.try_lock()) return;
  heap_flush_remote(h);
  h.idle_merges.store(h.idle_merges.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (h.purge_credit >= h.purge_at) purge_runs(h, false);
  h.merge_lock.unlock();
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
      // An empty current run stays current (see "retained empty runs"):
      // a class with one live chunk at a time would otherwise release and
      // re-create its run, and decommit and fault in its pages, at every
      // free. The budget, the decay and trim give its pages back.
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
  release_empty_segments(h, 0);
  if (h.ctx->opts.profile == Profile::lowmem) heap_purge(h, true);
}

void heap_trim(Heap& h) {
  OwnerLock hold(h);
  heap_drain(h);
  release_empty_segments(h, 0);
  heap_purge(h, true);
}

}  // namespace manyalloc::numa
