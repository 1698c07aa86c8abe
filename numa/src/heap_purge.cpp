// Local heaps: the purge (heap_purge) of the free pages inside runs and of
// the idle pages (heap_internal.hpp); runs and retained pages are in
// heap_runs.cpp.
#include <cstddef>
#include <cstdint>

#include "heap_internal.hpp"
#include "source.hpp"

namespace manyalloc::numa {

namespace {

// ---- purge ------------------------------------------------------------------

// Purge thresholds: lowmem purges after every lowmem_purge_min bytes (or
// 1/8 of the bytes in use) merged into bitmaps; the recycling profiles only
// after purge_min (or as many bytes as are in use), i.e. rarely: purged
// pages cost a page fault when reused, so a small threshold slows
// producer/consumer pairs (numa/DESIGN.md, "Figures moved out of the code").
// Lowmem's 512 KiB goes with its half-size free caches (size_class.hpp).
constexpr std::uint64_t lowmem_purge_min = 512 * 1024;
constexpr std::uint64_t purge_min = 8 * 1024 * 1024;

}  // namespace

void set_purge_threshold(Heap& h) {
  const std::uint64_t in_use = h.small_in_use.load(std::memory_order_relaxed);
  const bool low = h.ctx->opts.profile == Profile::lowmem;
  const std::uint64_t min = low ? lowmem_purge_min : purge_min;
  const std::uint64_t rel = low ? in_use / 8 : in_use;
  h.purge_step = rel > min ? rel : min;
  h.purge_at = h.purge_step;
}

namespace {

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

// Shortest free range between live chunks that a purge gives back (in
// every profile; malloc_trim takes them all). A single free page between
// live chunks is soon written again, and each range is one madvise with
// its TLB shootdown on every CPU that runs a thread of the process
// (numa/DESIGN.md, "Figures moved out of the code" and "Aging").
constexpr std::size_t min_purge_range = 4 * os_page;

// Decommits (through `batch`) the OS pages of r that hold only free chunks,
// within the part of the run that may have been written (words <= hw):
// every free range at the end of that part, others only from
// min_purge_range bytes up (any length with `all`). Lowers hw to the word of the highest allocated chunk unless
// pages above it stay committed. Returns the bytes decommitted.
//
// Aging (issue 19 item 2, hysteresis): unless `all`, a page of such a range
// is decommitted only if the run's previous purge found it free too
// (SmallSegment::free_seen); the others are marked, and the run stays dirty
// so that its next purge looks at them again. Chunks of a few pages that
// the program frees and soon allocates again (every thread of a
// random-size workload does) then cost no madvise and no page fault; a
// page that stays free goes back one purge later.
std::size_t purge_run(Run& r, DecommitBatch& batch, bool all) {
  r.dirty = 0;
  const std::size_t min_range = all ? os_page : min_purge_range;
  SmallSegment& seg = *r.seg;
  const std::size_t s = r.chunk_size;
  const std::uint32_t n = r.nchunks;
  const std::uint64_t recip = class_table.info[r.cls].recip;
  std::uint32_t limit = (static_cast<std::uint32_t>(r.hw) + 1) * 64;
  if (limit > n) limit = n;
  std::size_t end = (static_cast<std::size_t>(limit) * s + os_page - 1) & ~(os_page - 1);
  const std::size_t run_end = static_cast<std::size_t>(r.npages) * page_bytes;
  if (end > run_end) end = run_end;
  const unsigned first_os = r.first_page * os_pages_per_page;
  auto os_index = [&](std::size_t q) { return first_os + static_cast<unsigned>(q / os_page); };
  std::size_t range = SIZE_MAX, purged = 0;  // start of the current free range
  bool kept = false, kept_at_end = false;    // free pages left for the next purge
  auto flush_range = [&](std::size_t stop) {
    if (range == SIZE_MAX) return;
    const bool at_end = stop >= end;
    const bool long_enough = at_end || stop - range >= min_range;
    for (std::size_t q = range; q < stop; q += os_page) {
      const unsigned o = os_index(q);
      if (long_enough && (all || free_seen(seg, o))) {
        batch.add(r.base + q, os_page);
        purged += os_page;
        set_free_seen(seg, o, false);
      } else {
        set_free_seen(seg, o, long_enough);
        kept = kept || long_enough;
        kept_at_end = kept_at_end || at_end;
      }
    }
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
      set_free_seen(seg, os_index(q), false);
      flush_range(q);
    }
  }
  flush_range(end);
  if (kept) r.dirty = 1;
  if (kept_at_end) return purged;  // the free pages above the live chunks are still committed
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
  // Decay (see "retained empty runs", heap_runs.cpp): an empty current
  // run that nothing was allocated from since the last purge (or any, with
  // `all`) is released, its pages marked as idle since then, so that the
  // aging below decommits them. Found through the bins: releasing while
  // walking the segment lists would move segments between them.
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
        // since the last purge, or `all` (its effect on lowmem's peak RSS:
        // numa/DESIGN.md).
        const bool idle = r.popped == 0;
        r.popped = 0;
        // `all` also takes runs not freed into since their last purge: it
        // may have kept short free ranges.
        if (all || (r.dirty && (idle || r.state != RunState::current)))
          purged += purge_run(r, batch, all);
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
  // The allowance halves; idle pages beyond it are decommitted (in
  // trim_idle's order). Over the shared allowance (its peak aged), the
  // heap's share goes back first.
  h.idle_cap /= 2;
  if (h.idle_borrowed != 0 && shared_idle_over(*h.ctx)) shared_idle_return(h, 0);
  trim_idle(h, all ? 0 : idle_allowance(h) + h.idle_borrowed);
  // Empty segments: lowmem gives them all back (with their idle pages).
  const unsigned keep = all || h.ctx->opts.profile == Profile::lowmem ? 0 : keep_empty;
  if (h.empty_segments > keep) release_empty_segments(h, keep, !all);
  shared_idle_fit(h);
  if (purged)
    h.purged_bytes.store(h.purged_bytes.load(std::memory_order_relaxed) + purged,
                         std::memory_order_relaxed);
  h.purge_credit = 0;
  set_purge_threshold(h);
}

}  // namespace

bool heap_purge_due(Heap& h) {
  const std::uint64_t now = h.ctx->os->now();
  const std::uint64_t interval = std::uint64_t{h.ctx->opts.purge_ms} * 1000000u;
  const std::uint64_t steps = max_purge_steps(h.ctx->opts.profile);
  if (h.purged_at != 0 && now - h.purged_at < interval && h.purge_credit < steps * h.purge_step) {
    h.purge_at = h.purge_credit + h.purge_step;  // asked again after another step
    return false;
  }
  h.purged_at = now;
  return true;
}

void heap_purge(Heap& h, bool all) {
  if (h.ctx->opts.profile == Profile::lowmem) heap_cache_flush_all(h);
  purge_runs(h, all);
  // The owner only: h.source is the owner's (a thread merging for an idle
  // owner, heap_merge_for_owner, must not read it while a new thread
  // adopts the heap).
  source_decay(*h.ctx, *h.source);
}

void heap_merge_for_owner(Heap& h) {
  if (!h.merge_lock.try_lock()) return;
  heap_flush_remote(h);
  h.idle_merges.store(h.idle_merges.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (h.purge_credit >= h.purge_at && heap_purge_due(h)) purge_runs(h, false);
  h.merge_lock.unlock();
}

}  // namespace manyalloc::numa
