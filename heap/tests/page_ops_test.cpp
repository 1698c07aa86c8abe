// Unit tests of the page machinery (detail/scatter) on one host thread,
// checking the invariants of scatter/invariants.hpp after each step.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <set>
#include <thread>
#include <vector>

#include "generic/test_heaps.hpp"
#include "manyalloc_support/host_runner.hpp"
#include "manyalloc/heap/detail/scatter/multi_page.hpp"

namespace manyalloc::heap::testing {
namespace {

using heap::detail::MultiPage;
using heap::detail::PageOps;
using heap::detail::page_locked;
using Config = ResetPagesConfig;
using Ops = PageOps<Config>;

class PageOpsTest : public ::testing::Test {
 protected:
  ScatterHeap<HostRunner, ResetPagesConfig> heap{1 << 20};
  const heap::detail::HeapLayout& h = heap.creation().layout();
  const acc::HostThread acc{};
  heap::detail::PageEntry& entry(std::uint32_t page) { return h.pages[page]; }
  std::uint32_t region_word(std::uint32_t page) { return h.regions[page / Config::regionsize]; }
};

TEST_F(PageOpsTest, ClaimSetsTheSizeOnceAndClearsBitFields) {
  auto* words = reinterpret_cast<std::uint32_t*>(h.page_data(5, 4096));
  for (int i = 0; i < 1024; ++i) words[i] = 0xffffffffu;  // user data of an earlier split
  EXPECT_EQ(Ops::claim(acc, h, 5, 16), 16u);
  EXPECT_EQ(entry(5).chunk_size, 16u);
  EXPECT_EQ(entry(5).fill, 0u);
  for (std::uint32_t s = 0; s < 8; ++s) EXPECT_EQ(*Ops::segment_word(h, 5, s), 0u) << s;
  void* chunk = Ops::try_use(acc, h, 5, 16);
  ASSERT_NE(chunk, nullptr);
  EXPECT_EQ(Ops::claim(acc, h, 5, 64), 16u) << "a page with a live chunk keeps its size";
  EXPECT_EQ(entry(5).fill, 1u);
  entry(5).fill = 0;  // as if the chunk were freed and its reset not yet done
  EXPECT_EQ(Ops::claim(acc, h, 5, 64), 16u) << "a claim splits only unused pages (I0); resets re-split";
  Ops::try_reset(acc, h, 5);
  EXPECT_EQ(entry(5).chunk_size, 0u) << "resetfreedpages: the reset of an empty page makes it unused";
  EXPECT_EQ(entry(5).fill, 0u);
  EXPECT_EQ(Ops::claim(acc, h, 5, 64), 64u);
  entry(6).chunk_size = heap::detail::multi_page;
  EXPECT_EQ(Ops::claim(acc, h, 6, 64), 0u) << "a page of a multi-page run cannot be claimed";
  EXPECT_EQ(entry(6).chunk_size, heap::detail::multi_page);
  Ops::try_reset(acc, h, 6);
  EXPECT_EQ(entry(6).chunk_size, heap::detail::multi_page) << "a reset leaves a run's page alone";
  // A page being split when the reset comes: the reset waits for the size
  // (the claimer's reservation may have been visible before it, I4) and,
  // the page holding no chunk, resets it then.
  entry(6).chunk_size = heap::detail::claiming;
  std::thread claimer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    acc.fence();
    acc.store(&entry(6).chunk_size, 64u);
  });
  Ops::try_reset(acc, h, 6);
  claimer.join();
  EXPECT_EQ(entry(6).chunk_size, 0u) << "the split waited for and reset";
  EXPECT_EQ(entry(6).fill, 0u);
}

// A host thread that runs `meanwhile` once, at a step its subclass picks:
// other workers' steps played between two of its own. `meanwhile` is empty
// afterwards, so a test can check that it ran.
struct MeanwhileThread : acc::HostThread {
  std::function<void()>* meanwhile = nullptr;
  void run_meanwhile() const {
    if (meanwhile == nullptr || !*meanwhile) return;
    auto f = std::move(*meanwhile);
    *meanwhile = nullptr;
    f();
  }
};

// Its next unlock of a page lock (the release that ends a reset) first runs
// `meanwhile`: another worker's steps while the lock is held.
struct InterleavedThread : MeanwhileThread {
  std::uint32_t atomic_sub_release(std::uint32_t* p, std::uint32_t v) const {
    if (v == page_locked) run_meanwhile();
    return HostThread::atomic_sub_release(p, v);
  }
};

