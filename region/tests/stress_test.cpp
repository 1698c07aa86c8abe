// Stress (issue 16): every worker allocates, frees and sends for a while, on
// 2 levels, in both transfer modes; no call may fail, no received object may
// hold anything but what its sender wrote, and the accounting of every
// scheduler must return to its start. The library is funnelled (region.h,
// "Threads"; tests/threads_test.cpp covers other threads), so the load comes
// from several worker ranks, not threads of one rank.
//   Rounds, until MANYALLOC_REGION_STRESS_SECONDS (default 5) have passed on
//   worker 0, which tells the others whether another round follows:
//   1. A region and a child region; objects of 24 B to 16 KiB in both, one
//      at a time (mr_alloc) and in batches (mr_balloc); a share of them
//      grown or shrunk in place or moved to the other region (mr_realloc)
//      and a share freed (mr_free); every live object carries a pattern
//      naming its sender, round and index in its first and last words.
//   2. The region (with its child) goes to the next worker of a ring with
//      mr_isend, while mr_irecv takes one from the previous worker; after
//      both complete, the receiver checks every object it got and frees
//      the region (and so its child).
//   Every 8 rounds (16 times at most), the round's region is kept until the
//   end and an empty one goes round instead (longer-lived regions beside
//   the short-lived ones).
// Main: mpi_gtest_main.cpp (session form); runs on every worker.
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.h"
#include "mpi_gtest.hpp"

const unsigned region_test::alarm_seconds = 170;  // a hang fails before ctest's timeout

