// GoogleTest in the region tests that run under mpiexec: their main() is
// mpi_gtest_main.cpp (see there for which rank prints and how the ranks
// agree on the result).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "manyalloc/region/region.h"

namespace region_test {

// Seconds after which SIGALRM ends the run (a message taken by the wrong
// side leaves a peer waiting; a hang then fails before ctest's timeout);
// 0: no alarm. Every test program defines it.
extern const unsigned alarm_seconds;

}  // namespace region_test

// An mr_status or manyalloc::region::Status compared as a number.
#define EXPECT_STATUS(expr, want) \
  EXPECT_EQ(static_cast<int>(expr), static_cast<int>(want)) << "status of " #expr

namespace region_test {

// The accounting of every scheduler, read by worker 0 between two barriers
// of all workers (empty on the other workers).
inline std::vector<mr_sched_stats> scheduler_accounting() {
  std::vector<mr_sched_stats> all;
  EXPECT_EQ(mr_barrier(), MR_OK);
  if (mr_worker_id() == 0) {
    all.resize(static_cast<std::size_t>(mr_num_schedulers()));
    for (int s = 0; s < mr_num_schedulers(); ++s)
      EXPECT_EQ(mr_sched_stats_get(s, &all[static_cast<std::size_t>(s)]), MR_OK);
  }
  EXPECT_EQ(mr_barrier(), MR_OK);
  return all;
}

// On worker 0: every scheduler counts the regions, live objects and live
// bytes it counted in `start` (scheduler_accounting()). Call on all workers.
inline void expect_accounting_back_to(const std::vector<mr_sched_stats>& start) {
  const std::vector<mr_sched_stats> now = scheduler_accounting();
  for (std::size_t s = 0; s < now.size() && s < start.size(); ++s) {
    EXPECT_EQ(now[s].regions, start[s].regions) << "scheduler " << s;
    EXPECT_EQ(now[s].live_objects, start[s].live_objects) << "scheduler " << s;
    EXPECT_EQ(now[s].live_bytes, start[s].live_bytes) << "scheduler " << s;
  }
}

// Checked builds' stale-write tests (stale_write_test, stale_child_write_test):
// what the stale write stores, and the step after it. Allocates 256 KiB
// objects in `region` until the memory is used up: the scheduler's poison
// check must abort the job with its report when the written slab comes back
// (the test passes on that report); reaching the end of the memory fails.
inline constexpr std::uint64_t stale_write_value = 0x5741'5645'5741'5645ull;
inline void expect_stale_write_reported_on_reuse(mr_rid_t region) {
  int n = 0;
  void* q = nullptr;
  while (mr_alloc(256 * 1024, region, &q) == MR_OK) ++n;
  ADD_FAILURE() << "stale write NOT detected: " << n << " objects of 256 KiB allocated after it ("
                << mr_last_error() << ")";
}

}  // namespace region_test
