// The emulated warp/block accelerator: collectives over groups of host
// threads, partial warps, divergent subsets, lanes that leave early.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "manyalloc_support/emulated_warp.hpp"

namespace manyalloc::heap::testing {
namespace {

using acc::EmulatedGrid;
using acc::EmulatedThread;

TEST(EmulatedWarp, BallotAndShuffleOverAFullWarp) {
  EmulatedGrid grid;
  std::vector<std::uint32_t> ballots(32), shuffled(32), masks(32);
  grid.run(1, 32, [&](const EmulatedThread& a, unsigned t) {
    masks[t] = a.active_mask();
    ballots[t] = a.ballot(masks[t], a.lane_id() % 3 == 0);
    shuffled[t] = a.shfl(masks[t], 100 + a.lane_id(), (a.lane_id() + 1) % 32);
    a.sync_lanes(masks[t]);
  });
  std::uint32_t expect = 0;
  for (unsigned l = 0; l < 32; l += 3) expect |= 1u << l;
  for (unsigned t = 0; t < 32; ++t) {
    EXPECT_EQ(masks[t], 0xffffffffu);
    EXPECT_EQ(ballots[t], expect);
    EXPECT_EQ(shuffled[t], 100 + (t + 1) % 32);
  }
}

TEST(EmulatedWarp, PartialLastWarp) {
  EmulatedGrid grid;
  std::vector<std::uint32_t> masks(45);
  grid.run(1, 45, [&](const EmulatedThread& a, unsigned t) { masks[t] = a.active_mask(); });
  for (unsigned t = 0; t < 32; ++t) EXPECT_EQ(masks[t], 0xffffffffu);
  for (unsigned t = 32; t < 45; ++t) EXPECT_EQ(masks[t], 0x1fffu);
}

TEST(EmulatedWarp, DivergentSubsetsRunTheirCollectivesApart) {
  EmulatedGrid grid;
  std::vector<std::uint32_t> masks(32), sums(32);
  grid.run(1, 32, [&](const EmulatedThread& a, unsigned t) {
    const std::uint32_t low = 0x00000fffu;
    const EmulatedThread b = a.diverge(a.lane_id() < 12 ? low : ~low);
    masks[t] = b.active_mask();
    std::uint32_t sum = 0;
    for (std::uint32_t rest = masks[t]; rest != 0; rest &= rest - 1) {
      sum += b.shfl(masks[t], a.lane_id(), static_cast<unsigned>(__builtin_ctz(rest)));
    }
    sums[t] = sum;
    // Reconverged: the whole warp again.
    EXPECT_EQ(a.active_mask(), 0xffffffffu);
  });
  for (unsigned t = 0; t < 32; ++t) {
    EXPECT_EQ(masks[t], t < 12 ? 0xfffu : ~0xfffu);
    EXPECT_EQ(sums[t], t < 12 ? 66u : (12u + 31u) * 20u / 2u);
  }
}

TEST(EmulatedWarp, LaunchGroupsAndLanesThatLeaveEarly) {
  EmulatedGrid grid;
  std::vector<std::vector<std::uint32_t>> seen(32);
  // Lanes 0..9 form one group; lanes 10..31 another; lane l runs l % 5 + 1
  // rounds, so the active set shrinks round by round.
  grid.run(1, 32, [](unsigned r) { return r < 10 ? 0x3ffu : ~0x3ffu; },
           [&](const EmulatedThread& a, unsigned t) {
             for (unsigned round = 0; round < t % 5 + 1; ++round) {
               const std::uint32_t m = a.active_mask();
               seen[t].push_back(m);
               EXPECT_EQ(a.ballot(m, true), m);
             }
           });
  for (unsigned t = 0; t < 32; ++t) {
    const std::uint32_t group = t < 10 ? 0x3ffu : ~0x3ffu;
    ASSERT_EQ(seen[t].size(), t % 5 + 1);
    for (unsigned round = 0; round < seen[t].size(); ++round) {
      std::uint32_t expect = 0;
      for (unsigned l = 0; l < 32; ++l) {
        if (((group >> l) & 1u) != 0u && l % 5 + 1 > round) expect |= 1u << l;
      }
      EXPECT_EQ(seen[t][round], expect) << "thread " << t << " round " << round;
    }
  }
}

TEST(EmulatedBlock, RanksBarriersAndBroadcastSkipMissingThreads) {
  EmulatedGrid grid;
  std::vector<acc::BlockRank> ranks(70);
  std::vector<std::uint64_t> got(70);
  std::vector<int> any(70);
  // Threads 5 and 40 are not launched; the block has 68 live threads.
  grid.run(2, 70, [](unsigned r) { return r == 5 || r == 40 ? 0u : EmulatedGrid::full_group(70, r); },
           [&](const EmulatedThread& a, unsigned t) {
             if (a.block_index() != 1) return;
             const unsigned r = a.thread_index();
             ranks[r] = a.block_rank();
             got[r] = a.block_broadcast(1000 + r, ranks[r].rank == 3);
             any[r] = a.block_sync_or(r == 69);
           });
  for (unsigned r = 0; r < 70; ++r) {
    if (r == 5 || r == 40) continue;
    EXPECT_EQ(ranks[r].count, 68u);
    EXPECT_EQ(ranks[r].rank, r - (r > 5 ? 1u : 0u) - (r > 40 ? 1u : 0u));
    EXPECT_EQ(got[r], 1003u);
    EXPECT_EQ(any[r], 1);
  }
}

}  // namespace
}  // namespace manyalloc::heap::testing
