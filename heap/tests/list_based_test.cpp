// The list-based baselines (CreationPolicies::ListBased and MultiList,
// [Steinberger2012] section 4) on the CPU: splitting, merging, the bins'
// first fit, exhaustion, misuse, and emulated warps. The generic suite in
// generic/heap_typed_tests.hpp covers them on host threads and CUDA.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "generic/test_heaps.hpp"
#include "manyalloc_support/emulated_warp.hpp"
#include "manyalloc/heap/heap.hpp"
#include "manyalloc_support/host_runner.hpp"
#include "manyalloc_support/workers.hpp"

namespace manyalloc::heap::testing {
namespace {

namespace lists = heap::detail::lists;
using OneList = ListHeap<HostRunner, CreationPolicies::ListBased<>>;
using ManyLists = ListHeap<HostRunner, CreationPolicies::MultiList<>>;

struct FourLists : CreationPolicies::ListBasedConfig {
  static constexpr std::uint32_t lists = 4;
};
using FourListHeap = ListHeap<HostRunner, CreationPolicies::MultiList<FourLists>>;

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The payload of a whole list: a request of it succeeds only while the
// list is one free segment.
template <class Heap>
std::size_t whole_list(const Heap& heap) {
  return heap.creation().layout().largest_request();
}

TEST(ListBins, SizesDoubleFromTheSmallestBin) {
  EXPECT_EQ(lists::bin_of(3, 64, 10), 0u);   // 48 bytes
  EXPECT_EQ(lists::bin_of(4, 64, 10), 1u);   // 64 bytes
  EXPECT_EQ(lists::bin_of(7, 64, 10), 1u);   // 112 bytes
  EXPECT_EQ(lists::bin_of(8, 64, 10), 2u);   // 128 bytes
  EXPECT_EQ(lists::bin_of(1024, 64, 10), 9u);
  EXPECT_EQ(lists::bin_of(0xfffffff0u, 64, 10), 9u) << "everything large shares the last bin";
  EXPECT_EQ(lists::bin_of(1u << 20, 64, 1), 0u);
}

TEST(ListBased, SplitsTheFirstFitAndHandsOutItsFront) {
  OneList heap(1 << 20);
  const acc::HostThread acc;
  auto h = heap.handle();
  void* a = h.alloc(acc, 64);
  void* b = h.alloc(acc, 100);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(addr(a) % 16, 0u);
  // b's header follows a's 64 bytes; b's 100 bytes are padded to 112.
  EXPECT_EQ(addr(b), addr(a) + 64 + lists::header_bytes);
  void* c = h.alloc(acc, 16);
  EXPECT_EQ(addr(c), addr(b) + 112 + lists::header_bytes);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().segments_in_use, 3u);
  for (void* p : {b, a, c}) h.dealloc(acc, p);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().segments_in_use, 0u);
}

TEST(ListBased, FreesMergeInEveryOrder) {
  OneList heap(1 << 20);
  const acc::HostThread acc;
  auto h = heap.handle();
  const std::size_t whole = whole_list(heap);
  EXPECT_EQ(heap.getAvailableSlots(whole), 1u);
  std::mt19937 rng(7);
  for (int round = 0; round < 4; ++round) {
    std::vector<void*> ptrs;
    for (int i = 0; i < 200; ++i) ptrs.push_back(h.alloc(acc, 16 + rng() % 500));
    for (void* p : ptrs) ASSERT_NE(p, nullptr);
    EXPECT_EQ(heap.getAvailableSlots(whole), 0u);
    std::shuffle(ptrs.begin(), ptrs.end(), rng);
    for (void* p : ptrs) h.dealloc(acc, p);
    EXPECT_EQ(heap.getAvailableSlots(whole), 1u) << "segments left unmerged in round " << round;
  }
  void* all = h.alloc(acc, whole);
  EXPECT_NE(all, nullptr);
  EXPECT_EQ(h.alloc(acc, 16), nullptr);
  h.dealloc(acc, all);
  EXPECT_EQ(heap.creation().statistics<acc::HostThreads>().misuse_reports, 0u);
}

