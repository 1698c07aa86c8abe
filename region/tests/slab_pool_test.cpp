// Unit tests of the SLAB allocator (Myrmics section 3).
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "slab_pool.hpp"

using namespace manyalloc::region::detail;

namespace {
constexpr std::uint64_t base = 0x500000000000ull;
std::uint64_t slab_addr(std::uint64_t idx) { return base + idx * slab_bytes; }
}  // namespace

TEST(SlabPool, SlotSizes) {
  EXPECT_EQ(SlabPool::slot_size(0), 64u);
  EXPECT_EQ(SlabPool::slot_size(1), 64u);
  EXPECT_EQ(SlabPool::slot_size(65), 128u);
  EXPECT_EQ(SlabPool::slot_size(192), 192u);
  EXPECT_EQ(SlabPool::slot_size(50048), 50048u);
  EXPECT_EQ(SlabPool::slot_size(max_object_bytes + 1), 0u);
  EXPECT_EQ(SlabPool::slabs_for_slot(4096), 1u);
  EXPECT_EQ(SlabPool::slabs_for_slot(50048), 13u);
}

TEST(SlabPool, NeedsSlabsThenAllocatesAlignedDistinctSlots) {
  SlabPool p(base);
  EXPECT_EQ(p.alloc(100), 0u);  // no slabs yet
  p.add_free(0, 8);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 4096 / 128 * 3; ++i) {
    const std::uint64_t a = p.alloc(100);
    ASSERT_NE(a, 0u);
    EXPECT_EQ((a - base) % 64, 0u);
    EXPECT_TRUE(seen.insert(a).second);
    EXPECT_EQ(p.object_size(a), 128u);
  }
  EXPECT_EQ(p.stats().full_slabs, 3u);
  EXPECT_EQ(p.stats().partial_slabs, 0u);
  EXPECT_EQ(p.free_slabs(), 5u);
  EXPECT_TRUE(p.check_invariants());
}

TEST(SlabPool, FreeErrors) {
  SlabPool p(base);
  p.add_free(0, 4);
  const std::uint64_t a = p.alloc(192);
  EXPECT_EQ(p.free(a + 64), FreeStatus::not_slot_start);
  EXPECT_EQ(p.free(slab_addr(3)), FreeStatus::not_found);
  EXPECT_EQ(p.free(a + 192), FreeStatus::double_free);  // slot 1 never allocated
  // 4096 / 192 = 21 slots; the tail of the slab is no slot.
  EXPECT_EQ(p.free(a + 21 * 192), FreeStatus::not_slot_start);
  EXPECT_EQ(p.free(a), FreeStatus::ok);
  EXPECT_EQ(p.free(a), FreeStatus::not_found);  // slab went back to free ranges
  EXPECT_EQ(p.free_slabs(), 4u);
}

TEST(SlabPool, LargeObjectsSpanSlabs) {
  SlabPool p(base);
  p.add_free(0, 38);
  const std::uint64_t a = p.alloc(50048);
  const std::uint64_t b = p.alloc(50048);
  ASSERT_NE(a, 0u);
  ASSERT_NE(b, 0u);
  EXPECT_EQ(b - a, 13 * slab_bytes);
  EXPECT_EQ(p.alloc(50048), 0u);  // 12 slabs left, 13 needed
  EXPECT_EQ(p.stats().full_slabs, 2u);
  EXPECT_EQ(p.free(a + slab_bytes), FreeStatus::not_slot_start);
  EXPECT_EQ(p.free(a), FreeStatus::ok);
  EXPECT_TRUE(p.check_invariants());
}

TEST(SlabPool, RandomAgainstReference) {
  SlabPool p(base);
  p.add_free(0, 1 << 17);
  std::mt19937_64 rng(7);
  const std::uint64_t sizes[] = {64, 192, 1024, 1536, 4096, 50048};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> live;  // addr, slot
  for (int i = 0; i < 50000; ++i) {
    if (live.empty() || rng() % 10 < 6) {
      const std::uint64_t s = sizes[rng() % 6];
      const std::uint64_t a = p.alloc(s);
      ASSERT_NE(a, 0u);
      live.emplace_back(a, SlabPool::slot_size(s));
    } else {
      const std::size_t j = rng() % live.size();
      ASSERT_EQ(p.free(live[j].first), FreeStatus::ok);
      live[j] = live.back();
      live.pop_back();
    }
  }
  // No overlaps.
  std::sort(live.begin(), live.end());
  for (std::size_t i = 1; i < live.size(); ++i) EXPECT_LE(live[i - 1].first + live[i - 1].second, live[i].first);
  EXPECT_EQ(p.stats().live_objects, live.size());
  EXPECT_TRUE(p.check_invariants());
  for (auto& [a, s] : live) ASSERT_EQ(p.free(a), FreeStatus::ok);
  EXPECT_EQ(p.stats().used_pages, 0u);
  EXPECT_EQ(p.free_slabs(), 1u << 17);
}

TEST(SlabPool, PackingCoalescesAdjacentSlabs) {
  SlabPool p(base);
  p.add_free(0, 64);
  std::vector<std::uint64_t> objs;
  for (int i = 0; i < 64 * 5; ++i) objs.push_back(p.alloc(256));  // 16 per slab: 20 slabs
  std::vector<std::pair<std::uint64_t, std::uint64_t>> runs;
  p.for_each_used_run([&](std::uint64_t a, std::uint64_t n) { runs.emplace_back(a, n); });
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].first, base);
  EXPECT_EQ(runs[0].second, 20 * slab_bytes);
  // Empty slab 5 (objects 80..95): two runs.
  for (int i = 80; i < 96; ++i) ASSERT_EQ(p.free(objs[static_cast<std::size_t>(i)]), FreeStatus::ok);
  runs.clear();
  p.for_each_used_run([&](std::uint64_t a, std::uint64_t n) { runs.emplace_back(a, n); });
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].second, 5 * slab_bytes);
  EXPECT_EQ(runs[1].first, slab_addr(6));
  EXPECT_EQ(runs[1].second, 14 * slab_bytes);
}

// P6: the cached packing follows every change of the used slabs.
TEST(SlabPool, CachedPackingFollowsChanges) {
  SlabPool p(base);
  p.add_free(0, 64);
  auto walk = [&] {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> runs;
    p.for_each_used_run([&](std::uint64_t a, std::uint64_t n) { runs.emplace_back(a, n); });
    return runs;
  };
  EXPECT_TRUE(p.used_runs().empty());
  std::vector<std::uint64_t> objs;
  for (int i = 0; i < 16 * 3; ++i) objs.push_back(p.alloc(256));
  EXPECT_EQ(p.used_runs(), walk());
  EXPECT_EQ(p.used_runs().size(), 1u);
  objs.push_back(p.alloc(256));  // a fourth slab
  EXPECT_EQ(p.used_runs(), walk());
  for (int i = 16; i < 32; ++i) ASSERT_EQ(p.free(objs[static_cast<std::size_t>(i)]), FreeStatus::ok);
  EXPECT_EQ(p.used_runs(), walk());
  EXPECT_EQ(p.used_runs().size(), 2u);
  EXPECT_TRUE(p.check_invariants());
  p.release_all([](std::uint64_t, std::uint64_t) {});
  EXPECT_TRUE(p.used_runs().empty());
}
