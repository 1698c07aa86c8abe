// The public interface doing its job: contents across realloc, calloc,
// threads (cross-thread frees, exit and re-creation), fork, statistics, the
// NUMA calls on this machine, C++ new/delete.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "api_test_util.hpp"

namespace manyalloc::numa::test {
namespace {

void fill(void* p, std::size_t n, unsigned seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; i += 509) b[i] = static_cast<unsigned char>(seed + i / 509);
  if (n) b[n - 1] = static_cast<unsigned char>(seed ^ 0x5a);
}
bool check(const void* p, std::size_t n, unsigned seed) {
  auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i + 1 < n; i += 509)
    if (b[i] != static_cast<unsigned char>(seed + i / 509)) return false;
  return n == 0 || b[n - 1] == static_cast<unsigned char>(seed ^ 0x5a) || n % 509 == 1;
}

TEST(Api, ReallocKeepsContentsAcrossEveryTransition) {
  for (const Entry* e : entries()) {
    SCOPED_TRACE(e->name);
    const std::size_t steps[] = {1, 24, 100, 4000, 70000, 300000, 5 << 20, 20 << 20, 21 << 20,
                                 45 << 20, 20 << 20, 200000, 3000, 10};
    std::size_t cur = 0;
    void* p = nullptr;
    unsigned seed = 7;
    for (std::size_t n : steps) {
      void* q = e->realloc_(p, n);
      ASSERT_NE(q, nullptr) << n;
      const std::size_t keep = cur < n ? cur : n;
      if (keep) {
        // The prefix written before must have survived.
        auto* b = static_cast<unsigned char*>(q);
        for (std::size_t i = 0; i + 1 < keep; i += 509)
          ASSERT_EQ(b[i], static_cast<unsigned char>(seed + i / 509)) << n << " " << i;
      }
      ++seed;
      fill(q, n, seed);
      ASSERT_TRUE(check(q, n, seed));
      ASSERT_GE(e->usable_(q), n);
      p = q;
      cur = n;
    }
    e->free_(p);
  }
}

TEST(Api, CallocIsZeroEvenOnRecycledMemory) {
  for (const Entry* e : entries()) {
    SCOPED_TRACE(e->name);
    for (std::size_t n : {std::size_t{40}, std::size_t{3000}, std::size_t{200000},
                          std::size_t{3} << 20, std::size_t{24} << 20}) {
      for (int round = 0; round < 3; ++round) {
        void* p = e->malloc_(n);
        std::memset(p, 0xFF, n);
        e->free_(p);
        auto* z = static_cast<unsigned char*>(e->calloc_(n, 1));
        ASSERT_NE(z, nullptr);
        for (std::size_t i = 0; i < n; i += 97) ASSERT_EQ(z[i], 0) << n << " " << i;
        ASSERT_EQ(z[n - 1], 0);
        e->free_(z);
      }
    }
  }
}

TEST(Api, LargeAllocationsAreRecycledAndNotAliased) {
  const auto before = stats();
  std::vector<void*> v;
  for (int i = 0; i < 8; ++i) v.push_back(manyalloc_numa_malloc(8 << 20));
  for (std::size_t i = 0; i < v.size(); ++i)
    for (std::size_t j = i + 1; j < v.size(); ++j)
      if (reinterpret_cast<std::uintptr_t>(v[i]) % 4096 == reinterpret_cast<std::uintptr_t>(v[j]) % 4096)
        ADD_FAILURE() << "arrays " << i << " and " << j << " share their offset modulo 4 KiB";
  for (void* p : v) std::memset(p, 1, 8 << 20);
  for (void* p : v) manyalloc_numa_free(p);
  for (int i = 0; i < 8; ++i) v[i] = manyalloc_numa_malloc(8 << 20);
  const auto after = stats();
  if (std::string(after.profile) != "lowmem") {
    EXPECT_GE(after.sources[0].reuses - before.sources[0].reuses, 8u);
    EXPECT_GE(after.faults_avoided - before.faults_avoided, 8u * (8 << 20) / 4096 - 64);
  }
  for (void* p : v) manyalloc_numa_free(p);
}

