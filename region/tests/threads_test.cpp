// The library is funnelled (region.h, "Threads"): only the thread that called
// mr_init may call it; a call from any other thread fails with MR_ERR_THREAD
// and changes nothing, while the first thread's calls keep working and get
// their own replies. Run with 2 ranks (one scheduler, one worker).
//   The worker's main thread creates a region, then two threads run at the
//   same time: the main thread allocates object_count objects in the region,
//   writes each and checks them; a second thread calls mr_alloc,
//   mr_balloc, mr_ralloc, mr_rfree (of the live region), mr_free (of one
//   of the main thread's objects), mr_sched_stats_get, mr_barrier and
//   mr_finalize again and again: every call must return MR_ERR_THREAD,
//   leave its out argument alone, and mr_last_error() on that thread must
//   name the call and the thread that may call. Afterwards the region is
//   still there, the scheduler counts exactly the main thread's objects,
//   and freeing them all brings the count back to its start.
// Before the check (the library answered any thread) the second thread's
// calls went to the scheduler: the replies were taken by the wrong thread
// (or MPI crashed or hung: an alarm ends a run that hangs).
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "manyalloc/region/region.h"
#include "mpi_gtest.hpp"

const unsigned region_test::alarm_seconds = 100;  // a hang fails before ctest's timeout

namespace {

// Failures of the second thread (it prints each; the test checks the count).
std::atomic<int> thread_failures{0};

constexpr int object_count = 3000;
constexpr int call_count = 3000;

// The second thread: every call is refused with MR_ERR_THREAD.
void intruder(mr_rid_t region, void* victim, const std::atomic<bool>* go, const std::atomic<bool>* stop) {
  while (!go->load()) std::this_thread::yield();
  auto expect = [&](const char* call, mr_status s) {
    if (s != MR_ERR_THREAD) {
      ++thread_failures;
      std::fprintf(stderr, "second thread: %s returned %d (%s), expected MR_ERR_THREAD\n", call, s, mr_strerror(s));
      return;
    }
    const char* e = mr_last_error();
    if (std::strncmp(e, call, std::strlen(call)) != 0 || std::strstr(e, "only thread") == nullptr ||
        std::strstr(e, "mr_init") == nullptr || std::strstr(e, "MPI_THREAD_") == nullptr) {
      ++thread_failures;
      std::fprintf(stderr, "second thread: %s: mr_last_error() = \"%s\"\n", call, e);
    }
  };
  for (int i = 0; i < call_count || !stop->load(); ++i) {
    void* p = nullptr;
    expect("mr_alloc", mr_alloc(64, region, &p));
    if (p != nullptr) {
      ++thread_failures;
      std::fprintf(stderr, "second thread: mr_alloc stored %p\n", p);
    }
    void* objs[4] = {nullptr, nullptr, nullptr, nullptr};
    expect("mr_balloc", mr_balloc(64, region, 4, objs));
    if (objs[0] != nullptr) ++thread_failures;
    mr_rid_t r = 12345;
    expect("mr_ralloc", mr_ralloc(region, MR_NO_HINT, &r));
    if (r != 12345) ++thread_failures;
    if (i % 64 == 0) {
      expect("mr_rfree", mr_rfree(region));
      expect("mr_free", mr_free(victim));
      mr_sched_stats st{};
      expect("mr_sched_stats_get", mr_sched_stats_get(0, &st));
      expect("mr_barrier", mr_barrier());
      expect("mr_finalize", mr_finalize());
      if (mr_is_worker() != 1 || mr_num_workers() != 1) ++thread_failures;  // queries work from any thread
    }
    if (i > 100 * call_count) break;
  }
}

// Main: mpi_gtest_main.cpp (session form); the worker runs it, on the
// thread that called mr_init.
TEST(Threads, OnlyTheInitThreadMayCall) {
  mr_sched_stats before{};
  EXPECT_EQ(mr_sched_stats_get(0, &before), MR_OK);
  mr_rid_t region = 0;
  EXPECT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &region), MR_OK);
  void* victim = nullptr;
  EXPECT_EQ(mr_alloc(64, region, &victim), MR_OK);
  std::atomic<bool> go{false}, stop{false};
  std::thread t(intruder, region, victim, &go, &stop);
  go = true;
  std::vector<std::uint64_t*> objs;
  for (int i = 0; i < object_count; ++i) {
    void* p = nullptr;
    const mr_status s = mr_alloc(64, region, &p);
    EXPECT_EQ(s, MR_OK);
    if (s != MR_OK || p == nullptr) continue;
    auto* q = static_cast<std::uint64_t*>(p);
    for (int w = 0; w < 8; ++w) q[w] = static_cast<std::uint64_t>(i) * 8 + static_cast<std::uint64_t>(w);
    objs.push_back(q);
  }
  stop = true;
  t.join();
  EXPECT_EQ(objs.size(), static_cast<std::size_t>(object_count));
  for (std::size_t i = 0; i < objs.size(); ++i)
    for (int w = 0; w < 8; ++w) EXPECT_EQ(objs[i][w], i * 8 + static_cast<std::uint64_t>(w));
  mr_sched_stats mid{};
  EXPECT_EQ(mr_sched_stats_get(0, &mid), MR_OK);
  EXPECT_EQ(mid.live_objects, before.live_objects + objs.size() + 1);
  EXPECT_EQ(mid.regions, before.regions + 1);
  for (std::uint64_t* q : objs) EXPECT_EQ(mr_free(q), MR_OK);
  EXPECT_EQ(mr_free(victim), MR_OK);
  EXPECT_EQ(mr_rfree(region), MR_OK);
  mr_sched_stats after{};
  EXPECT_EQ(mr_sched_stats_get(0, &after), MR_OK);
  EXPECT_EQ(after.live_objects, before.live_objects);
  EXPECT_EQ(after.regions, before.regions);
  EXPECT_EQ(thread_failures.load(), 0) << "the second thread's calls were not always refused (see above)";
}

}  // namespace
