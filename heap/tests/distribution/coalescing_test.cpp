// Distribution policies on emulated warps and blocks: every policy, over a
// counting malloc and over Scatter; partial warps, divergent subsets, mixed
// sizes, frees in every order, concurrent and cross-lane frees, double frees
// (checked build), the [Eckert2014] 5.4 overlap test.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <thread>

#include "manyalloc/common/build_config.hpp"
#include "manyalloc_support/workers.hpp"
#include "test_support.hpp"

namespace manyalloc::heap::testing {
namespace {

using acc::EmulatedGrid;
using acc::EmulatedThread;
namespace DP = DistributionPolicies;

// Size a thread asks for: the same in a group for uniform policies; mixed
// (odd, small, large, zero) otherwise.
template <class Policy>
std::size_t size_for(unsigned t, unsigned salt) {
  if constexpr (DistributionPolicies::requires_uniform_sizes<Policy>) {
    return 4u * (5u + salt % 7u);
  } else {
    const unsigned x = (t * 2654435761u) ^ (salt * 40503u);
    switch (x % 9u) {
      case 0: return 0;
      case 1: return 1 + x % 7u;       // 2-byte headers
      case 2: return 4 + 8u * (x % 5u); // 4-byte headers
      case 3: return 16u * (1 + x % 8u);
      case 4: return 3000 + x % 2000u;  // larger than XMallocSIMD's limit
      default: return 1 + x % 300u;
    }
  }
}

template <class Policy>
class Coalescing : public ::testing::Test {
 protected:
  void SetUp() override { CountingMalloc::counters().reset(); }
  void TearDown() override { EXPECT_EQ(CountingMalloc::counters().live.load(), 0) << "superblocks leaked"; }

  distribution::SuperblockTable<ReservePoolPolicies::HostPool> table_{1u << 17};
};

using Policies = ::testing::Types<DP::DynamicWarp, DP::XMallocSIMD<4096>, DP::WarpHeader, DP::WarpNoHeader,
                                  DP::BlockHeader, DP::BlockNoHeader>;
TYPED_TEST_SUITE(Coalescing, Policies);

// One launch: every thread allocates its part and fills it.
template <class Policy, class Heap>
std::vector<Part> allocate_all(const Heap& heap, unsigned blocks, unsigned tpb, unsigned salt,
                               const std::function<std::uint32_t(unsigned)>& groups) {
  std::vector<Part> parts(blocks * tpb);
  const auto h = heap.handle();
  EmulatedGrid grid;
  grid.run(blocks, tpb, groups, [&](const EmulatedThread& a, unsigned t) {
    const std::size_t n = size_for<Policy>(DistributionPolicies::requires_uniform_sizes<Policy> ? a.block_index() : t, salt);
    void* p = h.alloc(a, n);
    parts[t] = Part{p, p != nullptr ? n : 0, t};
    if (p != nullptr) fill(parts[t]);
  });
  return parts;
}

template <class Policy>
void check_parts(const std::vector<Part>& parts, unsigned blocks, unsigned tpb, unsigned salt) {
  EXPECT_TRUE(disjoint(parts));
  for (unsigned t = 0; t < parts.size(); ++t) {
    const Part& p = parts[t];
    const std::size_t asked = size_for<Policy>(DistributionPolicies::requires_uniform_sizes<Policy> ? t / tpb : t, salt);
    if (asked == 0) {
      EXPECT_EQ(p.ptr, nullptr);
      continue;
    }
    ASSERT_NE(p.ptr, nullptr) << "thread " << t;
    EXPECT_TRUE(intact(p)) << "thread " << t;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p.ptr) % distribution::detail::natural_alignment(asked), 0u)
        << "thread " << t << " size " << asked;
  }
  (void)blocks;
}