TEST(Api, CrossThreadFreesThreadExitAndRecreation) {
  const auto before = stats();
  for (int round = 0; round < 5; ++round) {
    std::vector<void*> made(4000);
    std::thread producer([&] {
      for (std::size_t i = 0; i < made.size(); ++i) {
        made[i] = manyalloc_numa_malloc(16 + (i % 50) * 24);
        fill(made[i], 16 + (i % 50) * 24, static_cast<unsigned>(i));
      }
    });
    producer.join();  // the producer exits: its heap becomes an orphan
    std::thread consumer([&] {
      for (std::size_t i = 0; i < made.size(); ++i) {
        ASSERT_TRUE(check(made[i], 16 + (i % 50) * 24, static_cast<unsigned>(i)));
        manyalloc_numa_free(made[i]);
      }
    });
    consumer.join();
  }
  const auto after = stats();
  // Heaps are adopted, not multiplied: a handful at most for 10 threads.
  EXPECT_LE(after.heaps - before.heaps, 3u);
  EXPECT_GE(after.orphan_heaps, 1u);
  EXPECT_EQ(after.misuses, before.misuses);
}

TEST(Api, StatisticsMoveWithAllocations) {
  const auto a = stats();
  std::vector<void*> v;
  for (int i = 0; i < 1000; ++i) v.push_back(manyalloc_numa_malloc(1000));
  void* big = manyalloc_numa_malloc(10 << 20);
  const auto b = stats();
  EXPECT_GE(b.small_in_use_bytes, a.small_in_use_bytes + 1000 * 1000);
  EXPECT_GE(b.large_in_use_bytes, a.large_in_use_bytes + (10 << 20));
  EXPECT_GT(b.mapped_bytes, 0u);
  EXPECT_GT(b.metadata_bytes, 0u);
  EXPECT_GE(b.nsources, 1u);
  EXPECT_EQ(b.sources[0].node, -1);
  for (int i = 1; i < MANYALLOC_NUMA_MAX_SOURCES; ++i) EXPECT_EQ(b.sources[i].node, i - 1);
  std::thread t([&] {
    for (void* p : v) manyalloc_numa_free(p);
  });
  t.join();
  manyalloc_numa_trim();  // merges the remote free queue (as does the next run refill)
  const auto c = stats();
  EXPECT_GE(c.remote_frees, a.remote_frees + 1000);
  manyalloc_numa_free(big);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  manyalloc_numa_print_stats(fds[1]);
  close(fds[1]);
  char buf[512] = {};
  ASSERT_GT(read(fds[0], buf, sizeof buf - 1), 0);
  close(fds[0]);
  EXPECT_NE(std::strstr(buf, "manyalloc-numa statistics"), nullptr);
  manyalloc_numa_trim();
  EXPECT_EQ(stats().cached_bytes, 0u);
}

// Issue 19: no free gives memory back to the OS on every call.
TEST(Api, ChurnLoopGivesBackRarelyAndTrimGivesItAll) { expect_churn_gives_back_rarely(); }

TEST(Api, AThreadThatOnlyAllocatesLargeBlocksMakesNoHeap) {
  const auto before = stats();
  if (std::strcmp(before.profile, "numa") == 0) GTEST_SKIP() << "numa makes the heap to pick the source";
  manyalloc_numa_stats during{};
  bool ok = false;
  std::thread t([&] {
    void* big = manyalloc_numa_malloc(4 << 20);
    if (big == nullptr) return;
    std::memset(big, 1, 4 << 20);
    big = manyalloc_numa_realloc(big, 8 << 20);
    ok = big != nullptr && static_cast<unsigned char*>(big)[(4 << 20) - 1] == 1;
    during = stats();
    manyalloc_numa_free(big);
  });
  t.join();
  EXPECT_TRUE(ok);
  // A heap would have been made (heaps + 1) or adopted (orphan_heaps - 1).
  EXPECT_EQ(during.heaps, before.heaps);
  EXPECT_EQ(during.orphan_heaps, before.orphan_heaps);
}

// A thread that frees another thread's small chunks without having
// allocated makes or adopts a heap (runtime.hpp, heap_for_free), so that its
// frees are gathered in remote batches (not in check mode, which ctest
// turns off here: no batches there).
TEST(Api, AThreadThatFreesOtherThreadsChunksHasAHeapForItsBatches) {
  const char* check = std::getenv("MANYALLOC_NUMA_CHECK");
  ASSERT_TRUE(check != nullptr && std::strcmp(check, "0") == 0);
  void* p = manyalloc_numa_malloc(64);
  ASSERT_NE(p, nullptr);
  const auto before = stats();
  manyalloc_numa_stats during{};
  std::thread t([&] {
    manyalloc_numa_free(p);
    during = stats();
  });
  t.join();
  const std::uint32_t live_before = before.heaps - before.orphan_heaps;
  const std::uint32_t live_during = during.heaps - during.orphan_heaps;
  EXPECT_EQ(live_during, live_before + 1);
  EXPECT_EQ(stats().misuses, before.misuses);
}

