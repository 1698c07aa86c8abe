// Local heaps on a private context: runs, bins, segments, remote frees,
// abandon/adopt (heap.hpp, runtime.hpp).
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "heap.hpp"
#include "heap_internal.hpp"
#include "runtime.hpp"
#include "test_os.hpp"

namespace manyalloc::numa {
namespace {

using test::Faults;
using test::make_context;

struct HeapFixture {
  std::unique_ptr<Context> c;
  Heap* h;
  explicit HeapFixture(Profile p = Profile::uma) : c(make_context(p)) {
    h = heap_acquire(*c, c->common());
  }
  void free(void* p, Heap* self) {
    Segment* s = c->registry.lookup(p);
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(s->kind, SegKind::small);
    small_free(*c, self, *static_cast<SmallSegment*>(s), p);
  }
};

// n chunks of class cls, every byte written (0x5a).
std::vector<std::uint8_t*> alloc_written(HeapFixture& f, unsigned cls, unsigned n) {
  std::vector<std::uint8_t*> v;
  for (unsigned i = 0; i < n; ++i) {
    auto* p = static_cast<std::uint8_t*>(heap_alloc(*f.h, cls));
    EXPECT_NE(p, nullptr);
    if (p != nullptr) std::memset(p, 0x5a, class_size(cls));
    v.push_back(p);
  }
  return v;
}

// Whether the OS page holding p is resident.
bool resident(const void* p) {
  const auto page = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{os_page - 1};
  unsigned char vec = 0;
  EXPECT_EQ(mincore(reinterpret_cast<void*>(page), os_page, &vec), 0);
  return (vec & 1) != 0;
}

TEST(Heap, EveryClassGivesDisjointAlignedChunks) {
  HeapFixture f;
  for (unsigned cls = 0; cls < num_classes; ++cls) {
    const std::size_t cs = class_size(cls);
    const unsigned n = std::min(3 * run_chunks(cls), 600u);
    std::vector<std::uint8_t*> v;
    for (unsigned i = 0; i < n; ++i) {
      auto* p = static_cast<std::uint8_t*>(heap_alloc(*f.h, cls));
      ASSERT_NE(p, nullptr);
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 16, 0u);
      if ((cs & (cs - 1)) == 0) ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % cs, 0u);
      std::memset(p, static_cast<int>(i), cs);
      v.push_back(p);
    }
    std::vector<std::uint8_t*> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 1; i < sorted.size(); ++i) ASSERT_GE(sorted[i] - sorted[i - 1], cs);
    for (unsigned i = 0; i < n; ++i) {
      ASSERT_EQ(v[i][0], static_cast<std::uint8_t>(i));
      ASSERT_EQ(v[i][cs - 1], static_cast<std::uint8_t>(i));
      f.free(v[i], f.h);
    }
  }
  EXPECT_EQ(heap_small_in_use(*f.h), 0u);
  EXPECT_EQ(f.c->misuses.load(), 0u);
  // Everything free: only the current runs of classes below 16 KiB (runs of
  // at most 128 KiB) and one spare segment are kept; the rest is cached.
  EXPECT_LE(f.c->common().mapped_bytes.load() - f.c->common().cached_bytes.load(),
            4 * segment_bytes);
}

TEST(Heap, LowmemGivesEmptySegmentsBack) {
  HeapFixture f(Profile::lowmem);
  std::vector<void*> v;
  for (int i = 0; i < 20000; ++i) v.push_back(heap_alloc(*f.h, size_to_class(1000)));
  EXPECT_GT(f.c->common().mapped_bytes.load(), 8 * segment_bytes);
  for (void* p : v) f.free(p, f.h);
  // Only the current run's segment stays.
  EXPECT_LE(f.c->common().mapped_bytes.load(), segment_bytes);
}

TEST(Heap, PurgeDecommitsOnlyPagesWithoutLiveChunks) {
  for (Profile prof : {Profile::lowmem, Profile::uma}) {
    HeapFixture f(prof);
    for (unsigned cls : {size_to_class(48), size_to_class(1000), size_to_class(4096),
                         size_to_class(20000)}) {
      const std::size_t cs = class_size(cls);
      const unsigned n = 2 * run_chunks(cls);
      std::vector<std::uint8_t*> v;
      for (unsigned i = 0; i < n; ++i) {
        auto* p = static_cast<std::uint8_t*>(heap_alloc(*f.h, cls));
        ASSERT_NE(p, nullptr);
        std::memset(p, 0x5a, cs);
        v.push_back(p);
      }
      // Keep every 7th chunk; the others' pages may go back to the OS.
      for (unsigned i = 0; i < n; ++i)
        if (i % 7 != 0) f.free(v[i], f.h);
      const std::uint64_t before = f.h->purged_bytes.load();
      heap_purge(*f.h, true);
      // With 6 free chunks between live ones, whole free pages exist from
      // 1000-byte chunks up; 48-byte chunks leave none (nothing purged).
      if (cs >= 1000) EXPECT_GT(f.h->purged_bytes.load(), before) << "class " << cs;
      for (unsigned i = 0; i < n; i += 7) {
        for (std::size_t b = 0; b < cs; b += 512) ASSERT_EQ(v[i][b], 0x5a) << cs << " " << i;
        ASSERT_EQ(v[i][cs - 1], 0x5a);
      }
      // Purged chunks are handed out again and usable.
      std::vector<std::uint8_t*> w;
      for (unsigned i = 0; i < n; ++i) {
        if (i % 7 == 0) continue;
        auto* p = static_cast<std::uint8_t*>(heap_alloc(*f.h, cls));
        ASSERT_NE(p, nullptr);
        std::memset(p, 0x33, cs);
        w.push_back(p);
      }
      for (unsigned i = 0; i < n; i += 7) ASSERT_EQ(v[i][cs / 2], 0x5a);
      for (auto* p : w) f.free(p, f.h);
      for (unsigned i = 0; i < n; i += 7) f.free(v[i], f.h);
    }
    heap_trim(*f.h);
    EXPECT_EQ(heap_small_in_use(*f.h), 0u);
    EXPECT_EQ(f.c->misuses.load(), 0u);
  }
}