TYPED_TEST(Coalescing, PartsAreDisjointAlignedAndFreedInEveryOrder) {
  using Policy = TypeParam;
  CountingHeap<Policy> heap(1 << 20);
  const acc::HostThread host;
  const unsigned tpb = 72;  // two full warps and a partial one
  for (int order = 0; order < 3; ++order) {
    auto parts = allocate_all<Policy>(heap, 2, tpb, order, [](unsigned r) { return EmulatedGrid::full_group(72, r); });
    check_parts<Policy>(parts, 2, tpb, order);
    if constexpr (block_scope<Policy>) {
      EXPECT_EQ(CountingMalloc::counters().live.load(), 2);
    } else if constexpr (DistributionPolicies::requires_uniform_sizes<Policy>) {
      EXPECT_EQ(CountingMalloc::counters().live.load(), 6);
    }
    if (order == 1) std::reverse(parts.begin(), parts.end());
    if (order == 2) std::shuffle(parts.begin(), parts.end(), std::mt19937(7));
    for (std::size_t i = 0; i < parts.size(); ++i) {
      // Everything not yet freed is still intact.
      if (i % 16 == 0) {
        for (std::size_t j = i; j < parts.size(); ++j) {
          if (parts[j].ptr != nullptr) ASSERT_TRUE(intact(parts[j]));
        }
      }
      heap.handle().dealloc(host, parts[i].ptr);
    }
    EXPECT_EQ(CountingMalloc::counters().live.load(), 0) << "order " << order;
  }
}

TYPED_TEST(Coalescing, DivergentSubsetsCoalesceApart) {
  using Policy = TypeParam;
  if constexpr (block_scope<Policy>) {
    GTEST_SKIP() << "block scope: all threads of a block call together";
  } else {
    CountingHeap<Policy> heap(1 << 20);
    const auto h = heap.handle();
    std::vector<Part> parts(32);
    std::vector<std::uint32_t> masks(32);
    EmulatedGrid grid;
    // Launch groups {0..9} and {10..31}; the second splits again at lane 20.
    grid.run(1, 32, [](unsigned r) { return r < 10 ? 0x3ffu : ~0x3ffu; }, [&](const EmulatedThread& a, unsigned t) {
      EmulatedThread b = a;
      if (t >= 10) b = a.diverge(t < 20 ? 0x000ffc00u : 0xfff00000u);
      const std::size_t n = DistributionPolicies::requires_uniform_sizes<Policy> ? 40 : 8 + 3 * t;
      void* p = h.alloc(b, n);
      parts[t] = Part{p, n, t};
      fill(parts[t]);
    });
    EXPECT_TRUE(disjoint(parts));
    for (const Part& p : parts) EXPECT_TRUE(intact(p));
    // One superblock per subset (XMallocSIMD too: all parts are small).
    EXPECT_EQ(CountingMalloc::counters().creates.load(), 3);
    // Free each subset's parts from the other lanes' threads at once.
    grid.run(1, 32, [&](const EmulatedThread& a, unsigned t) { h.dealloc(a, parts[31 - t].ptr); });
  }
}

TYPED_TEST(Coalescing, ConcurrentAndCrossLaneFreesWithEarlyExits) {
  using Policy = TypeParam;
  CountingHeap<Policy> heap(1 << 20);
  const auto h = heap.handle();
  std::atomic<int> bad{0};
  EmulatedGrid grid;
  const unsigned tpb = 48;
  std::vector<Part> slot(2 * tpb);
  grid.run(2, tpb, [&](const EmulatedThread& a, unsigned t) {
    std::mt19937 rng(t);
    // Warp policies: lanes leave after different numbers of rounds.
    const unsigned rounds = block_scope<Policy> ? 12 : 6 + t % 7;
    for (unsigned round = 0; round < rounds; ++round) {
      const std::size_t n = size_for<Policy>(DistributionPolicies::requires_uniform_sizes<Policy> ? round : t + 97 * round, round);
      void* p = h.alloc(a, n);
      Part mine{p, p != nullptr ? n : 0, t * 1000 + round};
      if (p != nullptr) fill(mine);
      if (round % 3 == 2 && block_scope<Policy>) {
        // Cross-lane: publish, barrier, free the partner's part.
        slot[t] = mine;
        a.block_sync_or(false);
        const unsigned partner = (a.thread_index() ^ 1u) < tpb ? (t ^ 1u) : t;
        const Part other = slot[partner];
        if (other.ptr != nullptr && !intact(other)) bad += 1;
        a.block_sync_or(false);
        h.dealloc(a, other.ptr);
        continue;
      }
      if (rng() % 2 == 0) std::this_thread::yield();
      if (p != nullptr && !intact(mine)) bad += 1;
      h.dealloc(a, p);
    }
  });
  EXPECT_EQ(bad.load(), 0);
}