TEST(Api, ForkedChildAllocatesWhileParentThreadsRun) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (int t = 0; t < 2; ++t)
    busy.emplace_back([&] {
      while (!stop.load()) manyalloc_numa_free(manyalloc_numa_malloc(3 << 20));
    });
  for (int i = 0; i < 5; ++i) {
    void* before = manyalloc_numa_malloc(100);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::vector<void*> v;
      for (int k = 0; k < 10000; ++k) v.push_back(manyalloc_numa_malloc(k % 3000 + 1));
      for (void* p : v) manyalloc_numa_free(p);
      void* big = manyalloc_numa_realloc(manyalloc_numa_malloc(5 << 20), 50 << 20);
      manyalloc_numa_free(big);
      manyalloc_numa_free(before);
      _exit(big != nullptr ? 0 : 3);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    manyalloc_numa_free(before);
  }
  stop = true;
  for (auto& t : busy) t.join();
}

// Fills 6 MiB of 2 KiB chunks (below the shared allowance's 8 MiB floor)
// and frees them all but the first chunk of each 2 MiB segment, which
// keeps its segment with the heap: the heap then holds far more idle pages
// than its own budget, on the shared allowance (numa/README.md, "Giving
// memory back"). Returns the chunks kept.
std::vector<void*> burst_keeping_one_per_segment() {
  constexpr std::size_t chunk = 2048, per_segment = (2u << 20) / chunk;
  std::vector<void*> all, kept;
  for (std::size_t i = 0; i < 3 * per_segment; ++i) {
    void* p = manyalloc_numa_malloc(chunk);
    if (p == nullptr) break;
    std::memset(p, 9, chunk);
    all.push_back(p);
  }
  for (std::size_t i = 0; i < all.size(); ++i)
    if (i % per_segment == 0) kept.push_back(all[i]);
    else manyalloc_numa_free(all[i]);
  return kept;
}

// stats() initializes the library (its profile is read then).
bool keeps_idle_pages_for_other_threads() { return std::strcmp(stats().profile, "lowmem") != 0; }

// malloc_trim gives back every idle page, those that exited threads left to
// the threads that will adopt their heaps too (they stayed resident before).
TEST(Api, TrimGivesBackTheIdlePagesThatExitedThreadsLeft) {
  if (!keeps_idle_pages_for_other_threads()) GTEST_SKIP() << "lowmem keeps none for other threads";
  std::vector<void*> kept;
  std::thread([&] { kept = burst_keeping_one_per_segment(); }).join();
  ASSERT_FALSE(kept.empty());
  const auto before = stats();
  ASSERT_GT(before.orphan_heaps, 0u);
  ASSERT_GT(before.shared_idle_bytes, 0u) << "the exited thread's idle pages are kept for the next";
  EXPECT_LE(before.shared_idle_bytes, before.shared_idle_cap_bytes);
  manyalloc_numa_trim();
  EXPECT_EQ(stats().shared_idle_bytes, 0u) << "malloc_trim gives them back, the orphans' too";
  for (void* p : kept) manyalloc_numa_free(p);
}

