// Unit tests of the local region layer (Myrmics section 4): ids, ranges,
// watermarks, recursive free, packing, page trading.
#include <gtest/gtest.h>

#include <algorithm>

#include "local_regions.hpp"
#include "topology.hpp"

using namespace manyalloc::region::detail;

namespace {
constexpr std::uint64_t base = 0x500000000000ull;
}

TEST(LocalRegions, CreateAllocFreeDestroyRestoresAccounting) {
  LocalRegions lr(base, RegionWatermarks{});
  lr.add_free_slabs(0, 4096);
  lr.add_free_ids(1, 100);
  lr.create_root();
  const LocalStats start = lr.stats();
  std::uint64_t a = 0, b = 0;
  ASSERT_EQ(lr.create(0, &a), LocalStatus::ok);
  ASSERT_EQ(lr.create(a, &b), LocalStatus::ok);
  std::vector<std::uint64_t> out;
  ASSERT_EQ(lr.alloc(lr.find(a), 256, 1000, out), LocalStatus::ok);
  ASSERT_EQ(lr.alloc(lr.find(b), 50048, 3, out), LocalStatus::ok);
  EXPECT_EQ(lr.region_of(out[0]), lr.find(a));
  EXPECT_EQ(lr.region_of(out.back()), lr.find(b));
  EXPECT_EQ(lr.free(out[5]), FreeStatus::ok);
  EXPECT_EQ(lr.free(out[5]), FreeStatus::double_free);
  EXPECT_EQ(lr.free(base + 4000 * slab_bytes), FreeStatus::not_found);
  EXPECT_TRUE(lr.check_invariants());
  // Packing: region a with sub-region b, few extents.
  std::vector<Extent> ext;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> remote;
  lr.pack(lr.find(a), ext, remote);
  EXPECT_TRUE(remote.empty());
  std::uint64_t bytes = 0;
  for (auto& e : ext) bytes += e.bytes;
  EXPECT_EQ(bytes, (1000 / 16 + 1) * slab_bytes + 3 * 13 * slab_bytes);
  EXPECT_LE(ext.size(), 3u);
  // With whole_pools (mr_rfree's drop of private pages) the pools' free
  // slabs come too: every slab a free of a gives back, no more.
  {
    std::vector<Extent> whole;
    lr.pack(lr.find(a), whole, remote, true);
    std::uint64_t whole_bytes = 0;
    for (auto& e : whole) whole_bytes += e.bytes;
    EXPECT_EQ(whole_bytes, (lr.find(a)->pool.owned_slabs() + lr.find(b)->pool.owned_slabs()) * slab_bytes);
    EXPECT_GT(whole_bytes, bytes) << "a new region's pool holds free slabs";
    for (std::size_t i = 0; i < whole.size(); ++i)
      for (std::size_t j = i + 1; j < whole.size(); ++j)
        EXPECT_TRUE(whole[i].addr + whole[i].bytes <= whole[j].addr || whole[j].addr + whole[j].bytes <= whole[i].addr)
            << "extents " << i << " and " << j << " overlap";
  }
  // Recursive free returns everything.
  ASSERT_EQ(lr.destroy(a, remote), LocalStatus::ok);
  EXPECT_EQ(lr.find(b), nullptr);
  const LocalStats end = lr.stats();
  EXPECT_EQ(end.regions, start.regions);
  EXPECT_EQ(end.free_slabs + end.pool_slabs, start.free_slabs + start.pool_slabs);
  EXPECT_EQ(end.live_objects, 0u);
  EXPECT_EQ(end.free_ids, start.free_ids);
  EXPECT_EQ(lr.destroy(a, remote), LocalStatus::no_region);
  EXPECT_EQ(lr.destroy(0, remote), LocalStatus::bad_argument);
  EXPECT_TRUE(lr.check_invariants());
}

TEST(LocalRegions, RemoteChildrenAreReported) {
  LocalRegions lr(base, RegionWatermarks{});
  lr.add_free_slabs(0, 1024);
  lr.add_free_ids(1, 10);
  std::uint64_t a = 0;
  ASSERT_EQ(lr.create(0, &a), LocalStatus::ok);  // parent 0 is remote here
  lr.find(a)->children.push_back(777);           // child on another scheduler
  std::vector<Extent> ext;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> remote;
  lr.pack(lr.find(a), ext, remote);
  ASSERT_EQ(remote.size(), 1u);
  EXPECT_EQ(remote[0].first, 777u);
  remote.clear();
  ASSERT_EQ(lr.destroy(a, remote), LocalStatus::ok);
  ASSERT_EQ(remote.size(), 1u);
  EXPECT_EQ(remote[0].second, a);
}

