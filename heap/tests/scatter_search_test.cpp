// Unit tests of Scatter's page search (detail/scatter/search.hpp) and of the
// page-lock and region-mark rules behind the anomalies of
// docs/results/heap/scatter_anomalies.md, on host threads that play lanes of
// GPU warps (warp width 32, a chosen lane, warp and processor), counting
// their memory operations where a test bounds the work of a search.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "generic/test_heaps.hpp"
#include "manyalloc_support/emulated_warp.hpp"
#include "manyalloc_support/host_runner.hpp"

namespace manyalloc::heap::testing {
namespace {


// A host thread playing lane `lane` of warp `warp` on processor `processor`.
struct PlayedLane : acc::HostThread {
  static constexpr unsigned warp_size = 32;
  unsigned lane = 0, warp = 0, processor = 0;
  std::uint64_t* ops = nullptr;  // memory operations, when not null

  unsigned lane_id() const { return lane; }
  // A warp of one lane: collectives name this lane alone.
  std::uint32_t active_mask() const { return 1u << lane; }
  std::uint32_t ballot(std::uint32_t, bool pred) const { return pred ? 1u << lane : 0u; }
  std::uint32_t match_any(std::uint32_t, std::uint32_t) const { return 1u << lane; }
  unsigned warp_id() const { return warp; }
  unsigned processor_id() const { return processor; }
  std::uint32_t load(const std::uint32_t* p) const { return count(), HostThread::load(p); }
  void store(std::uint32_t* p, std::uint32_t v) const { count(), HostThread::store(p, v); }
  std::uint32_t atomic_add(std::uint32_t* p, std::uint32_t v) const { return count(), HostThread::atomic_add(p, v); }
  std::uint32_t atomic_sub(std::uint32_t* p, std::uint32_t v) const { return count(), HostThread::atomic_sub(p, v); }
  std::uint32_t atomic_or(std::uint32_t* p, std::uint32_t v) const { return count(), HostThread::atomic_or(p, v); }
  std::uint32_t atomic_and(std::uint32_t* p, std::uint32_t v) const { return count(), HostThread::atomic_and(p, v); }
  std::uint32_t atomic_exch(std::uint32_t* p, std::uint32_t v) const { return count(), HostThread::atomic_exch(p, v); }
  std::uint32_t atomic_cas(std::uint32_t* p, std::uint32_t e, std::uint32_t d) const {
    if (claims != nullptr && d == heap::detail::claiming) ++*claims;
    return count(), HostThread::atomic_cas(p, e, d);
  }
  std::uint64_t* claims = nullptr;  // claims of pages at 0 tried (CAS to claiming, I1b), when not null

 private:
  void count() const {
    if (ops != nullptr) ++*ops;
  }
};

// The `same` mask of Search::hash for lanes whose whole warp asks for one size.
constexpr std::uint32_t whole_warp = 0xffffffffu;

PlayedLane lane_of(unsigned lane, unsigned warp, unsigned processor = 0) {
  PlayedLane a;
  a.lane = lane;
  a.warp = warp;
  a.processor = processor;
  return a;
}

struct TwoBlocks : CreationPolicies::ScatterHeapConfig {
  static constexpr std::uint32_t accessblocks = 2;
};

template <class Config>
class ScatterSearchTest : public ::testing::Test {
 protected:
  using Creation = CreationPolicies::Scatter<Config>;
  using Ops = heap::detail::PageOps<Config>;
  using Search = heap::detail::SmallSearch<Config, CreationPolicies::ScatterHashConfig>;
  static constexpr std::uint32_t rs = Config::regionsize;

  ScatterHeap<HostRunner, Config> heap{std::size_t{4} << 20};
  const Creation& scatter = heap.creation();
  const heap::detail::HeapLayout& h = scatter.layout();