// I4: a page at 0 may be split while a reset holds its lock; the split's
// own reservation then fails on the lock. The reset looks again once its
// unlock took fill to 0: left split, the page stayed split and empty for
// good (GPU tests: pages split and empty after everything was freed).
TEST_F(PageOpsTest, APageSplitDuringItsResetIsResetToo) {
  ASSERT_EQ(Ops::claim(acc, h, 12, 64), 64u);
  std::function<void()> claim_meanwhile = [&] {
    EXPECT_EQ(entry(12).chunk_size, 0u) << "the reset made the page unused";
    EXPECT_EQ(Ops::claim(acc, h, 12, 32), 32u);
    EXPECT_EQ(Ops::try_use(acc, h, 12, 32), nullptr) << "its reservation fails on the reset's lock";
  };
  InterleavedThread resetter;
  resetter.meanwhile = &claim_meanwhile;
  Ops::try_reset(resetter, h, 12);
  EXPECT_FALSE(claim_meanwhile) << "the claim ran";
  EXPECT_EQ(entry(12).chunk_size, 0u) << "a page split and emptied under the lock is reset as well";
  EXPECT_EQ(entry(12).fill, 0u);
}

// Its next release of reservations (a free's return of `fill`, with
// resetfreedpages a release) is followed at once by `meanwhile`: other
// workers' steps between that return and the rest of the free.
struct AfterReturnThread : MeanwhileThread {
  std::uint32_t atomic_sub_release(std::uint32_t* p, std::uint32_t v) const {
    const std::uint32_t before = HostThread::atomic_sub_release(p, v);
    if (v != page_locked) run_meanwhile();
    return before;
  }
};

// I5 with resetfreedpages: a free that found its segment full takes the
// segment's mark away before it returns its reservation. Once the return
// is out, the others' frees may empty the page, reset it and a claim split
// it anew; a clear of the mark after that landed on the new split's mask
// and gave a taken chunk out again (found by review, 2026-11-30).
TEST_F(PageOpsTest, AFreesSegmentMarkIsClearedBeforeItsReturn) {
  constexpr std::uint32_t page = 13;
  ASSERT_EQ(Ops::claim(acc, h, page, 16), 16u);
  const std::uint32_t chunks = heap::detail::page_geometry(4096, 16).chunks;
  for (std::uint32_t i = 0; i < chunks; ++i) ASSERT_NE(Ops::try_use(acc, h, page, 16), nullptr) << i;  // all taken
  void* c1 = nullptr;
  void* c2 = nullptr;
  std::function<void()> others = [&] {
    for (std::uint32_t i = 0; i < chunks; ++i)
      if (i != 40u) ASSERT_EQ(Ops::free_chunk(acc, h, page, 16, i * 16), Misuse::none) << i;
    ASSERT_EQ(entry(page).chunk_size, 0u) << "the last free reset the page";
    ASSERT_EQ(Ops::claim(acc, h, page, 512), 512u);
    c1 = Ops::try_use(acc, h, page, 512);
    c2 = Ops::try_use(acc, h, page, 512);
    ASSERT_EQ(entry(page).mask, 0x3u);
  };
  AfterReturnThread f1;
  f1.meanwhile = &others;
  EXPECT_EQ(Ops::free_chunk(f1, h, page, 16, 40 * 16), Misuse::none);  // chunk 40: segment 1, full
  EXPECT_FALSE(others) << "the other frees ran";
  ASSERT_NE(c2, nullptr);
  EXPECT_EQ(entry(page).mask, 0x3u) << "the new split's taken chunks keep their bits";
  void* c3 = Ops::try_use(acc, h, page, 512);
  EXPECT_NE(c3, c1);
  EXPECT_NE(c3, c2);
}