// A forked child has only the forking thread: the idle pages the other
// live threads kept on the shared allowance are not the child's (their
// heaps are never adopted there), and their shares must not stay counted,
// or the child's heaps would find the allowance taken.
TEST(Api, AForkedChildDropsTheIdleSharesOfTheThreadsItDoesNotHave) {
  if (!keeps_idle_pages_for_other_threads()) GTEST_SKIP() << "lowmem keeps none for other threads";
  std::atomic<int> phase{0};
  std::vector<void*> kept;
  std::thread holder([&] {
    kept = burst_keeping_one_per_segment();
    phase.store(1);
    while (phase.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  // The holder ends on every path out of the test, failed assertions too.
  struct Release {
    std::atomic<int>& phase;
    std::thread& holder;
    ~Release() {
      phase.store(2);
      if (holder.joinable()) holder.join();
    }
  } release{phase, holder};
  while (phase.load() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  manyalloc_numa_trim();  // what is left on the allowance is the live thread's share
  ASSERT_GT(stats().shared_idle_bytes, 0u) << "the live thread's idle pages";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);  // a child that hangs ends instead of the parent's wait
    manyalloc_numa_trim();
    _exit(stats().shared_idle_bytes == 0 ? 0 : 5);
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  for (void* p : kept) manyalloc_numa_free(p);  // written before phase 1; the holder only waits now
}

TEST(Api, NumaCallsOnThisMachine) {
  const int nodes = manyalloc_numa_node_count();
  ASSERT_GE(nodes, 1);
  void* p = manyalloc_numa_malloc_onnode(1 << 20, 0);
  ASSERT_NE(p, nullptr);
  std::memset(p, 3, 1 << 20);
  EXPECT_GE(manyalloc_numa_usable_size(p), 1u << 20);
  EXPECT_GT(stats().sources[1].mapped_bytes, 0u);  // node 0's source
  manyalloc_numa_free(p);
  errno = 0;
  EXPECT_EQ(manyalloc_numa_malloc_onnode(100, nodes), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(manyalloc_numa_malloc_onnode(100, -1), nullptr);
  std::thread t([&] {
    void* a = manyalloc_numa_malloc(100);
    EXPECT_EQ(manyalloc_numa_thread_migrate(0), 0);
    EXPECT_EQ(manyalloc_numa_thread_node(), 0);
    void* b = manyalloc_numa_malloc(100);
    EXPECT_EQ(manyalloc_numa_thread_migrate(-1), 0);
    EXPECT_EQ(manyalloc_numa_thread_node(), -1);
    errno = 0;
    EXPECT_EQ(manyalloc_numa_thread_migrate(nodes + 5), -1);
    EXPECT_EQ(errno, EINVAL);
    const int n = manyalloc_numa_thread_rebind();
    EXPECT_TRUE(n == -1 || (n >= 0 && n < nodes));
    manyalloc_numa_free(a);
    manyalloc_numa_free(b);
  });
  t.join();
}

struct alignas(256) Wide {
  char bytes[256];
};

TEST(Api, OwnsAnswersForChunkStartsOnly) {
  char* p = static_cast<char*>(manyalloc_numa_malloc(96));
  char* big = static_cast<char*>(manyalloc_numa_malloc(3 << 20));
  EXPECT_EQ(manyalloc_numa_owns(p), 1);
  EXPECT_EQ(manyalloc_numa_owns(big), 1);
  EXPECT_EQ(manyalloc_numa_owns(p + 16), 0);
  EXPECT_EQ(manyalloc_numa_owns(big + 4096), 0);
  int local = 0;
  EXPECT_EQ(manyalloc_numa_owns(&local), 0);
  // Another thread's chunk: "a chunk start in a live run" only.
  std::thread([p] { EXPECT_EQ(manyalloc_numa_owns(p), 1); }).join();
  manyalloc_numa_free(p);  // now in this thread's free cache
  EXPECT_EQ(manyalloc_numa_owns(p), 0);
  manyalloc_numa_free(big);
}

TEST(Api, CxxNewDeleteAllFormsReachThisAllocator) {
  if (!standard_names_are_ours()) GTEST_SKIP() << "operator new is not ours (sanitizer runtime)";
  const auto before = stats();
  int* a = new int(5);
  int* b = new int[100];
  Wide* w = new Wide;
  Wide* wa = new Wide[3];
  int* n = new (std::nothrow) int[10];
  void* raw = ::operator new(1000, std::align_val_t{4096});
  const void* all[] = {a, b, w, n, raw};
  for (const void* p : all)
    EXPECT_TRUE(manyalloc_numa_owns(p)) << p;
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(w) % 256, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(wa) % 256, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(raw) % 4096, 0u);
  delete a;
  delete[] b;
  delete w;
  delete[] wa;
  delete[] n;
  ::operator delete(raw, 1000, std::align_val_t{4096});
  void* s = ::operator new(64);
  ::operator delete(s, 64);
  void* t = ::operator new[](64, std::nothrow);
  ::operator delete[](t, std::nothrow);
  EXPECT_EQ(stats().misuses, before.misuses);
}

}  // namespace
}  // namespace manyalloc::numa::test
