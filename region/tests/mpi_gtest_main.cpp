// main() of the region tests that run under mpiexec, in two forms
// (tests/CMakeLists.txt):
//   region_gtest_mpi_main      every rank runs the tests, which call mr_init
//                              and mr_finalize themselves;
//   region_gtest_session_main  (REGION_TEST_SESSION=1) mr_init here: the
//                              scheduler ranks serve inside it until the
//                              workers finalise, the workers run the tests,
//                              then every rank calls mr_finalize.
// MPI is initialised here (MPI_THREAD_FUNNELED, as mr_init would) and
// finalised last, so that the ranks can agree on the result after the tests
// (mr_init then leaves MPI's initialisation to us; install/consumer.c and the
// benchmarks keep the path where mr_init initialises MPI).
// One rank prints GoogleTest's output: world rank 0, or worker 0 in the
// session form. The others print only their failed assertions, prefixed
// with their rank. A rank whose own assertion failed exits 1, and so does
// every other rank that ran the tests (the printing rank names the ranks
// that failed), so mpiexec's exit status fails the ctest test.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "manyalloc/region/mpi_interop.h"
#include "mpi_gtest.hpp"

#ifndef REGION_TEST_SESSION
#error "compile with REGION_TEST_SESSION=0 or 1 (tests/CMakeLists.txt)"
#endif

namespace {

// The failed assertions of a rank that does not print the run.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(std::string who) : who_(std::move(who)) {}
  void OnTestStart(const ::testing::TestInfo& t) override {
    test_ = std::string(t.test_suite_name()) + "." + t.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "%s: %s: %s:%d: Failure\n%s\n", who_.c_str(), test_.c_str(),
                 r.file_name() != nullptr ? r.file_name() : "(unknown file)", r.line_number(), r.message());
  }

 private:
  std::string who_;
  std::string test_;
};

// This rank prints GoogleTest's output, or only its own failures.
void choose_printer(bool prints, const std::string& who) {
  if (prints) return;
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new FailurePrinter(who));
}

// 1 on every rank of `comm` when any of them failed; the printing rank
// names those that did.
int agree(bool failed, MPI_Comm comm, bool prints, const char* ranks) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  std::vector<int> all(static_cast<std::size_t>(n));
  int mine = failed ? 1 : 0;
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, comm);
  std::string list;
  for (int i = 0; i < n; ++i)
    if (all[static_cast<std::size_t>(i)] != 0) list += " " + std::to_string(i);
  if (prints && !list.empty()) {
    std::printf("FAILED on %s%s (their failed assertions are in their own output)\n", ranks, list.c_str());
    std::fflush(stdout);
  }
  return list.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // mpiexec gives the ranks a terminal: no colour codes in ctest's log
  // (--gtest_color=yes brings them back).
  GTEST_FLAG_SET(color, "no");
  ::testing::InitGoogleTest(&argc, argv);
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "MPI_Init_thread failed\n");
    return 1;
  }
  alarm(region_test::alarm_seconds);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = 0;
#if REGION_TEST_SESSION
  if (mr_init(&argc, &argv, nullptr) != MR_OK) {
    std::fprintf(stderr, "rank %d: mr_init: %s\n", rank, mr_last_error());
    MPI_Finalize();
    return 1;
  }
  if (mr_is_worker()) {
    const int me = mr_worker_id();
    choose_printer(me == 0, "worker " + std::to_string(me));
    const bool failed = RUN_ALL_TESTS() != 0;
    rc = agree(failed, mr_worker_comm(), me == 0, "worker(s)");
  }
  if (mr_finalize() != MR_OK) {
    std::fprintf(stderr, "rank %d: mr_finalize: %s\n", rank, mr_last_error());
    rc = 1;
  }
#else
  choose_printer(rank == 0, "rank " + std::to_string(rank));
  const bool failed = RUN_ALL_TESTS() != 0;
  rc = agree(failed, MPI_COMM_WORLD, rank == 0, "rank(s)");
#endif
  MPI_Finalize();
  return rc;
}