TEST(Heap, PurgeKeepsShortFreeRangesBetweenLiveChunks) {
  for (Profile prof : {Profile::lowmem, Profile::uma}) {
    SCOPED_TRACE(profile_name(prof));
    HeapFixture f(prof);
    const unsigned cls = size_to_class(4096);  // one chunk per OS page
    ASSERT_EQ(run_chunks(cls), 8u);
    const std::vector<std::uint8_t*> v = alloc_written(f, cls, 8);
    void* next = heap_alloc(*f.h, cls);  // a new current run: the first one is full
    // Live: 0, 2, 5. Free: page 1 alone, pages 3-4, pages 6-7 at the end.
    for (unsigned i : {1u, 3u, 4u, 6u, 7u}) f.free(v[i], f.h);
    heap_cache_flush_all(*f.h);
    // The short ranges inside the run stay in every profile; the one at
    // its end goes at the second purge that finds it free (aging), and
    // malloc_trim (`all`) takes them all.
    heap_purge(*f.h, false);
    for (unsigned i : {1u, 3u, 6u, 7u}) EXPECT_TRUE(resident(v[i])) << i;
    heap_purge(*f.h, false);
    EXPECT_TRUE(resident(v[1]));
    EXPECT_TRUE(resident(v[3]));
    EXPECT_FALSE(resident(v[6]));
    EXPECT_FALSE(resident(v[7]));
    heap_purge(*f.h, true);
    EXPECT_FALSE(resident(v[1]));
    EXPECT_FALSE(resident(v[4]));
    for (unsigned i : {0u, 2u, 5u}) EXPECT_EQ(v[i][4095], 0x5a);
    for (unsigned i : {0u, 2u, 5u}) f.free(v[i], f.h);
    f.free(next, f.h);
    EXPECT_EQ(f.c->misuses.load(), 0u);
  }
}

// Aging (heap_purge.cpp): a free range is decommitted by the second purge
// that finds it free, not the first.
TEST(Heap, PurgeDecommitsFreePagesOnlyAtTheSecondPurgeThatFindsThemFree) {
  for (Profile prof : {Profile::lowmem, Profile::uma}) {
    SCOPED_TRACE(profile_name(prof));
    HeapFixture f(prof);
    const unsigned cls = size_to_class(4096);  // one chunk per OS page
    const unsigned per = run_chunks(cls), n = 4 * per;
    const std::vector<std::uint8_t*> v = alloc_written(f, cls, n);
    void* next = heap_alloc(*f.h, cls);  // the written runs are full, none is current
    // Runs 1-3 keep their chunk 0 and free chunks 1-7 (7 pages at their
    // end): runs 2 and 3 before the first purge, run 1 after it.
    auto free_tail = [&](unsigned run) {
      for (unsigned i = run * per + 1; i < (run + 1) * per; ++i) f.free(v[i], f.h);
      heap_cache_flush_all(*f.h);
    };
    free_tail(2);
    free_tail(3);
    heap_purge(*f.h, false);
    for (unsigned i = 2 * per; i < n; ++i) EXPECT_TRUE(resident(v[i])) << "first purge, chunk " << i;
    free_tail(1);
    heap_purge(*f.h, false);
    for (unsigned i = 2 * per; i < n; ++i)
      if (i % per != 0) EXPECT_FALSE(resident(v[i])) << "second purge, chunk " << i;
    for (unsigned i = per + 1; i < 2 * per; ++i) EXPECT_TRUE(resident(v[i])) << "freed since, chunk " << i;
    heap_purge(*f.h, false);
    for (unsigned i = per + 1; i < 2 * per; ++i) EXPECT_FALSE(resident(v[i])) << "third purge, chunk " << i;
    for (unsigned i = 0; i < n; i += per) EXPECT_EQ(v[i][4095], 0x5a);
    for (unsigned i = 0; i < n; ++i)
      if (i < per || i % per == 0) f.free(v[i], f.h);
    f.free(next, f.h);
    heap_trim(*f.h);
    EXPECT_EQ(heap_small_in_use(*f.h), 0u);
    EXPECT_EQ(f.c->misuses.load(), 0u);
  }
}