TEST_F(PageOpsTest, FlatPageFillsMarksRegionAndFrees) {
  ASSERT_EQ(Ops::claim(acc, h, 3, 512), 512u);
  std::set<void*> got;
  for (int i = 0; i < 8; ++i) {
    void* p = Ops::try_use(acc, h, 3, 512);
    ASSERT_NE(p, nullptr);
    got.insert(p);
  }
  EXPECT_EQ(got.size(), 8u);
  EXPECT_EQ(entry(3).mask, 0xffu);
  EXPECT_EQ(entry(3).fill, 8u);
  EXPECT_EQ(Ops::try_use(acc, h, 3, 512), nullptr) << "full page";
  EXPECT_EQ(entry(3).fill, 8u) << "a failed reservation is undone";
  EXPECT_TRUE(region_word(3) & (1u << 3)) << "full page marked in its region";
  EXPECT_EQ(Ops::free_chunk(acc, h, 3, 512, 3 * 512), Misuse::none);
  EXPECT_FALSE(region_word(3) & (1u << 3));
  EXPECT_EQ(entry(3).mask, 0xf7u);
  EXPECT_EQ(Ops::free_chunk(acc, h, 3, 512, 3 * 512), Misuse::double_free);
  EXPECT_EQ(Ops::free_chunk(acc, h, 3, 512, 100), Misuse::not_a_chunk_start);
  EXPECT_EQ(Ops::free_chunk(acc, h, 3, 512, 8 * 512), Misuse::not_a_chunk_start);
  EXPECT_EQ(entry(3).fill, 7u) << "misuse changes nothing";
  // Reservation 7's spot is taken: the first OR fails, and the walk from
  // the next spot (wrapping to 0) finds the freed chunk.
  auto* base = reinterpret_cast<std::byte*>(h.page_data(3, 4096));
  EXPECT_EQ(Ops::try_use(acc, h, 3, 512), base + 3 * 512) << "the freed chunk is found again";
  EXPECT_EQ(entry(3).mask, 0xffu);
  EXPECT_EQ(entry(3).fill, 8u);
}

TEST_F(PageOpsTest, HierarchicalPageUsesEveryChunkOnce) {
  ASSERT_EQ(Ops::claim(acc, h, 7, 16), 16u);
  std::vector<char*> chunks;
  for (int i = 0; i < 254; ++i) {
    auto* p = static_cast<char*>(Ops::try_use(acc, h, 7, 16));
    ASSERT_NE(p, nullptr) << i;
    chunks.push_back(p);
  }
  EXPECT_EQ(std::set<char*>(chunks.begin(), chunks.end()).size(), 254u);
  EXPECT_EQ(Ops::try_use(acc, h, 7, 16), nullptr);
  EXPECT_EQ(entry(7).mask, 0u) << "segments are marked full by the first worker to find them full (I5)";
  char* base = reinterpret_cast<char*>(h.page_data(7, 4096));
  for (char* p : chunks) {
    ASSERT_GE(p, base);
    ASSERT_LE(p + 16, reinterpret_cast<char*>(Ops::segment_word(h, 7, 7))) << "chunk over the bit fields";
  }
  // Free a chunk of segment 3: the next allocation (reservation 253, so
  // segment 7 first) finds it, marking the full segments it passes (7, 0, 1, 2).
  const std::size_t victim = 3 * 32 + 5;
  EXPECT_EQ(Ops::free_chunk(acc, h, 7, 16, victim * 16), Misuse::none);
  EXPECT_EQ(Ops::try_use(acc, h, 7, 16), base + victim * 16);
  EXPECT_EQ(entry(7).mask, 0x87u);
  // A free in a marked segment takes its mark away.
  EXPECT_EQ(Ops::free_chunk(acc, h, 7, 16, 33 * 16), Misuse::none);
  EXPECT_EQ(entry(7).mask, 0x85u);
  EXPECT_EQ(Ops::try_use(acc, h, 7, 16), base + 33 * 16);
}

// A reservation whose own segment is marked full (I5) makes its first try
// in the next segment not marked, at its spot there, and takes that chunk.
TEST_F(PageOpsTest, AFirstTryPastAMarkedSegmentTakesTheNextSegmentsSpot) {
  constexpr std::uint32_t page = 14;
  ASSERT_EQ(Ops::claim(acc, h, page, 16), 16u);
  for (int i = 0; i < 40; ++i) ASSERT_NE(Ops::try_use(acc, h, page, 16), nullptr);
  entry(page).mask = 1u << 1;  // segment 1 marked full: a stale hint
  auto* base = reinterpret_cast<std::byte*>(h.page_data(page, 4096));
  EXPECT_EQ(Ops::try_use(acc, h, page, 16), base + (2 * 32 + 8) * 16) << "reservation 40: segment 2, spot 8";
  EXPECT_EQ(*Ops::segment_word(h, page, 2), 1u << 8);
  EXPECT_EQ(*Ops::segment_word(h, page, 1), 0xffu);
}

