// Issue 15: a pool that grows while workers run, through the growth service
// (Allocator::serve_growth, growth_service.hpp, detail/growth_mailbox.hpp),
// on host threads. HostVirtualMemory leaves the unmapped part of the
// reservation inaccessible, so a worker that touched a page before it was
// mapped would crash the test.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <stdexcept>
#include <thread>
#include <vector>

#include "manyalloc/heap/heap.hpp"

namespace manyalloc::heap::testing {
namespace {

using GrowingHeap = Allocator<CreationPolicies::SizeClassSlabs<>, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                              ReservePoolPolicies::HostVirtualMemory, AlignmentPolicies::Shrink<16>>;
static_assert(GrowingHeap::grows_while_running);
using FixedHeap = Allocator<CreationPolicies::SizeClassSlabs<>, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                            ReservePoolPolicies::HostPool, AlignmentPolicies::Shrink<16>>;
static_assert(!FixedHeap::grows_while_running);
static_assert(sizeof(FixedHeap::Handle) == sizeof(CreationPolicies::SizeClassSlabs<>),
              "a handle of a heap that cannot grow while workers run carries nothing for it");

constexpr std::size_t mib = std::size_t{1} << 20;

// Each thread allocates `bytes` until it holds `count` chunks or a request
// fails, writing its tag into every chunk; returns the failures.
struct Worker {
  GrowingHeap::Handle handle;
  std::size_t bytes;
  std::size_t count;
  unsigned char tag;
  std::vector<void*> got;
  std::uint64_t failed = 0;
  void operator()() {
    const acc::HostThread acc;
    for (std::size_t i = 0; i < count; ++i) {
      void* p = handle.alloc(acc, bytes);
      if (p == nullptr) {
        ++failed;
        break;
      }
      std::memset(p, tag, bytes);
      got.push_back(p);
    }
  }
};

std::vector<Worker> run_workers(const GrowingHeap& heap, unsigned threads, std::size_t bytes, std::size_t count) {
  std::vector<Worker> workers;
  for (unsigned t = 0; t < threads; ++t) workers.push_back({heap.handle(), bytes, count, static_cast<unsigned char>(t + 1), {}, 0});
  std::vector<std::thread> pool;
  for (auto& w : workers) pool.emplace_back(std::ref(w));
  for (auto& t : pool) t.join();
  return workers;
}

// Chunks of `bytes` taken through `handle` until a request fails (the pool
// is full and, with a growth service, no growth came in time).
template <class Handle, class Acc>
std::vector<void*> alloc_until_null(const Handle& handle, const Acc& acc, std::size_t bytes = 64 * 1024) {
  std::vector<void*> held;
  while (void* p = handle.alloc(acc, bytes)) held.push_back(p);
  return held;
}

// Every chunk still holds its worker's tag (no two chunks overlap), then all are freed.
void check_and_free(const GrowingHeap& heap, std::vector<Worker>& workers, std::size_t bytes) {
  const acc::HostThread acc;
  const auto handle = heap.handle();
  for (auto& w : workers) {
    for (void* p : w.got) {
      const auto* b = static_cast<const unsigned char*>(p);
      ASSERT_EQ(b[0], w.tag) << "a chunk was overwritten: two chunks overlap";
      ASSERT_EQ(b[bytes - 1], w.tag) << "a chunk was overwritten: two chunks overlap";
      handle.dealloc(acc, p);
    }
  }
}

TEST(SlabGrowthService, WorkersGrowThePoolWhileTheyRun) {
  GrowingHeap heap(512 * mib, 4 * mib);
  const std::size_t before = heap.mapped_bytes();
  heap.serve_growth({.step_bytes = 8 * mib});
  const unsigned threads = 4;
  const std::size_t bytes = 4096, count = 8192;  // 4 x 32 MiB: eight times the first mapping
  auto workers = run_workers(heap, threads, bytes, count);
  for (const auto& w : workers) EXPECT_EQ(w.failed, 0u) << "a request failed though the reservation had room";
  EXPECT_GE(heap.mapped_bytes(), threads * count * bytes) << "the pool did not grow";
  EXPECT_LT(heap.mapped_bytes(), 512 * mib) << "the pool grew far beyond what the workers asked for";
  EXPECT_GT(heap.mapped_bytes(), before);
  const auto st = heap.growth_statistics();
  ASSERT_TRUE(st.has_value());
  EXPECT_GE(st->growths, 2u);
  EXPECT_GT(st->longest_mapping.count(), 0) << "the growths' mapping time is counted";
  EXPECT_GE(st->mapping, st->longest_mapping);
  EXPECT_EQ(st->refusals, 0u);
  check_and_free(heap, workers, bytes);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
  heap.creation().release_open_segments<acc::HostThreads>();
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().pages_in_use, 0u) << "pages were lost";
}

TEST(SlabGrowthService, ALargeRequestGrowsThePoolByWhatItNeeds) {
  GrowingHeap heap(1024 * mib, 4 * mib);
  heap.serve_growth({.step_bytes = 2 * mib});
  const acc::HostThread acc;
  const auto handle = heap.handle();
  void* big = handle.alloc(acc, 300 * mib);
  ASSERT_NE(big, nullptr) << "a request larger than the step must grow the pool by as much";
  std::memset(big, 0x77, 300 * mib);
  EXPECT_GE(heap.mapped_bytes(), 300 * mib);
  EXPECT_LT(heap.mapped_bytes(), 320 * mib);
  handle.dealloc(acc, big);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().pages_in_use, 0u);
}