  heap::detail::PageEntry& entry(std::uint32_t page) { return h.pages[page]; }
  std::uint32_t region_word(std::uint32_t page) { return h.regions[page / rs]; }
  std::uint32_t page_of(const void* p) {
    return static_cast<std::uint32_t>((static_cast<const std::byte*>(p) - h.data) / Config::pagesize);
  }
  std::uint32_t active() {
    EXPECT_LT(h.shared->active_block, h.block_count) << "the active block is below block_count (invariants.hpp)";
    return h.shared->active_block;
  }
  // The four 1 KiB chunks of one page, taken one after the other, in the
  // first four of 32 lanes (the others free nullptr). Taken by a worker that
  // plays one processor: a host thread's hash takes the CPU it runs on
  // (search.hpp, processor_term), which may change between two requests.
  std::vector<void*> one_page_of_four() {
    const PlayedLane worker = lane_of(0, 0);
    std::vector<void*> chunks(32, nullptr);
    for (int i = 0; i < 4; ++i) chunks[i] = scatter.create(worker, 1024);
    for (int i = 1; i < 4; ++i) EXPECT_EQ(page_of(chunks[i]), page_of(chunks[0]));
    return chunks;
  }
  // Splits `page` into `chunk`-byte chunks and takes every one of them.
  void fill_page(std::uint32_t page, std::uint32_t chunk) {
    const acc::HostThread host;
    ASSERT_EQ(Ops::claim(host, h, page, chunk), chunk);
    while (Ops::try_use(host, h, page, chunk) != nullptr) {
    }
  }
};

using PageLockTest = ScatterSearchTest<CreationPolicies::ScatterHeapConfig>;
using BlockTest = ScatterSearchTest<TwoBlocks>;

// Bimodal launches: a lane that lost the CAS for an unused page to a
// sibling lane must use the sibling's split, however long the sibling takes
// (on the GPU the sibling may not run while its warp's other side spins).
// The wait was bounded by 64 spins: the loser then claimed a page of its
// own, and the next loser the page after that.
TEST_F(PageLockTest, LoserOfAClaimWaitsForTheWinnersSplit) {
  const std::uint32_t request = 16;
  const PlayedLane winner = lane_of(0, 0), loser = lane_of(1, 0);
  const std::uint32_t page = Search::hash(winner, request, h.pages_per_block, whole_warp);
  ASSERT_EQ(Search::hash(loser, request, h.pages_per_block, whole_warp), page) << "lanes of a warp share a page for 16 B";
  heap::detail::PageEntry& e = entry(page);
  ASSERT_EQ(acc::HostThread{}.atomic_cas(&e.chunk_size, 0u, heap::detail::claiming), 0u);  // the winner's split is in progress
  std::atomic<bool> started{false};
  void* got = nullptr;
  std::thread t([&] {
    started = true;
    got = scatter.create(loser, request);
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // The winner finishes its split (as PageOps::claim does).
  for (std::uint32_t s = 0; s < heap::detail::page_geometry(4096, request).segments(); ++s)
    acc::HostThread{}.store(Ops::segment_word(h, page, s), 0u);
  acc::HostThread{}.fence();
  acc::HostThread{}.store(&e.chunk_size, request);
  t.join();
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(page_of(got), page) << "the loser must use the winner's page, not claim another";
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().pages_in_use, 1u);
}

// Churn slowdown: the worker that fills a page re-reads `fill` after setting
// the page's full mark; a failed reservation still counted there hides the
// free that made room meanwhile (whose clearing came before the mark). The
// undoing of that reservation takes `fill` below the page's chunks and must
// clear the mark; otherwise it stayed, and such marks added up until regions
// were skipped as full while empty.
TEST_F(PageLockTest, UndoneReservationClearsAFullMarkItHid) {
  const acc::HostThread a;
  const std::uint32_t page = 3, chunks = 8;  // 512-byte chunks
  ASSERT_EQ(Ops::claim(a, h, page, 512), 512u);
  void* first = Ops::try_use(a, h, page, 512);
  for (std::uint32_t i = 1; i + 1 < chunks; ++i) ASSERT_NE(Ops::try_use(a, h, page, 512), nullptr);
  heap::detail::PageEntry& e = entry(page);
  // Filler F reserves the last chunk; a reservation T that will fail comes in.
  ASSERT_EQ(a.atomic_add(&e.fill, 1u), chunks - 1);
  ASSERT_EQ(a.atomic_add(&e.fill, 1u), chunks);
  // A free of another chunk: fill 9 -> 8, it clears the (not yet set) mark.
  const auto offset = static_cast<std::size_t>(static_cast<std::byte*>(first) - h.page_data(page, 4096));
  ASSERT_EQ(Ops::free_chunk(a, h, page, 512, offset), Misuse::none);
  // F marks the page full and re-reads fill: 8, T still counted.
  Ops::finish_mark_page_full(a, h, page, chunks, Ops::start_mark_page_full(a, h, page));
  EXPECT_TRUE(region_word(page) & (1u << (page % rs)));
  // T undoes its reservation: 7 chunks reserved, the page has room.
  Ops::release_reservation(a, h, page, chunks);
  EXPECT_EQ(e.fill, chunks - 1);
  EXPECT_FALSE(region_word(page) & (1u << (page % rs))) << "a full mark on a page with room";
}

// 5.4: a block is full for the first pass when more than 90% of the
// regions sampled over it are closed.
TEST_F(BlockTest, BlockIsFullWhenMostSampledRegionsAreClosed) {
  const std::uint32_t regions = h.pages_per_block / rs;
  ASSERT_GE(regions, Search::samples);
  EXPECT_FALSE(Search::block_full(acc::HostThread{}, h, 0));
  for (std::uint32_t r = 0; r < regions; ++r) {
    h.regions[r] = r % Search::samples == 0 ? 0u : (1u << (rs - 1)) - 1u;  // rs - 1 pages marked: closed
  }
  EXPECT_TRUE(Ops::closed_region(rs - 1));
  // One open region in every 16: 15 of 16 samples closed (> 90%).
  EXPECT_TRUE(Search::block_full(acc::HostThread{}, h, 0, 1));
  for (std::uint32_t r = 0; r < regions; ++r) h.regions[r] = r % 4 == 0 ? 0u : (1u << (rs - 1)) - 1u;
  EXPECT_FALSE(Search::block_full(acc::HostThread{}, h, 0, 1)) << "75% closed";
  EXPECT_FALSE(Search::block_full(acc::HostThread{}, h, 1)) << "the other block is empty";
  for (std::uint32_t r = 0; r < regions; ++r) h.regions[r] = 0;
}

// Stable pages across launches: where warps exist, the launch-wide warp
// index (not the multiprocessor, which the hardware picks anew for every
// launch) places a request, so a warp's requests find the pages they split
// before. Host threads (warp width 1) are still spread by processor.
TEST_F(PageLockTest, HashIgnoresTheMultiprocessorWhereWarpsExist) {
  for (std::uint32_t request : {16u, 64u, 256u, 1024u, 4096u}) {
    EXPECT_EQ(Search::hash(lane_of(3, 77, 0), request, h.pages_per_block, whole_warp),
              Search::hash(lane_of(3, 77, 131), request, h.pages_per_block, whole_warp))
        << request;
  }
  struct HostOnProcessor : acc::HostThread {
    unsigned cpu;
    unsigned processor_id() const { return cpu; }
  };
  EXPECT_NE(Search::hash(HostOnProcessor{{}, 0}, 64, h.pages_per_block, 1u),
            Search::hash(HostOnProcessor{{}, 1}, 64, h.pages_per_block, 1u));
  // Lanes with page-sized requests start on pages of their own, lanes with
  // 1 KiB requests four to a page, and the next warp past them.
  const std::uint32_t p0 = Search::hash(lane_of(0, 9), 4096, h.pages_per_block, whole_warp);
  EXPECT_EQ(Search::hash(lane_of(31, 9), 4096, h.pages_per_block, whole_warp), (p0 + 31) % h.pages_per_block);
  const std::uint32_t k0 = Search::hash(lane_of(0, 9), 1024, h.pages_per_block, whole_warp);
  EXPECT_EQ(Search::hash(lane_of(3, 9), 1024, h.pages_per_block, whole_warp), k0);
  EXPECT_EQ(Search::hash(lane_of(4, 9), 1024, h.pages_per_block, whole_warp), (k0 + 1) % h.pages_per_block);
  EXPECT_EQ(Search::hash(lane_of(0, 10), 1024, h.pages_per_block, whole_warp), (k0 + 9) % h.pages_per_block);
}

// Page-sized requests of lanes that ask alone (a particle-in-cell code
// allocates a frame when a lane's frame fills, one lane at a time): each
// lane starts on a page of its own, and the next warp 33 pages on, as when
// the whole warp asks. Counted by the lanes asking, every lone lane of warp
// w started at page w * 2: Scatter's PIC steps took 40x as long on the GPU
// (docs/results/heap/pic, 7379da9), where each request walked past the
// strip those pages filled.
TEST_F(PageLockTest, LoneLanesAskingForWholePagesStartOnPagesOfTheirOwn) {
  const auto alone = [](unsigned lane) { return 1u << lane; };
  const std::uint32_t p0 = Search::hash(lane_of(0, 9), 4096, h.pages_per_block, alone(0));
  EXPECT_EQ(p0, Search::hash(lane_of(0, 9), 4096, h.pages_per_block, whole_warp));
  for (unsigned lane = 1; lane < 32; ++lane) {
    EXPECT_EQ(Search::hash(lane_of(lane, 9), 4096, h.pages_per_block, alone(lane)), (p0 + lane) % h.pages_per_block)
        << "lane " << lane;
  }
  EXPECT_EQ(Search::hash(lane_of(0, 10), 4096, h.pages_per_block, alone(0)), (p0 + 33) % h.pages_per_block);
}

// The spread counts a hierarchical page as 33 chunks instead of its exact
// count (search.hpp, spread_chunks): for every request size and every
// number of lanes of a warp, what the hash derives from the count (a page
// per request, and the quotients of the lanes asking and of a lane's rank)
// is what the exact count gives.
template <std::uint32_t Pagesize>
struct ConfigOfPagesize : CreationPolicies::ScatterHeapConfig {
  static constexpr std::uint32_t pagesize = Pagesize;
};
template <std::uint32_t Pagesize>
void expect_spread_places_as_exact_count() {
  using Config = ConfigOfPagesize<Pagesize>;
  static_assert(CreationPolicies::ScatterHeapConfiguration<Config>);
  using Search = heap::detail::SmallSearch<Config, CreationPolicies::ScatterHashConfig>;
  for (std::uint32_t request = 1; request <= Pagesize; ++request) {
    const std::uint32_t exact = heap::detail::page_geometry(Pagesize, request).chunks;
    const std::uint32_t spread = Search::spread_chunks(request);
    ASSERT_EQ(spread == 1u, exact == 1u) << Pagesize << "-byte pages, " << request << " bytes";
    for (std::uint32_t lanes = 0; lanes <= 32; ++lanes)
      ASSERT_EQ(lanes / spread, lanes / exact) << Pagesize << "-byte pages, " << request << " bytes, " << lanes << " lanes";
  }
}
TEST(ScatterHashTest, TheSpreadsCountOfChunksPlacesAsTheExactCountDoes) {
  // The smallest pages allowed, one not a power of two, the default, and the largest allowed.
  expect_spread_places_as_exact_count<64>();
  expect_spread_places_as_exact_count<68>();
  expect_spread_places_as_exact_count<4096>();
  expect_spread_places_as_exact_count<(1u << 21) - 4u>();
}

// Churn (scatter_anomalies.md): when the lanes of a warp ask for different
// sizes, a size's pages lie side by side, warp after warp, instead of 1 + 32
// / c pages apart for c chunks per page (spread as if all 32 lanes asked for
// that size), where every other size's pages came between them and a
// request walked some 8 pages of other sizes to find one of its own.
TEST(ScatterHashTest, LanesAskingForDifferentSizesKeepEachSizesPagesTogether) {
  using Heap = ScatterHeap<HostRunner, CreationPolicies::ScatterHeapConfig>;
  Heap heap{std::size_t{64} << 20};
  const auto handle = heap.handle();
  const auto& layout = heap.creation().layout();
  constexpr unsigned warps = 4;
  std::vector<void*> chunks(warps * 32);
  acc::EmulatedGrid grid;
  // Lane l asks for 512 + 16 l bytes (flat pages of 4-7 chunks): every lane
  // of a warp for another size, the same lane of every warp for the same one.
  grid.run(1, warps * 32, [&](const acc::EmulatedThread& a, unsigned t) {
    chunks[t] = handle.alloc(a, 512 + 16 * (t % 32));
  });
  const auto page_of = [&](const void* p) {
    return static_cast<std::uint32_t>((static_cast<const std::byte*>(p) - layout.data) / 4096);
  };
  for (unsigned lane = 0; lane < 32; ++lane) {
    for (unsigned w = 0; w + 1 < warps; ++w) {
      ASSERT_NE(chunks[w * 32 + lane], nullptr);
      EXPECT_EQ(page_of(chunks[(w + 1) * 32 + lane]), page_of(chunks[w * 32 + lane]) + 1)
          << "lane " << lane << ", warps " << w << " and " << w + 1;
    }
  }
  for (void* p : chunks) handle.dealloc(acc::HostThread{}, p);
}

// 4 KiB requests: a lane's hashed page is tried although its region is
// closed (15 of 16 pages full); the lane went on to later lanes' pages.
TEST_F(PageLockTest, HashedPageIsTriedInAClosedRegion) {
  const PlayedLane lane = lane_of(0, 0);
  const std::uint32_t page = Search::hash(lane, 4096, h.pages_per_block, whole_warp);
  const std::uint32_t first = page / rs * rs;
  for (std::uint32_t p = first; p < first + rs; ++p)
    if (p != page) fill_page(p, 4096);
  ASSERT_TRUE(Ops::closed_region(static_cast<std::uint32_t>(std::popcount(region_word(page)))));
  void* got = scatter.create(lane, 4096);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(page_of(got), page);
}

// A walk from the hashed page tries every page of its region, the last one
// included: here the only page left that serves the request.
TEST_F(PageLockTest, TheWalkReachesItsRegionsLastPage) {
  const PlayedLane lane = lane_of(0, 0);
  const std::uint32_t start = Search::hash(lane, 16, h.pages_per_block, 1u);
  const std::uint32_t last = (start / rs + 1) * rs - 1;
  ASSERT_NE(last, start);
  const acc::HostThread a;
  for (std::uint32_t p = 0; p < h.page_count; ++p)
    if (p != last) ASSERT_EQ(Ops::claim(a, h, p, 256), 256u);  // a size 16-byte requests may not use
  void* got = scatter.create(lane, 16);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(page_of(got), last);
}

// Mixed sizes: without resetfreedpages pages keep their first split; a block
// whose pages are all split for other sizes is left after a few regions for
// the next block, not scanned to its end (which cost a million memory
// operations per request in a 2 GiB block).
// A lane whose reads of the active block are those of lanes that another
// worker overtakes: the upper half of its warp reads the next block.
struct LaneOfAMovedActiveBlock : acc::EmulatedThread {
  LaneOfAMovedActiveBlock(const acc::EmulatedThread& a, const std::uint32_t* active)
      : acc::EmulatedThread(a), active(active) {}
  const std::uint32_t* active;
  std::uint32_t load(const std::uint32_t* p) const {
    const std::uint32_t v = acc::EmulatedThread::load(p);
    return p == active && lane_id() >= 16u ? v + 1u : v;
  }
};

// Lanes of one size that read different active blocks start on different
// pages and take their chunks on their own page each: a group of them
// reserved on the leader's page and set bits on another (group_take.hpp).
TEST_F(BlockTest, LanesThatReadDifferentActiveBlocksTakeOnTheirOwnPages) {
  std::vector<void*> chunks(32, nullptr);
  acc::EmulatedGrid grid;
  grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) {
    chunks[t] = scatter.create(LaneOfAMovedActiveBlock(a, &h.shared->active_block), 16);
  });
  std::vector<void*> sorted = chunks;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_NE(sorted[0], nullptr);
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a chunk handed out twice";
  std::vector<std::uint32_t> pages;
  for (void* c : chunks) pages.push_back(page_of(c));
  for (std::uint32_t p : pages) {
    EXPECT_EQ(entry(p).chunk_size, 16u) << "a chunk on a page that is not split";
    EXPECT_EQ(entry(p).fill, static_cast<std::uint32_t>(std::count(pages.begin(), pages.end(), p)));
  }
  acc::EmulatedGrid frees;
  frees.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) { scatter.destroy(a, chunks[t]); });
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 0u);
}