// The same into the page's partial segment (7 of 16-byte chunks: 30 of
// them): the spot is the reservation modulo that segment's count.
TEST_F(PageOpsTest, AFirstTryIntoThePartialSegmentStaysWithinIt) {
  constexpr std::uint32_t page = 15;
  ASSERT_EQ(Ops::claim(acc, h, page, 16), 16u);
  for (int i = 0; i < 223; ++i) ASSERT_NE(Ops::try_use(acc, h, page, 16), nullptr);
  entry(page).mask = 1u << 6;  // reservation 223's segment 6 marked full: segment 7
  auto* base = reinterpret_cast<std::byte*>(h.page_data(page, 4096));
  EXPECT_EQ(Ops::try_use(acc, h, page, 16), base + (7 * 32 + 223 % 30) * 16);
  EXPECT_EQ(*Ops::segment_word(h, page, 7), 1u << (223 % 30));
}

// A flat page's first try finding its spot taken walks on from the next
// spot (no wrap here).
TEST_F(PageOpsTest, AFlatFirstTryFoundTakenWalksOnFromTheNextSpot) {
  constexpr std::uint32_t page = 10;
  ASSERT_EQ(Ops::claim(acc, h, page, 512), 512u);
  for (int i = 0; i < 4; ++i) ASSERT_NE(Ops::try_use(acc, h, page, 512), nullptr);
  auto* base = reinterpret_cast<std::byte*>(h.page_data(page, 4096));
  ASSERT_EQ(Ops::free_chunk(acc, h, page, 512, 0), Misuse::none);  // fill 3: reservation 3, spot 3 taken
  EXPECT_EQ(Ops::try_use(acc, h, page, 512), base + 4 * 512);
  EXPECT_EQ(entry(page).mask, 0x1eu);
}

TEST_F(PageOpsTest, LastFreeResetsThePageWhenConfigured) {
  ASSERT_EQ(Ops::claim(acc, h, 9, 48), 48u);
  void* a = Ops::try_use(acc, h, 9, 48);
  void* b = Ops::try_use(acc, h, 9, 48);
  char* base = reinterpret_cast<char*>(h.page_data(9, 4096));
  EXPECT_EQ(Ops::free_chunk(acc, h, 9, 48, static_cast<char*>(a) - base), Misuse::none);
  EXPECT_EQ(entry(9).chunk_size, 48u);
  EXPECT_EQ(Ops::free_chunk(acc, h, 9, 48, static_cast<char*>(b) - base), Misuse::none);
  EXPECT_EQ(entry(9).chunk_size, 0u) << "resetfreedpages: an empty page is unused again";
  EXPECT_EQ(entry(9).fill, 0u);
  EXPECT_EQ(entry(9).mask, 0u);
}

// A page of one chunk keeps no bit (I2): the take sets none, and the free
// is the return of the page's fill, a release that empties the page, which
// resetfreedpages then resets. A free that finds no reservation (the chunk
// freed already, or the page under a reset's lock, I4) changes nothing.
TEST_F(PageOpsTest, APageOfOneChunkIsTakenAndFreedByItsFillAlone) {
  constexpr std::uint32_t page = 14;
  ASSERT_EQ(Ops::claim(acc, h, page, 4096), 4096u);
  EXPECT_EQ(Ops::try_use(acc, h, page, 4096), h.page_data(page, 4096));
  EXPECT_EQ(entry(page).fill, 1u);
  EXPECT_EQ(entry(page).mask, 0u) << "no bit set";
  EXPECT_TRUE(region_word(page) & (1u << (page % Config::regionsize))) << "the full page is marked";
  EXPECT_EQ(Ops::try_use(acc, h, page, 4096), nullptr) << "full page";
  EXPECT_EQ(entry(page).fill, 1u) << "a failed reservation is undone";
  bool made_room = false;
  EXPECT_EQ(Ops::free_chunk(acc, h, page, 4096, 0, &made_room), Misuse::none);
  EXPECT_TRUE(made_room);
  EXPECT_FALSE(region_word(page) & (1u << (page % Config::regionsize)));
  EXPECT_EQ(entry(page).chunk_size, 0u) << "resetfreedpages: the emptied page is unused again";
  EXPECT_EQ(entry(page).fill, 0u);
  EXPECT_EQ(Ops::free_chunk(acc, h, page, 4096, 0), Misuse::double_free);
  EXPECT_EQ(entry(page).fill, 0u) << "misuse changes nothing";
  entry(page).fill = page_locked;
  EXPECT_EQ(Ops::free_chunk(acc, h, page, 4096, 0), Misuse::double_free) << "locked page";
  EXPECT_EQ(entry(page).fill, page_locked);
  entry(page).fill = 0;
}