TEST(SlabGrowthService, AFullReservationFailsWithoutWaiting) {
  GrowingHeap heap(64 * mib, 4 * mib);
  heap.serve_growth({.wait = std::chrono::seconds(30)});
  const acc::HostThread acc;
  const auto handle = heap.handle();
  std::vector<void*> held = alloc_until_null(handle, acc);
  EXPECT_EQ(heap.mapped_bytes(), 64 * mib) << "the whole reservation is mapped before a request fails";
  EXPECT_GT(held.size(), 900u);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(handle.alloc(acc, 64 * 1024), nullptr);
  EXPECT_EQ(handle.alloc(acc, 128 * mib), nullptr) << "more than the reservation";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10))
      << "a request the reservation cannot serve waited for the service";
  for (void* p : held) handle.dealloc(acc, p);
}

TEST(SlabGrowthService, HandlesWithoutAServiceDoNotGrow) {
  GrowingHeap heap(64 * mib, 4 * mib);
  const auto before = heap.handle();  // made before the service: never asks
  heap.serve_growth();
  const acc::HostThread acc;
  std::vector<void*> held = alloc_until_null(before, acc);
  EXPECT_LE(heap.mapped_bytes(), 8 * mib);
  const auto st = heap.growth_statistics();
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->answered, 0u);
  heap.stop_growth_service();
  EXPECT_FALSE(heap.growth_statistics().has_value());
  const auto after = heap.handle();  // no service now
  EXPECT_EQ(after.alloc(acc, 64 * 1024), nullptr);
  heap.serve_growth();
  EXPECT_THROW(heap.serve_growth(), std::logic_error) << "a second service while one runs";
  for (void* p : held) before.dealloc(acc, p);
}

// A stopped service (or one that never answers within the wait) makes the
// workers fail, not hang (M4).
TEST(SlabGrowthService, AWorkerWaitsAtMostTheWait) {
  GrowingHeap heap(64 * mib, 4 * mib);
  heap.serve_growth({.wait = std::chrono::milliseconds(50), .poll = std::chrono::seconds(5)});
  const acc::HostThread acc;
  const auto handle = heap.handle();
  // The service looks for requests far less often than a worker waits, so
  // the first request that needs a growth waits its `wait` and fails.
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<void*> held = alloc_until_null(handle, acc);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4)) << "a worker waited past its limit";
  EXPECT_LE(heap.mapped_bytes(), 8 * mib);
  for (void* p : held) handle.dealloc(acc, p);
}

// A host worker that loses every CAS on the growth lock, as a worker does
// whose rivals take the lock each time just before it, and then finds the
// lock free again when it looks (M4). Past `give_in_after` it wins, so that
// a worker with no limit on that path ends the test instead of hanging it.
struct LosingThread : acc::HostThread {
  const std::uint32_t* lock = nullptr;
  std::chrono::steady_clock::duration give_in_after{};
  mutable std::chrono::steady_clock::time_point first_loss{};
  mutable unsigned losses = 0;
  std::uint32_t atomic_cas(std::uint32_t* p, std::uint32_t expected, std::uint32_t desired) const {
    if (p == lock) {
      const auto now = std::chrono::steady_clock::now();
      if (losses++ == 0) first_loss = now;
      if (now - first_loss < give_in_after) return expected | 1u;  // another worker took it first
    }
    return acc::HostThread::atomic_cas(p, expected, desired);
  }
};
static_assert(acc::SystemScopeWorker<LosingThread>);

