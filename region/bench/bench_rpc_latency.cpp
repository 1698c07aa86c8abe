// Per-call latency of the library's small operations: the calls that make
// one scheduler round trip (mr_alloc, mr_free, mr_sched_stats_get,
// mr_ralloc/mr_rfree) and, with two workers or more, a zero-copy ping-pong
// of a one-object region between workers 0 and 1 (mr_send + mr_recv, each
// send with its pack request) and mr_barrier. Only the C API of region.h,
// so that the same source builds against older versions of the library.
// Usage: mpiexec -n <1 scheduler + 1 or more workers> region_bench_rpc_latency
//          [calls (20000)] [--reps R (5)] [--tag TEXT] [--mpi-init single|funneled]
// --mpi-init: the program initialises MPI itself at that thread level before
// mr_init (and finalises it after mr_finalize); default: mr_init does.
// One JSON line per operation and repetition (worker 0): op, calls,
// seconds, us_per_call; then one summary line per operation with the median.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_json.hpp"
#include "manyalloc/region/region.h"

namespace {

double now() { return MPI_Wtime(); }

struct Op {
  const char* name;
  int calls_per_iter;  // library calls per iteration (a pair counts 2)
  std::vector<double> us;  // per library call, one entry per repetition
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  long calls = 20000;
  int reps = 5;
  std::string tag = "";
  std::string mpi_init = "";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--tag") == 0 && i + 1 < argc)
      tag = argv[++i];
    else if (std::strcmp(argv[i], "--mpi-init") == 0 && i + 1 < argc)
      mpi_init = argv[++i];
    else
      calls = std::atol(argv[i]);
  }
  int provided = -1;
  if (mpi_init == "single")
    MPI_Init(&argc, &argv);
  else if (mpi_init == "funneled")
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  else if (!mpi_init.empty()) {
    std::fprintf(stderr, "--mpi-init: single or funneled\n");
    return 2;
  }
  if (mr_init(&argc, &argv, nullptr) != MR_OK) {
    std::fprintf(stderr, "mr_init failed\n");
    return 1;
  }
  long fails = 0;
  MPI_Query_thread(&provided);  // the level MPI runs at, whoever initialised it
  if (mr_is_worker()) {
    const int me = mr_worker_id(), nw = mr_num_workers();
    mr_rid_t rid = 0;
    if (mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &rid) != MR_OK) ++fails;
    // A region with one object for the ping-pong.
    mr_rid_t ball = 0;
    void* obj = nullptr;
    if (me == 0) {
      if (mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &ball) != MR_OK) ++fails;
      if (mr_alloc(64, ball, &obj) != MR_OK) ++fails;
    }
    std::vector<Op> ops = {{"alloc_free", 2, {}}, {"stats", 1, {}}, {"ralloc_rfree", 2, {}}};
    if (nw >= 2) {
      ops.push_back({"pingpong_send_recv", 4, {}});
      ops.push_back({"barrier", 1, {}});
    }
    // Warm-up: one short pass of everything.
    for (int i = 0; i < 1000; ++i) {
      void* p = nullptr;
      if (mr_alloc(64, rid, &p) != MR_OK || mr_free(p) != MR_OK) ++fails;
    }
    for (int r = 0; r < reps; ++r) {
      for (Op& op : ops) {
        long iters = calls / op.calls_per_iter;
        if (std::strcmp(op.name, "ralloc_rfree") == 0) iters = std::max(1L, iters / 4);
        mr_barrier();
        const double t0 = now();
        if (std::strcmp(op.name, "alloc_free") == 0) {
          for (long i = 0; i < iters; ++i) {
            void* p = nullptr;
            if (mr_alloc(64, rid, &p) != MR_OK || mr_free(p) != MR_OK) ++fails;
          }
        } else if (std::strcmp(op.name, "stats") == 0) {
          mr_sched_stats s;
          for (long i = 0; i < iters; ++i)
            if (mr_sched_stats_get(0, &s) != MR_OK) ++fails;
        } else if (std::strcmp(op.name, "ralloc_rfree") == 0) {
          for (long i = 0; i < iters; ++i) {
            mr_rid_t x = 0;
            if (mr_ralloc(rid, MR_NO_HINT, &x) != MR_OK || mr_rfree(x) != MR_OK) ++fails;
          }
        } else if (std::strcmp(op.name, "pingpong_send_recv") == 0) {
          if (me <= 1) {
            const int peer = 1 - me;
            for (long i = 0; i < iters; ++i) {
              mr_rid_t got[1];
              void* objs[1];
              int nr = 0, no = 0;
              if (me == 0) {
                if (mr_send(peer, &ball, 1, &obj, 1) != MR_OK) ++fails;
                if (mr_recv(peer, got, 1, &nr, objs, 1, &no) != MR_OK) ++fails;
              } else {
                if (mr_recv(peer, got, 1, &nr, objs, 1, &no) != MR_OK) ++fails;
                if (mr_send(peer, got, nr, objs, no) != MR_OK) ++fails;
              }
            }
          }
        } else if (std::strcmp(op.name, "barrier") == 0) {
          for (long i = 0; i < iters; ++i)
            if (mr_barrier() != MR_OK) ++fails;
        }
        const double dt = now() - t0;
        const double us = 1e6 * dt / static_cast<double>(iters * op.calls_per_iter);
        op.us.push_back(us);
        if (me == 0) {
          region_bench::Record rec;
          rec.experiment = "rpc_latency";
          rec.allocator = "myrmics-region";
          rec.threads = nw;
          rec.ops = static_cast<double>(iters * op.calls_per_iter);
          rec.seconds = dt;
          rec.fails = fails;
          rec.verified = fails == 0;
          rec.extra_str("tag", tag);
          rec.extra_str("op", op.name);
          rec.extra("rep", r);
          rec.extra("us_per_call", us);
          rec.print();
        }
      }
    }
    if (me == 0) {
      for (const Op& op : ops) {
        region_bench::Record rec;
        rec.experiment = "rpc_latency_summary";
        rec.allocator = "myrmics-region";
        rec.threads = nw;
        rec.ops = static_cast<double>(reps);
        rec.fails = fails;
        rec.verified = fails == 0;
        rec.extra_str("tag", tag);
        rec.extra_str("op", op.name);
        rec.extra("mpi_thread", provided);
        rec.extra("median_us_per_call", median(op.us));
        rec.extra("min_us_per_call", *std::min_element(op.us.begin(), op.us.end()));
        rec.print();
      }
    }
  }
  mr_finalize();
  if (!mpi_init.empty()) MPI_Finalize();
  return fails == 0 ? 0 : 1;
}
