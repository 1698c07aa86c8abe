// Local heaps: their intrusive lists, runs and segments, and the empty runs
// and idle pages they retain (heap_internal.hpp); the purge is in
// heap_purge.cpp, the entry points in heap.cpp.
#include <algorithm>
#include <bit>

#include "heap_internal.hpp"
#include "source.hpp"

namespace manyalloc::numa {

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

namespace {

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

}  // namespace

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

namespace {

unsigned idle_limit(const Heap& h, bool low) {
  const bool lowmem = h.ctx->opts.profile == Profile::lowmem;
  const std::uint64_t in_use = h.small_in_use.load(std::memory_order_relaxed);
  const std::uint64_t rel = (low ? in_use / 8 : in_use / 4) >> (lowmem ? 1 : 0);
  constexpr std::uint64_t KiB = 1024;
  const std::uint64_t min = low ? 128 * KiB : lowmem ? 256 * KiB : 512 * KiB;
  return static_cast<unsigned>((rel > min ? rel : min) / page_bytes);
}

}  // namespace

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
  os_decommit_pages(*h.ctx, seg.base, mask, Giveback::idle);
}

namespace {

// Decommits every idle page of seg (before it goes back to its source).
void decommit_idle(Heap& h, SmallSegment& seg) {
  if (seg.idle_pages != 0) decommit_pages(h, seg, seg.idle_pages);
}

// The order in which idle pages are decommitted: first the pages idle
// since the last purge (pass 0), then the others (pass 1); segment by
// segment from the head of the full list, then of the available list (the
// segment pushed there last first; not by age: numa/DESIGN.md, "Idle pages
// traded through the source", open points). `take(seg, pass)` decommits
// what it chooses of seg and returns whether to go on.
template <class Take>
void walk_idle(Heap& h, Take take) {
  for (int pass = 0; pass < 2; ++pass)
    for (SmallSegment* list : {h.full, h.avail})
      for (SmallSegment* seg = list; seg != nullptr; seg = static_cast<SmallSegment*>(seg->next))
        if (!take(*seg, pass)) return;
}

}  // namespace

// Decommits idle pages until at most `target` remain, in walk_idle's order.
// In a segment whose old idle pages are not enough, all its idle pages go
// in one pass, so that neighbouring old and new ones make one range (one
// madvise). Returns the bytes decommitted.
std::size_t trim_idle(Heap& h, unsigned target) {
  std::size_t bytes = 0;
  walk_idle(h, [&](SmallSegment& seg, int pass) {
    if (h.idle_pages <= target) return false;
    PageMask m = seg.idle_pages & seg.idle_old;
    if (pass == 1 || h.idle_pages - static_cast<unsigned>(std::popcount(m)) > target) m = seg.idle_pages;
    if (m != 0) {
      bytes += static_cast<std::size_t>(std::popcount(m)) * page_bytes;
      decommit_pages(h, seg, m);
    }
    return true;
  });
  return bytes;
}

// Decommits `n` idle pages of h (all of them when it has fewer), in
// walk_idle's order but no more than `n`: a heap that lacks a few pages of
// the shared allowance takes only those from an orphan
// (reclaim_orphan_shares). Returns the pages decommitted.
unsigned trim_idle_exact(Heap& h, unsigned n) {
  unsigned done = 0;
  walk_idle(h, [&](SmallSegment& seg, int pass) {
    if (done == n) return false;
    const PageMask m = pass == 0 ? seg.idle_pages & seg.idle_old : seg.idle_pages;
    PageMask pick = 0;  // the lowest set bits of m, at most n - done of them
    for (PageMask rest = m; rest != 0 && done < n; rest &= rest - 1, ++done) pick |= rest & (~rest + 1);
    if (pick != 0) decommit_pages(h, seg, pick);
    return true;
  });
  return done;
}

