// SizeClassSlabs' runs of whole words (more than 32 pages) under churn,
// written once for every back end (size_class_slabs_test.cpp on host
// threads, gpu_heap_test.cu on CUDA): workers keep chunks of 1 B up to 2^max_log2
// bytes live, so that runs of whole words are claimed and given back while
// other searches read the `busy` hints they change (page_pool.hpp,
// claim_words trusts them), in a pool too small for all of them at once
// (requests fail and are counted). Nothing may be corrupted or lost.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "generic/test_heaps.hpp"
#include "manyalloc_support/workers.hpp"

namespace manyalloc::heap::testing {

template <class Runner>
void expect_whole_word_run_churn_loses_nothing(std::size_t heap_bytes, std::uint32_t workers, std::uint32_t rounds,
                                               std::uint32_t max_log2) {
  SlabsHeap<Runner> heap(heap_bytes);
  const std::size_t page = CreationPolicies::SizeClassSlabsConfig::slab_bytes;
  const std::size_t run_bytes = std::size_t{1} << max_log2;  // a run of whole words
  ASSERT_GT(run_bytes, 32 * page) << "the largest request must take whole words";
  const std::size_t fresh16 = heap.getAvailableSlots(16), fresh_pages = heap.getAvailableSlots(page),
                    fresh_runs = heap.getAvailableSlots(run_bytes);
  ASSERT_GT(fresh_runs, 0u);
  typename Runner::template Buffer<std::uint32_t> counters(2);
  Runner::run(workers, Churn<typename decltype(heap)::Handle>{heap.handle(), rounds, max_log2, counters.data(),
                                                               counters.data() + 1});
  const auto c = counters.to_host();
  EXPECT_EQ(c[0], 0u) << "corrupted chunks";
  EXPECT_EQ(heap.getAvailableSlots(16), fresh16);
  EXPECT_EQ(heap.getAvailableSlots(page), fresh_pages);
  EXPECT_EQ(heap.getAvailableSlots(run_bytes), fresh_runs) << "runs of whole words lost";
  const auto st = heap.creation().template statistics<typename Runner::backend>();
  EXPECT_EQ(st.misuse_reports, 0u);
  EXPECT_EQ(st.pages_in_use, 0u);
  // A run of whole words is still served after the churn (and a small
  // chunk beside it), and given back.
  typename Runner::template Buffer<std::uint32_t> out(5);
  Runner::run(1, LargeRequestProbe<typename decltype(heap)::Handle>{heap.handle(), heap.pool_bytes(), run_bytes,
                                                                     out.data()});
  const auto r = out.to_host();
  EXPECT_EQ(r[2], 1u) << "a request of " << run_bytes << " bytes after the churn";
  EXPECT_EQ(r[4], 1u) << "a small chunk beside it";
  EXPECT_EQ(heap.getAvailableSlots(run_bytes), fresh_runs);
}

}  // namespace manyalloc::heap::testing