// A played lane that counts the pages of `pages[0, count)` it looks at:
// its loads of their chunk size (read_page reads it once per page).
struct PageCountingLane : PlayedLane {
  const heap::detail::PageEntry* pages = nullptr;
  std::uint32_t count = 0;
  std::uint64_t* looked_at = nullptr;

  std::uint32_t load(const std::uint32_t* p) const {
    for (std::uint32_t i = 0; i < count; ++i)
      if (p == &pages[i].chunk_size) ++*looked_at;
    return PlayedLane::load(p);
  }
};

// Mixed sizes at 2^20 lanes split nearly every page of block 0 with its full
// pages scattered, so the block stays open and active, and a request with no
// page of its size near its hash walks probe_limit pages of it
// (docs/results/heap/peers/scatter_activation, the host model). The first
// pass looks at the hashed page and one region's worth of pages before it
// tries the next block (four regions' worth until 7de67f2), and leaves the
// active block where it is.
TEST_F(BlockTest, FirstPassLooksAtOneRegionOfPagesOfABlockSplitForOtherSizes) {
  ASSERT_EQ(h.block_count, 2u);
  for (std::uint32_t p = 0; p < h.pages_per_block; ++p) {
    const acc::HostThread a;
    ASSERT_EQ(Ops::claim(a, h, p, 256), 256u);  // split, empty, unusable for 16 B (waste factor 2)
  }
  std::uint64_t looked_at = 0, ops = 0;
  PageCountingLane lane;
  lane.ops = &ops;  // lane 0 of warp 0, as lane_of(0, 0)
  lane.pages = h.pages;
  lane.count = h.pages_per_block;
  lane.looked_at = &looked_at;
  void* got = scatter.create(lane, 16);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(h.block_of(page_of(got)), 1u);
  EXPECT_EQ(Search::probe_limit, rs);
  EXPECT_LE(looked_at, rs + 1u) << "pages of block 0 looked at: the hashed page and one region's worth";
  EXPECT_LT(ops, 4u * Search::probe_limit + 4u * Search::skip_limit + 64u) << "memory operations in all";
  EXPECT_EQ(active(), 0u) << "a block that cannot serve one size is not full: it stays active";
}

// 5.4: a block with more than 90% of its regions closed is full for the
// first pass: the search leaves it at its first closed region and moves the
// active block on.
TEST_F(BlockTest, MostlyClosedBlockIsLeftAndTheActiveBlockMovesOn) {
  const std::uint32_t regions = h.pages_per_block / rs;
  for (std::uint32_t r = 0; r < regions; ++r)
    for (std::uint32_t p = r * rs; p < (r + 1) * rs; ++p) fill_page(p, 4096);
  ASSERT_TRUE(Search::block_full(acc::HostThread{}, h, 0));
  std::uint64_t ops = 0;
  PlayedLane lane = lane_of(5, 3);
  lane.ops = &ops;
  void* got = scatter.create(lane, 4096);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(h.block_of(page_of(got)), 1u);
  EXPECT_EQ(active(), 1u);
  EXPECT_LT(ops, 64u);
}

// A free that makes room on a full page makes that page's block active when
// it is lower (and not full), so that the next launch starts where the last
// one did; other frees leave the active block alone.
TEST_F(BlockTest, FreeOnAFullPageMakesItsLowerBlockActive) {
  const PlayedLane lane = lane_of(0, 0), other = lane_of(0, 1);
  void* low = scatter.create(lane, 4096);   // a full page of block 0
  void* small = scatter.create(other, 64);  // a page of block 0 with room
  ASSERT_NE(low, nullptr);
  ASSERT_NE(small, nullptr);
  ASSERT_EQ(h.block_of(page_of(low)), 0u);
  ASSERT_EQ(h.block_of(page_of(small)), 0u);
  h.shared->active_block = 1;
  void* high = scatter.create(lane, 4096);
  ASSERT_EQ(h.block_of(page_of(high)), 1u);
  scatter.destroy(lane, high);
  EXPECT_EQ(active(), 1u) << "not lower";
  scatter.destroy(other, small);
  EXPECT_EQ(active(), 1u) << "the page was not full";
  scatter.destroy(lane, low);
  EXPECT_EQ(active(), 0u);
}

// What a HintReadingLane did to one word (`word`), and its coherent reads
// of the words in [from, to).
struct WordAccesses {
  unsigned hints = 0, loads = 0, cas = 0, loads_in_range = 0;
};

// A played lane with load_hint (acc::HintLoads) that counts its accesses;
// its hint reads of `word` return the word plus `stale_by`: a hint older
// than the word, above it or below.
struct HintReadingLane : PlayedLane {
  const std::uint32_t* word = nullptr;
  std::int32_t stale_by = 0;
  WordAccesses* seen = nullptr;
  const std::uint32_t* from = nullptr;
  const std::uint32_t* to = nullptr;

  std::uint32_t load_hint(const std::uint32_t* p) const {
    const std::uint32_t v = PlayedLane::load(p);
    if (p != word) return v;
    ++seen->hints;
    return v + static_cast<std::uint32_t>(stale_by);
  }
  std::uint32_t load(const std::uint32_t* p) const {
    if (p == word) ++seen->loads;
    if (p >= from && p < to) ++seen->loads_in_range;
    return PlayedLane::load(p);
  }
  std::uint32_t atomic_cas(std::uint32_t* p, std::uint32_t e, std::uint32_t d) const {
    if (p == word) ++seen->cas;
    return PlayedLane::atomic_cas(p, e, d);
  }
};
static_assert(acc::HintLoads<HintReadingLane>);

// A free that makes room on a full page at or above the active block reads
// the active block as a hint only (on the GPU at CTA scope, which L1 may
// serve: the last round trip of Scatter's free,
// docs/results/heap/peers/scatter_release_pair).
TEST_F(BlockTest, AFreeReadsTheActiveBlockAsAHint) {
  void* full = scatter.create(lane_of(0, 0), 4096);  // a full page of block 0, the active block
  ASSERT_NE(full, nullptr);
  ASSERT_EQ(active(), 0u);
  WordAccesses seen;
  scatter.destroy(HintReadingLane{lane_of(0, 0), &h.shared->active_block, 0, &seen}, full);
  EXPECT_EQ(seen.hints, 1u);
  EXPECT_EQ(seen.loads, 0u) << "coherent reads of the active block";
  EXPECT_EQ(active(), 0u);
}

