// The lowmem profile (MANYALLOC_NUMA_PROFILE=lowmem, set by ctest), where a
// heap's owner holds its merge lock during every run operation and freeing
// threads merge for idle owners (invariants.hpp, "Idle-owner merge"). Each test
// here once hung; ctest's timeout turns a hang into a failure.
#include <pthread.h>
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

TEST(LowmemApi, ProfileIsLowmem) { EXPECT_STREQ(stats().profile, "lowmem"); }

// Issue 19: lowmem gives memory back soon, but not on every free (before:
// one madvise or munmap per iteration of the churn loop).
TEST(LowmemApi, ChurnLoopGivesBackRarelyAndTrimGivesItAll) { expect_churn_gives_back_rarely(); }

// A large block freed is kept for the next one, then unmapped once it has
// been cached for the decay delay of large blocks (options.hpp,
// large_decay_ms_lowmem; the sleep below must outlast it) at the source's
// next operation; the resident set does not keep what the loop stopped using.
TEST(LowmemApi, CachedLargeBlockDecays) {
  manyalloc_numa_trim();
  void* last = nullptr;
  churn(300000, 100, &last);
  EXPECT_TRUE(resident(last));
  const std::uint64_t decayed = stats().decayed_segments;
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  void* other = manyalloc_numa_malloc(5u << 20);  // the source's next operation
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(stats().decayed_segments, decayed + 1);
  EXPECT_FALSE(resident(last));
  manyalloc_numa_free(other);
}

// After a migration the heap takes its segments from a node source, which
// binds each new one to its node under the heap's merge lock. hwloc's
// binding call allocated (calloc), and that allocation waited for the lock
// its own thread held.
TEST(LowmemApi, AllocatingAfterMigratingToANodeDoesNotWaitForItself) {
  if (manyalloc_numa_thread_migrate(0) != 0) GTEST_SKIP() << "no topology (hwloc not found)";
  manyalloc_numa_trim();  // empty free caches: the allocations below reach the runs
  std::vector<void*> v;
  for (int i = 0; i < 400; ++i) {  // more than one segment of 20 000-byte chunks
    void* p = manyalloc_numa_malloc(20000);
    ASSERT_NE(p, nullptr);
    std::memset(p, 1, 64);
    v.push_back(p);
  }
  for (void* p : v) manyalloc_numa_free(p);
  EXPECT_EQ(manyalloc_numa_thread_migrate(-1), 0);
}

// A thread's heap becomes an orphan when it exits; another thread frees its
// chunks and, as their queue grows, merges it for the absent owner. A fork
// during such a merge copied the orphan's merge lock taken, and the child's
// first new thread, which adopts the orphan, waited for it forever.
TEST(LowmemApi, ForkedChildAdoptsAnOrphanThatWasBeingMerged) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizer's own allocator may be locked by another thread (here:
  // std::thread's start-up) at the fork, and the child's pthread_create
  // then waits for it forever (seen with GCC 12's AddressSanitizer).
  GTEST_SKIP() << "the sanitizer's allocator is not fork-safe while other threads allocate";
#endif
  constexpr int chunk_count = 1 << 15;
  std::vector<void*> chunks(chunk_count);
  int forks = 0, bad_children = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (int round = 0; round < 50 && std::chrono::steady_clock::now() < until; ++round) {
    // The freer makes its heap first: a thread without one would adopt the
    // orphan whose chunks it frees (runtime.hpp, heap_for_free), and its
    // frees would be its own instead of frees into an orphan.
    std::atomic<bool> ready{false}, go{false}, done{false};
    std::thread freer([&] {
      manyalloc_numa_free(manyalloc_numa_malloc(64));
      ready.store(true);
      while (!go.load()) std::this_thread::yield();
      for (void* p : chunks) manyalloc_numa_free(p);
      done.store(true);
    });
    while (!ready.load()) std::this_thread::yield();
    std::thread([&] {
      for (void*& p : chunks) p = manyalloc_numa_malloc(256);
    }).join();
    go.store(true);
    while (!done.load()) {
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        alarm(10);
        pthread_t t;
        auto body = [](void*) -> void* {
          for (int i = 0; i < 1000; ++i) manyalloc_numa_free(manyalloc_numa_malloc(64));
          return nullptr;
        };
        if (pthread_create(&t, nullptr, body, nullptr) != 0) _exit(2);
        pthread_join(t, nullptr);
        _exit(0);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      ++forks;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++bad_children;
    }
    freer.join();
  }
  EXPECT_GT(forks, 0);
  std::printf("%d forks while an orphan was being freed\n", forks);
  EXPECT_EQ(bad_children, 0) << "of " << forks << " forked children";
  EXPECT_GT(stats().idle_merges, 0u);
}

}  // namespace
}  // namespace manyalloc::numa::test