// The purges that frees trigger are at least purge_ms apart (heap.hpp,
// heap_purge_due): one asked for earlier waits for another step of frees,
// unless the heap has freed max_purge_steps steps since its last purge.
TEST(Heap, FreesTriggerPurgesAtMostOncePerPurgeInterval) {
  for (Profile prof : {Profile::lowmem, Profile::uma}) {
    SCOPED_TRACE(profile_name(prof));
    auto c = make_context(prof, test::profile_default, test::faulty_os, default_purge_ms);
    Heap* h = heap_acquire(*c, c->common());
    const std::uint64_t interval = std::uint64_t{default_purge_ms} * 1'000'000;
    std::uint64_t t = 1'000'000'000;
    Faults::clock_ns = t;
    set_purge_threshold(*h);
    const std::uint64_t step = h->purge_at;
    h->purge_credit = step;
    EXPECT_TRUE(heap_purge_due(*h));  // the first one
    h->purge_credit = step;
    Faults::clock_ns = t += interval / 2;  // within the interval: deferred by one step
    EXPECT_FALSE(heap_purge_due(*h));
    EXPECT_EQ(h->purge_at, 2 * step);
    EXPECT_EQ(h->purge_credit, step);  // nothing freed is forgotten
    const std::uint64_t burst = max_purge_steps(prof) * step;
    h->purge_credit = burst - 1;
    EXPECT_FALSE(heap_purge_due(*h));
    h->purge_credit = burst;  // a burst of frees: purged anyway
    EXPECT_TRUE(heap_purge_due(*h));
    h->purge_credit = step;
    Faults::clock_ns = t += interval;  // a whole interval after that purge
    EXPECT_TRUE(heap_purge_due(*h));
    Faults::clock_ns = 0;
  }
}

// Only the bitmap words up to one past the highest handed out are stored
// (invariants.hpp, Run): a run of 16-byte chunks (32 words) writes its overflow
// row, a descriptor page of its own in a fresh segment, only after 448
// chunks; a free of a chunk of a word that is not stored is a double free.
TEST(Heap, BitmapWordsAboveTheHighWaterMarkAreNotWritten) {
  HeapFixture f(Profile::lowmem);
  const unsigned cls = size_to_class(16);
  ASSERT_GT(run_chunks(cls) / 64, inline_words);
  std::vector<std::uint8_t*> v = alloc_written(f, cls, 400);
  auto* seg = static_cast<SmallSegment*>(f.c->registry.lookup(v[0]));
  ASSERT_NE(seg, nullptr);
  numa::Run& r = seg->runs[0];
  ASSERT_EQ(r.base, seg->base);
  EXPECT_EQ(r.hw, 6u);
  EXPECT_FALSE(resident(&seg->free_overflow[0][0]));
  // Never handed out: word 20, and word 7 (stored, all free).
  for (unsigned idx : {20u * 64, 7u * 64 + 5}) {
    f.free(r.base + idx * 16, f.h);
    heap_cache_flush_all(*f.h);
    f.free(r.base + idx * 16, nullptr);
    heap_flush_remote(*f.h);
  }
  EXPECT_EQ(f.c->misuses.load(), 4u);
  std::vector<std::uint8_t*> more = alloc_written(f, cls, 200);
  EXPECT_TRUE(resident(&seg->free_overflow[0][0]));
  v.insert(v.end(), more.begin(), more.end());
  std::sort(v.begin(), v.end());
  EXPECT_EQ(std::adjacent_find(v.begin(), v.end()), v.end());
  for (std::uint8_t* p : v) {
    EXPECT_EQ(p[15], 0x5a);
    f.free(p, f.h);
  }
  heap_cache_flush_all(*f.h);
  EXPECT_EQ(heap_small_in_use(*f.h), 0u);
  EXPECT_EQ(f.c->misuses.load(), 4u);
}

TEST(Heap, RemotelyPinnedRunIsNotReleasedWhenItsLastChunkIsMerged) {
  HeapFixture f;
  const unsigned cls = size_to_class(4096);
  std::vector<void*> v;
  for (unsigned i = 0; i < run_chunks(cls); ++i) v.push_back(heap_alloc(*f.h, cls));
  void* next = heap_alloc(*f.h, cls);  // the first run is full, not current
  Segment* s = f.c->registry.lookup(v[0]);
  const ChunkRef ch = find_chunk(*static_cast<SmallSegment*>(s), v[0]);
  ASSERT_NE(ch.run, nullptr);
  numa::Run& r = *ch.run;
  // Another thread is inside a publish to r (remote_free.cpp) while the
  // owner merges the run's last chunks.
  r.pins.fetch_add(1);
  std::thread([&] {
    for (void* p : v) f.free(p, nullptr);  // a thread without a heap: remote frees
  }).join();
  heap_flush_remote(*f.h);
  EXPECT_EQ(r.free_count, r.nchunks);
  EXPECT_EQ(r.state, RunState::partial);  // kept, with every chunk free
  EXPECT_NE(f.h->bins[cls].partial, nullptr);
  r.pins.fetch_sub(1);
  // The kept run serves the class once the current run is exhausted.
  std::vector<std::uint8_t*> w;
  for (unsigned i = 0; i < run_chunks(cls); ++i)
    w.push_back(static_cast<std::uint8_t*>(heap_alloc(*f.h, cls)));
  EXPECT_GE(w.back(), r.base);
  EXPECT_LT(w.back(), r.base + run_bytes(cls));
  for (auto* p : w) f.free(p, f.h);
  f.free(next, f.h);
  heap_trim(*f.h);
  EXPECT_EQ(heap_small_in_use(*f.h), 0u);
  EXPECT_EQ(f.c->misuses.load(), 0u);
}