// A hint above the true active block sends the free to the slow path, where
// one read of the word ends it: no sample of the block's region words, no
// CAS.
TEST_F(BlockTest, AHintAboveTheActiveBlockCostsOneReadOfTheWord) {
  void* full = scatter.create(lane_of(0, 0), 4096);
  ASSERT_NE(full, nullptr);
  ASSERT_EQ(h.block_of(page_of(full)), 0u);
  ASSERT_EQ(active(), 0u);
  WordAccesses seen;
  const std::uint32_t* regions_end = h.regions + (h.page_count + rs - 1) / rs;
  scatter.destroy(HintReadingLane{lane_of(0, 0), &h.shared->active_block, +1, &seen, h.regions, regions_end}, full);
  EXPECT_EQ(seen.hints, 1u);
  EXPECT_EQ(seen.loads, 1u);
  EXPECT_EQ(seen.loads_in_range, 0u) << "reads of region words: a sample of the block";
  EXPECT_EQ(seen.cas, 0u) << "a CAS from the hint's value";
  EXPECT_EQ(active(), 0u);
}

// A free that makes room on a full page below the active block reads its
// own region word, not a sample of its block: it activates the block once
// its region is open (the first pass would search it), not while the region
// is still closed. A sample of 16 region words per free, shared by every
// free below the active block, was where such frees spent their time
// (docs/results/heap/peers/scatter_activation).
TEST_F(BlockTest, AFreeBelowTheActiveBlockActivatesItOnceItsRegionIsOpen) {
  const std::uint32_t regions = h.pages_per_block / rs;
  ASSERT_GE(regions, 16u) << "enough regions for a sample of 16";
  for (std::uint32_t p = 0; p < h.pages_per_block; ++p) fill_page(p, 4096);
  ASSERT_TRUE(Search::block_full(acc::HostThread{}, h, 0));
  h.shared->active_block = 1;
  const std::uint32_t first = 3 * rs;  // two pages of region 3, closed while 15 of its 16 pages are full
  const std::uint32_t* regions_end = h.regions + (h.page_count + rs - 1) / rs;
  WordAccesses seen;
  scatter.destroy(HintReadingLane{lane_of(0, 0), &h.shared->active_block, 0, &seen, h.regions, regions_end},
                  h.page_data(first, TwoBlocks::pagesize));
  EXPECT_EQ(entry(first).fill, 0u) << "the chunk is free";
  EXPECT_EQ(seen.loads, 1u) << "the slow path reads the word itself";
  EXPECT_EQ(seen.loads_in_range, 1u) << "reads of region words: the page's own only";
  EXPECT_EQ(active(), 1u) << "its region is still closed";
  seen = WordAccesses{};
  scatter.destroy(HintReadingLane{lane_of(0, 0), &h.shared->active_block, 0, &seen, h.regions, regions_end},
                  h.page_data(first + 1, TwoBlocks::pagesize));
  EXPECT_EQ(seen.loads_in_range, 1u) << "reads of region words: the page's own only";
  EXPECT_EQ(active(), 0u) << "its region is open now: the first pass searches it";
}

// A hint below the true active block skips the activation (5.4's reuse, for
// this free), and the chunk is freed all the same; a free that reads the
// word activates the block.
TEST_F(BlockTest, AHintBelowTheActiveBlockSkipsOnlyTheActivation) {
  void* low = scatter.create(lane_of(0, 0), 4096);
  void* other = scatter.create(lane_of(0, 1), 4096);
  ASSERT_NE(low, nullptr);
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(h.block_of(page_of(low)), 0u);
  ASSERT_EQ(h.block_of(page_of(other)), 0u);
  h.shared->active_block = 1;
  WordAccesses seen;
  scatter.destroy(HintReadingLane{lane_of(0, 0), &h.shared->active_block, -1, &seen}, low);
  EXPECT_EQ(seen.hints, 1u);
  EXPECT_EQ(seen.loads + seen.cas, 0u) << "accesses to the word itself";
  EXPECT_EQ(active(), 1u) << "the hint said block 0 was active";
  EXPECT_EQ(entry(page_of(low)).fill, 0u) << "the chunk is free";
  scatter.destroy(lane_of(0, 1), other);
  EXPECT_EQ(active(), 0u);
}

// A lane of an emulated warp that counts its atomics (on words in [from, to)
// when `from` is given).
struct CountedLane : acc::EmulatedThread {
  CountedLane(const acc::EmulatedThread& a, std::atomic<std::uint64_t>* n, const std::uint32_t* from = nullptr,
              const std::uint32_t* to = nullptr)
      : acc::EmulatedThread(a), atomics(n), from(from), to(to) {}
  std::atomic<std::uint64_t>* atomics;
  const std::uint32_t *from, *to;
  std::uint32_t* count(std::uint32_t* p) const {
    if (from == nullptr || (p >= from && p < to)) ++*atomics;
    return p;
  }
  std::uint32_t atomic_add(std::uint32_t* p, std::uint32_t v) const { return EmulatedThread::atomic_add(count(p), v); }
  std::uint32_t atomic_sub(std::uint32_t* p, std::uint32_t v) const { return EmulatedThread::atomic_sub(count(p), v); }
  std::uint32_t atomic_sub_release(std::uint32_t* p, std::uint32_t v) const {
    return EmulatedThread::atomic_sub_release(count(p), v);
  }
  std::uint32_t atomic_and_release(std::uint32_t* p, std::uint32_t v) const {
    return EmulatedThread::atomic_and_release(count(p), v);
  }
  std::uint32_t atomic_or(std::uint32_t* p, std::uint32_t v) const { return EmulatedThread::atomic_or(count(p), v); }
  std::uint32_t atomic_and(std::uint32_t* p, std::uint32_t v) const { return EmulatedThread::atomic_and(count(p), v); }
  std::uint32_t atomic_cas(std::uint32_t* p, std::uint32_t e, std::uint32_t d) const {
    return EmulatedThread::atomic_cas(count(p), e, d);
  }
};

// One emulated warp of 32 lanes, each asking `scatter` for `bytes`: their
// chunks in `chunks`; returns how many CASes they sent the active block.
template <class Creation>
std::uint64_t active_block_cas_of_one_warp(const Creation& scatter, std::size_t bytes, std::vector<void*>& chunks) {
  std::atomic<std::uint64_t> cas{0};
  const std::uint32_t* word = &scatter.layout().shared->active_block;
  chunks.assign(32, nullptr);
  acc::EmulatedGrid grid;
  grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) {
    chunks[t] = scatter.create(CountedLane(a, &cas, word, word + 1), bytes);
  });
  return cas.load();
}

// 5.4: a warp whose lanes all find the active block full moves it on with
// one CAS, its highest lane's, not one per lane: the warps in flight as a
// block filled had sent the one word a CAS per lane
// (docs/results/heap/peers/scatter_activation). Every lane still finds a
// page in the next block.
TEST_F(BlockTest, AWarpThatFindsTheActiveBlockFullMovesItOnWithOneCas) {
  for (std::uint32_t p = 0; p < h.pages_per_block; ++p) fill_page(p, 4096);
  ASSERT_TRUE(Search::block_full(acc::HostThread{}, h, 0));
  ASSERT_EQ(active(), 0u);
  std::vector<void*> chunks;
  EXPECT_EQ(active_block_cas_of_one_warp(scatter, 4096, chunks), 1u) << "CASes of the active block";
  for (void* c : chunks) {
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(h.block_of(page_of(c)), 1u);
  }
  EXPECT_EQ(active(), 1u);
}

// The lane that moves the active block on is the highest of its size: a
// group's take serves its lowest lanes first, so where the hashed page has
// room for a few of them the lowest lane gets a chunk there while the others
// find the block full. Here block 0 holds one free 16-byte chunk per page,
// and its region words say every page is full (they are hints): the warp's
// lowest lane takes the chunk on the hashed page, the other 31 find block 0
// full, and one CAS moves the active block on. With the lowest lane as the
// mover none was sent, and so by every later warp whose hashed page still
// had a free chunk.
TEST_F(BlockTest, TheLaneThatMovesAFullBlockOnIsTheLastOneItsGroupServes) {
  const acc::HostThread host;
  for (std::uint32_t p = 0; p < h.pages_per_block; ++p) {
    fill_page(p, 16);
    scatter.destroy(host, h.page_data(p, TwoBlocks::pagesize));
  }
  for (std::uint32_t r = 0; r < h.pages_per_block / rs; ++r) h.regions[r] = (1u << rs) - 1u;
  ASSERT_TRUE(Search::block_full(host, h, 0));
  ASSERT_EQ(active(), 0u);
  std::vector<void*> chunks;
  EXPECT_EQ(active_block_cas_of_one_warp(scatter, 16, chunks), 1u) << "CASes of the active block";
  ASSERT_NE(chunks[0], nullptr);
  EXPECT_EQ(h.block_of(page_of(chunks[0])), 0u) << "the lowest lane takes the free chunk of the hashed page";
  for (unsigned t = 1; t < 32; ++t) {
    ASSERT_NE(chunks[t], nullptr);
    EXPECT_EQ(h.block_of(page_of(chunks[t])), 1u) << "lane " << t;
  }
  EXPECT_EQ(active(), 1u);
}

