// The heap test suite, written once and instantiated for every back end
// (host_heap_test.cpp, gpu_heap_test.cu) and every creation policy that
// counts its slots: TypeParam is a ScatterCase, SlabsCase, ListCase or
// MultiListCase of the back end's Runner (test_heaps.hpp).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "generic/test_heaps.hpp"
#include "manyalloc_support/workers.hpp"
#include "manyalloc/heap/heap.hpp"

namespace manyalloc::heap::testing {

template <class Runner>
class HeapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Runner::available()) GTEST_SKIP() << "no " << Runner::name << " device present: test skipped";
  }

  // Fills the heap with `bytes`-byte chunks from many workers, checks [Eckert2014]
  // 5.4 (no overlap, checksums intact), frees everything. Returns the number
  // of chunks allocated.
  template <class Heap>
  std::uint32_t fill_verify_free(const Heap& heap, std::size_t bytes, std::uint32_t workers) {
    const std::size_t fresh = heap.getAvailableSlots(bytes);
    const auto capacity = static_cast<std::uint32_t>(fresh + 1024);
    typename Runner::template Buffer<Record> records(capacity);
    typename Runner::template Buffer<std::uint32_t> counters(4);
    std::uint32_t* c = counters.data();
    Runner::run(workers, FillUntilFull<typename Heap::Handle>{heap.handle(), bytes, records.data(),
                                                              capacity, c, c + 1});
    auto host_counters = counters.to_host();
    const std::uint32_t count = std::min(host_counters[0], capacity);
    EXPECT_EQ(host_counters[1], 0u) << "more chunks than the fresh heap reported as available";
    Runner::run(count, VerifyRecords{records.data(), count, bytes, c + 2});
    host_counters = counters.to_host();
    EXPECT_EQ(host_counters[2], 0u) << "chunks whose checksums were overwritten";

    auto recs = records.to_host();
    recs.resize(count);
    std::sort(recs.begin(), recs.end(), [](const Record& a, const Record& b) { return a.ptr < b.ptr; });
    std::uint32_t overlaps = 0, misaligned = 0;
    for (std::uint32_t i = 0; i < count; ++i) {
      const auto addr = reinterpret_cast<std::uintptr_t>(recs[i].ptr);
      misaligned += addr % 16 != 0;
      if (i + 1 < count) overlaps += addr + bytes > reinterpret_cast<std::uintptr_t>(recs[i + 1].ptr);
    }
    EXPECT_EQ(overlaps, 0u);
    EXPECT_EQ(misaligned, 0u);
    // Every slot the fresh heap offered was handed out (allowing for a few
    // allocations that lost a race at the very end).
    EXPECT_GE(count, fresh - fresh / 100) << "heap reported full too early";
    EXPECT_LE(heap.getAvailableSlots(bytes), fresh / 100);

    Runner::run(count, FreeRecords<typename Heap::Handle>{heap.handle(), records.data(), count});
    EXPECT_EQ(heap.creation().template statistics<typename Runner::backend>().misuse_reports, 0u);
    EXPECT_EQ(heap.getAvailableSlots(bytes), fresh) << "memory lost after freeing everything";
    return count;
  }
};

TYPED_TEST_SUITE_P(HeapTest);

TYPED_TEST_P(HeapTest, ExactSlotsOnFreshHeapMatchThesisFormula) {
  if constexpr (!TypeParam::scatter) GTEST_SKIP() << "the thesis formula is Scatter's";
  ScatterHeap<TypeParam> heap(TypeParam::heap_bytes());
  const std::uint64_t pages = heap.creation().layout().page_count;
  ASSERT_GT(pages, 0u);
  for (std::size_t s : {16, 32, 48, 64, 96, 112, 128, 144, 256, 1008, 2048, 4096}) {
    EXPECT_EQ(heap.getAvailableSlots(s), pages * thesis_chunks_in_page(4096, s)) << "slot " << s;
  }
  for (std::size_t s : {4097, 8192, 12289, 65536}) {
    const std::uint64_t per = (s + 4095) / 4096;
    EXPECT_EQ(heap.getAvailableSlots(s), pages / per) << "slot " << s;
  }
  EXPECT_EQ(heap.getAvailableSlots(0), 0u);
}