TEST(Heap, LowmemPurgesAsFreesAccumulate) {
  HeapFixture f(Profile::lowmem);
  const unsigned cls = size_to_class(4096);
  std::vector<void*> v;
  for (int i = 0; i < 1024; ++i) v.push_back(heap_alloc(*f.h, cls));
  // 2 MiB freed in ranges of 4 pages, no run empty: purges every 512 KiB,
  // each decommitting what the one before found free.
  for (std::size_t i = 0; i < v.size(); ++i)
    if (i % 8 < 4) f.free(v[i], f.h);
  EXPECT_GT(f.h->purged_bytes.load(), 0u);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (i % 8 >= 4) f.free(v[i], f.h);
  EXPECT_EQ(f.c->misuses.load(), 0u);
}

// The class of the run that chunk p belongs to.
unsigned class_of_chunk(Context& c, void* p) {
  Segment* s = c.registry.lookup(p);
  const ChunkRef ch = find_chunk(*static_cast<SmallSegment*>(s), p);
  EXPECT_NE(ch.run, nullptr);
  return ch.cls;
}

// Whether, with one free chunk in a run of class `lender` and none of
// class `want`, an allocation of `want` gets that chunk (borrowing).
bool borrows(Profile prof, std::size_t want_size, std::size_t lender_size) {
  HeapFixture f(prof);
  const unsigned want = size_to_class(want_size), lender = size_to_class(lender_size);
  EXPECT_EQ(class_size(want), want_size);
  EXPECT_EQ(class_size(lender), lender_size);
  std::vector<void*> v;
  for (unsigned i = 0; i < run_chunks(lender); ++i) v.push_back(heap_alloc(*f.h, lender));
  f.free(v[3], f.h);
  heap_cache_flush_all(*f.h);
  void* p = heap_alloc(*f.h, want);
  EXPECT_NE(p, nullptr);
  const bool borrowed = p == v[3];
  // A borrowed chunk stays a chunk of its run (freed there); otherwise the
  // chunk comes from a run of its own class.
  EXPECT_EQ(class_of_chunk(*f.c, p), borrowed ? lender : want);
  if (borrowed) {
    // The lender's run is exhausted again: the next chunk has its own run.
    void* q = heap_alloc(*f.h, want);
    EXPECT_EQ(class_of_chunk(*f.c, q), want);
    f.free(q, f.h);
  }
  f.free(p, f.h);
  for (unsigned i = 0; i < v.size(); ++i)
    if (i != 3) f.free(v[i], f.h);
  heap_trim(*f.h);
  EXPECT_EQ(heap_small_in_use(*f.h), 0u);
  EXPECT_EQ(f.c->misuses.load(), 0u);
  return borrowed;
}

TEST(Heap, ClassesBorrowAFreeChunkOfALargerClassBeforeANewRun) {
  // Lowmem from 160 B up, the other profiles from 640 B up.
  EXPECT_TRUE(borrows(Profile::lowmem, 320, 384));
  EXPECT_FALSE(borrows(Profile::uma, 320, 384));
  EXPECT_TRUE(borrows(Profile::lowmem, 1280, 1536));
  EXPECT_TRUE(borrows(Profile::uma, 1280, 1536));
  EXPECT_FALSE(borrows(Profile::lowmem, 128, 256));  // linear classes never
  // Up to 8 classes (two doublings) up, and never a less aligned chunk:
  // 1024-byte chunks are 1024-aligned, 1280-byte ones only 256-aligned.
  EXPECT_TRUE(borrows(Profile::uma, 1280, 5120));   // class + 8
  EXPECT_FALSE(borrows(Profile::uma, 1280, 6144));  // class + 9
  EXPECT_FALSE(borrows(Profile::uma, 1024, 1280));
  EXPECT_TRUE(borrows(Profile::uma, 1024, 2048));
}

TEST(Heap, PurgeTakesACurrentRunOnlyWhenNothingWasAllocatedFromIt) {
  HeapFixture f;  // uma: purges only when asked here
  const unsigned cls = size_to_class(4096);  // one chunk per OS page
  ASSERT_GE(run_chunks(cls), 8u);
  const std::vector<std::uint8_t*> v = alloc_written(f, cls, 6);
  for (int i = 1; i <= 4; ++i) f.free(v[i], f.h);
  heap_cache_flush_all(*f.h);  // the run is current, with 4 free written pages
  const std::uint64_t before = f.h->purged_bytes.load();
  heap_purge(*f.h);
  EXPECT_EQ(f.h->purged_bytes.load(), before);  // allocated from since: left alone
  heap_purge(*f.h);
  EXPECT_EQ(f.h->purged_bytes.load(), before);  // idle since: its free pages are marked
  heap_purge(*f.h);
  EXPECT_GE(f.h->purged_bytes.load(), before + 4 * 4096);  // and still free: purged
  EXPECT_EQ(v[0][4095], 0x5a);
  EXPECT_EQ(v[5][0], 0x5a);
  f.free(v[0], f.h);
  f.free(v[5], f.h);
  EXPECT_EQ(f.c->misuses.load(), 0u);
}

TEST(Heap, SegmentMapFailureGivesNull) {
  HeapFixture f;
  Faults::maps_left = 0;
  EXPECT_EQ(heap_alloc(*f.h, 3), nullptr);
  Faults::maps_left = -1;
  EXPECT_NE(heap_alloc(*f.h, 3), nullptr);
}