// Its first atomic (a reservation's, on `fill`: an addition, or on a page
// of one chunk a CAS) is followed at once by `meanwhile`: other workers'
// steps between that atomic and the rest of the reservation.
struct MidReservationThread : MeanwhileThread {
  std::uint32_t atomic_add(std::uint32_t* p, std::uint32_t v) const {
    const std::uint32_t old = HostThread::atomic_add(p, v);
    run_meanwhile();
    return old;
  }
  std::uint32_t atomic_cas(std::uint32_t* p, std::uint32_t expected, std::uint32_t desired) const {
    const std::uint32_t old = HostThread::atomic_cas(p, expected, desired);
    run_meanwhile();
    return old;
  }
};

// A page of one chunk is reserved by CAS(fill, 0, 1) (I2): a reservation
// that fails while the chunk is freed and then freed a second time leaves
// fill alone, so the second free finds no reservation and is reported.
// (An addition, undone after the frees, let the second free through and
// then took fill below 0: the page was never reserved again.)
TEST_F(PageOpsTest, AFailedReservationOnAPageOfOneChunkHidesNoDoubleFree) {
  constexpr std::uint32_t page = 15;
  ASSERT_EQ(Ops::claim(acc, h, page, 4096), 4096u);
  ASSERT_EQ(Ops::try_use(acc, h, page, 4096), h.page_data(page, 4096));
  Misuse first = Misuse::foreign_pointer, second = Misuse::foreign_pointer;
  std::function<void()> frees = [&] {
    first = Ops::free_chunk(acc, h, page, 4096, 0);
    second = Ops::free_chunk(acc, h, page, 4096, 0);
  };
  MidReservationThread r;
  r.meanwhile = &frees;
  EXPECT_EQ(Ops::try_use(r, h, page, 4096, 0u), nullptr) << "the chunk was taken when the reservation was tried";
  EXPECT_FALSE(frees) << "the frees ran";
  EXPECT_EQ(first, Misuse::none);
  EXPECT_EQ(second, Misuse::double_free);
  EXPECT_EQ(entry(page).fill, 0u);
  EXPECT_EQ(entry(page).chunk_size, 0u) << "resetfreedpages: the free emptied the page";
  ASSERT_EQ(Ops::claim(acc, h, page, 4096), 4096u);
  EXPECT_EQ(Ops::try_use(acc, h, page, 4096), h.page_data(page, 4096)) << "the page serves again";
}

TEST_F(PageOpsTest, ReservationOnARessplitPageIsUndone) {
  ASSERT_EQ(Ops::claim(acc, h, 11, 64), 64u);
  // A worker that read chunk size 32 before the page was re-split must fail.
  EXPECT_EQ(Ops::try_use(acc, h, 11, 32), nullptr);
  EXPECT_EQ(entry(11).fill, 0u);
  entry(11).fill = page_locked;
  EXPECT_EQ(Ops::try_use(acc, h, 11, 64), nullptr) << "locked page";
  EXPECT_EQ(entry(11).fill, page_locked);
  entry(11).fill = 0;
}