namespace {

constexpr int max_objects = 256;  // per round and region tree (what a transfer may carry)
constexpr std::size_t min_bytes = 24, max_bytes = 16384;  // three pattern words fit
constexpr std::size_t kept_regions = 16;

double stress_seconds() {
  const char* v = std::getenv("MANYALLOC_REGION_STRESS_SECONDS");
  return v != nullptr && *v != '\0' ? std::strtod(v, nullptr) : 5.0;
}

std::uint64_t tag_of(int sender, std::uint32_t round, int index) {
  return (static_cast<std::uint64_t>(sender) << 48) | (static_cast<std::uint64_t>(round) << 16) |
         static_cast<std::uint64_t>(index);
}

// An object's pattern: the tag in its first and last 8 bytes, its size in
// the second word (every object has at least 24 bytes).
void mark(void* p, std::size_t bytes, std::uint64_t tag) {
  auto* b = static_cast<unsigned char*>(p);
  const std::uint64_t size = bytes;
  std::memcpy(b, &tag, 8);
  std::memcpy(b + 8, &size, 8);
  std::memcpy(b + bytes - 8, &tag, 8);
}

bool marked(const void* p, std::uint64_t tag) {
  const auto* b = static_cast<const unsigned char*>(p);
  std::uint64_t first = 0, size = 0, last = 0;
  std::memcpy(&first, b, 8);
  std::memcpy(&size, b + 8, 8);
  if (first != tag || size < min_bytes || size > max_bytes) return false;
  std::memcpy(&last, b + size - 8, 8);
  return last == tag;
}

struct Live {
  void* p;
  std::size_t bytes;
  int index;
};

// Builds one round's region tree into `live` (the objects still live, in no
// order). Counts failed calls in `failures`.
void build_round(std::mt19937_64& rng, int me, std::uint32_t round, mr_rid_t region, mr_rid_t child,
                 std::vector<Live>& live, int& failures) {
  std::uniform_int_distribution<std::size_t> size(min_bytes, max_bytes);
  std::uniform_int_distribution<int> coin(0, 99);
  live.clear();
  int index = 0;
  auto expect_ok = [&](mr_status s, const char* call) {
    if (s == MR_OK) return true;
    ++failures;
    std::fprintf(stderr, "worker %d round %u: %s returned %s (%s)\n", me, round, call, mr_strerror(s),
                 mr_last_error());
    return false;
  };
  while (index < max_objects - 8) {
    const mr_rid_t where = coin(rng) < 70 ? region : child;
    if (coin(rng) < 20) {  // a batch
      const std::size_t bytes = size(rng);
      void* batch[8] = {};
      if (!expect_ok(mr_balloc(bytes, where, 8, batch), "mr_balloc")) break;
      for (void* p : batch) {
        mark(p, bytes, tag_of(me, round, index));
        live.push_back({p, bytes, index++});
      }
    } else {
      const std::size_t bytes = size(rng);
      void* p = nullptr;
      if (!expect_ok(mr_alloc(bytes, where, &p), "mr_alloc")) break;
      mark(p, bytes, tag_of(me, round, index));
      live.push_back({p, bytes, index++});
    }
  }
  // Resize or move some (the contents up to the smaller size are kept: the
  // pattern is written again), free some.
  for (std::size_t i = 0; i < live.size();) {
    const int c = coin(rng);
    if (c < 15) {
      const std::size_t bytes = size(rng);
      void* moved = nullptr;
      if (!expect_ok(mr_realloc(live[i].p, bytes, c < 5 ? child : region, &moved), "mr_realloc")) return;
      // The smaller of the two sizes is kept: at least the first word.
      std::uint64_t first = 0;
      std::memcpy(&first, moved, 8);
      if (first != tag_of(me, round, live[i].index)) {
        ++failures;
        std::fprintf(stderr, "worker %d round %u: mr_realloc lost the contents of object %d\n", me, round,
                     live[i].index);
      }
      live[i].p = moved;
      live[i].bytes = bytes;
      mark(moved, bytes, tag_of(me, round, live[i].index));
      ++i;
    } else if (c < 35) {
      if (!expect_ok(mr_free(live[i].p), "mr_free")) return;
      live[i] = live.back();
      live.pop_back();
    } else {
      ++i;
    }
  }
}

TEST(RegionStress, AllocFreeSendForAWhileLosesNothing) {
  const int me = mr_worker_id();
  const int nw = mr_num_workers();
  ASSERT_GE(nw, 2) << "the ring needs two workers";
  const int next = (me + 1) % nw, prev = (me + nw - 1) % nw;
  const std::vector<mr_sched_stats> start = region_test::scheduler_accounting();

  const double seconds = stress_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::mt19937_64 rng(0x5eed0000u + static_cast<unsigned>(me));
  std::vector<Live> live;
  std::vector<mr_rid_t> kept;
  int failures = 0;
  std::uint64_t objects_sent = 0, objects_checked = 0;
  std::uint32_t round = 0;
  for (int go = 1; go != 0; ++round) {
    mr_rid_t region = 0, child = 0;
    ASSERT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &region), MR_OK) << mr_last_error();
    ASSERT_EQ(mr_ralloc(region, MR_NO_HINT, &child), MR_OK) << mr_last_error();
    build_round(rng, me, round, region, child, live, failures);
    ASSERT_EQ(failures, 0) << "round " << round;
    std::vector<void*> send_objects;
    for (const Live& l : live) send_objects.push_back(l.p);
    mr_rid_t send_region = region;
    // Every 8 rounds (16 times at most) the round's region stays until the
    // end, and an empty region goes round the ring instead.
    if (round % 8 == 7 && kept.size() < kept_regions) {
      kept.push_back(region);
      ASSERT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &send_region), MR_OK);
      send_objects.clear();
    }
    mr_rid_t got_regions[1] = {0};
    void* got_objects[max_objects] = {};
    int n_regions = -1, n_objects = -1, source = -1;
    mr_request_t rreq = MR_REQUEST_NULL, sreq = MR_REQUEST_NULL;
    ASSERT_EQ(mr_irecv(prev, got_regions, 1, &n_regions, got_objects, max_objects, &n_objects, &source, &rreq),
              MR_OK);
    ASSERT_EQ(mr_isend(next, &send_region, 1, send_objects.data(), static_cast<int>(send_objects.size()), &sreq),
              MR_OK)
        << mr_last_error();
    ASSERT_EQ(mr_wait(&sreq), MR_OK) << mr_last_error();
    ASSERT_EQ(mr_wait(&rreq), MR_OK) << mr_last_error();
    objects_sent += send_objects.size();
    ASSERT_EQ(n_regions, 1);
    ASSERT_EQ(source, prev);
    // The previous worker's round: its objects carry (prev, round, index).
    for (int i = 0; i < n_objects; ++i) {
      std::uint64_t first = 0;
      std::memcpy(&first, got_objects[i], 8);
      const auto index = static_cast<int>(first & 0xffffu);
      if (!marked(got_objects[i], tag_of(prev, round, index))) {
        ++failures;
        std::fprintf(stderr, "worker %d round %u: object %d of %d from worker %d does not hold its pattern\n", me,
                     round, i, n_objects, prev);
      }
      ++objects_checked;
    }
    ASSERT_EQ(failures, 0) << "round " << round;
    EXPECT_EQ(mr_rfree(got_regions[0]), MR_OK) << mr_last_error();
    if (me == 0) {
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      go = took < seconds ? 1 : 0;
    }
    MPI_Bcast(&go, 1, MPI_INT, 0, mr_worker_comm());
  }
  for (mr_rid_t r : kept) EXPECT_EQ(mr_rfree(r), MR_OK);

  region_test::expect_accounting_back_to(start);
  if (me == 0) {
    std::printf("stress: %d workers, %u rounds in %.1f s (budget %.0f s), %llu objects sent by worker 0\n", nw,
                round, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), seconds,
                static_cast<unsigned long long>(objects_sent));
  }
  // Every object sent arrived: the ring's sends and checks add up.
  unsigned long long mine[2] = {objects_sent, objects_checked}, sum[2] = {0, 0};
  MPI_Allreduce(mine, sum, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, mr_worker_comm());
  EXPECT_EQ(sum[0], sum[1]) << "objects sent round the ring against objects received and checked";
}

}  // namespace