TEST(SlabGrowthService, AWorkerThatKeepsLosingTheLockWaitsAtMostTheWait) {
  GrowingHeap heap(64 * mib, 4 * mib);
  heap.serve_growth({.wait = std::chrono::milliseconds(50)});
  const auto handle = heap.handle();
  LosingThread acc;
  acc.lock = heap.creation().growth_lock();
  acc.give_in_after = std::chrono::seconds(5);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<void*> held = alloc_until_null(handle, acc);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GT(acc.losses, 0u) << "no request reached the growth lock";
  EXPECT_GE(took, std::chrono::milliseconds(50)) << "the request failed before its wait ran out";
  EXPECT_LT(took, std::chrono::seconds(2)) << "a worker that lost every CAS on the lock waited past its limit";
  EXPECT_EQ(heap.growth_statistics()->growths, 0u) << "the worker took the lock only once the test gave in";
  EXPECT_LE(heap.mapped_bytes(), 8 * mib);
  for (void* p : held) handle.dealloc(acc::HostThread{}, p);
}

// A wait of 0 (allowed) still lets the first worker post: its own request
// fails at once, and the answer that comes later serves the next requests
// (M4, "an answer that comes after its worker gave up still counts").
TEST(SlabGrowthService, AWaitOfZeroStillPosts) {
  GrowingHeap heap(64 * mib, 4 * mib);
  heap.serve_growth({.wait = std::chrono::nanoseconds(0)});
  const acc::HostThread acc;
  const auto handle = heap.handle();
  std::vector<void*> held = alloc_until_null(handle, acc);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (heap.growth_statistics()->growths == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_GE(heap.growth_statistics()->growths, 1u) << "no request was posted with a wait of 0";
  void* more = handle.alloc(acc, 64 * 1024);
  EXPECT_NE(more, nullptr) << "the late answer's pages were not used";
  if (more != nullptr) held.push_back(more);
  for (void* p : held) handle.dealloc(acc, p);
}

// A step that does not divide the reservation still reaches its end: the
// last request asks for what is left.
TEST(SlabGrowthService, StepsReachTheEndOfTheReservation) {
  GrowingHeap heap(64 * mib, 5 * mib);
  heap.serve_growth({.step_bytes = mib});
  const acc::HostThread acc;
  const auto handle = heap.handle();
  std::vector<void*> held = alloc_until_null(handle, acc);
  EXPECT_EQ(heap.mapped_bytes(), 64 * mib);
  const std::size_t pages = heap.creation().layout().page_count;
  EXPECT_EQ(held.size(), pages) << "every page of the reservation is handed out";
  for (void* p : held) handle.dealloc(acc, p);
}

// A worker that gave up before the answer came (M4): the pages mapped for
// it are used by the next request instead of being skipped for good.
TEST(SlabGrowthService, PagesMappedAfterAWorkerGaveUpAreUsed) {
  GrowingHeap heap(64 * mib, 4 * mib);
  heap.serve_growth({.step_bytes = 8 * mib, .wait = std::chrono::milliseconds(20), .poll = std::chrono::milliseconds(300)});
  const acc::HostThread acc;
  const auto handle = heap.handle();
  std::vector<void*> held = alloc_until_null(handle, acc);  // the first growth times out
  const std::size_t before = held.size();
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the service answers late
  EXPECT_GT(heap.mapped_bytes(), 8 * mib) << "the late answer mapped more";
  void* p = handle.alloc(acc, 64 * 1024);
  ASSERT_NE(p, nullptr) << "pages mapped after the worker gave up stay unused";
  held.push_back(p);
  EXPECT_GT(held.size(), before);
  for (void* q : held) handle.dealloc(acc, q);
}

TEST(SlabGrowthService, ARequestNoGrowthCanServeMapsNothing) {
  GrowingHeap heap(256 * mib, 4 * mib);
  heap.serve_growth();
  const acc::HostThread acc;
  const auto handle = heap.handle();
  const std::size_t before = heap.mapped_bytes();
  for (std::size_t bytes : {SIZE_MAX - 16, SIZE_MAX / 2, std::size_t{257} * mib}) {
    EXPECT_EQ(handle.alloc(acc, bytes), nullptr) << bytes;
  }
  EXPECT_EQ(heap.mapped_bytes(), before) << "a request larger than the reservation mapped memory";
  EXPECT_EQ(heap.growth_statistics()->answered, 0u);
}

TEST(SlabGrowthService, AMovedHeapKeepsItsService) {
  GrowingHeap heap(64 * mib, 4 * mib);
  heap.serve_growth({.step_bytes = 4 * mib});
  GrowingHeap moved(std::move(heap));
  EXPECT_EQ(heap.mapped_bytes(), 0u);  // NOLINT(bugprone-use-after-move): the moved-from state is defined
  EXPECT_FALSE(heap.growth_statistics().has_value());
  heap.stop_growth_service();
  const acc::HostThread acc;
  const auto handle = moved.handle();
  std::vector<void*> held;
  for (int i = 0; i < 256; ++i) {
    void* p = handle.alloc(acc, 64 * 1024);
    ASSERT_NE(p, nullptr) << "16 MiB in a 64 MiB reservation";
    held.push_back(p);
  }
  EXPECT_GE(moved.mapped_bytes(), 16 * mib);
  EXPECT_GE(moved.growth_statistics()->growths, 1u);
  for (void* p : held) handle.dealloc(acc, p);
}

// Fills the mapped part of a heap with no service yet with single pages,
// then frees those of even index: no two free pages side by side. Returns
// the pages still held.
std::vector<void*> scatter_free_pages(const GrowingHeap& heap) {
  const acc::HostThread acc;
  const auto fixed = heap.handle();
  std::vector<void*> pages, kept;
  while (void* p = fixed.alloc(acc, 64 * 1024)) pages.push_back(p);
  const std::byte* data = heap.creation().layout().data;
  for (void* p : pages) {
    if (((static_cast<std::byte*>(p) - data) >> 16) % 2 == 0) fixed.dealloc(acc, p);
    else kept.push_back(p);
  }
  return kept;
}

// Free pages that cannot hold a request (scattered single pages): the
// request tries again while room_for says there are pages, then grows the
// pool instead of failing.
TEST(SlabGrowthService, ARequestBesideScatteredFreePagesGrowsThePool) {
  GrowingHeap heap(256 * mib, 8 * mib);
  const acc::HostThread acc;
  const std::vector<void*> pages = scatter_free_pages(heap);
  ASSERT_GT(pages.size(), 32u);
  const std::size_t before = heap.mapped_bytes();
  heap.serve_growth({.step_bytes = 4 * mib});
  const auto handle = heap.handle();
  EXPECT_TRUE(heap.creation().room_for(acc, 2 * 64 * 1024)) << "free pages for two, though not side by side";
  void* pair = handle.alloc(acc, 2 * 64 * 1024);
  ASSERT_NE(pair, nullptr) << "scattered free pages must not end the request: the pool grows";
  std::memset(pair, 0x11, 2 * 64 * 1024);
  EXPECT_GT(heap.mapped_bytes(), before);
  EXPECT_EQ(heap.growth_statistics()->growths, 1u);
  handle.dealloc(acc, pair);
  for (void* p : pages) handle.dealloc(acc, p);
}

// M5: a request's rounds read the mapped size from the heap's copy in its
// own memory, and only the worker holding the growth lock reads the host's
// words (beside one read of the wait per request for a growth): on the GPU,
// workers that load host memory in a loop make every mapping of the host
// wait (docs/results/heap/growth_while_running). A host worker that counts
// its reads of the host's words with and without the lock held.
struct LockWatchingThread : acc::HostThread {
  const std::uint32_t* lock = nullptr;
  mutable unsigned reads_holding_the_lock = 0;
  mutable unsigned reads_without_the_lock = 0;
  std::uint64_t load_system64(const std::uint64_t* p) const {
    ++((acc::HostThread::load(lock) & 1u) != 0u ? reads_holding_the_lock : reads_without_the_lock);
    return acc::HostThread::load_system64(p);
  }
};
static_assert(acc::SystemScopeWorker<LockWatchingThread>);

TEST(SlabGrowthService, ARequestReadsTheHostsWordsOnlyAsTheLocksHolder) {
  GrowingHeap heap(256 * mib, 8 * mib);
  const std::vector<void*> pages = scatter_free_pages(heap);
  heap.serve_growth({.step_bytes = 4 * mib, .wait = std::chrono::seconds(30)});  // no timeout path, however slow
  const auto handle = heap.handle();
  LockWatchingThread acc;
  acc.lock = heap.creation().growth_lock();
  // Four rounds of retries beside the scattered pages, then one growth.
  void* pair = handle.alloc(acc, 2 * 64 * 1024);
  ASSERT_NE(pair, nullptr);
  EXPECT_EQ(heap.growth_statistics()->growths, 1u);
  EXPECT_EQ(acc.reads_without_the_lock, 1u) << "the rounds or the wait for the lock read the host's words (M5); "
                                               "only the wait may be read without the lock";
  EXPECT_GE(acc.reads_holding_the_lock, 3u) << "the holder reads serving, mapped and answered at least";
  std::memset(pair, 0x44, 2 * 64 * 1024);
  handle.dealloc(acc::HostThread{}, pair);
  for (void* p : pages) handle.dealloc(acc::HostThread{}, p);
}

// A host worker that runs `hook` once, just before its `fire_at`-th read of
// the word `watched` (load64): a test's way to let another worker act at one
// point of a request's rounds.
struct HookedThread : acc::HostThread {
  std::function<void()> hook;
  const std::uint64_t* watched = nullptr;
  unsigned fire_at = 0;
  mutable unsigned reads = 0;
  std::uint64_t load64(const std::uint64_t* p) const {
    if (p == watched && ++reads == fire_at) hook();
    return acc::HostThread::load64(p);
  }
};
static_assert(acc::SystemScopeWorker<HookedThread>);

// A request that used its retries beside scattered free pages while another
// request grew the pool to the whole reservation: it must try the grown
// pool, not give up because it has no growth left to ask for. On the GPU
// (CudaGrowingPool.MixedAndLargeRequestsGrowInOneLaunch) 1 MiB requests gave
// up this way in a pool that had room for them.
TEST(SlabGrowthService, ARequestTriesAPoolAnotherRequestGrew) {
  GrowingHeap heap(16 * mib, 8 * mib);
  const std::vector<void*> pages = scatter_free_pages(heap);
  // One growth maps the whole reservation; no wait times out, however slow the machine.
  heap.serve_growth({.step_bytes = 64 * mib, .wait = std::chrono::seconds(30)});
  const auto handle = heap.handle();
  const std::size_t pair = 2 * 64 * 1024;  // free pages for it, none side by side
  // Each round reads the heap's copy of the mapped end twice (make_room,
  // then extend_mapped_end); the first four rounds end in a retry
  // (room_for). Before the fifth round's first read, another worker's
  // request grows the pool to the whole reservation.
  void* other = nullptr;
  HookedThread acc;
  acc.watched = &heap.creation().layout().shared->mapped_end;
  acc.fire_at = 2 * 4 + 1;
  acc.hook = [&] {
    std::thread([&] { other = handle.alloc(acc::HostThread{}, pair); }).join();
  };
  void* mine = handle.alloc(acc, pair);
  ASSERT_GE(acc.reads, acc.fire_at) << "the request ended before the other one grew the pool";
  ASSERT_NE(other, nullptr) << "the other request grew the pool";
  EXPECT_EQ(heap.mapped_bytes(), 16 * mib);
  EXPECT_EQ(heap.growth_statistics()->growths, 1u);
  ASSERT_NE(mine, nullptr) << "a request gave up though the pool had grown since its last try";
  std::memset(mine, 0x22, pair);
  std::memset(other, 0x33, pair);
  handle.dealloc(acc::HostThread{}, mine);
  handle.dealloc(acc::HostThread{}, other);
  for (void* p : pages) handle.dealloc(acc::HostThread{}, p);
}

// A pool whose memory runs out before its reservation does (the device's
// memory, on the GPU): map() fails above `limit` bytes.
struct LimitedVirtualMemory : ReservePoolPolicies::HostVirtualMemory {
  static inline std::atomic<std::size_t> limit{0};
  static void map(void* pool, std::size_t from, std::size_t to) {
    if (to > limit.load()) throw std::bad_alloc();
    HostVirtualMemory::map(pool, from, to);
  }
  static std::string classname() { return "LimitedVirtualMemory"; }
};

// M3: a refused growth fails the request, and the refusal holds for one
// wait only: once memory is back, the pool grows again.
TEST(SlabGrowthService, ARefusalFailsTheRequestAndExpires) {
  using Heap = Allocator<CreationPolicies::SizeClassSlabs<>, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                         LimitedVirtualMemory, AlignmentPolicies::Shrink<16>>;
  LimitedVirtualMemory::limit = 16 * mib;
  Heap heap(64 * mib, 4 * mib);
  heap.serve_growth({.step_bytes = 4 * mib, .wait = std::chrono::milliseconds(100)});
  const acc::HostThread acc;
  const auto handle = heap.handle();
  std::vector<void*> held = alloc_until_null(handle, acc);
  EXPECT_LE(heap.mapped_bytes(), 16 * mib);
  EXPECT_GE(heap.growth_statistics()->refusals, 1u);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(handle.alloc(acc, 64 * 1024), nullptr) << "while the refusal holds";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(90)) << "a refused need waited";
  LimitedVirtualMemory::limit = 64 * mib;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the refusal expires
  void* p = handle.alloc(acc, 64 * 1024);
  ASSERT_NE(p, nullptr) << "the pool did not grow once memory was back";
  held.push_back(p);
  EXPECT_GT(heap.mapped_bytes(), 16 * mib);
  for (void* q : held) handle.dealloc(acc, q);
}

}  // namespace
}  // namespace manyalloc::heap::testing