class ScatterFreeTest : public ScatterSearchTest<CreationPolicies::ScatterHeapConfig> {
 protected:
  // 32 chunks of 16 bytes taken one after the other: the first segment of
  // one page (by one processor, as one_page_of_four).
  std::vector<void*> one_segment() {
    const PlayedLane worker = lane_of(0, 0);
    std::vector<void*> chunks(32);
    for (auto& c : chunks) c = scatter.create(worker, 16);
    for (auto* c : chunks) {
      EXPECT_EQ(page_of(c), page_of(chunks[0]));
      EXPECT_LT(static_cast<std::byte*>(c) - static_cast<std::byte*>(chunks[0]), 32 * 16);
    }
    return chunks;
  }
  // Every lane of one warp frees chunks[lane], except lane `twice`, which
  // frees lane twice - 1's chunk a second time and so keeps its own, which
  // it returns. Expects the second free reported and chunks[0]'s page to
  // count only the kept chunk.
  void* free_one_chunk_twice(std::vector<void*> chunks, unsigned twice) {
    void* kept = chunks[twice];
    chunks[twice] = chunks[twice - 1];
    free_in_one_warp(chunks);
    EXPECT_EQ(entry(page_of(chunks[0])).fill, 1u);
    const auto st = scatter.statistics<acc::HostThreads>();
    EXPECT_EQ(st.misuse_reports, 1u);
    EXPECT_EQ(st.last_misuse, Misuse::double_free);
    return kept;
  }
  // Pages keep their split (no resetfreedpages): no chunk is reserved, and
  // no page is marked full.
  void expect_every_chunk_free() {
    std::uint64_t reserved = 0, marked = 0;
    for (std::uint32_t p = 0; p < h.page_count; ++p) reserved += entry(p).fill;
    for (std::uint32_t r = 0; r < h.page_count / rs; ++r) marked += bits::popcount(h.regions[r]);
    EXPECT_EQ(reserved, 0u);
    EXPECT_EQ(marked, 0u) << "pages with room marked full";
  }
  // Every lane of one emulated warp frees chunks[lane]; returns the atomics
  // spent (on words in [from, to) when `from` is given).
  std::uint64_t free_in_one_warp(const std::vector<void*>& chunks, const std::uint32_t* from = nullptr,
                                 const std::uint32_t* to = nullptr) {
    std::atomic<std::uint64_t> atomics{0};
    acc::EmulatedGrid grid;
    grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) {
      scatter.destroy(CountedLane(a, &atomics, from, to), chunks[t]);
    });
    return atomics.load();
  }
};

// The lanes of a warp freeing chunks of one bit-field word share one atomic
// on the word and one on the page's fill (one per lane each before), plus
// the segment's full mark.
TEST_F(ScatterFreeTest, AWarpsFreesOfOneBitFieldWordCostOneAtomicEach) {
  const std::size_t before = heap.getAvailableSlots(16);
  const std::vector<void*> chunks = one_segment();
  const std::uint32_t page = page_of(chunks[0]);
  ASSERT_EQ(entry(page).fill, 32u);
  EXPECT_LE(free_in_one_warp(chunks), 3u);
  EXPECT_EQ(entry(page).fill, 0u);
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 0u);
  EXPECT_EQ(heap.getAvailableSlots(16), before);
  expect_every_chunk_free();
}

// The lanes of a warp asking for one size on one page take their chunks
// together (group_take.hpp): one split of the page, one reservation and one
// OR into the bit-field word, not one of each per lane. Every lane gets a
// chunk of its own, neighbours on the page.
TEST_F(ScatterFreeTest, AWarpsRequestsOfOneSizeTakeTheirChunksWithOneAtomicEach) {
  std::vector<void*> chunks(32, nullptr);
  std::atomic<std::uint64_t> atomics{0};
  acc::EmulatedGrid grid;
  grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) { chunks[t] = scatter.create(CountedLane(a, &atomics), 16); });
  EXPECT_LE(atomics.load(), 3u);
  std::vector<void*> sorted = chunks;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_NE(sorted[0], nullptr);
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a chunk handed out twice";
  EXPECT_EQ(static_cast<std::byte*>(sorted[31]) - static_cast<std::byte*>(sorted[0]), 31 * 16);
  EXPECT_EQ(entry(page_of(sorted[0])).fill, 32u);
  free_in_one_warp(chunks);
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 0u);
  expect_every_chunk_free();
}

// A group that asks for more chunks than its page has left: the page's last
// chunks go to the group's lowest lanes, the others search on, and the
// reservations past the page's end are given back (the page counts exactly
// its chunks and is marked full).
TEST_F(ScatterFreeTest, AGroupLargerThanItsPagesRoomTakesTheRestAndSearchesOn) {
  const std::uint32_t chunks_per_page = heap::detail::page_geometry(CreationPolicies::ScatterHeapConfig::pagesize, 16).chunks;
  std::vector<void*> all;
  std::uint32_t first_page = ~0u;
  // The same warp asks eight times; its hash names the same page each time.
  for (int launch = 0; launch < 8; ++launch) {
    std::vector<void*> chunks(32, nullptr);
    acc::EmulatedGrid grid;
    grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) { chunks[t] = scatter.create(a, 16); });
    if (launch == 0) first_page = page_of(chunks[0]);
    all.insert(all.end(), chunks.begin(), chunks.end());
  }
  ASSERT_EQ(std::count(all.begin(), all.end(), nullptr), 0);
  std::vector<void*> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a chunk handed out twice";
  const auto on_first = std::count_if(all.begin(), all.end(), [&](void* c) { return page_of(c) == first_page; });
  EXPECT_EQ(static_cast<std::uint32_t>(on_first), chunks_per_page);
  EXPECT_EQ(entry(first_page).fill, chunks_per_page);
  EXPECT_NE(region_word(first_page) & (1u << (first_page % rs)), 0u) << "a full page is marked full";
  for (std::size_t i = 0; i < all.size(); i += 32)
    free_in_one_warp(std::vector<void*>(all.begin() + static_cast<std::ptrdiff_t>(i), all.begin() + static_cast<std::ptrdiff_t>(i) + 32));
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 0u);
  expect_every_chunk_free();
}

// A group whose reservations fall in a segment marked full (I5; here a
// stale mark): its lanes do not take their spots without an OR, but look
// for free bits on their own, as try_use does; every chunk is handed out
// once and comes back.
TEST_F(ScatterFreeTest, AGroupWhoseSegmentIsMarkedFullLooksForFreeBitsAlone) {
  std::vector<void*> chunks(32, nullptr);
  auto take_in_one_warp = [&] {
    acc::EmulatedGrid grid;
    grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) { chunks[t] = scatter.create(a, 16); });
  };
  take_in_one_warp();
  const std::uint32_t page = page_of(chunks[0]);
  free_in_one_warp(chunks);
  ASSERT_EQ(entry(page).fill, 0u);
  entry(page).mask |= 1u;  // segment 0, where the next reservations 0..31 fall, marked full
  take_in_one_warp();
  std::vector<void*> sorted = chunks;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_NE(sorted[0], nullptr);
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a chunk handed out twice";
  free_in_one_warp(chunks);
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 0u) << "a chunk taken without its bit";
  entry(page).mask = 0u;
  expect_every_chunk_free();
}

// Lanes of one warp asking for chunks together (most of them 16 B) and
// alone (160 B), and freeing them, round after round: every chunk comes back
// and none is reported freed twice. (Built by g++ 12 with optimisation, a
// form of the group's OR that merged its result with its operand set no
// bit at all: every chunk of the group was then reported freed twice.)
TEST_F(ScatterFreeTest, LanesTakingChunksTogetherAndAloneChurnWithNothingLost) {
  std::atomic<std::uint64_t> fails{0};
  acc::EmulatedGrid grid;
  grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) {
    for (unsigned round = 0; round < 100; ++round) {
      void* p = scatter.create(a, (t + round) % 3 == 0 ? 160 : 16);
      if (p == nullptr) ++fails;
      scatter.destroy(a, p);
    }
  });
  EXPECT_EQ(fails.load(), 0u);
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 0u);
  expect_every_chunk_free();
}

