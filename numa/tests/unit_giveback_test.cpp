// Giving memory back to the OS (issue 19, "decommit with hysteresis and a
// budget"): no free gives pages back on every call, in any profile; what is
// freed and not reused still goes back, after the decay, when a budget is
// exceeded, or on trim. The OS calls are counted by the test back end
// (test_os.hpp), whose clock the tests set.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "heap.hpp"
#include "heap_internal.hpp"
#include "large.hpp"
#include "runtime.hpp"
#include "source.hpp"
#include "test_os.hpp"

namespace manyalloc::numa {
namespace {

using test::Faults;
using test::make_context;

constexpr Profile profiles[] = {Profile::lowmem, Profile::uma, Profile::numa};

const char* name(Profile p) { return profile_name(p); }

struct Fixture {
  std::unique_ptr<Context> c;
  Heap* h;
  explicit Fixture(Profile p) : c(make_context(p)) { h = heap_acquire(*c, c->common()); }
  void free(void* p) {
    Segment* s = c->registry.lookup(p);
    ASSERT_NE(s, nullptr);
    if (s->kind == SegKind::small) small_free(*c, h, *static_cast<SmallSegment*>(s), p);
    else large_free(*c, *static_cast<LargeSegment*>(s), p);
  }
  // Frees the small chunk p from the thread of heap h.
  void free_by(Heap& h, void* p) {
    small_free(*c, &h, *static_cast<SmallSegment*>(c->registry.lookup(p)), p);
  }
  // malloc_trim in the threads of `heaps`; the orphans among them through
  // heap_trim_orphans, which is how malloc_trim reaches them (their idle
  // pages and shares go back, their empty segments stay with them); then
  // the sources' caches: nothing may stay on the shared idle allowance.
  void trim_all(std::initializer_list<Heap*> heaps) {
    for (Heap* h : heaps)
      if (!h->orphan.load()) heap_trim(*h);
    heap_trim_orphans(*c);
    source_release_cache(*c, c->common());
    EXPECT_EQ(c->shared_idle_used.load(), 0u) << "every share went back with the trims";
  }
  // Calls that gave memory back to the OS so far.
  static int givebacks() { return Faults::decommits.load() + Faults::unmaps.load(); }
};

// Whether the OS page holding p is resident (false when it is not mapped
// any more: given back with its segment).
bool resident(const void* p) {
  const auto page = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{os_page - 1};
  unsigned char vec = 0;
  if (mincore(reinterpret_cast<void*>(page), os_page, &vec) != 0) {
    EXPECT_EQ(errno, ENOMEM);
    return false;
  }
  return (vec & 1) != 0;
}

// Live 4 KiB chunks with released one-page runs between them: idle pages
// that a run of 16 or 32 KiB chunks (4 or 8 aligned pages) cannot use, as
// in a heap that served many sizes (glibc-thread of mimalloc-bench). With
// them, uma decommitted the churn loop's run at every free (the idle pages
// filled its allowance).
std::vector<void*> background(Fixture& f) {
  const unsigned cls = size_to_class(4096);
  std::vector<void*> all, live;
  for (unsigned i = 0; i < 48 * run_chunks(cls); ++i) {
    void* p = heap_alloc(*f.h, cls);
    EXPECT_NE(p, nullptr);
    std::memset(p, 7, 4096);
    all.push_back(p);
  }
  // Every third run stays live; the others are emptied and released.
  for (unsigned i = 0; i < all.size(); ++i)
    if ((i / run_chunks(cls)) % 3 == 0) live.push_back(all[i]);
    else f.free(all[i]);
  heap_cache_flush_all(*f.h);
  return live;
}

// malloc(n); memset; free, `iters` times; returns the calls that gave
// memory back meanwhile.
int churn(Fixture& f, std::size_t n, int iters) {
  const int before = Fixture::givebacks();
  for (int i = 0; i < iters; ++i) {
    void* p = n <= max_small ? heap_alloc(*f.h, size_to_class(n))
                             : large_alloc(*f.c, f.c->common(), n, 16, false);
    EXPECT_NE(p, nullptr);
    if (p == nullptr) break;
    std::memset(p, 1, n);
    f.free(p);
  }
  return Fixture::givebacks() - before;
}

// The churn loop of the issue: 1000 iterations make a handful of decommits
// or unmaps at most, in every profile, with or without other memory around
// (before: lowmem one madvise per iteration for 16 and 32 KiB and one munmap
// for 300 KB; uma one madvise per iteration with the background).
TEST(Giveback, ChurnLoopDoesNotGiveBackOnEveryFree) {
  for (Profile prof : profiles)
    for (bool with_background : {false, true})
      for (std::size_t n : {std::size_t{16384}, std::size_t{32768}, std::size_t{300000}}) {
        Fixture f(prof);
        std::vector<void*> live;
        if (with_background) live = background(f);
        const int calls = churn(f, n, 1000);
        EXPECT_LE(calls, 10) << name(prof) << " " << n << " B, background " << with_background;
        for (void* p : live) f.free(p);
        EXPECT_EQ(f.c->misuses.load(), 0u);
      }
}

// Runs of the churn's class kept while they are reused, given back once not:
// the decay releases and decommits an empty current run that nothing was
// allocated from between two purges, and the idle pages that stayed idle
// between two purges; lowmem's RSS therefore does not keep what it stopped
// using.
TEST(Giveback, DecayDecommitsWhatIsNotReused) {
  for (Profile prof : profiles) {
    Fixture f(prof);
    // 32 MiB of 4 KiB chunks, freed below: enough for two purges in every
    // profile (uma: after 8 MiB, then after as many bytes as are in use).
    const unsigned other = size_to_class(4096);
    std::vector<void*> v;
    for (int i = 0; i < 8192; ++i) v.push_back(heap_alloc(*f.h, other));
    churn(f, 32768, 100);
    auto* p = static_cast<std::uint8_t*>(heap_alloc(*f.h, size_to_class(32768)));
    std::memset(p, 1, 32768);
    f.free(p);
    EXPECT_TRUE(resident(p)) << name(prof) << ": the kept run is resident";
    // Frees of other chunks: purges happen, nothing of 32 KiB is allocated.
    for (void* q : v) f.free(q);
    EXPECT_FALSE(resident(p)) << name(prof) << ": the run was not given back by the decay";
    EXPECT_FALSE(resident(p + 32767));
    EXPECT_GT(f.c->os_calls.decommits[static_cast<unsigned>(Giveback::idle)].load(), 0u);
    heap_trim(*f.h);
    EXPECT_EQ(f.h->idle_pages, 0u);
    EXPECT_EQ(f.c->misuses.load(), 0u);
  }
}

// malloc_trim gives back at once everything kept: the empty current run and
// the idle pages.
TEST(Giveback, TrimDecommitsKeptRunsAndIdlePages) {
  for (Profile prof : profiles) {
    Fixture f(prof);
    std::vector<void*> live = background(f);
    auto* p = static_cast<std::uint8_t*>(heap_alloc(*f.h, size_to_class(32768)));
    std::memset(p, 1, 32768);
    f.free(p);
    EXPECT_TRUE(resident(p));
    heap_trim(*f.h);
    EXPECT_FALSE(resident(p)) << name(prof);
    EXPECT_EQ(f.h->idle_pages, 0u) << name(prof);
    for (void* q : live) EXPECT_EQ(static_cast<std::uint8_t*>(q)[4095], 7);
    for (void* q : live) f.free(q);
  }
}

// A heap that shrinks gives its empty runs back when they exceed its
// budget, in batches (down to half the budget), not one call per run: the
// resident idle pages stay bounded, and the calls are far fewer than the
// runs released.
TEST(Giveback, BudgetBoundsIdlePagesWithFewCalls) {
  for (Profile prof : profiles) {
    Fixture f(prof);
    const unsigned cls = size_to_class(2048);  // one-page runs of 16 chunks
    std::vector<void*> v;
    const unsigned runs = 4 * pages_per_segment;  // 8 MiB of runs
    for (unsigned i = 0; i < runs * run_chunks(cls); ++i) v.push_back(heap_alloc(*f.h, cls));
    const int before = Fixture::givebacks();
    unsigned max_idle = 0;
    // Free run by run from the end: every run is emptied, the heap shrinks.
    for (std::size_t i = v.size(); i-- > 0;) {
      f.free(v[i]);
      if (i % 64 == 0) {
        heap_cache_flush_all(*f.h);
        if (f.h->idle_pages > max_idle) max_idle = f.h->idle_pages;
      }
    }
    const int calls = Fixture::givebacks() - before;
    // The budget is at most a quarter of the bytes in use and at least
    // 256 KiB (8 pages): with at most 8 MiB in use, 64 pages.
    EXPECT_LE(max_idle, 64u) << name(prof);
    const OsCounters& oc = f.c->os_calls;
    EXPECT_LT(calls, static_cast<int>(runs) / 4)
        << name(prof) << ": " << runs << " runs released; purge "
        << oc.decommits[static_cast<unsigned>(Giveback::purge)].load() << ", idle "
        << oc.decommits[static_cast<unsigned>(Giveback::idle)].load() << ", meta "
        << oc.decommits[static_cast<unsigned>(Giveback::meta)].load() << ", unmaps "
        << oc.unmaps.load();
    EXPECT_EQ(heap_small_in_use(*f.h), 0u);
    EXPECT_EQ(f.c->misuses.load(), 0u);
  }
}

// Options::shared_idle: a heap whose idle pages pass its own allowance
// keeps the excess on the process's shared allowance while the sum over all
// heaps stays within it, so a burst of released runs no larger than that
// is kept without a call to the OS; a second heap gets only what the first
// left, and everything goes back on trim.
TEST(Giveback, TheSharedIdleAllowanceBoundsWhatAllHeapsKeepBeyondTheirOwn) {
  Fixture f(Profile::uma);
  const std::size_t shared = std::size_t{4} << 20;  // 128 pages
  f.c->opts.shared_idle = shared;
  const unsigned shared_pages = static_cast<unsigned>(shared / page_bytes);
  Heap* second = heap_acquire(*f.c, f.c->common());
  ASSERT_NE(second, nullptr);
  ASSERT_NE(second, f.h);
  const unsigned cls = size_to_class(2048);  // one-page runs of 16 chunks
  // Each heap fills 3 MiB (96 one-page runs) and frees it all: a burst of
  // released runs, far above a heap's own allowance (at most 512 KiB here).
  const auto burst = [&](Heap& h) {
    std::vector<void*> v;
    for (unsigned i = 0; i < 96 * run_chunks(cls); ++i) v.push_back(heap_alloc(h, cls));
    const int before = Fixture::givebacks();
    for (void* p : v) {
      Segment* seg = f.c->registry.lookup(p);
      small_free(*f.c, &h, *static_cast<SmallSegment*>(seg), p);
    }
    heap_cache_flush_all(h);
    return Fixture::givebacks() - before;
  };
  EXPECT_EQ(burst(*f.h), 0) << "the first heap's burst fits its own and the shared allowance";
  EXPECT_GT(f.h->idle_borrowed, 0u);
  EXPECT_LE(f.h->idle_borrowed, shared_pages);
  {
    // New runs take the idle pages back: the share goes back with them.
    std::vector<void*> again;
    for (unsigned i = 0; i < 96 * run_chunks(cls); ++i) again.push_back(heap_alloc(*f.h, cls));
    EXPECT_EQ(f.h->idle_borrowed, 0u) << "a share held with no idle pages to keep";
    EXPECT_EQ(f.c->shared_idle_used.load(), 0u);
    for (void* p : again) f.free(p);
    heap_cache_flush_all(*f.h);
    EXPECT_GT(f.h->idle_borrowed, 0u) << "the second burst is kept on the share again";
  }
  EXPECT_GT(burst(*second), 0) << "the second heap finds the shared allowance mostly taken";
  EXPECT_EQ(f.c->shared_idle_used.load(), std::uint64_t{f.h->idle_borrowed} + second->idle_borrowed);
  EXPECT_LE(f.c->shared_idle_used.load(), shared_pages);
  EXPECT_LE(second->idle_pages, idle_allowance(*second) + second->idle_borrowed);
  // The second heap's thread exits: as an orphan its heap keeps its idle
  // pages and its share for the thread that adopts it, and its empty
  // segments go to the source with theirs while the allowance has room.
  const std::uint64_t second_share = second->idle_borrowed;
  heap_abandon(*second);
  EXPECT_LE(second->idle_borrowed, second_share);
  EXPECT_EQ(f.c->shared_idle_used.load(), std::uint64_t{f.h->idle_borrowed} + second->idle_borrowed +
                                              f.c->common().idle_resident.load());
  EXPECT_LE(f.c->shared_idle_used.load(), shared_pages);
  heap_trim(*f.h);
  heap_trim(*second);
  EXPECT_EQ(f.c->shared_idle_used.load(), f.c->common().idle_resident.load());
  source_release_cache(*f.c, f.c->common());  // malloc_trim's second step
  EXPECT_EQ(f.c->common().idle_resident.load(), 0u);
  EXPECT_EQ(f.c->shared_idle_used.load(), 0u) << "trim gives the shared allowance back";
  EXPECT_EQ(f.h->idle_pages + second->idle_pages, 0u);
  EXPECT_EQ(f.c->misuses.load(), 0u);
}

// Fills `runs` one-page runs of 2 KiB chunks in h and frees them all: a
// burst of released runs (and, from 64 runs on, of emptied segments).
void fill_and_free(Fixture& f, Heap& h, unsigned runs) {
  const unsigned cls = size_to_class(2048);  // one-page runs of 16 chunks
  std::vector<void*> v;
  for (unsigned i = 0; i < runs * run_chunks(cls); ++i) {
    void* p = heap_alloc(h, cls);
    ASSERT_NE(p, nullptr);
    std::memset(p, 5, 2048);
    v.push_back(p);
  }
  for (void* p : v) f.free_by(h, p);
  heap_cache_flush_all(h);
}

// An emptied segment given back to the source keeps its idle pages
// resident while the shared allowance has room for them (mstress: threads
// that free everything and new threads that allocate it again), and the
// heap that takes the segment next counts them as its own idle pages and
// writes them without a new mapping or a decommit before.
TEST(Giveback, AReleasedSegmentsIdlePagesStayResidentOnTheSharedAllowanceForTheNextHeap) {
  Fixture f(Profile::uma);
  f.c->opts.shared_idle = std::size_t{8} << 20;  // 256 pages
  // Three segments: the bin keeps its last run (empty) in the third, the
  // heap keeps one empty segment, and gives the other back.
  fill_and_free(f, *f.h, 3 * pages_per_segment);
  EXPECT_EQ(Faults::decommits.load(), 0) << "everything fits the own and the shared allowance";
  Source& s = f.c->common();
  EXPECT_EQ(f.h->empty_segments, keep_empty);
  EXPECT_EQ(s.idle_resident.load(), pages_per_segment) << "the second empty segment went to the source resident";
  EXPECT_EQ(f.c->shared_idle_used.load(), std::uint64_t{f.h->idle_borrowed} + pages_per_segment);
  EXPECT_LE(f.c->shared_idle_used.load(), shared_idle_cap(*f.c));
  Heap* second = heap_acquire(*f.c, s);
  ASSERT_NE(second, f.h);
  const int maps = Faults::maps.load();
  void* p = heap_alloc(*second, size_to_class(2048));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(Faults::maps.load(), maps) << "the cached segment, not a new one";
  EXPECT_TRUE(resident(p)) << "an idle page the first heap wrote";
  EXPECT_EQ(second->idle_pages, pages_per_segment - 1) << "the rest of its idle pages, now the second heap's";
  EXPECT_EQ(s.idle_resident.load(), 0u);
  EXPECT_EQ(f.c->shared_idle_used.load(), std::uint64_t{f.h->idle_borrowed} + second->idle_borrowed);
  f.free_by(*second, p);
  f.trim_all({f.h, second});
  EXPECT_EQ(s.idle_resident.load(), 0u);
  EXPECT_EQ(f.h->idle_pages + second->idle_pages, 0u);
  EXPECT_EQ(f.c->misuses.load(), 0u);
}

// Without room on the shared allowance (none at all here, as in lowmem),
// an emptied segment's idle pages are decommitted before it goes back to
// the source, as they were before the source kept them.
TEST(Giveback, WithoutRoomOnTheSharedAllowanceAReleasedSegmentsIdlePagesAreDecommitted) {
  Fixture f(Profile::uma);
  fill_and_free(f, *f.h, 2 * pages_per_segment);
  EXPECT_GT(Faults::decommits.load(), 0);
  EXPECT_EQ(f.c->common().idle_resident.load(), 0u);
  EXPECT_EQ(f.c->shared_idle_used.load(), 0u);
  EXPECT_LE(f.h->idle_pages, idle_allowance(*f.h));
}

// The shared allowance covers the run pages the process gave up since its
// recent peak of run pages (their release leaves it within that peak), and
// the peak halves once it is older than shared_idle_hold_ms, down to the
// floor Options::shared_idle.
TEST(Giveback, RunPagesGivenUpSinceTheRecentPeakWidenTheSharedAllowanceUntilThePeakAges) {
  Fixture f(Profile::uma);
  Faults::clock_ns = 1'000'000'000;
  f.c->opts.shared_idle = std::size_t{1} << 20;  // a floor of 32 pages
  const std::uint64_t floor = f.c->opts.shared_idle / page_bytes;
  EXPECT_EQ(shared_idle_cap(*f.c), floor);
  fill_and_free(f, *f.h, 96);
  EXPECT_EQ(f.c->run_pages.load(), 1u) << "the bin's last run, kept empty";
  EXPECT_EQ(f.c->run_pages_peak.load(), 96u);
  EXPECT_EQ(shared_idle_cap(*f.c), 95u) << "the 95 pages given up since the peak";
  EXPECT_EQ(Faults::decommits.load(), 0) << "so the burst stays resident";
  Faults::clock_ns += shared_idle_hold_ms * 1'000'000 + 1;
  EXPECT_EQ(shared_idle_cap(*f.c), 47u) << "an old peak halves";
  EXPECT_EQ(shared_idle_cap(*f.c), 47u) << "once per hold";
  Faults::clock_ns += shared_idle_hold_ms * 1'000'000 + 1;
  EXPECT_EQ(shared_idle_cap(*f.c), floor) << "23 pages: the floor";
  heap_trim(*f.h);
  EXPECT_EQ(f.c->shared_idle_used.load(), 0u);
}

// Shares taken while the peak was recent outlive it: once the allowance
// has aged below what is held, a heap gives its share back at its next
// purge (and trims to its own allowance), and a source decommits the
// resident idle pages of its cached segments at its next decay.
TEST(Giveback, SharesAboveAnAgedAllowanceGoBackAtTheNextPurgeAndDecay) {
  Fixture f(Profile::uma);
  Faults::clock_ns = 1'000'000'000;
  f.c->opts.shared_idle = std::size_t{1} << 20;  // a floor of 32 pages
  Source& s = f.c->common();
  fill_and_free(f, *f.h, 3 * pages_per_segment);
  ASSERT_GT(f.h->idle_borrowed, 0u);
  ASSERT_EQ(s.idle_resident.load(), pages_per_segment);
  EXPECT_FALSE(shared_idle_over(*f.c));
  const int before = Faults::decommits.load();
  for (int i = 0; i < 8; ++i) {  // the peak ages down to the floor
    Faults::clock_ns += shared_idle_hold_ms * 1'000'000 + 1;
    (void)shared_idle_cap(*f.c);
  }
  EXPECT_EQ(shared_idle_cap(*f.c), 32u);
  EXPECT_TRUE(shared_idle_over(*f.c));
  source_decay(*f.c, s);
  EXPECT_EQ(s.idle_resident.load(), 0u) << "the source's resident idle pages went first (the oldest segments)";
  heap_purge(*f.h, false);
  EXPECT_EQ(f.h->idle_borrowed, 0u);
  EXPECT_LE(f.h->idle_pages, idle_allowance(*f.h));
  EXPECT_GT(Faults::decommits.load(), before);
  EXPECT_LE(f.c->shared_idle_used.load(), shared_idle_cap(*f.c));
  f.trim_all({f.h});
}

// A heap that finds no room on the shared allowance takes back what it
// lacks from the orphans' shares (its source holds no resident pages here):
// the orphan decommits that many idle pages, and the heap keeps its burst.
TEST(Giveback, AHeapWithoutRoomTakesTheOrphansSharesBack) {
  Fixture f(Profile::uma);
  Faults::clock_ns = 1'000'000'000;
  f.c->opts.shared_idle = std::size_t{4} << 20;  // 128 pages
  Heap* second = heap_acquire(*f.c, f.c->common());  // a live heap beside the one that will be orphaned
  ASSERT_NE(second, nullptr);
  void* live = heap_alloc(*f.h, size_to_class(2048));  // keeps the orphan's segment in use
  ASSERT_NE(live, nullptr);
  fill_and_free(f, *f.h, pages_per_segment - 8);
  heap_abandon(*f.h);
  heap_release(*f.c, *f.h);
  const unsigned orphan_share = f.h->idle_borrowed;
  ASSERT_GT(orphan_share, 0u);
  EXPECT_EQ(f.c->orphan_shares.load(), orphan_share);
  const unsigned orphan_idle = f.h->idle_pages;
  fill_and_free(f, *second, 96);
  EXPECT_LT(f.h->idle_borrowed, orphan_share) << "the orphan's share was taken back in part";
  EXPECT_GT(f.h->idle_borrowed, 0u) << "in part only";
  EXPECT_EQ(f.h->idle_pages, orphan_idle - (orphan_share - f.h->idle_borrowed)) << "as many pages decommitted";
  EXPECT_LE(f.h->idle_pages, idle_allowance(*f.h) + f.h->idle_borrowed);
  EXPECT_EQ(f.c->orphan_shares.load(), f.h->idle_borrowed);
  EXPECT_GT(second->idle_borrowed, 128u - orphan_share) << "more than the room the orphan left";
  EXPECT_LE(f.c->shared_idle_used.load(), shared_idle_cap(*f.c));
  f.free_by(*second, live);
  f.trim_all({second, f.h});
}

// A heap that finds no room on the shared allowance also takes back the
// resident idle pages of the segments its source caches (rptest at 2
// threads: pages no live heap holds starved the two that trade runs).
TEST(Giveback, AHeapWithoutRoomTakesItsSourcesResidentIdlePagesBack) {
  Fixture f(Profile::uma);
  Faults::clock_ns = 1'000'000'000;
  f.c->opts.shared_idle = std::size_t{4} << 20;  // 128 pages
  Source& s = f.c->common();
  Heap* second = heap_acquire(*f.c, s);
  ASSERT_NE(second, nullptr);
  // The second heap's segment, taken now: its burst below then needs no
  // segment of the source's (taking one would bring its pages as room).
  void* anchor = heap_alloc(*second, size_to_class(2048));
  ASSERT_NE(anchor, nullptr);
  fill_and_free(f, *f.h, 3 * pages_per_segment);
  ASSERT_EQ(s.idle_resident.load(), pages_per_segment) << "an emptied segment went to the source resident";
  const std::uint64_t room = shared_idle_cap(*f.c) - f.c->shared_idle_used.load();
  const int before = Faults::decommits.load();
  fill_and_free(f, *second, 48);  // 48 pages: more than the room, fewer than the source's 64
  EXPECT_EQ(s.idle_resident.load(), 0u) << "decommitted for the heap that needed the room";
  EXPECT_GT(Faults::decommits.load(), before);
  EXPECT_GT(second->idle_borrowed, room) << "more than the room the source left";
  EXPECT_LE(f.c->shared_idle_used.load(), shared_idle_cap(*f.c));
  f.free_by(*second, anchor);
  f.trim_all({second, f.h});
}

// A heap short of room takes back only what it lacks: the oldest of the
// source's resident segments, while the newer one stays resident, and none
// of the orphans' shares, which the next threads write again without
// faults (mstress: all of them went back at every such heap before).
TEST(Giveback, AHeapWithoutRoomTakesBackOnlyWhatItLacks) {
  Fixture f(Profile::uma);
  Faults::clock_ns = 1'000'000'000;
  f.c->opts.shared_idle = std::size_t{1} << 20;  // a floor of 32 pages; the peak gives more
  // A quarter of the peak beyond it: the orphan's share, taken before the
  // first heap's peak, then fits beside the pages given up since.
  f.c->opts.shared_idle_peak = 25;
  Source& s = f.c->common();
  Heap* orphan = heap_acquire(*f.c, s);
  Heap* second = heap_acquire(*f.c, s);
  ASSERT_NE(orphan, nullptr);
  ASSERT_NE(second, nullptr);
  void* live = heap_alloc(*orphan, size_to_class(2048));  // keeps the orphan's segment in use
  ASSERT_NE(live, nullptr);
  fill_and_free(f, *orphan, pages_per_segment - 8);
  heap_abandon(*orphan);
  heap_release(*f.c, *orphan);
  const unsigned orphan_share = orphan->idle_borrowed;
  ASSERT_GT(orphan_share, 0u);
  // The second heap's segment, taken now: its burst below then needs no
  // segment of the source's (taking one would bring its pages as room).
  void* anchor = heap_alloc(*second, size_to_class(2048));
  ASSERT_NE(anchor, nullptr);
  fill_and_free(f, *f.h, 4 * pages_per_segment);
  const std::uint64_t resident_before = s.idle_resident.load();
  ASSERT_EQ(resident_before, 2u * pages_per_segment) << "two emptied segments went to the source resident";
  const std::uint64_t room = shared_idle_cap(*f.c) - f.c->shared_idle_used.load();
  const int maps = Faults::maps.load(), decommits = Faults::decommits.load();
  fill_and_free(f, *second, 40);  // 40 pages, far beyond its own allowance
  EXPECT_EQ(Faults::maps.load(), maps);
  EXPECT_GT(second->idle_borrowed, room) << "more than the room there was";
  EXPECT_EQ(Faults::decommits.load(), decommits + 1) << "one cached segment's pages, one call";
  EXPECT_EQ(s.idle_resident.load(), std::uint64_t{pages_per_segment}) << "one segment's pages were enough";
  EXPECT_EQ(orphan->idle_borrowed, orphan_share) << "the orphan keeps its share";
  EXPECT_EQ(f.c->orphan_shares.load(), orphan_share);
  EXPECT_LE(f.c->shared_idle_used.load(), shared_idle_cap(*f.c));
  EXPECT_EQ(f.c->shared_idle_used.load(), std::uint64_t{f.h->idle_borrowed} + second->idle_borrowed +
                                              orphan->idle_borrowed + s.idle_resident.load());
  // From the orphans too, a heap takes back only what it lacks.
  const unsigned orphan_idle = orphan->idle_pages;
  const int calls = Faults::decommits.load();
  EXPECT_EQ(reclaim_orphan_shares(*f.c, 3), 3u);
  EXPECT_EQ(orphan->idle_borrowed, orphan_share - 3);
  EXPECT_EQ(orphan->idle_pages, orphan_idle - 3) << "three idle pages decommitted";
  EXPECT_EQ(Faults::decommits.load(), calls + 1) << "three adjacent pages, one call";
  EXPECT_EQ(f.c->orphan_shares.load(), orphan_share - 3);
  f.free_by(*second, live);
  f.free_by(*second, anchor);
  Heap* adopter = heap_acquire(*f.c, s);
  ASSERT_EQ(adopter, orphan);
  f.trim_all({second, f.h, adopter});
  EXPECT_EQ(f.c->misuses.load(), 0u);
}

// While threads come and go (a heap orphaned within shared_idle_hold_ms),
// Options::shared_idle_peak widens the shared allowance by that percentage
// of the recent peak of run pages, whether the process is at its peak or
// below it; a process whose threads all live on gets nothing from it.
TEST(Giveback, ThePeakPercentAddsToTheSharedAllowanceWhileThreadsExit) {
  Fixture f(Profile::uma);
  Faults::clock_ns = 1'000'000'000;
  f.c->opts.shared_idle = std::size_t{1} << 20;  // a floor of 32 pages
  f.c->opts.shared_idle_peak = 25;
  std::vector<void*> v;
  const unsigned cls = size_to_class(2048);  // one-page runs of 16 chunks
  for (unsigned i = 0; i < 100 * run_chunks(cls); ++i) v.push_back(heap_alloc(*f.h, cls));
  ASSERT_EQ(f.c->run_pages.load(), 100u);
  EXPECT_EQ(shared_idle_cap(*f.c), 32u) << "no thread exited: the floor";
  Heap* exited = heap_acquire(*f.c, f.c->common());
  ASSERT_NE(exited, nullptr);
  heap_abandon(*exited);
  heap_release(*f.c, *exited);
  EXPECT_EQ(shared_idle_cap(*f.c), 32u + 25u) << "at the peak: the floor and a quarter of the peak";
  for (void* p : v) f.free(p);
  heap_cache_flush_all(*f.h);
  EXPECT_EQ(f.c->run_pages.load(), 1u) << "the bin's last run, kept empty";
  EXPECT_EQ(shared_idle_cap(*f.c), 99u + 25u) << "the 99 pages given up since the peak and a quarter of it";
  Faults::clock_ns += shared_idle_hold_ms * 1'000'000 + 1;
  EXPECT_EQ(shared_idle_cap(*f.c), 49u) << "no exit since: the aged peak's pages alone";
  heap_release(*f.c, *heap_acquire(*f.c, f.c->common()));  // the orphan adopted and orphaned again
  EXPECT_EQ(shared_idle_cap(*f.c), 49u + 12u) << "and a quarter of the aged peak (50) while threads exit";
  heap_trim(*f.h);
  EXPECT_EQ(f.c->shared_idle_used.load(), 0u);
}

// A thread that exits leaves its idle pages, with its share of the shared
// allowance, to the thread that adopts its heap (it trimmed them to its own
// allowance before): the next thread writes them without page faults.
TEST(Giveback, AnOrphanKeepsItsIdlePagesAndItsShareForTheThreadThatAdoptsIt) {
  Fixture f(Profile::uma);
  f.c->opts.shared_idle = std::size_t{8} << 20;
  void* live = heap_alloc(*f.h, size_to_class(2048));  // keeps the segment in use
  ASSERT_NE(live, nullptr);
  fill_and_free(f, *f.h, pages_per_segment - 8);
  const unsigned idle = f.h->idle_pages;
  const unsigned share = f.h->idle_borrowed;
  ASSERT_GT(share, 0u);
  heap_abandon(*f.h);
  heap_release(*f.c, *f.h);
  EXPECT_EQ(f.h->idle_borrowed, share);
  Heap* next = heap_acquire(*f.c, f.c->common());
  ASSERT_EQ(next, f.h) << "the orphan is adopted";
  EXPECT_EQ(next->idle_pages, idle + 1) << "and the run its bin kept empty, released at the exit";
  EXPECT_EQ(f.c->shared_idle_used.load(), std::uint64_t{share} + f.c->common().idle_resident.load());
  f.free_by(*next, live);
  f.trim_all({next});
}

// lowmem: a thread that frees into an exited thread's heap merges its
// queue for it (heap_merge_for_owner) and may purge it, which lowers the
// orphan's share of the shared allowance to what its idle pages still need
// (shared_idle_fit). Context::orphan_shares goes down with it, so that it
// matches the orphans' shares and the thread that adopts the heap takes
// exactly its share out of it. Before, the count kept what the merge gave
// back, and heap_release and heap_acquire read the share while a merger
// could write it (TSan: numa.stress_lowmem_shared; what this test saw
// before the fix: numa/DESIGN.md, "Idle pages traded through the source").
TEST(Giveback, AMergeForAnOrphanLowersItsShareAndTheCountTogether) {
  Fixture f(Profile::lowmem);
  ASSERT_TRUE(f.h->merge_for_owner);
  Faults::clock_ns = 1'000'000'000;
  f.c->opts.shared_idle = std::size_t{4} << 20;  // 128 pages
  void* live = heap_alloc(*f.h, size_to_class(2048));  // keeps the segment in use
  ASSERT_NE(live, nullptr);
  fill_and_free(f, *f.h, 64);
  const unsigned share = f.h->idle_borrowed;
  ASSERT_GT(share, 0u);
  heap_release(*f.c, *f.h);  // its thread exited (heap_abandon's purge would give the share back)
  EXPECT_EQ(f.c->orphan_shares.load(), share);
  f.h->purge_credit = f.h->purge_at;  // a purge is due at the next merge
  heap_merge_for_owner(*f.h);
  EXPECT_LT(f.h->idle_borrowed, share) << "the merge for the orphan gave part of its share back";
  EXPECT_EQ(f.c->orphan_shares.load(), f.h->idle_borrowed) << "the count follows the orphan's share";
  Heap* next = heap_acquire(*f.c, f.c->common());
  ASSERT_EQ(next, f.h) << "the orphan is adopted";
  EXPECT_EQ(f.c->orphan_shares.load(), 0u) << "no orphan left, no share counted";
  f.free_by(*next, live);
  f.trim_all({next});
}

// Large blocks freed go to their source's cache, in lowmem too (up to
// 4 MiB, or a quarter of the live large bytes), and are reused at once; a
// cached one is unmapped after the decay delay, and one beyond the cache's
// budget at once.
TEST(Giveback, LargeBlocksAreCachedThenDecay) {
  for (Profile prof : profiles) {
    Fixture f(prof);
    Source& s = f.c->common();
    Faults::clock_ns = 1'000'000'000'000;  // the test's clock from here on
    auto* p = static_cast<std::uint8_t*>(large_alloc(*f.c, s, 300000, 16, false));
    ASSERT_NE(p, nullptr);
    std::memset(p, 1, 300000);
    f.free(p);
    EXPECT_EQ(s.cached_bytes.load(), segment_bytes) << name(prof);
    EXPECT_TRUE(resident(p));
    auto* q = static_cast<std::uint8_t*>(large_alloc(*f.c, s, 300000, 16, false));
    EXPECT_EQ(s.reuses.load(), 1u) << name(prof);
    f.free(q);
    // Before the delay nothing decays; after it, everything cached goes.
    Faults::clock_ns += std::uint64_t{f.c->opts.large_decay_ms} * 1'000'000 - 1;
    source_decay(*f.c, s);
    EXPECT_EQ(s.cached_bytes.load(), segment_bytes) << name(prof);
    Faults::clock_ns += 1;
    source_decay(*f.c, s);
    EXPECT_EQ(s.cached_bytes.load(), 0u) << name(prof);
    EXPECT_EQ(s.mapped_bytes.load(), 0u) << name(prof);
    EXPECT_EQ(f.c->os_calls.decayed.load(), 1u);
    // Beyond the budget (lowmem with nothing in use: 4 MiB) only the newest
    // block is kept, and only until the source takes or maps a block: here
    // the 4 MiB block is cut from it and the rest given back.
    void* big = large_alloc(*f.c, s, 5 * segment_bytes, 16, false);
    void* big2 = large_alloc(*f.c, s, 5 * segment_bytes, 16, false);
    ASSERT_NE(big, nullptr);
    ASSERT_NE(big2, nullptr);
    f.free(big);
    f.free(big2);
    if (prof == Profile::lowmem) {
      EXPECT_EQ(s.large_count, 1u);
      EXPECT_EQ(s.mapped_bytes.load(), s.cached_bytes.load());
      void* small = large_alloc(*f.c, s, segment_bytes + 1, 16, false);  // 4 MiB, split off
      EXPECT_EQ(s.cached_bytes.load(), 0u);
      f.free(small);
    } else {
      EXPECT_EQ(s.large_count, 2u);
    }
    EXPECT_EQ(f.c->misuses.load(), 0u);
  }
}

// Lowmem's cache of large blocks may hold a quarter of the large bytes in
// use (options.hpp, lowmem_large_live_share): blocks replaced by others of
// other sizes (mimalloc-bench's malloc-large) find a cached one that fits
// instead of growing the newest one and faulting its new pages. Before, it
// kept only the newest block beyond its 4 MiB. The allowance follows the
// live bytes down, and the blocks decay after large_decay_ms.
TEST(Giveback, LowmemCachesAQuarterOfItsLiveLargeBytes) {
  Fixture f(Profile::lowmem);
  Source& s = f.c->common();
  Faults::clock_ns = 1'000'000'000'000;
  constexpr std::size_t block = 3u << 20;  // 3 MiB: one 4 MiB segment each
  std::vector<void*> live;
  for (int i = 0; i < 24; ++i) {
    live.push_back(large_alloc(*f.c, s, block, 16, false));
    ASSERT_NE(live.back(), nullptr);
  }
  const std::size_t seg = f.c->registry.lookup(live.back())->bytes;
  for (int i = 0; i < 3; ++i) {  // at least 63 MiB stay in use: a budget of at least 15.75 MiB
    f.free(live.back());
    live.pop_back();
  }
  EXPECT_EQ(s.large_count, 3u);
  EXPECT_EQ(s.cached_bytes.load(), 3 * seg);
  // A larger block grows one cached block and the others stay (before: the
  // cache was emptied first).
  void* grown = large_alloc(*f.c, s, 4 * block, 16, false);
  ASSERT_NE(grown, nullptr);
  EXPECT_EQ(s.large_count, 2u);
  EXPECT_EQ(s.cached_bytes.load(), 2 * seg);
  // So does a fresh mapping (lowmem caches no small segment: this one is new).
  SmallSegment* small = source_take_small(*f.c, s);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(s.large_count, 2u);
  source_give_small(*f.c, small);
  f.free(grown);
  while (!live.empty()) {
    f.free(live.back());
    live.pop_back();
  }
  // Nothing in use: the budget is cache_max again, and only the newest
  // block stays beyond it.
  EXPECT_EQ(s.large_count, 1u);
  EXPECT_EQ(s.cached_bytes.load(), seg);
  Faults::clock_ns += std::uint64_t{f.c->opts.large_decay_ms} * 1'000'000;
  source_decay(*f.c, s);
  EXPECT_EQ(s.cached_bytes.load(), 0u);
  EXPECT_EQ(s.mapped_bytes.load(), 0u);
  EXPECT_EQ(f.c->misuses.load(), 0u);
}

// The decay runs at the heaps' purges too, so that a process that keeps
// freeing small chunks gives back the large blocks it stopped reusing.
TEST(Giveback, PurgesLetTheSourceCacheDecay) {
  Fixture f(Profile::lowmem);
  Source& s = f.c->common();
  Faults::clock_ns = 1'000'000'000'000;
  void* p = large_alloc(*f.c, s, 1 << 20, 16, false);
  f.free(p);
  EXPECT_EQ(s.cached_bytes.load(), segment_bytes);
  Faults::clock_ns += std::uint64_t{f.c->opts.large_decay_ms} * 1'000'000;
  heap_purge(*f.h);
  EXPECT_EQ(s.cached_bytes.load(), 0u);
  EXPECT_EQ(s.mapped_bytes.load() % segment_bytes, 0u);
}

// Every call that gives memory back is in the statistics' counters.
TEST(Giveback, EveryCallIsCounted) {
  for (Profile prof : profiles) {
    Fixture f(prof);
    std::vector<void*> live = background(f);
    churn(f, 32768, 50);
    churn(f, 300000, 50);
    void* big = large_alloc(*f.c, f.c->common(), 9 * segment_bytes, 16, false);
    large_realloc(*f.c, *static_cast<LargeSegment*>(f.c->registry.lookup(big)), 3 * segment_bytes);
    f.free(big);
    for (void* q : live) f.free(q);
    heap_trim(*f.h);
    source_release_cache(*f.c, f.c->common());
    const OsCounters& oc = f.c->os_calls;
    std::uint64_t decommits = 0;
    for (const auto& d : oc.decommits) decommits += d.load();
    EXPECT_EQ(decommits, static_cast<std::uint64_t>(Faults::decommits.load())) << name(prof);
    EXPECT_EQ(oc.unmaps.load(), static_cast<std::uint64_t>(Faults::unmaps.load())) << name(prof);
    EXPECT_GT(decommits, 0u);
    EXPECT_GT(oc.unmaps.load(), 0u);
  }
}

}  // namespace
}  // namespace manyalloc::numa