TEST(Heap, LocalDoubleFreeAndInteriorPointerAreReportedNotApplied) {
  for (const bool cache : {false, true}) {
    SCOPED_TRACE(cache ? "free cache on" : "free cache off (check mode)");
    HeapFixture f;
    heap_set_cache(*f.h, cache);
    const unsigned cls = size_to_class(64);
    auto* p = static_cast<std::uint8_t*>(heap_alloc(*f.h, cls));
    auto* q = static_cast<std::uint8_t*>(heap_alloc(*f.h, cls));
    f.free(p, f.h);
    f.free(p, f.h);       // double free
    f.free(q + 8, f.h);   // not a chunk start, misaligned: refused by the fast path
    f.free(q + 16, f.h);  // not a chunk start, 16-byte aligned
    // Without the cache every misuse is found at once; with it, the aligned
    // ones when the cache is written back (heap.hpp, heap_free_cached).
    EXPECT_EQ(f.c->misuses.load(), cache ? 1u : 3u);
    heap_cache_flush_all(*f.h);
    EXPECT_EQ(f.c->misuses.load(), 3u);
    // p is handed out once again, q is still allocated.
    EXPECT_EQ(heap_alloc(*f.h, cls), p);
    EXPECT_NE(heap_alloc(*f.h, cls), q);
  }
}

// A free into the owner's own segment at a page that no run holds (its
// page_info is 0) is refused by the fast path -- it finds Heap::cache_none,
// of capacity 0 (heap.hpp, heap_free_cached) -- and reported by the slow
// path at once; no cache entry changes.
TEST(Heap, FreeIntoAPageOfNoRunIsRefusedByTheFastPathAndReported) {
  HeapFixture f;
  heap_set_cache(*f.h, true);
  const unsigned cls = size_to_class(64);
  auto* p = static_cast<std::uint8_t*>(heap_alloc(*f.h, cls));
  ASSERT_NE(p, nullptr);
  auto* seg = static_cast<SmallSegment*>(f.c->registry.lookup(p));
  ASSERT_NE(seg, nullptr);
  // The segment's last page: no run of a fresh heap reaches it.
  const unsigned last = pages_per_segment - 1;
  ASSERT_EQ(seg->page_info[last].load(), 0u);
  std::uint8_t* stray = seg->base + static_cast<std::size_t>(last) * page_bytes;
  std::vector<std::uint32_t> counts;
  for (const FreeCache& fc : f.h->cache) counts.push_back(fc.count.load());
  const std::uint64_t before = f.c->misuses.load();
  EXPECT_FALSE(heap_free_cached(*f.h, *seg, stray));
  f.free(stray, f.h);
  EXPECT_EQ(f.c->misuses.load(), before + 1) << "reported at once, not cached";
  EXPECT_EQ(f.h->cache_none.count.load(), 0u);
  EXPECT_EQ(f.h->cache_none.cap, 0u);
  for (std::size_t c = 0; c < counts.size(); ++c) EXPECT_EQ(f.h->cache[c].count.load(), counts[c]) << "class " << c;
  f.free(p, f.h);
}

// An allocation that finds the free cache empty refills it with up to half
// its capacity, at most one bitmap word's chunks, from one bitmap word
// (heap.hpp, heap_refill): the next allocations come from the cache, lowest
// address first, and only the chunks handed out count as in use.
TEST(Heap, EmptyCacheIsRefilledFromTheRunLowestAddressFirst) {
  // 32 B: a cache of 2,048 chunks, refilled with a whole word; 512 B: of 32, with half of it.
  for (std::size_t bytes : {32, 512}) {
    HeapFixture f;
    const unsigned cls = size_to_class(bytes);
    const std::uint32_t half = std::min(f.h->cache[cls].cap / 2, refill_max);
    ASSERT_GT(half, 1u);
    auto* first = static_cast<std::uint8_t*>(heap_alloc(*f.h, cls));
    EXPECT_EQ(f.h->cache[cls].count.load(), half - 1) << bytes;
    EXPECT_EQ(heap_small_in_use(*f.h), class_size(cls));
    for (std::uint32_t i = 1; i < half; ++i)
      EXPECT_EQ(heap_alloc(*f.h, cls), first + i * class_size(cls)) << bytes;
    EXPECT_EQ(f.h->cache[cls].count.load(), 0u);
    EXPECT_EQ(heap_small_in_use(*f.h), half * class_size(cls));
    // Without a cache (check mode) an allocation takes one chunk.
    heap_set_cache(*f.h, false);
    EXPECT_EQ(heap_alloc(*f.h, cls), first + half * class_size(cls));
    EXPECT_EQ(heap_small_in_use(*f.h), (half + 1) * class_size(cls));
    EXPECT_EQ(f.c->misuses.load(), 0u);
  }
}