// A run's search walks down from its start window: a busy page in it rules
// out every window holding that page, and the next window ends below it.
TEST_F(PageOpsTest, MultiPageRunsTakeTheirPages) {
  using Multi = MultiPage<ResetPagesConfig>;
  ASSERT_EQ(Ops::claim(acc, h, 5, 64), 64u);  // page 5 is in use: a run must avoid it
  const std::uint32_t top = h.page_count - 3;  // the highest window of 3 pages
  void* run = Multi::alloc(acc, h, 3, top - 3);  // start window [3, 6)
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run, h.page_data(2, 4096)) << "the window below page 5";
  for (std::uint32_t p = 2; p < 5; ++p) {
    EXPECT_EQ(entry(p).chunk_size, heap::detail::multi_page);
    EXPECT_EQ(entry(p).fill, 0u) << "a run's pages keep fill at 0 (I3)";
    EXPECT_EQ(Ops::claim(acc, h, p, 64), 0u) << "a run's page cannot be claimed";
  }
  EXPECT_EQ(entry(2).mask, 3u);
  EXPECT_EQ(Multi::free(acc, h, 3, 0), Misuse::not_a_chunk_start) << "not the first page of the run";
  EXPECT_EQ(Multi::free(acc, h, 2, 8), Misuse::not_a_chunk_start) << "not the start of the run";
  EXPECT_EQ(Multi::free(acc, h, 2, 0), Misuse::none);
  for (std::uint32_t p = 2; p < 5; ++p) {
    EXPECT_EQ(entry(p).chunk_size, 0u);
    EXPECT_EQ(entry(p).fill, 0u);
    EXPECT_FALSE(region_word(p) & (1u << (p % 16)));
  }
  // Below page 5 no window of 6 pages fits: the search wraps to the top.
  void* high = Multi::alloc(acc, h, 6, h.page_count - 6 - 1);  // start window [1, 7)
  EXPECT_EQ(high, h.page_data(h.page_count - 6, 4096));
  EXPECT_EQ(Multi::free(acc, h, h.page_count - 6, 0), Misuse::none);
  EXPECT_EQ(Multi::alloc(acc, h, std::uint64_t{h.page_count} + 1, 0), nullptr);
}

// A free returns its reservations and clears its bits at the same time, so
// a reservation may find every bit taken; after a double free it would for
// good. The walk is bounded: the reservation is given back and the page is
// not used for this request (it walked forever before).
TEST_F(PageOpsTest, AReservationThatFindsNoFreeBitGivesItBack) {
  for (std::uint32_t chunk : {1024u, 16u}) {
    const std::uint32_t page = chunk == 16u ? 8 : 9;
    ASSERT_EQ(Ops::claim(acc, h, page, chunk), chunk);
    const std::uint32_t chunks = heap::detail::page_geometry(4096, chunk).chunks;
    for (std::uint32_t i = 0; i < chunks; ++i) ASSERT_NE(Ops::try_use(acc, h, page, chunk), nullptr) << chunk;
    entry(page).fill = chunks - 1;  // one reservation returned, its bit still set
    EXPECT_EQ(Ops::try_use(acc, h, page, chunk), nullptr) << chunk;
    EXPECT_EQ(entry(page).fill, chunks - 1) << chunk;
  }
}

// Runs take their pages a batch at a time: a page taken in the middle of a
// batch (split since the scan) stops the run at that page, and every page
// it took before or after it goes back to unused.
TEST_F(PageOpsTest, RunUndoesEveryPageOfItsBatchesOnAConflict) {
  using Multi = MultiPage<ResetPagesConfig>;
  constexpr std::uint32_t first = 16, n = 20, taken = first + 11;  // the fourth page of the second batch
  entry(taken).chunk_size = 64;
  for (std::uint32_t p = first; p < first + n; ++p) entry(p).mask = 0xabcu;  // masks are set only once all pages are won
  EXPECT_EQ(Multi::take_run(acc, h, first, n, 0u), taken - first);
  for (std::uint32_t p = first; p < first + n; ++p) {
    if (p == taken) continue;
    EXPECT_EQ(entry(p).fill, 0u) << p;
    EXPECT_EQ(entry(p).chunk_size, 0u) << p;
    EXPECT_EQ(entry(p).mask, 0xabcu) << p;
    entry(p).mask = 0;
    EXPECT_FALSE(region_word(p) & (1u << (p % 16))) << p;
  }
  EXPECT_EQ(entry(taken).chunk_size, 64u);
  entry(taken).mask = 0;
  // A page being split is a conflict too, and keeps its state.
  entry(taken).chunk_size = heap::detail::claiming;
  EXPECT_EQ(Multi::take_run(acc, h, first, n, 0u), taken - first);
  EXPECT_EQ(entry(taken).chunk_size, heap::detail::claiming);
  entry(taken).chunk_size = 0;
  // Without resetfreedpages a split page without chunks in use keeps its
  // split: it stops the run too, and keeps its size.
  using KeepSplit = MultiPage<CreationPolicies::ScatterHeapConfig>;
  entry(first + 2).chunk_size = 64;
  EXPECT_EQ(KeepSplit::take_run(acc, h, first, n, 0u), 2u);
  EXPECT_EQ(entry(first + 2).chunk_size, 64u);
  for (std::uint32_t p = first; p < first + n; ++p) EXPECT_EQ(entry(p).fill, 0u) << p;
  entry(first + 2).chunk_size = 0;
  EXPECT_EQ(KeepSplit::take_run(acc, h, first, n, 0u), n);
  EXPECT_EQ(entry(first).mask, n);
}