// A warp's lanes allocate in divergent branches and free where they meet
// again, round after round (the kernel of GpuDeviceMallocCoalescing, whose
// racecheck failure is in docs/results/heap/racecheck_devicemalloc): every
// round splits the warp anew, and the frees again otherwise (lanes that reach
// the free at different times), over a malloc that may hand a freed
// superblock out again at once. Returns the parts found corrupt.
template <class Policy>
int split_every_round(unsigned rounds) {
  CountingHeap<Policy> heap(1 << 20);
  const auto handle = heap.handle();
  std::atomic<int> corrupt{0};
  EmulatedGrid grid;
  grid.run(1, 32, [&](const EmulatedThread& a, unsigned t) {
    // The thread in its branch of a split of the warp: the lanes whose bit
    // of checksum(round, step, 0) is set take one branch, the others the other.
    auto in_branch = [&a](unsigned round, std::uint32_t step) {
      const std::uint32_t split = checksum(round, step, 0);
      return a.diverge(((split >> a.lane_id()) & 1u) != 0u ? split : ~split);
    };
    for (unsigned round = 0; round < rounds; ++round) {
      const std::size_t n = size_for<Policy>(DistributionPolicies::requires_uniform_sizes<Policy> ? round : t + 97 * round, round);
      void* p = handle.alloc(in_branch(round, 1), n);
      const Part mine{p, p != nullptr ? n : 0, t * 1000 + round};
      if (p != nullptr) fill(mine);
      if (round % 3 == 0) std::this_thread::yield();
      if (p != nullptr && !intact(mine)) corrupt += 1;
      handle.dealloc(in_branch(round, 2), p);
    }
  });
  return corrupt.load();
}

TYPED_TEST(Coalescing, EveryRoundSplitsTheWarpAnewForAllocAndFree) {
  if constexpr (block_scope<TypeParam>) {
    GTEST_SKIP() << "block scope: a block's threads allocate and free together, nothing splits";
  } else {
    EXPECT_EQ(split_every_round<TypeParam>(60), 0);  // and TearDown: no superblock left
  }
}

TYPED_TEST(Coalescing, DoubleFreeIsDetectedInTheCheckedBuild) {
  using Policy = TypeParam;
  if constexpr (!build::checked_build && std::is_same_v<Policy, DP::WarpHeader>) {
    GTEST_SKIP() << "the header variants detect double frees only in the checked build";
  } else if constexpr (!build::checked_build && std::is_same_v<Policy, DP::BlockHeader>) {
    GTEST_SKIP() << "the header variants detect double frees only in the checked build";
  } else {
    CountingHeap<Policy> heap(1 << 20);
    const acc::HostThread host;
    auto parts = allocate_all<Policy>(heap, 1, 32, 3, [](unsigned) { return 0xffffffffu; });
    std::erase_if(parts, [](const Part& p) { return p.ptr == nullptr; });
    ASSERT_GE(parts.size(), 3u);
    const long live = CountingMalloc::counters().live.load();
    heap.handle().dealloc(host, parts[1].ptr);
    heap.handle().dealloc(host, parts[1].ptr);  // reported, ignored
    heap.handle().dealloc(host, parts[1].ptr);
    EXPECT_EQ(CountingMalloc::counters().live.load(), live);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (i == 1) continue;
      EXPECT_TRUE(intact(parts[i]));
      heap.handle().dealloc(host, parts[i].ptr);
    }
    // Every superblock went back exactly once (ASan would see a second free).
    EXPECT_EQ(CountingMalloc::counters().live.load(), 0);
  }
}