TEST(LocalRegions, WatermarksTrimAndOutOfMemory) {
  RegionWatermarks wm;
  wm.region_hi = 64;
  wm.region_lo = 2;
  wm.pressure = 100;
  LocalRegions lr(base, wm);
  lr.add_free_slabs(0, 200);
  lr.add_free_ids(1, 1000);
  std::vector<std::uint64_t> ids;
  // Each region first gets 64 slabs, then, under pressure, 2.
  for (int i = 0; i < 10; ++i) {
    std::uint64_t id = 0;
    ASSERT_EQ(lr.create(0, &id), LocalStatus::ok);
    ids.push_back(id);
  }
  EXPECT_TRUE(lr.check_invariants());
  // A big allocation needs trimming of the others' free slabs.
  std::vector<std::uint64_t> out;
  EXPECT_EQ(lr.alloc(lr.find(ids[0]), 4096, 150, out), LocalStatus::ok);
  EXPECT_TRUE(lr.check_invariants());
  out.clear();
  EXPECT_EQ(lr.alloc(lr.find(ids[1]), 4096, 190, out), LocalStatus::no_memory);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(lr.check_invariants());
}

TEST(LocalRegions, TakePagesIsPageAligned) {
  LocalRegions lr(base, RegionWatermarks{});
  lr.add_free_slabs(10, 3 * slabs_per_page);  // not aligned: 2 whole pages inside
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  EXPECT_EQ(lr.take_pages(5, out, 16), 2u);
  for (auto [a, n] : out) {
    EXPECT_EQ(a % slabs_per_page, 0u);
    EXPECT_EQ(n % slabs_per_page, 0u);
  }
  EXPECT_EQ(lr.free_slab_count(), slabs_per_page);
}

// Flow-back to the parent: only pages entirely in the free ranges go, the
// highest first; slabs of live regions (used or in their pools) never do.
TEST(LocalRegions, TakeFreePagesTakesOnlyWholeFreePages) {
  LocalRegions lr(base, RegionWatermarks{});
  lr.add_free_slabs(0, 8 * slabs_per_page);
  lr.add_free_ids(1, 10);
  lr.create_root();
  std::uint64_t r = 0;
  ASSERT_EQ(lr.create(0, &r), LocalStatus::ok);
  std::vector<std::uint64_t> objs;
  ASSERT_EQ(lr.alloc(lr.find(r), 4096, 10, objs), LocalStatus::ok);
  const std::uint64_t pool = lr.stats().pool_slabs;
  ASSERT_GT(pool, 0u);
  // The region's slabs keep at least one page out of the free ranges.
  const std::uint64_t whole = lr.free_page_count();
  EXPECT_LT(whole, 8u);
  EXPECT_LE(whole * slabs_per_page, lr.free_slab_count());

  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  EXPECT_EQ(lr.take_free_pages(2, out, 16), 2u);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, 6 * slabs_per_page);  // the top two pages
  EXPECT_EQ(out[0].second, 2 * slabs_per_page);
  // Everything else: no more than the whole free pages left, none of the
  // region's slabs.
  EXPECT_EQ(lr.take_free_pages(100, out, 16), whole - 2);
  std::uint64_t taken = 0;
  for (auto [a, n] : out) {
    EXPECT_EQ(a % slabs_per_page, 0u);
    EXPECT_EQ(n % slabs_per_page, 0u);
    taken += n;
    EXPECT_EQ(lr.region_of(base + a * slab_bytes), nullptr);
    for (std::uint64_t o : objs) {
      const std::uint64_t s = lr.slab_of(o);
      EXPECT_FALSE(s >= a && s < a + n);
    }
  }
  EXPECT_EQ(taken, whole * slabs_per_page);
  EXPECT_EQ(lr.free_page_count(), 0u);
  EXPECT_EQ(lr.free_slab_count() + lr.stats().pool_slabs + taken, 8 * slabs_per_page);
  EXPECT_EQ(lr.stats().pool_slabs, pool);
  EXPECT_TRUE(lr.check_invariants());
  // The objects still work; once the region is gone its pages are whole
  // free pages again and all of them can go.
  for (std::uint64_t o : objs) EXPECT_EQ(lr.free(o), FreeStatus::ok);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> remote;
  ASSERT_EQ(lr.destroy(r, remote), LocalStatus::ok);
  EXPECT_EQ(lr.free_page_count(), 8 - whole);
  out.clear();
  EXPECT_EQ(lr.take_free_pages(100, out, 16), 8 - whole);
  EXPECT_EQ(lr.free_slab_count(), 0u);
  // max_ranges bounds the ranges appended.
  lr.add_free_slabs(0, slabs_per_page);
  lr.add_free_slabs(2 * slabs_per_page, slabs_per_page);
  out.assign(1, {100 * slabs_per_page, slabs_per_page});
  EXPECT_EQ(lr.take_free_pages(100, out, 2), 1u);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].first, 2 * slabs_per_page);
  EXPECT_EQ(lr.free_slab_count(), slabs_per_page);
}