// A host thread that counts its loads of page entries' chunk sizes: one per
// page a run's search looks at.
struct EntryReadCounter : acc::HostThread {
  const heap::detail::PageEntry* pages = nullptr;
  std::uint32_t page_count = 0;
  std::uint64_t* reads = nullptr;
  std::uint32_t load(const std::uint32_t* p) const {
    const auto at = reinterpret_cast<std::uintptr_t>(p), first = reinterpret_cast<std::uintptr_t>(pages);
    if (at >= first && at < first + std::uint64_t{page_count} * sizeof(heap::detail::PageEntry) &&
        (at - first) % sizeof(heap::detail::PageEntry) == 0)
      ++*reads;
    return HostThread::load(p);
  }
};

// A pass looks at every window once: a run of the whole pool (one window);
// a pool whose only free window lies just above the start window, which the
// pass reaches last, after it wrapped; and a pool with no free window, where
// the pass ends after one round.
TEST_F(PageOpsTest, APassLooksAtEveryWindowOnce) {
  using Multi = MultiPage<ResetPagesConfig>;
  void* whole = Multi::alloc(acc, h, h.page_count, 0);
  ASSERT_EQ(whole, h.page_data(0, 4096));
  EXPECT_EQ(Multi::free(acc, h, 0, 0), Misuse::none);
  const std::uint32_t n = 3, start = 40;
  const std::uint32_t top = h.page_count - n;
  for (std::uint32_t p = 0; p < h.page_count; ++p)
    if (p < start + 1 || p >= start + 1 + n) entry(p).chunk_size = 64;  // split, empty (I2)
  void* last = Multi::alloc(acc, h, n, top - start);
  EXPECT_EQ(last, h.page_data(start + 1, 4096));
  EXPECT_EQ(Multi::free(acc, h, start + 1, 0), Misuse::none);
  entry(start + 1).chunk_size = 64;
  // Every page busy: each window's lowest page rules out the n windows that
  // hold it, so one round reads about page_count / n windows of n entries.
  std::uint64_t reads = 0;
  EntryReadCounter counter;
  counter.pages = h.pages;
  counter.page_count = h.page_count;
  counter.reads = &reads;
  EXPECT_EQ(Multi::alloc(counter, h, n, top - start), nullptr) << "no free window left";
  EXPECT_GE(reads, std::uint64_t{h.page_count} - n) << "every page looked at";
  EXPECT_LE(reads, std::uint64_t{h.page_count} + 2 * n) << "no page looked at twice";
  for (std::uint32_t p = 0; p < h.page_count; ++p) entry(p).chunk_size = 0;
}

// A run across regions marks each of its pages full, and only those, and
// its free clears them (one atomic per region word).
TEST_F(PageOpsTest, RunAcrossRegionsMarksExactlyItsPages) {
  using Multi = MultiPage<ResetPagesConfig>;
  ASSERT_EQ(Ops::claim(acc, h, 4, 64), 64u);
  void* run = Multi::alloc(acc, h, 40, h.page_count - 40 - 5);  // start window [5, 45)
  ASSERT_EQ(run, h.page_data(5, 4096));
  for (std::uint32_t p = 0; p < 64; ++p) {
    EXPECT_EQ((region_word(p) >> (p % 16)) & 1u, p >= 5 && p < 45 ? 1u : 0u) << p;
  }
  EXPECT_EQ(Multi::free(acc, h, 5, 0), Misuse::none);
  for (std::uint32_t p = 0; p < 64; ++p) EXPECT_EQ(region_word(p), 0u) << p;
}

}  // namespace
}  // namespace manyalloc::heap::testing