// [Eckert2014] 5.4 on a Scatter heap: fill it from coalescing warps, check every
// part, free all, and the heap is as free as before.
TYPED_TEST(Coalescing, ScatterOverlapTest) {
  using Policy = TypeParam;
  ScatterCoalescingHeap<Policy> heap(std::size_t{1} << 20);
  const std::size_t slots_before = heap.getAvailableSlots(64);
  const auto h = heap.handle();
  std::vector<std::vector<Part>> mine(40);
  EmulatedGrid grid;
  grid.run(1, 40, [&](const EmulatedThread& a, unsigned t) {
    for (unsigned counter = 0;; ++counter) {
      const std::size_t n = DistributionPolicies::requires_uniform_sizes<Policy> ? 48 : 16 + 8 * ((t + counter) % 12);
      void* p = h.alloc(a, n);
      if (p == nullptr || counter == 4000) {
        if (p != nullptr) h.dealloc(a, p);
        return;
      }
      mine[t].push_back(Part{p, n, t * 7919 + counter});
      fill(mine[t].back());
    }
  });
  std::vector<Part> all;
  for (auto& v : mine) all.insert(all.end(), v.begin(), v.end());
  EXPECT_GT(all.size(), 500u);
  EXPECT_TRUE(disjoint(all));
  std::size_t corrupt = 0;
  for (const Part& p : all) corrupt += intact(p) ? 0 : 1;
  EXPECT_EQ(corrupt, 0u);
  grid.run(1, 40, [&](const EmulatedThread& a, unsigned t) {
    for (const Part& p : mine[39 - t]) h.dealloc(a, p.ptr);
  });
  EXPECT_EQ(heap.creation().template statistics<acc::HostThreads>().misuse_reports, 0u);
  EXPECT_EQ(heap.getAvailableSlots(64), slots_before);
}

// ---- policy-specific ---------------------------------------------------------

std::vector<void*> dynamic_parts(CountingHeap<DP::DynamicWarp>& heap, const std::vector<std::size_t>& sizes) {
  std::vector<void*> out(sizes.size());
  const auto h = heap.handle();
  EmulatedGrid grid;
  grid.run(1, static_cast<unsigned>(sizes.size()),
           [&](const EmulatedThread& a, unsigned t) { out[t] = h.alloc(a, sizes[t]); });
  return out;
}

TEST(DynamicWarp, HeaderSizeFollowsAlignment) {
  CountingMalloc::counters().reset();
  CountingHeap<DP::DynamicWarp> heap(1 << 20);
  const std::vector<std::size_t> sizes{3, 4, 8, 16, 1, 2, 12, 24, 48, 5, 9001, 3, 6};
  const auto parts = dynamic_parts(heap, sizes);
  auto at = [&](std::size_t i) { return reinterpret_cast<std::uintptr_t>(parts[i]); };
  EXPECT_EQ(at(0) % 4, 2u);   // 2-byte header
  EXPECT_EQ(at(1) % 8, 4u);   // 4-byte header
  EXPECT_EQ(at(2) % 8, 0u);   // 8-byte header
  EXPECT_EQ(at(3) % 16, 0u);  // 8-byte header, 16-aligned payload
  EXPECT_EQ(at(4) % 4, 2u);
  EXPECT_EQ(at(5) % 4, 2u);
  EXPECT_EQ(at(6) % 8, 4u);
  EXPECT_EQ(at(7) % 8, 0u);
  EXPECT_EQ(at(8) % 16, 0u);
  // After a 9001-byte part the offset does not fit 13 bits: 4-byte header.
  EXPECT_EQ(at(11) % 8, 4u);
  EXPECT_EQ(at(12) % 4, 2u);
  // Compact: 2-byte headers cost 2 bytes (+ at most 3 of padding).
  EXPECT_LE(at(5) - at(4), 1u + 2u + 3u);
  EXPECT_EQ(CountingMalloc::counters().creates.load(), 1);
  const acc::HostThread host;
  for (void* p : parts) heap.handle().dealloc(host, p);
  EXPECT_EQ(CountingMalloc::counters().live.load(), 0);
}

TEST(DynamicWarp, PlacementIsTightAndUpgradesHeaders) {
  using distribution::detail::place_segment;
  EXPECT_EQ(place_segment(0, 0, 16).payload, 16u);
  EXPECT_EQ(place_segment(0, 0, 8).payload, 8u);
  EXPECT_EQ(place_segment(0, 0, 4).payload, 4u);
  EXPECT_EQ(place_segment(0, 0, 3).payload, 2u);
  EXPECT_EQ(place_segment(5, 2, 3).payload, 10u);  // 2 mod 4, >= 5 + 2
  EXPECT_EQ(place_segment(9000, 2, 3).header, 4u);
  EXPECT_EQ(place_segment(std::uint64_t{1} << 30, 0, 4).header, 8u);
  EXPECT_EQ(distribution::detail::header_bytes_at(0x1006), 2u);
  EXPECT_EQ(distribution::detail::header_bytes_at(0x1004), 4u);
  EXPECT_EQ(distribution::detail::header_bytes_at(0x1008), 8u);
  EXPECT_EQ(distribution::detail::header_bytes_at(0x1001), 0u);
}

