// Checked builds: a worker frees a parent region while another worker, to
// which it had sent a child of that parent, still writes into the child
// (zero copy: both write the host's shared object; a case found silently
// corrupting memory before the checked mode, issue 16). Freeing the parent
// frees the child with it (region.h, mr_rfree),
// so the second worker's write goes to freed memory. Before the checked
// mode, the next region that got that memory silently lost those bytes to
// the stale write; now the scheduler poisons the freed memory and checks
// it when it goes to a region again (region/README.md, "Stale region ids
// and memory"), and aborts the job with its report.
//
// 3 ranks (one scheduler, two workers), zero copy, a 16 MiB GAS:
//   worker 0: parent P, child C of P, an object o in C; sends C (with o)
//             to worker 1; frees P once worker 1 holds C;
//   worker 1: writes through o after the free (the stale write);
//   worker 0: allocates 256 KiB objects in a new region until the memory
//             is used up.
// The test passes on the scheduler's report (PASS_REGULAR_EXPRESSION);
// reaching the end of the memory means the stale write went unnoticed.
// Main: mpi_gtest_main.cpp (session form).
#include <mpi.h>

#include <cstdint>

#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.h"
#include "mpi_gtest.hpp"

const unsigned region_test::alarm_seconds = 60;

namespace {

TEST(StaleWrite, AChildWrittenByAnotherWorkerAfterItsParentWasFreedIsReported) {
  ASSERT_EQ(mr_num_workers(), 2);
  MPI_Comm users = mr_worker_comm();
  const int me = mr_worker_id();
  if (me == 0) {
    mr_rid_t parent = 0, child = 0;
    void* o = nullptr;
    ASSERT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &parent), MR_OK) << mr_last_error();
    ASSERT_EQ(mr_ralloc(parent, MR_NO_HINT, &child), MR_OK) << mr_last_error();
    ASSERT_EQ(mr_alloc(64, child, &o), MR_OK) << mr_last_error();
    void* objs[1] = {o};
    ASSERT_EQ(mr_send(1, &child, 1, objs, 1), MR_OK) << mr_last_error();
    MPI_Barrier(users);  // 1: worker 1 holds the child
    ASSERT_EQ(mr_rfree(parent), MR_OK) << mr_last_error();
    MPI_Barrier(users);  // 2: the parent, and the child with it, are freed
    MPI_Barrier(users);  // 3: worker 1 has written
    mr_rid_t next = 0;
    ASSERT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &next), MR_OK) << mr_last_error();
    region_test::expect_stale_write_reported_on_reuse(next);
  } else {
    mr_rid_t got[1] = {};
    void* objs[1] = {};
    int nr = 0, no = 0;
    ASSERT_EQ(mr_recv(0, got, 1, &nr, objs, 1, &no), MR_OK) << mr_last_error();
    ASSERT_EQ(no, 1);
    MPI_Barrier(users);  // 1
    MPI_Barrier(users);  // 2
    *static_cast<volatile std::uint64_t*>(objs[0]) = region_test::stale_write_value;  // the stale write
    MPI_Barrier(users);  // 3
  }
}

}  // namespace
