// GoogleTest in the region tests that run under mpiexec: their main() is
// mpi_gtest_main.cpp (see there for which rank prints and how the ranks
// agree on the result).
#pragma once

#include <gtest/gtest.h>

namespace region_test {

// Seconds after which SIGALRM ends the run (a message taken by the wrong
// side leaves a peer waiting; a hang then fails before ctest's timeout);
// 0: no alarm. Every test program defines it.
extern const unsigned alarm_seconds;

}  // namespace region_test

// An mr_status or manyalloc::region::Status compared as a number.
#define EXPECT_STATUS(expr, want) \
  EXPECT_EQ(static_cast<int>(expr), static_cast<int>(want)) << "status of " #expr