TEST(XMallocSIMD, CombinesSmallRequestsWithinOnePage) {
  const acc::HostThread host;
  for (std::size_t n : {16u, 128u, 129u, 200u}) {
    CountingMalloc::counters().reset();
    CountingHeap<DP::XMallocSIMD<4096>> heap(1 << 20);
    std::vector<void*> parts(32);
    const auto h = heap.handle();
    EmulatedGrid grid;
    grid.run(1, 32, [&](const EmulatedThread& a, unsigned t) { parts[t] = h.alloc(a, n); });
    const long creates = CountingMalloc::counters().creates.load();
    if (n <= 128) {
      EXPECT_LT(creates, 8) << n;
      EXPECT_LE(CountingMalloc::counters().largest.load(), 4096u) << n;
    } else {
      EXPECT_EQ(creates, 32) << n;  // above pagesize/32: alone
    }
    for (void* p : parts) h.dealloc(host, p);
    EXPECT_EQ(CountingMalloc::counters().live.load(), 0);
  }
  static_assert(DP::XMallocSIMD<4096>::pagesize == 4096);
}

TEST(XMallocSIMD, BlowupOnePartPinsTheChunk) {
  CountingMalloc::counters().reset();
  CountingHeap<DP::XMallocSIMD<4096>> heap(1 << 20);
  std::vector<void*> parts(32);
  const auto h = heap.handle();
  EmulatedGrid grid;
  grid.run(1, 32, [&](const EmulatedThread& a, unsigned t) { parts[t] = h.alloc(a, 64); });
  const acc::HostThread host;
  for (unsigned t = 0; t < 31; ++t) h.dealloc(host, parts[t]);
  EXPECT_EQ(CountingMalloc::counters().live.load(), 1);  // lane 31 keeps the whole chunk
  h.dealloc(host, parts[31]);
  EXPECT_EQ(CountingMalloc::counters().live.load(), 0);
}

TEST(UniformCoalescing, ZeroBytesAndHostThreads) {
  CountingMalloc::counters().reset();
  distribution::SuperblockTable<ReservePoolPolicies::HostPool> table(1024);
  CountingHeap<DP::BlockNoHeader> heap(1 << 20);
  const acc::HostThread host;  // a block of one
  EXPECT_EQ(heap.handle().alloc(host, 0), nullptr);
  void* p = heap.handle().alloc(host, 40);
  ASSERT_NE(p, nullptr);
  heap.handle().dealloc(host, p);
  EXPECT_EQ(CountingMalloc::counters().live.load(), 0);
}

TEST(UniformCoalescing, WarpLanesWithAnotherSizeGoAlone) {
  CountingMalloc::counters().reset();
  CountingHeap<DP::WarpHeader> heap(1 << 20);
  std::vector<Part> parts(32);
  const auto h = heap.handle();
  EmulatedGrid grid;
  grid.run(1, 32, [&](const EmulatedThread& a, unsigned t) {
    const std::size_t n = t == 7 || t == 9 ? 24 : 16;
    parts[t] = Part{h.alloc(a, n), n, t};
    fill(parts[t]);
  });
  EXPECT_TRUE(disjoint(parts));
  EXPECT_EQ(CountingMalloc::counters().creates.load(), 3);
  const acc::HostThread host;
  for (const Part& p : parts) {
    EXPECT_TRUE(intact(p));
    h.dealloc(host, p.ptr);
  }
  EXPECT_EQ(CountingMalloc::counters().live.load(), 0);
}

TEST(UniformCoalescing, BlockMixedSizesAreRejectedInTheCheckedBuild) {
  if constexpr (!build::checked_build) {
    GTEST_SKIP() << "block sizes are trusted outside the checked build";
  } else {
    CountingMalloc::counters().reset();
    CountingHeap<DP::BlockHeader> heap(1 << 20);
    std::vector<void*> parts(40);
    const auto h = heap.handle();
    EmulatedGrid grid;
    grid.run(1, 40, [&](const EmulatedThread& a, unsigned t) { parts[t] = h.alloc(a, t == 7 ? 24 : 16); });
    for (void* p : parts) EXPECT_EQ(p, nullptr);
    EXPECT_EQ(CountingMalloc::counters().creates.load(), 0);
  }
}

}  // namespace
}  // namespace manyalloc::heap::testing
