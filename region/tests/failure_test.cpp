// A rank that dies mid-run (region.h, "Failures"): the survivors get
// MR_ERR_PEER_FAILED from the calls that need it, and every rank that is
// left gets through mr_finalize, instead of a hang. Before: the survivors
// waited forever (ctest's timeout) once the launcher let them live.
//
//   region_failure_test worker-exit   worker 0 exits without mr_finalize
//   region_failure_test worker-killed worker 0 is killed (SIGKILL) by worker 1
//   region_failure_test leaf-killed   leaf scheduler 2 is killed (SIGKILL)
//   region_failure_test leaf-exit     leaf scheduler 2 exits mid-run (_exit
//                                     on SIGUSR1; MPICH 4.0's launcher does
//                                     not outlive a SIGKILLed rank)
//
// 7 ranks, MANYALLOC_REGION_LEVELS=2, FANOUT=2: schedulers 0 (top), 1 and
// 2 (leaves); workers 0, 1 (ranks 3, 4) on leaf 1, workers 2, 3 (ranks 5,
// 6) on leaf 2. The launcher must keep the job alive when a rank dies
// (OpenMPI: --enable-recovery; MPICH: -disable-auto-cleanup). Every rank
// that is left prints "CHECK rank R: ok" or "CHECK rank R: FAIL ...";
// expect_lines.sh counts them.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.h"

namespace {

std::string problems;

void expect(bool ok, const char* what) {
  if (ok) return;
  problems += " [";
  problems += what;
  problems += ": ";
  problems += mr_last_error();
  problems += "]";
}

void expect_status(mr_status got, mr_status want, const char* what) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s returned %d (%s), expected %d", what, static_cast<int>(got), mr_strerror(got),
                static_cast<int>(want));
  expect(got == want, buf);
}

void expect_reason(const char* needle, const char* what) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: mr_last_error lacks \"%s\"", what, needle);
  expect(std::strstr(mr_last_error(), needle) != nullptr, buf);
}

// Worker 0 leaves mid-run: it exits (without mr_finalize), or, when
// `killed`, worker 1 kills it (in its next library call, or before it).
void worker_gone(int me, const std::vector<long>& pids, bool killed) {
  mr_rid_t r = 0;
  void* p = nullptr;
  expect_status(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &r), MR_OK, "mr_ralloc");
  expect_status(mr_alloc(64, r, &p), MR_OK, "mr_alloc");
  expect_status(mr_barrier(), MR_OK, "mr_barrier before the exit");
  // Worker 0 leaves only once workers 1-3 are out of that barrier (a rank
  // still inside it would rightly see the failure there): they tell the
  // rank that ends it, worker 0 itself or, when `killed`, worker 1.
  MPI_Comm users = mr_worker_comm();
  const int ender = killed ? 1 : 0;
  int token = 0;
  if (me != 0 && me != ender) MPI_Send(&token, 1, MPI_INT, ender, 0, users);
  if (me == ender)
    for (int w = 1; w < 4; ++w)
      if (w != ender) MPI_Recv(&token, 1, MPI_INT, w, 0, users, MPI_STATUS_IGNORE);
  if (me == 0) {
    if (!killed) _exit(0);  // mid-run, without mr_finalize
    // Blocked in a receive that no one answers, as a worker is when it dies
    // (or killed before it gets there).
    mr_rid_t got[1];
    int n = 0, no = 0;
    void* objs[1];
    const mr_status s = mr_recv(1, got, 1, &n, objs, 1, &no);
    // Not reached when the kill works: this rank's line then says FAIL.
    char buf[128];
    std::snprintf(buf, sizeof buf, "worker 0's mr_recv returned %d before the kill", static_cast<int>(s));
    expect(false, buf);
    return;
  }
  if (me == 1) {
    if (killed) expect(kill(static_cast<pid_t>(pids[3]), SIGKILL) == 0, "kill(SIGKILL) of worker 0 (rank 3)");
    mr_rid_t got[4];
    int n = 0;
    void* objs[4];
    int no = 0;
    expect_status(mr_recv(0, got, 4, &n, objs, 4, &no), MR_ERR_PEER_FAILED, "mr_recv from the exited worker");
    expect_reason("worker 0 (rank 3) has failed", "mr_recv");
  }
  expect_status(mr_barrier(), MR_ERR_PEER_FAILED, "mr_barrier after the exit");
  expect_reason("has failed", "mr_barrier");
  // Allocation through a live leaf still works.
  expect_status(mr_alloc(128, r, &p), MR_OK, "mr_alloc after the exit");
  expect_status(mr_rfree(r), MR_OK, "mr_rfree after the exit");
  expect_status(mr_finalize(), MR_ERR_PEER_FAILED, "mr_finalize");
}