// With resetfreedpages, pages emptied under a group are reset and split
// anew while other groups reserve on them (the leader's re-check, the
// give-back of reservations that met a reset's lock): lanes together and
// alone churn, nothing is reported, and every page ends unused.
using ResetGroupTest = ScatterSearchTest<ResetPagesConfig>;
TEST_F(ResetGroupTest, LanesTakingChunksTogetherOnPagesThatAreResetLoseNothing) {
  std::atomic<std::uint64_t> fails{0};
  acc::EmulatedGrid grid;
  grid.run(2, 64, [&](const acc::EmulatedThread& a, unsigned t) {
    for (unsigned round = 0; round < 60; ++round) {
      void* p = scatter.create(a, (t + round) % 5 == 0 ? 160 : 16 << (round % 3));
      if (p == nullptr) ++fails;
      scatter.destroy(a, p);
    }
  });
  EXPECT_EQ(fails.load(), 0u);
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 0u);
  std::uint64_t reserved = 0, split = 0;
  for (std::uint32_t p = 0; p < h.page_count; ++p) {
    reserved += entry(p).fill;
    split += entry(p).chunk_size != 0u ? 1u : 0u;
  }
  EXPECT_EQ(reserved, 0u);
  EXPECT_EQ(split, 0u) << "pages left split with nothing on them";
}

// Two lanes of one group freeing the same chunk: one frees it, the other is
// reported, and the count stays right.
TEST_F(ScatterFreeTest, TwoLanesFreeingOneChunkFreeItOnce) {
  const std::vector<void*> chunks = one_segment();
  const std::uint32_t page = page_of(chunks[0]);
  void* kept = free_one_chunk_twice(chunks, 7);
  scatter.destroy(acc::HostThread{}, kept);
  EXPECT_EQ(entry(page).fill, 0u);
  // Freed once more later: its bit is clear, so it is reported and nothing changes.
  scatter.destroy(acc::HostThread{}, kept);
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 2u);
  EXPECT_EQ(entry(page).fill, 0u);
}


// Four lanes freeing the four 1 KiB chunks of a full page together, one
// group whose lowest lane clears their bits and returns the count: the
// page is empty, its full mark is gone, and its block (lower than the
// active one) becomes active again (5.4).
TEST_F(ScatterFreeTest, AGroupFreeingAWholeFlatPageMakesRoom) {
  const std::vector<void*> chunks = one_page_of_four();
  const std::uint32_t page = page_of(chunks[0]);
  ASSERT_EQ(entry(page).fill, 4u);
  ASSERT_TRUE(region_word(page) & (1u << (page % rs))) << "a full page is marked";
  const std::uint32_t block = h.block_of(page);
  ASSERT_LT(block + 1, h.block_count);
  h.shared->active_block = block + 1;
  free_in_one_warp(chunks);
  EXPECT_EQ(entry(page).fill, 0u);
  EXPECT_FALSE(region_word(page) & (1u << (page % rs)));
  EXPECT_EQ(active(), block);
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 0u);
  expect_every_chunk_free();
}

// A page of one chunk keeps no bit (I2): its fill alone says whether the
// chunk is taken. A warp of 4 KiB requests takes its 32 pages without an OR
// into their masks and frees them with one atomic on each page's entry,
// the return of its fill.
TEST_F(ScatterFreeTest, WholePageChunksKeepNoBitAndAreFreedWithOneAtomicOnTheirEntry) {
  const std::size_t before = heap.getAvailableSlots(4096);
  std::vector<void*> chunks(32, nullptr);
  acc::EmulatedGrid grid;
  grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) { chunks[t] = scatter.create(a, 4096); });
  for (void* c : chunks) {
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(entry(page_of(c)).chunk_size, 4096u);
    EXPECT_EQ(entry(page_of(c)).fill, 1u);
    EXPECT_EQ(entry(page_of(c)).mask, 0u) << "a page of one chunk sets no bit";
  }
  const std::uint32_t* table = &h.pages[0].chunk_size;
  EXPECT_EQ(free_in_one_warp(chunks, table, table + 3u * h.page_count), 32u) << "one return per page, no clear";
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 0u);
  EXPECT_EQ(heap.getAvailableSlots(4096), before);
  expect_every_chunk_free();
}

// A group on a page of one chunk (group_take.hpp): its lowest lane takes
// the chunk without an OR into the mask, the others get nullptr (they
// search on), and the page serves the next group once the chunk is freed.
// The first round splits a clean page, the second reserves on the split.
TEST_F(ScatterFreeTest, AGroupOnAPageOfOneChunkTakesItWithoutABit) {
  using Take = heap::detail::GroupTake<CreationPolicies::ScatterHeapConfig>;
  using Ops = heap::detail::PageOps<CreationPolicies::ScatterHeapConfig>;
  constexpr std::uint32_t page = 40;
  const acc::HostThread host;
  for (int round = 0; round < 2; ++round) {
    std::vector<void*> got(4, nullptr);
    acc::EmulatedGrid grid;
    grid.run(1, 4, [&](const acc::EmulatedThread& a, unsigned t) { got[t] = Take::take(a, h, page, 4096, 4096, 0xfu); });
    EXPECT_EQ(got[0], h.page_data(page, 4096)) << round;
    for (unsigned t = 1; t < 4; ++t) EXPECT_EQ(got[t], nullptr) << round << " " << t;
    EXPECT_EQ(entry(page).chunk_size, 4096u) << round;
    EXPECT_EQ(entry(page).fill, 1u) << round;
    EXPECT_EQ(entry(page).mask, 0u) << round << ": a page of one chunk sets no bit";
    EXPECT_EQ(Ops::free_chunk(host, h, page, 4096, 0), Misuse::none) << round;
    EXPECT_EQ(entry(page).fill, 0u) << round;
  }
}

// Without a bit, a second free of a whole-page chunk finds its page's fill
// at 0: it is reported, and its return is added back. The worker plays one
// processor throughout: a host thread's hash takes the CPU it runs on
// (search.hpp, processor_term), and a thread moved to another CPU between
// its two requests started the second one on another page (seen once,
// under ThreadSanitizer in CI).
TEST_F(ScatterFreeTest, AWholePageChunkFreedTwiceIsReportedAndChangesNothing) {
  const PlayedLane worker = lane_of(0, 0);
  void* c = scatter.create(worker, 4096);
  ASSERT_NE(c, nullptr);
  scatter.destroy(worker, c);
  scatter.destroy(worker, c);
  const auto st = scatter.statistics<acc::HostThreads>();
  EXPECT_EQ(st.misuse_reports, 1u);
  EXPECT_EQ(st.last_misuse, Misuse::double_free);
  EXPECT_EQ(entry(page_of(c)).fill, 0u) << "the second free's return was added back";
  EXPECT_EQ(scatter.create(worker, 4096), c) << "the chunk is handed out again, once";
  EXPECT_EQ(entry(page_of(c)).fill, 1u);
  scatter.destroy(worker, c);
  expect_every_chunk_free();
}

// The four lanes freeing the four 1 KiB chunks of one page gather their
// bits while the warp is together: one clear of the page's mask and one
// return on its fill, not a clear per lane (on the GPU each lane's clear
// queued up behind the others' on the one word: scatter_release_pair).
TEST_F(ScatterFreeTest, ASmallGroupClearsItsBitsWithOneAtomic) {
  const std::vector<void*> chunks = one_page_of_four();
  heap::detail::PageEntry& e = entry(page_of(chunks[0]));
  ASSERT_EQ(e.mask, 0xfu);
  EXPECT_EQ(free_in_one_warp(chunks, &e.fill, &e.mask + 1), 2u) << "atomics on the page's fill and mask";
  EXPECT_EQ(e.mask, 0u);
  EXPECT_EQ(e.fill, 0u);
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 0u);
  expect_every_chunk_free();
}

// A lane of an emulated warp that counts its barriers.
struct BarrierCountingLane : acc::EmulatedThread {
  BarrierCountingLane(const acc::EmulatedThread& a, std::atomic<std::uint32_t>* n)
      : acc::EmulatedThread(a), barriers(n) {}
  std::atomic<std::uint32_t>* barriers;
  void sync_lanes(std::uint32_t mask) const {
    ++*barriers;
    acc::EmulatedThread::sync_lanes(mask);
  }
};

// With relaxed frees too, the lanes of a small group meet at a barrier
// before the lowest lane clears their bits: a lane's own fence before its
// free (scatter_config.hpp) then still comes before the clear. Without the
// barrier only shuffles passed the bits, and a shuffle orders no write.
using RelaxedFreesTest = ScatterSearchTest<CreationPolicies::ScatterRelaxedFreesConfig>;
TEST_F(RelaxedFreesTest, ASmallGroupsLanesMeetBeforeTheirBitsAreCleared) {
  const std::vector<void*> chunks = one_page_of_four();
  std::atomic<std::uint32_t> barriers{0};
  acc::EmulatedGrid grid;
  grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) {
    scatter.destroy(BarrierCountingLane(a, &barriers), chunks[t]);
  });
  EXPECT_EQ(barriers.load(), 32u) << "one barrier of the warp's 32 lanes";
  EXPECT_EQ(entry(page_of(chunks[0])).fill, 0u);
  EXPECT_EQ(entry(page_of(chunks[0])).mask, 0u);
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 0u);
}