// A freed segment in a smaller bin serves a small request before the large
// rest of the list does; a larger request runs over to the larger bins.
TEST(ListBased, SearchStartsAtTheBinOfTheRequest) {
  OneList heap(1 << 20);
  const acc::HostThread acc;
  auto h = heap.handle();
  void* a = h.alloc(acc, 64);
  void* b = h.alloc(acc, 4096);
  void* c = h.alloc(acc, 64);
  h.dealloc(acc, b);  // b's segment (4128 bytes) is free between a and c
  void* small = h.alloc(acc, 64);
  EXPECT_EQ(small, b) << "first fit from the request's bin takes b's segment";
  void* large = h.alloc(acc, 8192);
  EXPECT_GT(addr(large), addr(c)) << "too large for the rest of b: served from the list's tail";
  for (void* p : {a, c, small, large}) h.dealloc(acc, p);
  EXPECT_EQ(heap.getAvailableSlots(whole_list(heap)), 1u);
}

TEST(ListBased, ExhaustionMatchesTheSlotCount) {
  OneList heap(1 << 20);
  const acc::HostThread acc;
  auto h = heap.handle();
  for (std::size_t bytes : {16, 48, 1000}) {
    const std::size_t fresh = heap.getAvailableSlots(bytes);
    std::vector<void*> ptrs;
    while (void* p = h.alloc(acc, bytes)) ptrs.push_back(p);
    EXPECT_EQ(ptrs.size(), fresh) << bytes;
    EXPECT_EQ(heap.getAvailableSlots(bytes), 0u);
    for (void* p : ptrs) h.dealloc(acc, p);
    EXPECT_EQ(heap.getAvailableSlots(bytes), fresh);
  }
}

TEST(ListBased, ExhaustionGoesThroughTheOomPolicy) {
  using Throwing = Allocator<CreationPolicies::ListBased<>, DistributionPolicies::NoOp,
                             OOMPolicies::BadAllocException, ReservePoolPolicies::HostPool,
                             AlignmentPolicies::Shrink<16>>;
  Throwing heap(1 << 20);
  const acc::HostThread acc;
  EXPECT_THROW(heap.handle().alloc(acc, std::size_t{2} << 20), std::bad_alloc);
  EXPECT_EQ(heap.handle().alloc(acc, 0), nullptr);
}

TEST(ListBased, MisuseIsReportedAndChangesNothing) {
  OneList heap(1 << 20);
  const acc::HostThread acc;
  auto h = heap.handle();
  auto* p = static_cast<std::byte*>(h.alloc(acc, 256));
  auto* q = static_cast<std::uint32_t*>(h.alloc(acc, 64));
  for (std::uint32_t i = 0; i < 16; ++i) q[i] = i * 7u;
  auto misuse = [&] { return heap.creation().statistics<acc::HostThreads>(); };
  int local = 0;
  h.dealloc(acc, &local);
  EXPECT_EQ(misuse().last_misuse, Misuse::foreign_pointer);
  h.dealloc(acc, p + 64);  // aligned, inside p: its "header" is p's data
  EXPECT_EQ(misuse().last_misuse, Misuse::not_a_chunk_start);
  h.dealloc(acc, p + 4);
  EXPECT_EQ(misuse().last_misuse, Misuse::not_a_chunk_start);
  h.dealloc(acc, p);
  h.dealloc(acc, p);
  EXPECT_EQ(misuse().last_misuse, Misuse::double_free);
  EXPECT_EQ(misuse().misuse_reports, 4u);
  for (std::uint32_t i = 0; i < 16; ++i) EXPECT_EQ(q[i], i * 7u);
  EXPECT_EQ(misuse().segments_in_use, 1u);
  h.dealloc(acc, q);
  // q merged with the freed p and the rest: a second free of q finds no header.
  h.dealloc(acc, q);
  EXPECT_EQ(misuse().misuse_reports, 5u);
  EXPECT_EQ(heap.getAvailableSlots(whole_list(heap)), 1u);
}

TEST(MultiList, SplitsThePoolIntoOneListPerProcessorByDefault) {
  ManyLists heap(std::size_t{16} << 20);
  EXPECT_EQ(heap.creation().layout().lists, CreationPolicies::MultiListConfig::lists);
  EXPECT_EQ(heap.getAvailableSlots(whole_list(heap)), CreationPolicies::MultiListConfig::lists);
  EXPECT_NE(ManyLists::info(" ").find("MultiList[lists=132,bins=10"), std::string::npos);
  EXPECT_NE(OneList::info(" ").find("ListBased[bins=10"), std::string::npos);
}