void leaf_gone(int me, const std::vector<long>& pids, int sig) {
  MPI_Comm users = mr_worker_comm();
  mr_rid_t own = 0, x = 0;
  void* p = nullptr;
  expect_status(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &own), MR_OK, "mr_ralloc");  // on this worker's leaf
  if (me == 2) x = own;
  MPI_Bcast(&x, 1, MPI_UINT64_T, 2, users);  // a region on leaf 2
  expect_status(mr_barrier(), MR_OK, "mr_barrier before the kill");
  if (me == 0) kill(static_cast<pid_t>(pids[2]), sig);
  MPI_Barrier(users);
  if (me < 2) {
    expect_status(mr_alloc(64, x, &p), MR_ERR_PEER_FAILED, "mr_alloc in a region of the killed leaf");
    expect_reason("scheduler rank 2", "mr_alloc in a region of the killed leaf");
    expect_status(mr_alloc(64, own, &p), MR_OK, "mr_alloc through the live leaf");
    mr_rid_t fresh = 0;
    expect_status(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &fresh), MR_OK, "mr_ralloc after the kill");
    // Its own leaf is alive, but it heard of the failure: mr_finalize says so.
    expect_status(mr_finalize(), MR_ERR_PEER_FAILED, "mr_finalize (live leaf)");
    expect_reason("scheduler rank 2 has failed", "mr_finalize (live leaf)");
  } else {
    expect_status(mr_alloc(64, own, &p), MR_ERR_PEER_FAILED, "mr_alloc with the leaf killed");
    expect_reason("scheduler rank 2 (this worker's leaf) has failed", "mr_alloc with the leaf killed");
    expect_status(mr_finalize(), MR_ERR_PEER_FAILED, "mr_finalize (killed leaf)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  int rank = 0, world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  std::vector<long> pids(static_cast<std::size_t>(world));
  const long mine = static_cast<long>(getpid());
  MPI_Allgather(&mine, 1, MPI_LONG, pids.data(), 1, MPI_LONG, MPI_COMM_WORLD);
  const bool worker_mode = mode == "worker-exit" || mode == "worker-killed";
  if (world != 7 || (!worker_mode && mode != "leaf-killed" && mode != "leaf-exit")) {
    if (rank == 0)
      std::fprintf(stderr,
                   "usage: 7 ranks, levels 2, fanout 2; region_failure_test "
                   "worker-exit|worker-killed|leaf-killed|leaf-exit\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  // leaf-exit: a scheduler ends its process where it is (inside mr_init).
  signal(SIGUSR1, [](int) { _exit(0); });
  expect_status(mr_init(&argc, &argv, nullptr), MR_OK, "mr_init");
  if (mr_is_worker()) {
    const int me = mr_worker_id();
    if (worker_mode)
      worker_gone(me, pids, mode == "worker-killed");
    else
      leaf_gone(me, pids, mode == "leaf-killed" ? SIGKILL : SIGUSR1);
  } else {
    // A scheduler serves inside mr_init; it learns of the failure there.
    const mr_status s = mr_finalize();
    const bool saw = worker_mode ? (rank == 0 || rank == 1 || rank == 2) : (rank == 0 || rank == 1);
    if (saw) {
      expect_status(s, MR_ERR_PEER_FAILED, "scheduler mr_finalize");
      expect_reason("has failed", "scheduler mr_finalize");
    }
  }
  std::printf("CHECK rank %d: %s%s\n", rank, problems.empty() ? "ok" : "FAIL", problems.c_str());
  std::fflush(stdout);
  // Also into CHECK_DIR/rank.R (expect_lines.sh reads them): a launcher
  // that tears the job down may lose the forwarded output.
  if (const char* dir = std::getenv("CHECK_DIR")) {
    const std::string path = std::string(dir) + "/rank." + std::to_string(rank);
    if (FILE* f = std::fopen(path.c_str(), "w")) {
      std::fprintf(f, "CHECK rank %d: %s%s\n", rank, problems.empty() ? "ok" : "FAIL", problems.c_str());
      std::fclose(f);
    }
  }
  // No MPI_Finalize: a rank of the job is dead, and OpenMPI 4.1's
  // MPI_Finalize may wait for it forever (region.h, mr_finalize).
  return 0;
}