// The classes of at most 64 B cache 2,048 chunks (size_class.hpp,
// tiny_cache_chunks): a thread that frees a batch of 1,600 such chunks, as
// glibc-simple does, and allocates as many again passes none of them
// through a write-back and a refill of the run bitmaps.
TEST(Heap, TinyClassesCacheABatchOfSixteenHundredChunks) {
  for (std::size_t bytes : {16, 32, 48, 64}) {
    HeapFixture f;
    const unsigned cls = size_to_class(bytes);
    constexpr unsigned batch = 1600;
    ASSERT_GE(f.h->cache[cls].cap, batch) << bytes;
    std::vector<std::uint8_t*> a = alloc_written(f, cls, batch);
    const std::uint32_t refilled = f.h->cache[cls].count.load();  // what the last refill left cached
    // The first half in order, the second half from the end (glibc-simple's order).
    for (unsigned i = 0; i < batch / 2; ++i) f.free(a[i], f.h);
    for (unsigned i = batch; i-- > batch / 2;) f.free(a[i], f.h);
    EXPECT_EQ(f.h->cache[cls].count.load(), refilled + batch) << bytes;
    EXPECT_EQ(heap_small_in_use(*f.h), 0u) << bytes;
    std::set<std::uint8_t*> freed(a.begin(), a.end());
    for (unsigned i = 0; i < batch; ++i) {
      auto* p = static_cast<std::uint8_t*>(heap_alloc(*f.h, cls));
      EXPECT_EQ(freed.erase(p), 1u) << bytes << " B, allocation " << i;
    }
    EXPECT_EQ(f.h->cache[cls].count.load(), refilled) << bytes;
    EXPECT_EQ(f.c->misuses.load(), 0u);
  }
}

// Writing the cache back looks a run up once for consecutive entries in it
// (heap_cache.cpp, heap_cache_flush): a double free and an interior pointer among
// them are still refused one by one, and an entry after the write-back
// that released its run is looked up again (its page is no run's any more).
TEST(Heap, CacheWriteBackChecksEachEntryOfARunAndNoticesItsRelease) {
  HeapFixture f;
  const unsigned cls = size_to_class(4096);
  const unsigned n = run_chunks(cls);
  ASSERT_GE(f.h->cache[cls].cap, 4u);
  std::vector<std::uint8_t*> a;
  for (unsigned i = 0; i < n; ++i) a.push_back(static_cast<std::uint8_t*>(heap_alloc(*f.h, cls)));
  void* other = heap_alloc(*f.h, cls);  // run a is full, another run is current
  heap_cache_flush(*f.h, cls, false);   // the chunks the refill cached after `other`
  ASSERT_EQ(f.c->misuses.load(), 0u);
  auto push = [&](void* p) {
    const std::uint32_t k = f.h->cache[cls].count.load();
    ASSERT_LT(k, f.h->cache[cls].cap);
    f.h->cache_stack(cls)[k] = p;
    f.h->cache[cls].count.store(k + 1);
  };
  push(a[0]);
  push(a[1]);
  push(a[1]);           // double free
  push(a[2] + 16);      // inside a chunk
  heap_cache_flush(*f.h, cls, false);
  EXPECT_EQ(f.c->misuses.load(), 2u);
  for (unsigned i = 2; i < n; ++i) f.free(a[i], f.h);
  heap_cache_flush_all(*f.h);  // the last of them releases run a
  EXPECT_EQ(f.c->misuses.load(), 2u);
  push(a[0]);  // freed twice: its run is gone
  heap_cache_flush(*f.h, cls, false);
  EXPECT_EQ(f.c->misuses.load(), 3u);
  EXPECT_EQ(heap_small_in_use(*f.h), class_size(cls));  // `other` only
  f.free(other, f.h);
  heap_cache_flush_all(*f.h);
  EXPECT_EQ(heap_small_in_use(*f.h), 0u);
  EXPECT_EQ(f.c->misuses.load(), 3u);
}

// The free fast path caches a pointer after looking only at its page
// (heap.hpp); writing the cache back must refuse whatever is no chunk of
// that class of this heap any more, and change nothing for it.
TEST(Heap, CacheWriteBackRefusesPointersThatAreNoChunkOfTheClass) {
  HeapFixture f;
  Heap* other = heap_acquire(*f.c, f.c->common());
  ASSERT_NE(other, f.h);
  const unsigned a = size_to_class(64), b = size_to_class(96);
  void* of_b = heap_alloc(*f.h, b);              // a live chunk of another class
  void* of_other = heap_alloc(*other, a);        // a chunk of another heap
  alignas(16) static std::uint8_t not_ours[64];  // no segment at all
  const std::uint64_t in_use = heap_small_in_use(*f.h);
  for (void* bad : {of_b, of_other, static_cast<void*>(not_ours)}) {
    const std::uint32_t n = f.h->cache[a].count.load();
    f.h->cache_stack(a)[n] = bad;
    f.h->cache[a].count.store(n + 1);
  }
  heap_cache_flush_all(*f.h);
  EXPECT_EQ(f.c->misuses.load(), 3u);
  EXPECT_EQ(f.h->cache[a].count.load(), 0u);
  EXPECT_EQ(heap_small_in_use(*f.h), in_use);  // no bit was set for them
  for (int i = 0; i < 100; ++i) ASSERT_NE(heap_alloc(*f.h, b), of_b);
  for (int i = 0; i < 100; ++i) ASSERT_NE(heap_alloc(*other, a), of_other);
}