TYPED_TEST_P(HeapTest, OverlapUntilFull) {
  std::vector<std::size_t> sizes{16, 64, 256, 1024};
  // SizeClassSlabs: every size class, and sizes between classes.
  if constexpr (!TypeParam::scatter)
    sizes = {16, 32, 48, 64, 96, 100, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3000, 4096, 6144, 8192};
  for (std::size_t bytes : sizes) {
    typename TypeParam::Heap heap(TypeParam::heap_bytes());
    const std::uint32_t n = this->fill_verify_free(heap, bytes, TypeParam::many_workers());
    EXPECT_GT(n, 0u) << bytes;
  }
}

TYPED_TEST_P(HeapTest, NoMemoryLossWithResetFreedPages) {
  typename TypeParam::ReuseHeap heap(TypeParam::heap_bytes());
  const std::vector<std::size_t> sizes{16, 64, 100, 256, 4096, 3 * TypeParam::page_bytes};
  std::vector<std::size_t> fresh;
  for (auto s : sizes) fresh.push_back(heap.getAvailableSlots(s));
  for (std::size_t bytes : {64, 16, 512}) {
    this->fill_verify_free(heap, bytes, TypeParam::many_workers());
    for (std::size_t i = 0; i < sizes.size(); ++i)
      EXPECT_EQ(heap.getAvailableSlots(sizes[i]), fresh[i]) << "after " << bytes << "-byte fill, slot " << sizes[i];
  }
}

TYPED_TEST_P(HeapTest, ChurnRandomSizesUpToFourPages) {
  typename TypeParam::ReuseHeap heap(TypeParam::heap_bytes());
  const std::size_t four_pages = 4 * TypeParam::page_bytes;
  const std::size_t fresh16 = heap.getAvailableSlots(16), fresh_big = heap.getAvailableSlots(four_pages);
  typename TypeParam::template Buffer<std::uint32_t> counters(2);
  const std::uint32_t workers = std::min<std::uint32_t>(TypeParam::many_workers(), 1u << 16);
  // Churn draws sizes up to 2^14 bytes: four Scatter pages.
  TypeParam::run(workers, Churn<typename decltype(heap)::Handle>{heap.handle(), 200, 14, counters.data(),
                                                                   counters.data() + 1});
  const auto c = counters.to_host();
  EXPECT_EQ(c[0], 0u) << "corrupted chunks";
  EXPECT_EQ(heap.getAvailableSlots(16), fresh16);
  EXPECT_EQ(heap.getAvailableSlots(four_pages), fresh_big);
  const auto st = heap.creation().template statistics<typename TypeParam::backend>();
  EXPECT_EQ(st.misuse_reports, 0u);
  EXPECT_EQ(in_use(st), 0u) << "pages still split (or segments used) after everything was freed";
}

TYPED_TEST_P(HeapTest, BadInputIsReportedAndChangesNothing) {
  typename TypeParam::Heap heap(TypeParam::heap_bytes());
  const std::size_t fresh = heap.getAvailableSlots(64);
  typename TypeParam::template Buffer<std::uint32_t> results(3);
  TypeParam::run(1, BadInputProbe<typename decltype(heap)::Handle>{heap.handle(), results.data()});
  const auto r = results.to_host();
  EXPECT_EQ(r[0], 1u) << "alloc(0) must return nullptr";
  EXPECT_EQ(r[1], 1u);
  EXPECT_EQ(r[2], 1u) << "misuse corrupted another chunk";
  const auto st = heap.creation().template statistics<typename TypeParam::backend>();
  EXPECT_EQ(st.misuse_reports, 3u) << "foreign, interior and double free must each be reported";
  EXPECT_EQ(st.last_misuse, Misuse::double_free);
  // Both chunks were freed once: the heap offers what it offered before,
  // minus nothing (the page stays split into 64-byte chunks).
  EXPECT_EQ(heap.getAvailableSlots(64), fresh);
}

