// SizeClassSlabs' placement rule (P4 of detail/slabs/invariants.hpp): runs of
// at most 32 pages start below the large-request zone at the top of the
// pool and enter it only once every word below it is full; runs of whole
// words come from the top, so that a long run fits after small requests of
// every class and shard.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "generic/test_heaps.hpp"
#include "manyalloc/heap/heap.hpp"
#include "manyalloc_support/host_runner.hpp"

namespace manyalloc::heap::testing {
namespace {

namespace slabs = heap::detail::slabs;

// A host thread that claims from the shard and as the warp it is given (a
// plain HostThread's shard follows the CPU it runs on).
struct OnShard : acc::HostThread {
  unsigned shard = 0, warp = 0;
  unsigned processor_id() const { return shard; }
  unsigned warp_id() const { return warp; }
};

std::uint32_t page_of(const slabs::SlabLayout& h, const void* p) {
  return static_cast<std::uint32_t>((static_cast<const std::byte*>(p) - h.data) >> h.slab_shift);
}

// The configuration of the heaps below with no large-request zone: small
// runs hashed over the whole pool, as before the zone existed.
struct NoZone : CreationPolicies::SizeClassSlabsConfig {
  static constexpr std::uint32_t large_zone_eighths = 0;
};

// Requests of 19 sizes (16 B to about 23 KiB) from each of 128 shards, which
// open a slot segment in up to 19 x 128 slots, then one request of 1 GiB.
// Returns whether the 1 GiB request was served; every chunk is freed again.
template <class Config>
bool one_gib_after_small_requests_of_every_class_and_shard(std::uint32_t* lowest_large_page = nullptr,
                                                          std::uint32_t* highest_small_page = nullptr) {
  SlabsHeap<HostRunner, Config> heap(std::size_t{8} << 30);
  const auto& h = heap.creation().layout();
  const auto handle = heap.handle();
  std::vector<void*> small;
  std::uint32_t highest = 0;
  for (unsigned shard = 0; shard < 128; ++shard) {
    OnShard acc;
    acc.shard = shard;
    acc.warp = shard * 7u;
    for (std::uint32_t bytes = 16; bytes <= 32768; bytes += bytes / 2) {
      void* p = handle.alloc(acc, bytes);
      EXPECT_NE(p, nullptr) << bytes << " B from shard " << shard;
      if (p == nullptr) continue;
      small.push_back(p);
      if (page_of(h, p) > highest) highest = page_of(h, p);
    }
  }
  const acc::HostThread acc;
  void* large = handle.alloc(acc, std::size_t{1} << 30);
  if (large != nullptr) {
    if (lowest_large_page != nullptr) *lowest_large_page = page_of(h, large);
    handle.dealloc(acc, large);
  }
  if (highest_small_page != nullptr) *highest_small_page = highest;
  for (void* p : small) handle.dealloc(acc, p);
  EXPECT_EQ(heap.creation().template statistics<acc::HostThreads>().misuse_reports, 0u);
  return large != nullptr;
}

// Hashed over the whole 8 GiB pool (about 4,060 words), the segments leave
// no 512 free words in a row; below the zone (a quarter of the words), they
// leave the zone whole.
TEST(SlabPlacement, AOneGiBRunFitsAfterSmallRequestsOfEveryClassAndShard) {
  std::uint32_t large_page = 0, highest_small = 0;
  ASSERT_TRUE(one_gib_after_small_requests_of_every_class_and_shard<CreationPolicies::SizeClassSlabsConfig>(
      &large_page, &highest_small))
      << "no 512 free words in a row";
  EXPECT_GT(large_page, highest_small) << "the long run lies above every small request's page";
}

// The same requests without the zone: the failure the zone exists for (so
// that the test above proves the zone, not a lucky hash).
TEST(SlabPlacement, WithoutTheZoneTheOneGiBRunFails) {
  EXPECT_FALSE(one_gib_after_small_requests_of_every_class_and_shard<NoZone>());
}

// Requests of one page each (40 KiB: larger than the largest class, which
// fits twice into a page) fill a 32 MiB pool. No page of the zone is handed
// out while a word below the zone has a free page, and every page is handed
// out before a request fails: the zone costs no room.
TEST(SlabPlacement, SmallRunsEnterTheZoneOnlyOnceTheWordsBelowAreFull) {
  SlabsHeap<HostRunner> heap(std::size_t{32} << 20);
  const auto& h = heap.creation().layout();
  ASSERT_GT(h.small_words, 0u);
  ASSERT_LT(h.small_words, h.words) << "the pool has a zone";
  const auto handle = heap.handle();
  const std::uint32_t usable = h.page_count;
  const auto words_below_zone_full = [&] {
    for (std::uint32_t w = 0; w < h.small_words; ++w) {
      const std::uint32_t valid = w * 32u + 32u <= usable ? 0xffffffffu : (1u << (usable - w * 32u)) - 1u;
      if ((h.taken[w] & valid) != valid) return false;
    }
    return true;
  };
  std::vector<void*> pages;
  std::uint32_t in_zone = 0;
  for (std::uint32_t i = 0; i <= usable; ++i) {
    OnShard acc;
    acc.shard = i % 8u;
    acc.warp = i;
    const bool below_full = words_below_zone_full();
    void* p = handle.alloc(acc, 40u << 10);
    if (p == nullptr) break;
    pages.push_back(p);
    if (page_of(h, p) >= h.small_words * 32u) {
      ++in_zone;
      ASSERT_TRUE(below_full) << "page " << page_of(h, p) << " of the zone handed out while a word below had room";
    }
  }
  EXPECT_GT(in_zone, 0u);
  const auto st = heap.creation().statistics<acc::HostThreads>();
  EXPECT_EQ(st.pages_in_use, usable) << "every page handed out before a request failed";
  for (void* p : pages) handle.dealloc(acc::HostThread{}, p);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().pages_in_use, 0u);
}

}  // namespace
}  // namespace manyalloc::heap::testing