// One worker fills every list: its own first, then the following ones.
TEST(MultiList, FullListsPassRequestsOnToTheNext) {
  FourListHeap heap(1 << 20);
  const acc::HostThread acc;
  auto h = heap.handle();
  const std::size_t fresh = heap.getAvailableSlots(128);
  std::vector<void*> ptrs;
  while (void* p = h.alloc(acc, 128)) ptrs.push_back(p);
  EXPECT_EQ(ptrs.size(), fresh) << "a request failed while another list had room";
  const auto& l = heap.creation().layout();
  std::vector<int> per_list(l.lists);
  for (void* p : ptrs) ++per_list[(static_cast<std::byte*>(p) - l.data) / l.list_bytes];
  for (int n : per_list) EXPECT_EQ(n, per_list[0]);
  EXPECT_EQ(h.alloc(acc, whole_list(heap) + 16), nullptr) << "larger than a list";
  for (void* p : ptrs) h.dealloc(acc, p);
  EXPECT_EQ(heap.getAvailableSlots(whole_list(heap)), 4u);
}

// Many host threads churn on few lists: no chunk is overwritten, no list is
// corrupted, and everything merges back.
template <class Heap>
void churn_many_threads(std::size_t heap_bytes) {
  Heap heap(heap_bytes);
  const std::size_t whole = whole_list(heap);
  const std::uint32_t lists_count = heap.creation().layout().lists;
  HostRunner::threads = 16;
  HostRunner::Buffer<std::uint32_t> counters(2);
  HostRunner::run(64, Churn<typename Heap::Handle>{heap.handle(), 2000, 11, counters.data(), counters.data() + 1});
  EXPECT_EQ(counters.to_host()[0], 0u) << "corrupted chunks";
  const auto st = heap.creation().template statistics<acc::HostThreads>();
  EXPECT_EQ(st.misuse_reports, 0u);
  EXPECT_EQ(st.segments_in_use, 0u);
  EXPECT_EQ(heap.getAvailableSlots(whole), lists_count);
}

TEST(ListBased, ChurnOnManyThreadsMergesBack) { churn_many_threads<OneList>(std::size_t{8} << 20); }
TEST(MultiList, ChurnOnManyThreadsMergesBack) { churn_many_threads<FourListHeap>(std::size_t{8} << 20); }

// Emulated warps: lanes of one warp contend for one list lock.
template <class Heap>
void emulated_warps_get_disjoint_chunks() {
  Heap heap(std::size_t{8} << 20);
  const std::size_t whole = whole_list(heap);
  const unsigned blocks = 2, threads = 96;
  std::vector<void*> ptrs(blocks * threads);
  std::vector<std::size_t> sizes(blocks * threads);
  for (unsigned i = 0; i < sizes.size(); ++i) sizes[i] = 16 + (i * 37u) % 3000;
  acc::EmulatedGrid grid;
  const auto handle = heap.handle();
  grid.run(blocks, threads, [&](const acc::EmulatedThread& a, unsigned t) {
    ptrs[t] = handle.alloc(a, sizes[t]);
    if (ptrs[t] != nullptr) std::memset(ptrs[t], static_cast<int>(t & 0xff), sizes[t]);
  });
  std::vector<std::pair<std::uintptr_t, std::size_t>> spans;
  for (unsigned t = 0; t < ptrs.size(); ++t) {
    ASSERT_NE(ptrs[t], nullptr) << "worker " << t;
    const auto* b = static_cast<const unsigned char*>(ptrs[t]);
    EXPECT_TRUE(b[0] == (t & 0xff) && b[sizes[t] - 1] == (t & 0xff)) << "chunk of worker " << t << " overwritten";
    spans.emplace_back(addr(ptrs[t]), sizes[t]);
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i)
    EXPECT_LE(spans[i - 1].first + spans[i - 1].second, spans[i].first) << "overlap";
  grid.run(blocks, threads, [&](const acc::EmulatedThread& a, unsigned t) { handle.dealloc(a, ptrs[t]); });
  EXPECT_EQ(heap.creation().template statistics<acc::HostThreads>().misuse_reports, 0u);
  EXPECT_EQ(heap.getAvailableSlots(whole), heap.creation().layout().lists) << "memory lost";
}

TEST(ListBased, EmulatedWarpsGetDisjointChunks) { emulated_warps_get_disjoint_chunks<OneList>(); }
TEST(MultiList, EmulatedWarpsGetDisjointChunks) { emulated_warps_get_disjoint_chunks<FourListHeap>(); }

}  // namespace
}  // namespace manyalloc::heap::testing