TEST(Heap, RemoteFreesAreQueuedAndMergedByTheOwner) {
  HeapFixture f;
  constexpr int item_count = 20000;
  std::vector<void*> v;
  for (int i = 0; i < item_count; ++i) v.push_back(heap_alloc(*f.h, size_to_class(16 + (i % 7) * 48)));
  const std::uint64_t in_use = heap_small_in_use(*f.h);
  std::thread other([&] {
    for (void* p : v) f.free(p, nullptr);  // a thread without a heap of this context
  });
  other.join();
  EXPECT_EQ(heap_small_in_use(*f.h), in_use);  // not merged yet
  EXPECT_EQ(f.h->remote_pending.load(), in_use) << "every byte in use waits in the queue";
  EXPECT_FALSE(f.h->rfq.maybe_empty());
  heap_flush_remote(*f.h);
  EXPECT_EQ(heap_small_in_use(*f.h), 0u);
  EXPECT_EQ(f.h->remote_pending.load(), 0u);
  EXPECT_EQ(f.h->remote_frees.load(), static_cast<std::uint64_t>(item_count));
  EXPECT_EQ(f.c->misuses.load(), 0u);
  // Remote double free: the second one is caught at once or at merge time.
  void* p = heap_alloc(*f.h, 2);
  std::thread t2([&] {
    f.free(p, nullptr);
    f.free(p, nullptr);
  });
  t2.join();
  heap_flush_remote(*f.h);
  EXPECT_EQ(f.c->misuses.load(), 1u);
  EXPECT_EQ(f.h->remote_pending.load(), 0u) << "a double free leaves nothing counted";
  void* q = heap_alloc(*f.h, 2);
  f.free(q, f.h);
  std::thread t3([&] { f.free(q, nullptr); });  // freed locally, then remotely
  t3.join();
  heap_flush_remote(*f.h);
  heap_cache_flush_all(*f.h);  // q was in the free cache: found when written back
  EXPECT_EQ(f.c->misuses.load(), 2u);
}

// A thread with a heap gathers its frees of another heap's chunks per class
// and bitmap word (remote_free.cpp) and publishes them at its next
// allocation slow path, trim or exit.
TEST(Heap, BatchedRemoteFreesArePublishedLaterAndCheckedForDoubles) {
  HeapFixture f;
  Heap* other = heap_acquire(*f.c, f.c->common());
  const unsigned a = size_to_class(48), b = size_to_class(200);
  std::vector<void*> v;
  for (int i = 0; i < 300; ++i) v.push_back(heap_alloc(*f.h, i % 3 == 0 ? b : a));
  const std::uint64_t in_use = heap_small_in_use(*f.h);
  for (void* p : v) f.free(p, other);
  // Only the batches that were replaced by one of a later word are out.
  EXPECT_NE(other->remote_batch_classes, 0u);
  heap_flush_remote(*f.h);
  EXPECT_LT(heap_small_in_use(*f.h), in_use);
  EXPECT_GT(heap_small_in_use(*f.h), 0u);
  heap_remote_batch_flush(*other);
  EXPECT_EQ(other->remote_batch_classes, 0u);
  EXPECT_EQ(f.h->remote_pending.load(), heap_small_in_use(*f.h));
  heap_flush_remote(*f.h);
  EXPECT_EQ(heap_small_in_use(*f.h), 0u);
  EXPECT_EQ(f.h->remote_pending.load(), 0u);
  EXPECT_EQ(f.h->remote_frees.load(), 300u);
  EXPECT_EQ(f.c->misuses.load(), 0u);
  // A double free inside one batch is found at once, one across batches
  // when the second batch is published.
  void* p = heap_alloc(*f.h, a);
  void* q = heap_alloc(*f.h, b);
  f.free(p, other);
  f.free(p, other);
  EXPECT_EQ(f.c->misuses.load(), 1u);
  f.free(q, other);
  heap_remote_batch_flush(*other);
  f.free(q, other);
  heap_remote_batch_flush(*other);
  EXPECT_EQ(f.c->misuses.load(), 2u);
  heap_flush_remote(*f.h);
  EXPECT_EQ(heap_small_in_use(*f.h), 0u);
  // Thread exit publishes too.
  void* r = heap_alloc(*f.h, a);
  f.free(r, other);
  heap_abandon(*other);
  heap_flush_remote(*f.h);
  EXPECT_EQ(heap_small_in_use(*f.h), 0u);
  EXPECT_EQ(f.c->misuses.load(), 2u);
}

