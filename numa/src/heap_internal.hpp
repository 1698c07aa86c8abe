// Functions of the local heaps shared between heap.cpp (entry points),
// heap_runs.cpp (lists, runs, segments, retained empty runs) and
// heap_purge.cpp (purge); heap.hpp is the interface to the rest of the
// allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "heap.hpp"
#include "manyalloc/common/bits.hpp"

namespace manyalloc::numa {

static_assert(std::is_same_v<PageMask, std::uint64_t>, "page masks are 64-bit words");
constexpr PageMask page_mask(unsigned npages, unsigned first) {
  return bits::low_mask64(npages) << first;
}

// OS pages per run page, and the free_seen bit (invariants.hpp,
// SmallSegment) of OS page o of a segment.
inline constexpr unsigned os_pages_per_page = page_bytes / os_page;
inline bool free_seen(const SmallSegment& seg, unsigned o) {
  return (seg.free_seen[o / 64] >> (o % 64)) & 1u;
}
inline void set_free_seen(SmallSegment& seg, unsigned o, bool seen) {
  const std::uint64_t bit = std::uint64_t{1} << (o % 64);
  seg.free_seen[o / 64] = seen ? seg.free_seen[o / 64] | bit : seg.free_seen[o / 64] & ~bit;
}

// Empty segments a heap keeps between purges (the next runs take them
// without a trip to the source); lowmem gives them back at its next purge.
inline constexpr unsigned keep_empty = 1;

// ---- heap_runs.cpp -----------------------------------------------------------

// Pushes r at the head of b's list of partial runs.
void bin_push(Bin& b, Run& r);
// Removes r from b's list of partial runs.
void bin_unlink(Bin& b, Run& r);
// The current allowance of retained idle pages of h (idle_limit, idle_cap).
unsigned idle_allowance(const Heap& h);
// Decommits the idle pages `mask` of seg, one madvise per range.
void decommit_pages(Heap& h, SmallSegment& seg, PageMask mask);
// Decommits idle pages, oldest first, until at most `target` remain; returns the bytes.
std::size_t trim_idle(Heap& h, unsigned target);
// Decommits `n` idle pages (or all, if fewer), in trim_idle's order; returns how many.
unsigned trim_idle_exact(Heap& h, unsigned n);
// A new run for class cls from h's segments or a new segment; nullptr when none.
Run* run_new(Heap& h, unsigned cls);
// Gives empty segments back until at most `keep` remain; their idle pages
// stay resident on the shared allowance where it has room, unless not
// `resident` (trims).
void release_empty_segments(Heap& h, unsigned keep, bool resident = true);
// Whether r may be released: every chunk free and merged, and no remote publish pinning it.
bool releasable(const Run& r);
// Returns the pages of the empty run r to its segment as idle pages.
void run_unuse(Heap& h, Run& r);
// Gives back the pages of the shared idle allowance h holds beyond `keep`
// (an orphan's also from Context::orphan_shares: under its merge lock in
// lowmem, under heaps_lock otherwise).
void shared_idle_return(Heap& h, unsigned keep);
// Lowers h's share to what its retained pages need beyond its own allowance.
void shared_idle_fit(Heap& h);
// Takes back `need` pages of the orphans' shares of the shared idle
// allowance (all they hold when fewer), decommitting as many of their idle
// pages (a heap found no room on it); returns the pages given back.
std::uint64_t reclaim_orphan_shares(Context& c, std::uint64_t need) noexcept;
// Keeps the retained pages within the allowance, sparing the kept empty run `exempt`.
void enforce_budget(Heap& h, const Run* exempt);
// Releases r (empty, not a current run) and keeps h within its budget.
void run_release(Heap& h, Run& r);

// ---- heap_purge.cpp ----------------------------------------------------------

// A heap that frees this many purge steps (Heap::purge_step) within the
// purge interval is purged anyway (heap_purge_due), so that what a burst of
// frees leaves committed stays bounded: fewer in lowmem, whose goal is the
// peak RSS (numa/DESIGN.md, "Aging").
constexpr std::uint64_t max_purge_steps(Profile p) { return p == Profile::lowmem ? 2 : 4; }

// Sets h.purge_at, the bytes freed that trigger the next purge, from the bytes in use.
void set_purge_threshold(Heap& h);

}  // namespace manyalloc::numa