// A small group (lanes gathering their bits) in which two lanes free one
// chunk: it is freed once, the second free is reported, the count stays
// right and the page's last chunk is still held.
TEST_F(ScatterFreeTest, TwoLanesOfASmallGroupFreeingOneChunkFreeItOnce) {
  const std::vector<void*> chunks = one_page_of_four();
  const std::uint32_t page = page_of(chunks[0]);
  void* kept = free_one_chunk_twice(chunks, 2);
  EXPECT_EQ(entry(page).mask, 1u << 2) << "only the kept chunk's bit is set";
  EXPECT_FALSE(region_word(page) & (1u << (page % rs))) << "the page has room";
  scatter.destroy(acc::HostThread{}, kept);
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 1u);
  expect_every_chunk_free();
}

// Emulated warps allocating and freeing chunks of random sizes in one
// launch (the peers benchmark's churn): the lanes of a warp reach their
// frees at different times, one by one or in groups, and every chunk is
// found again.
TEST_F(ScatterFreeTest, EmulatedWarpsChurnRandomSizes) {
  const auto handle = heap.handle();
  std::atomic<std::uint64_t> fails{0}, bad{0};
  acc::EmulatedGrid grid;
  grid.run(2, 64, [&](const acc::EmulatedThread& a, unsigned t) {
    std::uint32_t x = t * 2654435761u + 12345u;
    for (int round = 0; round < 150; ++round) {
      x = x * 1664525u + 1013904223u;
      const std::size_t bytes = 16 + (x >> 8) % 1009;
      void* p = handle.alloc(a, bytes);
      if (p == nullptr) {
        ++fails;
      } else {
        *static_cast<volatile std::uint32_t*>(p) = x;
        if (round % 3 == static_cast<int>(t % 3)) std::this_thread::yield();
        if (*static_cast<volatile std::uint32_t*>(p) != x) ++bad;
      }
      handle.dealloc(a, p);
    }
  });
  EXPECT_EQ(fails.load(), 0u);
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_EQ(scatter.statistics<acc::HostThreads>().misuse_reports, 0u);
  expect_every_chunk_free();
}

// ScatterRelaxedFreesConfig frees without the release (as upstream
// mallocMC does); allocation and freeing work as with the default: emulated
// warps churn random sizes, every chunk comes back and nothing is reported.
TEST(ScatterRelaxedFreesTest, EmulatedWarpsChurnAndEveryChunkComesBack) {
  static_assert(!CreationPolicies::ScatterRelaxedFreesConfig::ordered_frees);
  ScatterHeap<HostRunner, CreationPolicies::ScatterRelaxedFreesConfig> heap{std::size_t{4} << 20};
  const auto handle = heap.handle();
  std::atomic<std::uint64_t> fails{0};
  acc::EmulatedGrid grid;
  grid.run(2, 64, [&](const acc::EmulatedThread& a, unsigned t) {
    std::uint32_t x = t * 2654435761u + 99u;
    for (int round = 0; round < 60; ++round) {
      x = x * 1664525u + 1013904223u;
      void* p = handle.alloc(a, 16 + (x >> 8) % 1009);
      if (p == nullptr) ++fails;
      handle.dealloc(a, p);
    }
  });
  EXPECT_EQ(fails.load(), 0u);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
  // Pages keep their splits (no resetfreedpages): no chunk is reserved, no
  // page is marked full.
  const auto& h = heap.creation().layout();
  std::uint64_t reserved = 0, marked = 0;
  for (std::uint32_t p = 0; p < h.page_count; ++p) reserved += h.pages[p].fill;
  for (std::uint32_t r = 0; r < h.page_count / CreationPolicies::ScatterHeapConfig::regionsize; ++r)
    marked += bits::popcount(h.regions[r]);
  EXPECT_EQ(reserved, 0u);
  EXPECT_EQ(marked, 0u);
}

// I1c: a fresh heap on a resident pool (a GPU's, here host threads that
// count as one) starts with every page clean: bit-field words zero, and the
// first split of a page one CAS on its chunk size, as upstream mallocMC's
// is. Before, the first split took the page lock, zeroed the words and
// unlocked with a release, which made our cold launches slower than
// upstream's (docs/results/heap/peers/scatter_owner_word).
class CleanPagesTest : public ::testing::Test {
 protected:
  using Config = CreationPolicies::ScatterHeapConfig;
  using Ops = heap::detail::PageOps<Config>;
  using Multi = heap::detail::MultiPage<Config>;
  ScatterHeap<ResidentHostRunner> heap{std::size_t{4} << 20};
  const heap::detail::HeapLayout& h = heap.creation().layout();
  heap::detail::PageEntry& entry(std::uint32_t page) { return h.pages[page]; }
  std::uint32_t page_of(const void* p) {
    return static_cast<std::uint32_t>((static_cast<const std::byte*>(p) - h.data) / Config::pagesize);
  }
  // Takes every chunk of `page` for `chunk`-byte requests the way a search
  // does (PageOps::claim_clean and the chunk its split holds, or claim;
  // then try_use); returns how many.
  std::uint32_t take_all(std::uint32_t page, std::uint32_t chunk) {
    const acc::HostThread host;
    const std::uint32_t c = entry(page).chunk_size;
    bool won = false;
    const std::uint32_t now = c == heap::detail::clean_page ? Ops::claim_clean(host, h, page, chunk, won)
                                                            : Ops::claim(host, h, page, chunk);
    EXPECT_EQ(now, chunk);
    std::uint32_t n = 0;
    if (won && take_held(page, chunk) != nullptr) ++n;
    while (Ops::try_use(host, h, page, chunk) != nullptr) ++n;
    return n;
  }
  // The chunk whose reservation the split of clean `page` holds (I1c).
  void* take_held(std::uint32_t page, std::uint32_t chunk) {
    return Ops::take_reserved(acc::HostThread{}, h, page, heap::detail::page_geometry(Config::pagesize, chunk), chunk,
                              0u, 0u);
  }
};

TEST_F(CleanPagesTest, AFreshHeapsPagesAreCleanAndTheirFirstSplitIsOneCas) {
  for (std::uint32_t p = 0; p < h.page_count; ++p) {
    ASSERT_EQ(entry(p).chunk_size, heap::detail::clean_page) << "page " << p;
    ASSERT_EQ(entry(p).fill, 1u) << "page " << p << ": the reservation of the chunk its split takes";
    for (std::uint32_t s = 0; s < heap::detail::max_segments(Config::pagesize); ++s)
      ASSERT_EQ(*Ops::segment_word(h, p, s), 0u) << "page " << p;
  }
  std::uint64_t claims = 0, ops = 0;
  PlayedLane lane = lane_of(0, 0);
  lane.claims = &claims;
  lane.ops = &ops;
  void* p = heap.creation().create(lane, 16);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(claims, 0u) << "a clean page is split by a CAS to its chunk size, not by the claim of I1b";
  EXPECT_EQ(entry(page_of(p)).chunk_size, 16u);
  EXPECT_EQ(entry(page_of(p)).fill, 1u);
  // The CAS that splits the page holds its first reservation already: no
  // atomic on its fill, nor a read of its full marks (I1c).
  EXPECT_LE(ops, 5u) << "the active block's read, the hashed page's size and fill, the CAS that splits it, one bit";
  // A heap of the host's own pool (pages committed on first touch) is left
  // untouched: its pages start at 0 and are split by the claim of I1b.
  ScatterHeap<HostRunner> lazy{std::size_t{4} << 20};
  EXPECT_EQ(lazy.creation().layout().pages[0].chunk_size, 0u);
}

// A run takes its pages by CAS of their chunk sizes (I3); where a clean
// split got in first (between the run's scan and its CASes), it gives that
// page up as split and the pages of its batch back as they were: clean.
TEST_F(CleanPagesTest, ARunThatMeetsACleanSplitGivesItsBatchBackClean) {
  const acc::HostThread host;
  const std::uint32_t first = 32;
  bool won = false;
  ASSERT_EQ(Ops::claim_clean(host, h, first + 2, 64, won), 64u);  // a split between the run's scan and its CASes
  ASSERT_TRUE(won);
  EXPECT_EQ(Multi::take_run(host, h, first, 4, heap::detail::clean_page), 2u);
  for (std::uint32_t k : {0u, 1u, 3u}) {
    EXPECT_EQ(entry(first + k).chunk_size, heap::detail::clean_page) << "page " << k;
    EXPECT_EQ(entry(first + k).fill, 1u) << "page " << k;
    EXPECT_EQ(entry(first + k).mask, 0u) << "page " << k;
  }
  EXPECT_EQ(entry(first + 2).chunk_size, 64u);
  EXPECT_EQ(entry(first + 2).fill, 1u) << "the split's own reservation (I1c)";
  ASSERT_NE(take_held(first + 2, 64), nullptr);
  EXPECT_EQ(take_all(first + 2, 64), heap::detail::page_geometry(Config::pagesize, 64).chunks - 1u);
  // The pages given back are clean: a run over them now succeeds.
  EXPECT_EQ(Multi::take_run(host, h, first + 3, 4, heap::detail::clean_page), 4u);
  EXPECT_EQ(entry(first + 3).chunk_size, heap::detail::multi_page);
  EXPECT_EQ(entry(first + 3).mask, 4u);
  EXPECT_EQ(entry(first + 3).fill, 1u) << "a run's pages keep the fill they had, 1 on a clean page (I3)";
  // A page that another run took meanwhile is a conflict too.
  const std::uint32_t other = 64;
  entry(other + 1).chunk_size = heap::detail::multi_page;
  EXPECT_EQ(Multi::take_run(host, h, other, 3, heap::detail::clean_page), 1u);
  for (std::uint32_t k : {0u, 2u}) EXPECT_EQ(entry(other + k).chunk_size, heap::detail::clean_page) << "page " << k;
  EXPECT_EQ(entry(other + 1).chunk_size, heap::detail::multi_page);
  entry(other + 1).chunk_size = heap::detail::clean_page;
}

