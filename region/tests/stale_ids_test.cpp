// Region ids carry a generation (invariants.hpp): the id of a freed region
// fails with MR_ERR_NO_REGION forever, also after its slot was reused. Run
// with 5 ranks, 2 levels, fanout 2 (schedulers 0, 1, 2; one worker on each
// leaf), in both transfer modes.
//   Each worker creates a region, keeps its id (`first`) and frees it, then
//   creates and frees a region cycle_count times (more than the 1024 ids a leaf
//   holds, so every slot of the leaf is reused): after every cycle mr_alloc
//   with `first` must fail with MR_ERR_NO_REGION, and every 256 cycles (and
//   at the end) all the calls that take a region id (mr_alloc, mr_balloc,
//   mr_ralloc with it as parent, mr_rfree, mr_realloc into it) too, while a
//   live region keeps working (objects allocated, written and checked).
//   The workers then swap their stale ids (other leaf: routed through the
//   top scheduler) and check them the same way; worker 0 mr_sends its stale
//   id to worker 1: both get MR_ERR_NO_REGION. A stale id of a region on
//   the top scheduler (level hint 0) fails too. Accounting at the end equals
//   the start.
// Before generations, the leaf handed the first id out again after 1024
// cycles and mr_alloc with it succeeded in another region.
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.h"
#include "mpi_gtest.hpp"

const unsigned region_test::alarm_seconds = 110;  // a hang fails before ctest's timeout

namespace {

constexpr int cycle_count = 3000;

// Every call that takes a region id fails with MR_ERR_NO_REGION for `stale`
// (mr_realloc of live_obj into it when live_obj is given).
void expect_stale(mr_rid_t stale, void* live_obj) {
  void* p = nullptr;
  EXPECT_EQ(mr_alloc(64, stale, &p), MR_ERR_NO_REGION);
  EXPECT_EQ(p, nullptr);
  void* objs[3] = {nullptr, nullptr, nullptr};
  EXPECT_EQ(mr_balloc(128, stale, 3, objs), MR_ERR_NO_REGION);
  EXPECT_EQ(objs[0], nullptr);
  mr_rid_t child = 0;
  EXPECT_EQ(mr_ralloc(stale, MR_NO_HINT, &child), MR_ERR_NO_REGION);
  EXPECT_EQ(mr_rfree(stale), MR_ERR_NO_REGION);
  void* moved = nullptr;
  if (live_obj != nullptr) {
    EXPECT_EQ(mr_realloc(live_obj, 4096, stale, &moved), MR_ERR_NO_REGION);
  }
}

// The live region works: n objects allocated, written, read back, freed.
void use_live(mr_rid_t live, int n) {
  std::vector<void*> objs(static_cast<std::size_t>(n));
  EXPECT_EQ(mr_balloc(64, live, n, objs.data()), MR_OK);
  for (int i = 0; i < n; ++i) *static_cast<std::uint64_t*>(objs[static_cast<std::size_t>(i)]) = 1000u + static_cast<std::uint64_t>(i);
  for (int i = 0; i < n; ++i) EXPECT_EQ(*static_cast<std::uint64_t*>(objs[static_cast<std::size_t>(i)]), 1000u + static_cast<std::uint64_t>(i));
  for (void* o : objs) EXPECT_EQ(mr_free(o), MR_OK);
}

// Main: mpi_gtest_main.cpp (session form); runs on every worker.
TEST(StaleIds, FailForeverAfterTheirSlotIsReused) {
  const int me = mr_worker_id();
  const int nw = mr_num_workers();
  const std::vector<mr_sched_stats> start = region_test::scheduler_accounting();

  mr_rid_t live = 0, first = 0;
  EXPECT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &live), MR_OK);
  void* live_obj = nullptr;
  EXPECT_EQ(mr_alloc(64, live, &live_obj), MR_OK);
  *static_cast<std::uint64_t*>(live_obj) = 42;
  EXPECT_EQ(mr_ralloc(live, MR_NO_HINT, &first), MR_OK);
  EXPECT_EQ(mr_rfree(first), MR_OK);
  expect_stale(first, live_obj);
  for (int i = 1; i <= cycle_count; ++i) {
    mr_rid_t r = 0;
    EXPECT_EQ(mr_ralloc(live, MR_NO_HINT, &r), MR_OK);
    EXPECT_NE(r, first);
    void* p = nullptr;
    EXPECT_EQ(mr_alloc(64, first, &p), MR_ERR_NO_REGION);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(mr_rfree(r), MR_OK);
    if (HasFailure()) break;  // the first failed cycle says enough
    if (i % 256 == 0 || i == cycle_count) {
      expect_stale(first, live_obj);
      use_live(live, 16);
    }
  }
  EXPECT_EQ(*static_cast<std::uint64_t*>(live_obj), 42u);

  // A stale id of a region on the top scheduler.
  mr_rid_t top = 0;
  EXPECT_EQ(mr_ralloc(MR_ROOT_REGION, 0, &top), MR_OK);
  EXPECT_EQ(mr_rfree(top), MR_OK);
  expect_stale(top, live_obj);

  // The other worker's stale id (other leaf when there are two).
  if (nw >= 2 && me < 2) {
    std::uint64_t mine = first, theirs = 0;
    MPI_Sendrecv(&mine, 1, MPI_UINT64_T, 1 - me, 0, &theirs, 1, MPI_UINT64_T, 1 - me, 0, mr_worker_comm(),
                 MPI_STATUS_IGNORE);
    expect_stale(theirs, live_obj);
    // Sending a stale region: both sides get the error.
    if (me == 0) {
      EXPECT_EQ(mr_send(1, &first, 1, nullptr, 0), MR_ERR_NO_REGION);
    } else {
      mr_rid_t got[1] = {0};
      int n = -1;
      EXPECT_EQ(mr_recv(0, got, 1, &n, nullptr, 0, nullptr), MR_ERR_NO_REGION);
    }
  }
  use_live(live, 100);
  EXPECT_EQ(mr_rfree(live), MR_OK);
  expect_stale(live, nullptr);

  region_test::expect_accounting_back_to(start);
  if (me == 0) std::printf("stale ids: %d workers, %d cycles each\n", nw, cycle_count);
}

}  // namespace
