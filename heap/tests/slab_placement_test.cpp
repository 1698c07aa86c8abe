// SizeClassSlabs' placement rule (P4 of detail/slabs/invariants.hpp): runs of
// at most 32 pages pack the low end of the pool, runs of whole words come
// from the top, so that a long run fits after small requests of every class.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "generic/test_heaps.hpp"
#include "manyalloc/heap/heap.hpp"
#include "manyalloc_support/host_runner.hpp"

namespace manyalloc::heap::testing {
namespace {

namespace slabs = heap::detail::slabs;

// A host thread that claims from the shard it is given (a plain
// HostThread's shard follows the CPU it runs on).
struct OnShard : acc::HostThread {
  unsigned shard = 0;
  unsigned processor_id() const { return shard; }
};

std::uint32_t page_of(const slabs::SlabLayout& h, const void* p) {
  return static_cast<std::uint32_t>((static_cast<const std::byte*>(p) - h.data) >> h.slab_shift);
}

// Requests of 19 sizes from each of 16 shards open a slot segment each.
// Hashed over the whole pool, such segments left no 512 free words in a row
// in a 2 GiB pool of about 1,000 words (this test failed so); packed at the
// low end they leave the top free.
TEST(SlabPlacement, AOneGiBRunFitsAfterSmallRequestsOfEveryClassAndShard) {
  SlabsHeap<HostRunner> heap(std::size_t{2} << 30);
  const auto& h = heap.creation().layout();
  const auto handle = heap.handle();
  std::vector<void*> small;
  std::uint32_t highest_small_page = 0;
  for (unsigned shard = 0; shard < 16; ++shard) {
    OnShard acc;
    acc.shard = shard;
    for (std::uint32_t bytes = 16; bytes <= 32768; bytes += bytes / 2) {
      void* p = handle.alloc(acc, bytes);
      ASSERT_NE(p, nullptr) << bytes << " B from shard " << shard;
      small.push_back(p);
      highest_small_page = std::max(highest_small_page, page_of(h, p));
    }
  }
  const acc::HostThread acc;
  void* large = handle.alloc(acc, std::size_t{1} << 30);
  ASSERT_NE(large, nullptr) << "no 512 free words in a row after " << small.size() << " small requests";
  EXPECT_GT(page_of(h, large), highest_small_page) << "the long run lies above every small request's page";
  handle.dealloc(acc, large);
  for (void* p : small) handle.dealloc(acc, p);
  const auto st = heap.creation().statistics<acc::HostThreads>();
  EXPECT_EQ(st.misuse_reports, 0u);
}

}  // namespace
}  // namespace manyalloc::heap::testing
