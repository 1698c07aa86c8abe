// The generic heap suite on host threads, plus what only the host has.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <string>

#include "generic/heap_typed_tests.hpp"
#include "manyalloc_support/host_runner.hpp"

namespace manyalloc::heap::testing {

// Scatter on a pool that counts as resident: its pages start clean and are
// first split by one CAS (I1c), as on the GPU.
struct ScatterCleanPagesCase : ScatterCase<ResidentHostRunner> {
  static constexpr const char* case_name = "ScatterCleanPages";
};

using HostCases = ::testing::Types<ScatterCase<HostRunner>, ScatterCleanPagesCase, SlabsCase<HostRunner>,
                                   ListCase<HostRunner>, MultiListCase<HostRunner>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Host, HeapTest, HostCases, CaseName);

TEST(HostHeap, BadAllocExceptionThrowsOnExhaustion) {
  using Heap = Allocator<CreationPolicies::Scatter<>, DistributionPolicies::NoOp, OOMPolicies::BadAllocException,
                         ReservePoolPolicies::HostPool, AlignmentPolicies::Shrink<16>>;
  Heap heap(1 << 20);
  const acc::HostThread acc;
  EXPECT_THROW(heap.handle().alloc(acc, std::size_t{1} << 30), std::bad_alloc);
  EXPECT_EQ(heap.handle().alloc(acc, 0), nullptr) << "a zero-byte request is not out of memory";
  void* p = heap.handle().alloc(acc, 100);
  EXPECT_NE(p, nullptr);
  heap.handle().dealloc(acc, p);
}

// Shrink pads by an add and a mask: the result is the next multiple of the
// alignment, 0 stays 0, and a size whose padding overflows becomes SIZE_MAX
// (no heap serves it, so the request fails through the OOM policy).
template <std::uint32_t A>
void expect_shrink_padding() {
  using Pad = AlignmentPolicies::Shrink<A>;
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(Pad::apply_padding(0), 0u);
  EXPECT_EQ(Pad::apply_padding(1), std::size_t{A});
  EXPECT_EQ(Pad::apply_padding(A), std::size_t{A});
  EXPECT_EQ(Pad::apply_padding(A + 1), std::size_t{2} * A);
  constexpr std::size_t last_multiple = max - (A - 1);  // the largest multiple of A
  EXPECT_EQ(Pad::apply_padding(last_multiple), last_multiple);
  EXPECT_EQ(Pad::apply_padding(last_multiple - 1), last_multiple);
  EXPECT_EQ(Pad::apply_padding(last_multiple + 1), max);
  EXPECT_EQ(Pad::apply_padding(max), max);
}

TEST(HostHeap, ShrinkPadsToTheAlignmentAndOverflowsToSizeMax) {
  expect_shrink_padding<2>();
  expect_shrink_padding<16>();
  expect_shrink_padding<4096>();
}

TEST(HostHeap, InfoNamesEveryPolicy) {
  using Heap = ScatterHeap<HostRunner>;
  const std::string info = Heap::info("\n");
  EXPECT_NE(info.find("Scatter[pagesize=4096,accessblocks=8,regionsize=16,wastefactor=2"), std::string::npos);
  EXPECT_NE(info.find("hashingK=38183,hashingDistMP=17497"), std::string::npos);
  EXPECT_NE(info.find("DistributionPolicy=NoOp"), std::string::npos);
  EXPECT_NE(info.find("OOMPolicy=ReturnNull"), std::string::npos);
  EXPECT_NE(info.find("ReservePoolPolicy=HostPool"), std::string::npos);
  EXPECT_NE(info.find("AlignmentPolicy=Shrink[16]"), std::string::npos);
  EXPECT_TRUE(traits::providesAvailableSlots<Heap>);
  using Baseline = Allocator<CreationPolicies::HostMalloc, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                             ReservePoolPolicies::HostPool, AlignmentPolicies::NoOp>;
  EXPECT_FALSE(traits::providesAvailableSlots<Baseline>);
}

// Every region of pages that fits is used, also when the regions do not
// divide evenly among the access blocks (the last block takes the rest).
TEST(HostHeap, SmallHeapsUseAlmostAllTheirPool) {
  for (std::size_t mib : {1, 3, 4, 7}) {
    ScatterHeap<HostRunner> heap(mib << 20);
    const auto& l = heap.creation().layout();
    // At most one region, the alignment of page 0 and the metadata are lost.
    const std::uint64_t unused = (mib << 20) - std::uint64_t{l.page_count} * 4096;
    EXPECT_LE(unused, 16 * 4096 + 4096 + l.metadata_bytes) << mib << " MiB";
    EXPECT_EQ(l.page_count % 16, 0u);
    EXPECT_GE(l.pages_in_block(l.block_count - 1), l.pages_per_block);
    // Pages of the last block, beyond block_count * pages_per_block, are allocatable.
    EXPECT_EQ(heap.getAvailableSlots(4096), l.page_count);
  }
}

TEST(HostHeap, HeapTooSmallIsRejected) {
  EXPECT_THROW(ScatterHeap<HostRunner>(4096), std::invalid_argument);
}

TEST(HostHeap, MovedAllocatorOwnsTheHeap) {
  ScatterHeap<HostRunner> a(1 << 20);
  const acc::HostThread acc;
  void* p = a.handle().alloc(acc, 64);
  ASSERT_NE(p, nullptr);
  ScatterHeap<HostRunner> b(std::move(a));
  b.handle().dealloc(acc, p);
  EXPECT_EQ(b.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
  EXPECT_EQ(b.getAvailableSlots(64), b.creation().layout().page_count * thesis_chunks_in_page(4096, 64));
}

TEST(HostHeap, ResetEmptiesTheHeap) {
  ScatterHeap<HostRunner> heap(1 << 20);
  const std::size_t fresh = heap.getAvailableSlots(32);
  const acc::HostThread acc;
  for (int i = 0; i < 100; ++i) ASSERT_NE(heap.handle().alloc(acc, 32), nullptr);
  EXPECT_EQ(heap.getAvailableSlots(32), fresh - 100);
  heap.reset();
  EXPECT_EQ(heap.getAvailableSlots(32), fresh);
}

TEST(HostHeap, BaselineAllocatorWorks) {
  using Baseline = Allocator<CreationPolicies::HostMalloc, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                             ReservePoolPolicies::HostPool, AlignmentPolicies::NoOp>;
  Baseline heap(1 << 16);
  const acc::HostThread acc;
  void* p = heap.handle().alloc(acc, 1000);
  ASSERT_NE(p, nullptr);
  heap.handle().dealloc(acc, p);
  EXPECT_EQ(heap.handle().alloc(acc, 0), nullptr);
}

}  // namespace manyalloc::heap::testing