TEST(Topology, TwoLevelTree) {
  auto t = Topology::make(21, 2, 4);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->nsched, 5);
  EXPECT_EQ(t->nworkers, 16);
  EXPECT_EQ(t->leaf_of(5), 1);
  EXPECT_EQ(t->leaf_of(20), 4);
  EXPECT_EQ(t->next_hop(0, 20), 4);
  EXPECT_EQ(t->next_hop(1, 20), 0);
  EXPECT_EQ(t->next_hop(4, 20), 20);
  int a = 0, b = 0;
  t->workers_of(2, a, b);
  EXPECT_EQ(a, 9);
  EXPECT_EQ(b, 13);
  EXPECT_FALSE(Topology::make(5, 2, 4));  // no room for workers
  auto one = Topology::make(4, 1, 4);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->nworkers, 3);
  EXPECT_EQ(one->next_hop(0, 3), 3);
}

// Ids carry a generation (invariants.hpp): with only 8 slots, 3000
// create/free cycles reuse every slot hundreds of times, yet the first id
// (and every other freed id) never names a region again, the new ids are
// all different, and the slot accounting stays whole. Never-used slots go
// first; only those are traded to child schedulers (take_ids).
TEST(LocalRegions, FreedIdsNeverComeBack) {
  LocalRegions lr(base, RegionWatermarks{});
  lr.add_free_slabs(0, 4096);
  lr.add_free_ids(1, 8);
  lr.create_root();
  const LocalStats start = lr.stats();
  std::uint64_t first = 0, live = 0;
  ASSERT_EQ(lr.create(0, &first), LocalStatus::ok);
  ASSERT_EQ(lr.create(0, &live), LocalStatus::ok);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> remote;
  ASSERT_EQ(lr.destroy(first, remote), LocalStatus::ok);
  std::vector<std::uint64_t> seen{first};
  for (int i = 0; i < 3000; ++i) {
    std::uint64_t id = 0;
    ASSERT_EQ(lr.create(live, &id), LocalStatus::ok);
    ASSERT_NE(id, first);
    EXPECT_EQ(lr.find(first), nullptr);
    EXPECT_FALSE(lr.owns_region(first));
    EXPECT_EQ(lr.destroy(first, remote), LocalStatus::no_region);
    ASSERT_NE(lr.find(id), nullptr);
    EXPECT_EQ(id_slot(id), id_slot(id) & max_region_id);
    seen.push_back(id);
    ASSERT_EQ(lr.destroy(id, remote), LocalStatus::ok);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());  // no id twice
  for (std::uint64_t id : seen) EXPECT_EQ(lr.find(id), nullptr);
  std::vector<std::uint64_t> out;
  EXPECT_EQ(lr.alloc(lr.find(live), 64, 10, out), LocalStatus::ok);  // the live region works
  EXPECT_EQ(lr.stats().free_ids, start.free_ids - 1);                // `live` holds one
  EXPECT_EQ(lr.take_ids(4).second, 0u);  // every free slot was used: none to trade
  EXPECT_TRUE(lr.check_invariants());
}

// A slot whose generation would wrap is retired, not reused: with 4 slots
// and generations 0..2, 12 create/free cycles use every (slot, generation)
// pair once; then no id is left (no_ids: the scheduler asks its parent for
// more), no freed id names a region, and free_ids counts none.
TEST(LocalRegions, WrappedGenerationRetiresTheSlot) {
  LocalRegions lr(base, RegionWatermarks{});
  lr.add_free_slabs(0, 1024);
  lr.add_free_ids(1, 4);
  lr.set_max_generation(2);
  std::vector<std::uint64_t> seen;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> remote;
  for (int i = 0; i < 12; ++i) {
    std::uint64_t id = 0;
    ASSERT_EQ(lr.create(0, &id), LocalStatus::ok) << i;
    EXPECT_LE(id_generation(id), 2u);
    seen.push_back(id);
    ASSERT_EQ(lr.destroy(id, remote), LocalStatus::ok);
  }
  std::uint64_t id = 0;
  EXPECT_EQ(lr.create(0, &id), LocalStatus::no_ids);
  EXPECT_EQ(lr.retired_id_count(), 4u);
  EXPECT_EQ(lr.free_id_count(), 0u);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
  for (std::uint64_t s : seen) EXPECT_EQ(lr.find(s), nullptr);
  lr.add_free_ids(100, 1);  // a refill works again
  ASSERT_EQ(lr.create(0, &id), LocalStatus::ok);
  EXPECT_EQ(id, 100u);
  EXPECT_TRUE(lr.check_invariants());
}