namespace {

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

// The pages the allowance bounds: idle pages and the kept empty runs'.
unsigned retained_pages(Heap& h) { return h.idle_pages + (h.kept_empty != 0 ? kept_pages(h) : 0); }

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

// The first page of the first place for a run of np pages in s, aligned
// to np and free of runs: one of idle pages only when `want_idle` and s has
// one (`idle` tells), else the first; pages_per_segment when s has none.
unsigned run_place(const SmallSegment& s, unsigned np, bool want_idle, bool& idle) {
  const PageMask used = s.used_pages.load(std::memory_order_relaxed);
  unsigned first = pages_per_segment;
  idle = false;
  for (unsigned p = 0; p < pages_per_segment; p += np) {
    const PageMask m = page_mask(np, p);
    if ((used & m) != 0) continue;
    if (first == pages_per_segment) first = p;
    if (want_idle && (s.idle_pages & m) == m) {
      idle = true;
      return p;
    }
  }
  return first;
}

}  // namespace

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
    bool idle = false;
    const unsigned p = run_place(*s, np, want_idle, idle);
    if (p == pages_per_segment) continue;
    done = !want_idle || idle;
    if (seg == nullptr || done) seg = s, first = p;
  }
  if (seg == nullptr) {
    seg = source_take_small(*h.ctx, *h.source);
    if (seg == nullptr) return nullptr;
    seg->heap.store(&h, std::memory_order_relaxed);
    seg->used_pages.store(0, std::memory_order_relaxed);
    seg->in_full_list = false;
    seg_push(h.avail, *seg);
    ++h.empty_segments;
    // A cached segment may come with resident idle pages (segment_release):
    // they are the heap's now, and the run starts on them.
    h.idle_pages += static_cast<unsigned>(std::popcount(seg->idle_pages));
    bool idle = false;
    first = run_place(*seg, np, true, idle);
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
  shared_idle_fit(h);
  for (unsigned o = first * os_pages_per_page; o < (first + np) * os_pages_per_page; ++o)
    set_free_seen(*seg, o, false);
  Run& r = seg->runs[first];
  run_init(r, *seg, first, cls);
  note_run_pages(*h.ctx, np);
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

namespace {

// The segment goes to the source with its idle pages still resident when
// the shared allowance has room for them (after the heap's own share of
// them came back): a heap that needs a segment next, this one or another
// (the next thread of a program whose threads come and go), takes it from
// the source and writes its pages without faulting them in again. Beyond
// the allowance, or without `resident` (a trim gives everything back),
// they are decommitted first. (mstress: numa/DESIGN.md, "Idle pages traded
// through the source".)
void segment_release(Heap& h, SmallSegment& seg, bool resident) {
  seg_unlink(seg.in_full_list ? h.full : h.avail, seg);
  const unsigned idle = static_cast<unsigned>(std::popcount(seg.idle_pages));
  if (idle != 0) {
    h.idle_pages -= idle;
    shared_idle_fit(h);
    if (resident && shared_idle_take(*h.ctx, idle)) {
      seg.idle_old = 0;
    } else {
      h.idle_pages += idle;
      decommit_idle(h, seg);
    }
  }
  source_give_small(*h.ctx, &seg);
}

}  // namespace

// Gives empty segments back until at most `keep` remain.
void release_empty_segments(Heap& h, unsigned keep, bool resident) {
  for (SmallSegment* s = h.avail; s != nullptr && h.empty_segments > keep;) {
    auto* next = static_cast<SmallSegment*>(s->next);
    if (s->used_pages.load(std::memory_order_relaxed) == 0) {
      --h.empty_segments;
      segment_release(h, *s, resident);
    }
    s = next;
  }
  shared_idle_fit(h);
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
  h.ctx->run_pages.fetch_sub(r.npages, std::memory_order_relaxed);
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

// The process-wide part of the allowance (shared_idle_cap, context.hpp): a
// heap whose retained pages pass its own allowance may keep the excess if
// the pages all heaps keep beyond theirs, with the resident idle pages of
// the segments the sources cache (segment_release), stay within it. Producer/
// consumer pairs release runs in bursts when the consumer's frees are merged
// and create new runs right after; a per-heap floor large enough for such a
// burst, multiplied by every heap of a process, raised the peak resident set
// of workloads whose many heaps each keep a little (larson:
// docs/results/numa/idle-floor-2core-2026-11-29). The shared part bounds the
// sum instead.
// An orphan's share is counted in Context::orphan_shares, which goes down
// with it. For an orphan the caller holds its merge lock in lowmem (a
// thread merging for it, heap_merge_for_owner; the walk over the orphans,
// take_back_from_orphans), and heaps_lock otherwise (that walk, the only
// one that touches an orphan there); `orphan` changes under the merge lock
// while the heap is off the orphan list (heap_release, heap_acquire), so
// that the flag read here is the one the count followed.
void shared_idle_return(Heap& h, unsigned keep) {
  if (h.idle_borrowed <= keep) return;
  const unsigned given = h.idle_borrowed - keep;
  shared_idle_give(*h.ctx, given);
  h.idle_borrowed = keep;
  if (h.orphan.load(std::memory_order_relaxed)) h.ctx->orphan_shares.fetch_sub(given, std::memory_order_relaxed);
}

// Lowers h's share to what its retained pages still need beyond its own
// allowance: after runs took idle pages, or idle pages were decommitted with
// their segment, the share would otherwise stay held until the heap frees
// again, and other heaps could not use it.
void shared_idle_fit(Heap& h) {
  if (h.idle_borrowed == 0) return;
  const unsigned own = idle_allowance(h), retained = retained_pages(h);
  shared_idle_return(h, retained > own ? retained - own : 0);
}

namespace {

// Walks the orphans under heaps_lock, each with its merge lock held where
// it has one (lowmem; a busy one is skipped, and its fields are not read),
// until `take_back(orphan, pages still wanted)` has returned `want` pages
// of shares in all (shared_idle_return lowers Context::orphan_shares by
// as much). Under heaps_lock no thread adopts an orphan
// meanwhile (heap_acquire), and its merge lock keeps lowmem's idle-owner
// merge out (taken in fork_prepare's order: heaps_lock, then the orphans'
// merge locks). Returns the pages given back.
template <class TakeBack>
std::uint64_t take_back_from_orphans(Context& c, std::uint64_t want, TakeBack take_back) noexcept {
  std::uint64_t given = 0;
  SpinGuard g(c.heaps_lock);
  for (Heap* h = c.orphans; h != nullptr && given < want; h = h->orphan_next) {
    if (h->merge_for_owner && !h->merge_lock.try_lock()) continue;
    given += take_back(*h, want - given);
    if (h->merge_for_owner) h->merge_lock.unlock();
  }
  return given;
}

}  // namespace

// The orphans keep their idle pages and shares for the threads that adopt
// them (heap.cpp, heap_abandon), until a live heap finds no room on the
// allowance: then orphans decommit idle pages in trim_idle's order and give
// their shares back until `need` pages went back, or all they hold; the
// others keep theirs. Only what is needed: the rest is written again
// without faults by the next threads (mstress, whose threads of one round
// end at different times: numa/DESIGN.md, "Idle pages traded through the
// source").
std::uint64_t reclaim_orphan_shares(Context& c, std::uint64_t need) noexcept {
  if (need == 0 || c.orphan_shares.load(std::memory_order_relaxed) == 0) return 0;
  return take_back_from_orphans(c, need, [](Heap& h, std::uint64_t rest) -> std::uint64_t {
    // An orphan retains only idle pages (heap_abandon released its kept
    // empty runs), and its share covers those beyond its own allowance
    // (at most all of them): decommitting `take` of them keeps the rest of
    // the share covered.
    const unsigned share = h.idle_borrowed;
    const unsigned take = rest < share ? static_cast<unsigned>(rest) : share;
    if (take == 0) return 0;
    trim_idle_exact(h, take);
    shared_idle_return(h, share - take);
    return take;
  });
}

// heaps_lock stays held across the orphans' madvise calls: malloc_trim is
// rare, and threads that start or exit meanwhile wait for it.
void heap_trim_orphans(Context& c) noexcept {
  take_back_from_orphans(c, UINT64_MAX, [](Heap& h, std::uint64_t) -> std::uint64_t {
    trim_idle(h, 0);
    const std::uint64_t share = h.idle_borrowed;
    shared_idle_return(h, 0);
    return share;
  });
}

namespace {

// Fewest pages a heap short of room takes back from orphans: it asks at
// every run release that passes its allowance, a page or two more each
// time, and each time takes heaps_lock and makes an madvise call.
constexpr std::uint64_t reclaim_batch = 16;

// Sets h's share of the shared allowance to `want` pages: a lower share at
// once, a higher one only if the sum of the shares stays within the
// allowance. Whether h now holds `want`.
// Over the allowance (its peak aged since the shares were taken), a heap
// keeps no share: it gives it back and trims to its own allowance. Without
// room, pages no live heap holds are taken back first, as many as the room
// lacks (at least reclaim_batch from orphans): whole cached segments of the
// heap's source, then the orphans' idle pages (source_reclaim_resident,
// reclaim_orphan_shares). They must not starve the heaps that hold pages
// (rptest at 2 threads, whose two heaps trade runs), nor all go back at
// once (mstress, whose heaps find no room often, faulted them in again:
// numa/DESIGN.md, "Idle pages traded through the source"). None goes back
// when even all of them would not make the room.
bool shared_idle_hold(Heap& h, unsigned want) {
  if (want <= h.idle_borrowed && (want == 0 || !shared_idle_over(*h.ctx))) {
    shared_idle_return(h, want);
    return true;
  }
  if (want <= h.idle_borrowed) return false;
  if (h.orphan.load(std::memory_order_relaxed)) return false;  // an orphan takes no more (heap_abandon)
  Context& c = *h.ctx;
  const std::uint64_t more = want - h.idle_borrowed;
  if (!shared_idle_take(c, more)) {
    const std::uint64_t cap = shared_idle_cap(c), used = c.shared_idle_used.load(std::memory_order_relaxed);
    if (used + more > cap) {  // else a racing give made room: take it below
      const std::uint64_t need = used + more - cap;
      const std::uint64_t resident = h.source->idle_resident.load(std::memory_order_relaxed);
      const std::uint64_t orphaned = c.orphan_shares.load(std::memory_order_relaxed);
      if (more > cap || resident + orphaned < need) return false;
      const std::uint64_t given = source_reclaim_resident(c, *h.source, need);
      if (given < need) reclaim_orphan_shares(c, std::max<std::uint64_t>(need - given, reclaim_batch));
    }
    if (!shared_idle_take(c, more)) return false;
  }
  h.idle_borrowed = want;
  return true;
}

}  // namespace

// Keeps the retained pages within the allowance (see "retained empty runs"
// above), its own part and, while the process has room, a shared part
// (shared_idle_return): over both, the empty current runs kept other than
// `exempt` are released and the idle pages decommitted down to half the own
// allowance, and the shared part is given back.
void enforce_budget(Heap& h, const Run* exempt) {
  const unsigned budget = idle_allowance(h);
  const unsigned retained = retained_pages(h);
  if (shared_idle_hold(h, retained > budget ? retained - budget : 0)) return;
  shared_idle_return(h, 0);
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

}  // namespace manyalloc::numa