// Two freers, one publishing each free at once (no heap) and one in
// batches (its own heap), free the owner's chunks in random order. First
// the owner allocates and frees meanwhile; then it pauses (allocates
// nothing) while they free the second half, and in lowmem they merge its
// queue and purge its runs for it (invariants.hpp, "Idle-owner merge"); then it
// frees and merges again. Under ThreadSanitizer this checks that the
// merges are ordered with the owner's run operations before and after by
// the merge lock; whether a merge also falls between two of those
// operations in the first phase depends on the scheduler.
TEST(Heap, ConcurrentRemoteFreesWhileTheOwnerAllocates) {
  for (Profile profile : {Profile::uma, Profile::lowmem}) {
    SCOPED_TRACE(profile_name(profile));
    HeapFixture f(profile);
    constexpr int rounds = 50, per_round = 400;
    std::vector<void*> all;
    for (int i = 0; i < rounds * per_round; ++i) all.push_back(heap_alloc(*f.h, static_cast<unsigned>(i % 12)));
    std::shuffle(all.begin(), all.end(), std::mt19937(7));
    std::vector<std::vector<void*>> batches(rounds);
    for (int i = 0; i < rounds * per_round; ++i) batches[static_cast<std::size_t>(i / per_round)].push_back(all[i]);
    std::atomic<int> freed{0}, halfway{0};
    std::atomic<bool> owner_paused{false};
    auto free_half = [&](int parity, Heap* self) {
      for (int k = parity; k < rounds; k += 2) {
        if (k / 2 == rounds / 4) {  // the second half waits for the owner's pause
          halfway.fetch_add(1);
          while (!owner_paused.load()) std::this_thread::yield();
        }
        for (void* p : batches[static_cast<std::size_t>(k)]) f.free(p, self);
        freed.fetch_add(1);
      }
      if (self != nullptr) heap_remote_batch_flush(*self);
    };
    std::thread immediate([&] { free_half(0, nullptr); });
    std::thread batched([&] { free_half(1, heap_acquire(*f.c, f.c->common())); });
    std::vector<void*> mine;
    std::mt19937 rng(1);
    while (halfway.load() < 2) {
      mine.push_back(heap_alloc(*f.h, rng() % 12));
      if (mine.size() > 1000) {
        for (void* p : mine) f.free(p, f.h);
        mine.clear();
      }
    }
    owner_paused.store(true);
    while (freed.load() < rounds) std::this_thread::yield();
    immediate.join();
    batched.join();
    if (profile == Profile::lowmem) EXPECT_GT(f.h->idle_merges.load(), 0u);
    else EXPECT_EQ(f.h->idle_merges.load(), 0u);
    for (void* p : mine) f.free(p, f.h);
    heap_flush_remote(*f.h);
    EXPECT_EQ(heap_small_in_use(*f.h), 0u);
    EXPECT_EQ(f.c->misuses.load(), 0u);
  }
}

// Lowmem: a heap whose thread does not allocate (a main thread waiting in
// join while workers free what it allocated) has its queue merged and its
// emptied runs and segments given back by the freeing threads; an owner
// inside an operation (holding its merge lock) is left alone; the other
// profiles wait for the owner's next allocation.
TEST(Heap, LowmemFreersMergeTheQueueOfAnIdleOwner) {
  enum Case { idle_lowmem, busy_lowmem, idle_uma };
  for (Case k : {idle_lowmem, busy_lowmem, idle_uma}) {
    SCOPED_TRACE(static_cast<int>(k));
    HeapFixture f(k == idle_uma ? Profile::uma : Profile::lowmem);
    const unsigned cls = size_to_class(256);
    const std::vector<std::uint8_t*> v = alloc_written(f, cls, 96 * run_chunks(cls));  // 96 runs
    const std::uint64_t in_use = heap_small_in_use(*f.h);
    const std::uint64_t mapped = f.c->common().mapped_bytes.load();
    if (k == busy_lowmem) f.h->merge_lock.lock();
    std::thread freer([&] {
      for (std::uint8_t* p : v) f.free(p, nullptr);  // in address order, run after run
    });
    freer.join();
    if (k == idle_lowmem) {
      EXPECT_GT(f.h->idle_merges.load(), 0u);
      // Only the runs queued since the last merge (fewer than
      // idle_merge_runs, remote_free.cpp) wait for the owner.
      EXPECT_LE(heap_small_in_use(*f.h), in_use / 4);
      EXPECT_LT(f.c->common().mapped_bytes.load(), mapped);  // an emptied segment is unmapped
    } else {
      EXPECT_EQ(f.h->idle_merges.load(), 0u);
      EXPECT_EQ(heap_small_in_use(*f.h), in_use);
      EXPECT_EQ(f.c->common().mapped_bytes.load(), mapped);
    }
    if (k == busy_lowmem) f.h->merge_lock.unlock();
    heap_flush_remote(*f.h);
    EXPECT_EQ(heap_small_in_use(*f.h), 0u);
    EXPECT_EQ(f.h->remote_frees.load(), v.size());
    EXPECT_EQ(f.c->misuses.load(), 0u);
  }
}

TEST(Heap, AbandonedHeapIsAdoptedWithItsChunks) {
  HeapFixture f;
  void* live = heap_alloc(*f.h, 5);
  for (int i = 0; i < 100; ++i) f.free(heap_alloc(*f.h, 9), f.h);
  heap_abandon(*f.h);
  heap_release(*f.c, *f.h);
  EXPECT_TRUE(f.h->orphan.load());
  f.free(live, nullptr);  // freed while orphaned: queued
  Heap* again = heap_acquire(*f.c, f.c->common());
  EXPECT_EQ(again, f.h);
  EXPECT_FALSE(again->orphan.load());
  EXPECT_NE(heap_alloc(*again, 5), nullptr);  // first operation flushes the queue
  EXPECT_EQ(again->remote_frees.load(), 1u);
}

// The free fast path compares a segment's owner with t_owner alone
// (runtime.hpp): t_owner must be t_heap as an integer, and while the thread
// has no heap a value that no Segment::heap holds (nullptr is what large and
// unowned segments hold).
TEST(Runtime, TheOwnerKeyFollowsTheThreadsHeap) {
  std::thread([] {
    EXPECT_EQ(t_heap, nullptr);
    EXPECT_EQ(t_owner, no_owner);
    EXPECT_NE(t_owner, reinterpret_cast<std::uintptr_t>(static_cast<Heap*>(nullptr)));
    Heap* h = thread_heap();
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(t_owner, reinterpret_cast<std::uintptr_t>(h));
  }).join();
}

}  // namespace
}  // namespace manyalloc::numa