TYPED_TEST_P(HeapTest, WorkersCountSlotsLikeTheHost) {
  typename TypeParam::Heap heap(TypeParam::heap_bytes());
  // Split some pages first so that the count is not trivial.
  typename TypeParam::template Buffer<std::uint32_t> counters(2);
  TypeParam::run(256, Churn<typename decltype(heap)::Handle>{heap.handle(), 3, 12, counters.data(),
                                                               counters.data() + 1});
  for (std::size_t slot : {std::size_t{16}, std::size_t{64}, std::size_t{4096}, std::size_t{20000},
                           3 * TypeParam::page_bytes, 40 * TypeParam::page_bytes}) {
    const std::size_t host = heap.getAvailableSlots(slot);
    typename TypeParam::template Buffer<unsigned long long> out(32);
    TypeParam::run(32, SlotsFromWorkers<typename decltype(heap)::Handle>{heap.handle(), slot, out.data()});
    for (auto v : out.to_host()) EXPECT_EQ(v, host) << "slot " << slot;
  }
}

TYPED_TEST_P(HeapTest, RequestsLargerThanTheHeapFailAtOnce) {
  typename TypeParam::ReuseHeap heap(TypeParam::heap_bytes());
  const std::size_t fresh_pages = heap.getAvailableSlots(TypeParam::page_bytes);
  typename TypeParam::template Buffer<std::uint32_t> out(5);
  TypeParam::run(1, LargeRequestProbe<typename decltype(heap)::Handle>{heap.handle(), heap.pool_bytes(),
                                                                        heap.pool_bytes() / 2, out.data()});
  const auto r = out.to_host();
  EXPECT_EQ(r[0], 1u) << "a request larger than the heap must fail";
  EXPECT_EQ(r[1], 1u) << "SIZE_MAX must fail";
  if constexpr (serves_whole_heap<TypeParam>()) {
    EXPECT_EQ(r[2], 1u) << "half the heap in one run of pages";
    EXPECT_EQ(r[3], 1u) << "the rest cannot hold another half";
  } else {
    EXPECT_EQ(r[2], 0u) << "half the heap is more than one list";
  }
  EXPECT_EQ(heap.getAvailableSlots(TypeParam::page_bytes), fresh_pages);
  if constexpr (TypeParam::scatter) EXPECT_EQ(fresh_pages, heap.creation().layout().page_count);
}

// Sizes are 64-bit: a heap above 4 GiB, and one request above 4 GiB.
TYPED_TEST_P(HeapTest, HeapLargerThan4GiB) {
  if constexpr (!serves_whole_heap<TypeParam>()) GTEST_SKIP() << "a request must fit into one list";
  const std::size_t gib = std::size_t{1} << 30;
  typename TypeParam::ReuseHeap heap(6 * gib);
  EXPECT_GT(heap_data_bytes(heap, TypeParam::page_bytes), 5 * gib);
  const std::size_t fresh_pages = heap.getAvailableSlots(TypeParam::page_bytes);
  typename TypeParam::template Buffer<std::uint32_t> out(5);
  TypeParam::run(1, LargeRequestProbe<typename decltype(heap)::Handle>{heap.handle(), heap.pool_bytes(),
                                                                        4 * gib + gib / 2, out.data()});
  const auto r = out.to_host();
  EXPECT_EQ(r[2], 1u) << "a 4.5 GiB request on a 6 GiB heap";
  EXPECT_EQ(r[4], 1u) << "small chunks beside it";
  EXPECT_EQ(heap.getAvailableSlots(TypeParam::page_bytes), fresh_pages);
}

REGISTER_TYPED_TEST_SUITE_P(HeapTest, ExactSlotsOnFreshHeapMatchThesisFormula, OverlapUntilFull,
                            NoMemoryLossWithResetFreedPages, ChurnRandomSizesUpToFourPages,
                            BadInputIsReportedAndChangesNothing, WorkersCountSlotsLikeTheHost,
                            RequestsLargerThanTheHeapFailAtOnce, HeapLargerThan4GiB);

}  // namespace manyalloc::heap::testing
