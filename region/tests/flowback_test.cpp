// Flow-back of free pages (region/DESIGN.md, "Pages flow back"; invariants
// M1-M3 in src/invariants.hpp): once everything is freed, any worker can
// allocate (nearly) the whole global address space again, whichever leaf
// scheduler served the earlier allocations. The tree and the space come
// from the environment (MANYALLOC_REGION_LEVELS, _FANOUT, _GAS_MIB: a small
// space, some hundred MiB); every rank calls mr_init with a low leaf
// watermark (4 pages), so that what the other schedulers may keep (under
// twice their refill watermark each) is small beside the space.
//   1. Every worker fills the space with 64 KiB objects until
//      MR_ERR_NO_MEMORY, at the same time; together they got nearly all of
//      it. Each frees its region.
//   2. Returns travel asynchronously (invariants.hpp, M3), and a scheduler
//      whose own refill is outstanding returns once it is answered: worker 0
//      polls (settle_polls times, settle_poll_ns apart) until no pool holds slabs, none is in flight
//      (the top scheduler has delegated exactly what the others hold free)
//      and no scheduler below the top keeps more free slabs than its return
//      watermark.
//   3. Each worker in turn, alone, fills the space again: it gets nearly
//      all of it; then it frees its region, and step 2 is repeated. The
//      worker has written every 4 KiB page of its objects, and once step 2
//      has settled, no more of those pages are still in memory (mincore)
//      than the schedulers below the top keep: with a shared GAS (zero
//      copy) the pages that came back to the top went back to the
//      operating system (M4); with private memory (copy) the worker
//      dropped its pages of the region's whole pool when its mr_rfree
//      succeeded: the slabs of the objects it had freed one by one too.
// Before flow-back, pages never left a leaf: in step 3 a worker got only
// what its own leaf had kept from step 1 (with 2 leaves, half the space).
// Before mr_rfree dropped private pages, every page stayed in memory in
// copy mode; before it dropped the pool's free slabs, the pages of the
// objects freed one by one did (half of them).
// Main: mpi_gtest_main.cpp, the form without a session (mr_init is called
// here with the settings above).
#include <mpi.h>

#include <sys/mman.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "manyalloc/region/mpi_interop.h"
#include "invariants.hpp"
#include "manyalloc/region/region.h"
#include "mpi_gtest.hpp"
#include "topology.hpp"

const unsigned region_test::alarm_seconds = 110;  // a hang fails before ctest's timeout

namespace {

constexpr std::uint64_t mib = std::uint64_t{1} << 20;
constexpr std::uint64_t leaf_pages_hi = 4;
constexpr std::uint64_t object_bytes = 64 * 1024;
using manyalloc::region::detail::slabs_per_page;
// How long step 2 waits for the returns in flight to arrive.
constexpr int settle_polls = 2000;
constexpr long settle_poll_ns = 10 * 1000 * 1000;
// Partly used pages of the filling region's pool.
constexpr std::uint64_t pool_slack_pages = 8;

// A whole number from the environment (the ctest case sets it).
std::uint64_t env_number(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : 0;
}

// The library's own tree for this run (src/topology.hpp).
manyalloc::region::detail::Topology tree() {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const auto t = manyalloc::region::detail::Topology::make(
      world, static_cast<int>(env_number("MANYALLOC_REGION_LEVELS")),
      static_cast<int>(env_number("MANYALLOC_REGION_FANOUT")));
  if (!t) {
    ADD_FAILURE() << "the world does not fit the tree";
    return {};
  }
  return *t;
}

// Pages a scheduler below the top may keep free: under its return
// watermark, twice its refill watermark (leaf_pages_hi scaled by its
// subtree, as src/scheduler_core.cpp does).
std::uint64_t keep_pages(const manyalloc::region::detail::Topology& t, int s) {
  return 2 * leaf_pages_hi * (static_cast<std::uint64_t>(t.descendants(s)) + 1);
}

// Fills a new region of this worker's leaf with objects until the space is
// exhausted; writes a word into each object (and a byte into every 4 KiB
// page of it when `touch`) and checks it; frees the region (when `touch`,
// every other object first). Returns the
// bytes allocated; the objects' addresses are left in `addrs`.
std::uint64_t fill_and_free(bool touch, std::vector<void*>& addrs) {
  mr_rid_t r = 0;
  EXPECT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &r), MR_OK);
  std::vector<void*> objs;
  void* batch[16] = {};
  mr_status s = MR_OK;
  while ((s = mr_balloc(object_bytes, r, 16, batch)) == MR_OK) objs.insert(objs.end(), batch, batch + 16);
  EXPECT_EQ(s, MR_ERR_NO_MEMORY);
  void* p = nullptr;
  while ((s = mr_alloc(object_bytes, r, &p)) == MR_OK) objs.push_back(p);
  EXPECT_EQ(s, MR_ERR_NO_MEMORY);
  for (std::size_t i = 0; i < objs.size(); ++i) *static_cast<std::uint64_t*>(objs[i]) = i;
  if (touch)
    for (void* o : objs)
      for (std::uint64_t b = 4096; b < object_bytes; b += 4096) static_cast<volatile char*>(o)[b] = 1;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < objs.size(); ++i) bad += *static_cast<std::uint64_t*>(objs[i]) != i;
  EXPECT_EQ(bad, 0u);
  // Every other object freed on its own first: its slabs lie free in the
  // region's pool when the region is freed, and their pages must go too.
  if (touch)
    for (std::size_t i = 1; i < objs.size(); i += 2) EXPECT_EQ(mr_free(objs[i]), MR_OK);
  EXPECT_EQ(mr_rfree(r), MR_OK);
  addrs = objs;
  return objs.size() * object_bytes;
}

