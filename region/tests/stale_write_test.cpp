// Checked builds: memory of a freed region is poisoned by its scheduler and
// checked when it goes to a region again (region/README.md, "Stale region
// ids and memory"), so a write through a stale pointer is reported instead
// of silently corrupting the next region's objects. Run with 2 ranks (one
// scheduler, one worker), zero copy (the scheduler shares the worker's GAS
// object), a 16 MiB GAS: the worker allocates an object in a region, frees
// the region, writes through the stale pointer, and then allocates 256 KiB
// objects in a new region until the memory is used up. The scheduler must
// abort the job with its report when the written slab comes back; the test
// passes on that report (PASS_REGULAR_EXPRESSION). Reaching the end of the
// memory means the stale write went unnoticed: the test fails without the
// report. Main: mpi_gtest_main.cpp (session form).
#include <cstdint>

#include "manyalloc/region/region.h"
#include "mpi_gtest.hpp"

const unsigned region_test::alarm_seconds = 60;

namespace {

TEST(StaleWrite, IsReportedWhenTheMemoryIsReused) {
  mr_rid_t r = 0, r2 = 0;
  void* p = nullptr;
  ASSERT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &r), MR_OK) << mr_last_error();
  ASSERT_EQ(mr_alloc(64, r, &p), MR_OK) << mr_last_error();
  ASSERT_EQ(mr_rfree(r), MR_OK) << mr_last_error();
  ASSERT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &r2), MR_OK) << mr_last_error();
  *static_cast<volatile std::uint64_t*>(p) = region_test::stale_write_value;  // the stale write
  region_test::expect_stale_write_reported_on_reuse(r2);
}

}  // namespace