// A window that the scan read all clean is taken with one CAS per page; a
// page split meanwhile is a conflict: the pages of its batch go back clean,
// those of the batches before at 0 (which were clean is not kept).
TEST_F(CleanPagesTest, ACleanWindowIsTakenWithOneCasPerPage) {
  std::uint64_t ops = 0;
  PlayedLane lane = lane_of(0, 0);
  lane.ops = &ops;
  const std::uint32_t first = 96, n = 16;
  EXPECT_EQ(Multi::take_run(lane, h, first, n, heap::detail::clean_page), n);
  EXPECT_LE(ops, 2u * n + 1u) << "a CAS and a store (the mask) per page, one region mark";
  for (std::uint32_t k = 0; k < n; ++k) {
    EXPECT_EQ(entry(first + k).chunk_size, heap::detail::multi_page) << "page " << k;
    EXPECT_EQ(entry(first + k).fill, 1u) << "page " << k << ": taken clean (I3)";
  }
  EXPECT_EQ(entry(first).mask, n);
  const acc::HostThread host;
  bool won = false;
  ASSERT_EQ(Ops::claim_clean(host, h, first + n + 10, 256, won), 256u);
  EXPECT_EQ(Multi::take_run(host, h, first + n, 12, heap::detail::clean_page), 10u);
  for (std::uint32_t k = 0; k < 12; ++k) {
    if (k == 10) continue;
    EXPECT_EQ(entry(first + n + k).chunk_size, k < Multi::batch ? 0u : heap::detail::clean_page) << "page " << k;
    EXPECT_EQ(entry(first + n + k).fill, 1u) << "page " << k << ": the clean page's, no reservation (I1)";
  }
  EXPECT_EQ(entry(first + n + 10).chunk_size, 256u);
  // A page at 0 whose fill a clean page left at 1: the claim that splits it
  // sets its fill to 0, and every chunk is handed out.
  EXPECT_EQ(take_all(first + n, 64), heap::detail::page_geometry(Config::pagesize, 64).chunks);
  EXPECT_EQ(entry(first + n).fill, heap::detail::page_geometry(Config::pagesize, 64).chunks);
}

// A window of clean pages and pages at 0 (those of a freed run): the CAS
// from the scan's guess (0) fails on the clean ones, which a second CAS
// from clean_page takes.
TEST_F(CleanPagesTest, AWindowOfCleanPagesAndPagesAtZeroIsTaken) {
  const acc::HostThread host;
  const std::uint32_t first = 160, n = 12;
  for (std::uint32_t k = 0; k < n; k += 3) entry(first + k).chunk_size = 0u;
  EXPECT_EQ(Multi::take_run(host, h, first, n, 0u), n);
  for (std::uint32_t k = 0; k < n; ++k) EXPECT_EQ(entry(first + k).chunk_size, heap::detail::multi_page) << "page " << k;
  EXPECT_EQ(Multi::free(host, h, first, 0), Misuse::none);
  for (std::uint32_t k = 0; k < n; ++k) EXPECT_EQ(entry(first + k).chunk_size, 0u) << "page " << k;
}

// A warp's group on a clean page (group_take.hpp): the leader's CAS splits
// the page and holds its first reservation (I1c), the leader adds the
// group's other n - 1, and every lane gets a chunk of its own: 32 lanes of
// 16 B on one page with one CAS, one addition and one OR; 1 KiB lanes in
// groups of four, a page each.
TEST_F(CleanPagesTest, AGroupOnACleanPageTakesTheSplitsReservationAndTheRest) {
  for (const std::uint32_t size : {16u, 1024u}) {
    std::vector<void*> chunks(32, nullptr);
    std::atomic<std::uint64_t> atomics{0};
    acc::EmulatedGrid grid;
    grid.run(1, 32, [&](const acc::EmulatedThread& a, unsigned t) {
      chunks[t] = heap.creation().create(CountedLane(a, &atomics), size);
    });
    std::vector<void*> sorted = chunks;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_NE(sorted[0], nullptr) << size;
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << size << ": a chunk handed out twice";
    const std::uint32_t per_page = heap::detail::page_geometry(Config::pagesize, size).chunks;
    std::map<std::uint32_t, std::uint32_t> on_page;
    for (void* c : chunks) ++on_page[page_of(c)];
    for (const auto& [page, n] : on_page) {
      EXPECT_EQ(entry(page).chunk_size, size) << "page " << page;
      EXPECT_EQ(entry(page).fill, n) << "page " << page << ": one reservation per chunk handed out";
      EXPECT_EQ(n, std::min(32u, per_page)) << "page " << page;
    }
    if (size == 16u) EXPECT_LE(atomics.load(), 3u) << "the split's CAS, one addition of 31, one OR";
    for (void* c : chunks) heap.creation().destroy(acc::HostThread{}, c);
    for (const auto& [page, n] : on_page) EXPECT_EQ(entry(page).fill, 0u) << "page " << page;
  }
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
}

// A freed run leaves its pages at 0, not clean (I1): their bit-field words
// hold the run's data, which the next split must zero (the claim of I1b).
// Were they taken for clean, the data's set bits would read as taken chunks.
TEST_F(CleanPagesTest, AFreedRunsPagesAreSplitByAClaimThatZeroesThem) {
  const acc::HostThread host;
  void* run = heap.creation().create(host, 4 * Config::pagesize);
  ASSERT_NE(run, nullptr);
  const std::uint32_t first = page_of(run);
  std::memset(run, 0xff, 4 * Config::pagesize);
  heap.creation().destroy(host, run);
  for (std::uint32_t k = 0; k < 4; ++k) {
    EXPECT_EQ(entry(first + k).chunk_size, 0u) << "page " << k;
    std::uint64_t claims = 0;
    PlayedLane lane = lane_of(0, 0);
    lane.claims = &claims;
    EXPECT_EQ(Ops::claim(lane, h, first + k, 16), 16u);
    EXPECT_EQ(claims, 1u);
    std::uint32_t n = 0;
    while (Ops::try_use(host, h, first + k, 16) != nullptr) ++n;
    EXPECT_EQ(n, heap::detail::page_geometry(Config::pagesize, 16).chunks) << "page " << k;
  }
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
}

// A warm heap: the pages that small requests split in an earlier launch stay
// split once their chunks are freed (I2, without resetfreedpages), and the
// small search splits pages from the active block, block 0 first. A run
// starts from the top of the pool and walks down, away from them
// (docs/results/heap/peers/scatter_segment_runs).
TEST_F(CleanPagesTest, ARunInAHeapWhoseLowerPagesAreSplitLooksAtFewPages) {
  ScatterHeap<HostRunner, Config> warm{std::size_t{4} << 20};
  const heap::detail::HeapLayout& w = warm.creation().layout();
  const std::uint32_t split = w.page_count / 2;
  for (std::uint32_t p = 0; p < split; ++p) w.pages[p].chunk_size = 64;  // empty, split for 64 B (I2)
  std::uint64_t ops = 0;
  PlayedLane lane = lane_of(0, 0);
  lane.ops = &ops;
  void* run = warm.creation().create(lane, 2 * Config::pagesize);
  ASSERT_NE(run, nullptr);
  const auto first = static_cast<std::uint32_t>((static_cast<std::byte*>(run) - w.data) / Config::pagesize);
  EXPECT_GE(first, split) << "the run lies above the split pages";
  EXPECT_EQ(w.pages[first].chunk_size, heap::detail::multi_page);
  EXPECT_EQ(w.pages[first + 1].chunk_size, heap::detail::multi_page);
  // The window's two entries read (size and fill of each), two CASes, two
  // masks stored, one region atomic: 9, where a walk up through the split
  // pages takes about a thousand.
  EXPECT_LE(ops, 16u) << "operations of one two-page request; page_count " << w.page_count;
  warm.creation().destroy(lane, run);
  EXPECT_EQ(w.pages[first].chunk_size, 0u);
  EXPECT_EQ(warm.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
}

}  // namespace
}  // namespace manyalloc::heap::testing