// 4 KiB pages of the objects at `addrs` that are in memory (mincore).
std::uint64_t resident_pages(const std::vector<void*>& addrs) {
  constexpr std::size_t per_object = object_bytes / 4096;
  unsigned char vec[per_object];
  std::uint64_t n = 0;
  for (void* o : addrs) {
    if (mincore(o, object_bytes, vec) != 0) {
      ADD_FAILURE() << "mincore failed";
      return ~std::uint64_t{0};
    }
    for (unsigned char v : vec) n += v & 1;
  }
  return n;
}

// Step 2 (on worker 0): waits until the flow-back has settled, then checks
// what every scheduler keeps.
void expect_settled(const manyalloc::region::detail::Topology& t, const char* when) {
  const auto nsched = static_cast<std::uint64_t>(t.nsched);
  std::vector<mr_sched_stats> st(nsched);
  std::uint64_t below_free = 0, pools = 0;
  for (int poll = 0; poll < settle_polls; ++poll) {
    below_free = pools = 0;
    bool kept = true;
    for (std::uint64_t s = 0; s < nsched; ++s) {
      EXPECT_EQ(mr_sched_stats_get(static_cast<int>(s), &st[s]), MR_OK);
      pools += st[s].pool_slabs;
      if (s == 0) continue;
      below_free += st[s].free_slabs;
      kept = kept && st[s].free_slabs <= keep_pages(t, static_cast<int>(s)) * slabs_per_page;
    }
    if (pools == 0 && st[0].delegated_slabs == below_free && kept) break;
    timespec ts{0, settle_poll_ns};
    nanosleep(&ts, nullptr);
  }
  EXPECT_EQ(pools, 0u) << when;
  EXPECT_EQ(st[0].delegated_slabs, below_free) << when << ": slabs still in flight";
  for (std::uint64_t s = 1; s < nsched; ++s)
    EXPECT_LE(st[s].free_slabs, keep_pages(t, static_cast<int>(s)) * slabs_per_page)
        << when << ": scheduler " << s << " kept its free pages";
}

TEST(FlowBack, AnyWorkerGetsTheWholeSpaceAfterEverythingIsFreed) {
  const std::uint64_t gas_mib = env_number("MANYALLOC_REGION_GAS_MIB");
  ASSERT_GT(gas_mib, 0u);
  const manyalloc::region::detail::Topology t = tree();
  mr_config c{};
  c.leaf_pages_hi = leaf_pages_hi;
  int argc = 0;
  char** argv = nullptr;
  ASSERT_EQ(mr_init(&argc, &argv, &c), MR_OK) << mr_last_error();
  if (mr_is_worker()) {
    const int me = mr_worker_id(), nw = mr_num_workers();
    const auto nsched = static_cast<std::uint64_t>(mr_num_schedulers());
    ASSERT_EQ(nsched, static_cast<std::uint64_t>(t.nsched));
    // What one fill may miss: what every scheduler below the top may keep
    // (its own path passes everything down, so this over-counts) and the
    // pool's partly used pages.
    std::uint64_t slack_mib = pool_slack_pages;
    for (std::uint64_t s = 1; s < nsched; ++s) slack_mib += keep_pages(t, static_cast<int>(s));
    ASSERT_LT(slack_mib, gas_mib / 4) << "the space is too small for this tree";
    // 1. Everyone at once.
    std::vector<void*> addrs;
    const std::uint64_t mine = fill_and_free(false, addrs);
    std::uint64_t total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, mr_worker_comm());
    EXPECT_GE(total, (gas_mib - pool_slack_pages * static_cast<std::uint64_t>(nw)) * mib)
        << "step 1: all workers together";
    EXPECT_EQ(mr_barrier(), MR_OK);
    // 2. What the schedulers hold now.
    if (me == 0) expect_settled(t, "after step 1");
    EXPECT_EQ(mr_barrier(), MR_OK);
    // 3. Each worker alone.
    // What may stay in memory after a worker's free: what the schedulers
    // below the top keep (shared GAS), or nothing but partly used pages
    // (private memory, dropped by the worker itself).
    const bool shared = mr_zero_copy(me == 0 ? 1 : 0) != 0;
    const std::uint64_t kept_mib = shared ? slack_mib : pool_slack_pages;
    for (int w = 0; w < nw; ++w) {
      if (w == me) {
        const std::uint64_t got = fill_and_free(true, addrs);
        EXPECT_GE(got, (gas_mib - slack_mib) * mib) << "step 3: worker " << me << " alone";
        std::printf("flow-back: worker %d alone got %llu of %llu MiB\n", me,
                    static_cast<unsigned long long>(got / mib), static_cast<unsigned long long>(gas_mib));
        std::fflush(stdout);
      }
      EXPECT_EQ(mr_barrier(), MR_OK);
      if (me == 0) expect_settled(t, "after a worker alone");
      EXPECT_EQ(mr_barrier(), MR_OK);
      if (w == me) {
        const std::uint64_t resident = resident_pages(addrs);
        EXPECT_LE(resident * 4096, kept_mib * mib) << "worker " << me << ": freed pages still in memory";
        std::printf("flow-back: worker %d: %llu MiB of its freed objects still in memory\n", me,
                    static_cast<unsigned long long>(resident * 4096 / mib));
        std::fflush(stdout);
      }
    }
  }
  EXPECT_EQ(mr_finalize(), MR_OK);
}

}  // namespace
