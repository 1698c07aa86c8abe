// CreationPolicies::HeapBuffer ([Eckert2014] 2.4.4) on a CUDA GPU: the thesis's
// failure mode (a ring that runs empty is seen late and a live frame handed
// out again) provoked by far more threads than frames, at once and under
// churn in one kernel; every refusal must be counted and no live frame
// overwritten. Skips itself when no GPU is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "manyalloc_support/cuda_runner.hpp"

namespace manyalloc::heap::testing {
namespace {

struct FourSpecies : CreationPolicies::HeapBufferConfig {
  static constexpr std::uint32_t frame_bytes = 1024;
  static constexpr std::uint32_t species = 4;
};
using Creation = CreationPolicies::HeapBuffer<FourSpecies>;
using Heap = Allocator<Creation, DistributionPolicies::NoOp, OOMPolicies::ReturnNull, ReservePoolPolicies::CudaMalloc,
                       AlignmentPolicies::Shrink<16>>;

// Each worker takes one frame and writes its index into the first and last word.
struct TakeAndMark {
  Heap::Handle heap;
  void** ptrs;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    auto* p = static_cast<std::uint32_t*>(heap.alloc(acc, 64));
    ptrs[w] = p;
    if (p != nullptr) {
      p[0] = w;
      p[FourSpecies::frame_bytes / 4 - 1] = ~w;
    }
  }
};
struct CheckMarks {
  void* const* ptrs;
  std::uint32_t* bad;
  template <class Acc>
  __device__ void operator()(const Acc&, std::uint32_t w) const {
    const auto* p = static_cast<const std::uint32_t*>(ptrs[w]);
    if (p != nullptr && (p[0] != w || p[FourSpecies::frame_bytes / 4 - 1] != ~w)) atomicAdd(bad, 1u);
  }
};
// Rounds of take, mark, check, free in one kernel.
struct Churn {
  Heap::Handle heap;
  std::uint32_t rounds;
  std::uint32_t* counters;  // [0] refused, [1] overwritten
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t w) const {
    for (std::uint32_t r = 0; r < rounds; ++r) {
      auto* p = static_cast<volatile std::uint32_t*>(heap.alloc(acc, 1000));
      if (p == nullptr) {
        atomicAdd(counters, 1u);
        continue;
      }
      const std::uint32_t mark = w * 977u + r;
      for (int i = 0; i < 8; ++i) p[i * 31] = mark + i;
      for (int i = 0; i < 8; ++i) {
        if (p[i * 31] != mark + i) {
          atomicAdd(counters + 1, 1u);
          break;
        }
      }
      heap.dealloc(acc, const_cast<std::uint32_t*>(p));
    }
  }
};

TEST(CudaHeapBuffer, EveryThreadSeesTheEmptyRingAndFramesStayUnique) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  Heap heap(std::size_t{64} << 20);
  const std::uint32_t frames = heap.creation().frames_per_species();
  const std::uint32_t workers = frames * 4;
  CudaRunner::Buffer<void*> ptrs(workers);
  CudaRunner::Buffer<std::uint32_t> bad(1);
  CudaRunner::run(workers, TakeAndMark{Heap::Handle(heap.creation().for_species(2)), ptrs.data()});
  CudaRunner::run(workers, CheckMarks{ptrs.data(), bad.data()});
  EXPECT_EQ(bad.to_host()[0], 0u) << "a frame was handed out twice";
  auto got = ptrs.to_host();
  got.erase(std::remove(got.begin(), got.end(), nullptr), got.end());
  EXPECT_EQ(got.size(), frames);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(std::adjacent_find(got.begin(), got.end()), got.end());
  const auto r = heap.creation().reports<acc::Cuda>();
  EXPECT_EQ(r.empty, workers - frames);
  EXPECT_EQ(r.live_refused, 0u);
  EXPECT_EQ(heap.creation().free_frames<acc::Cuda>(2), 0u);
  EXPECT_EQ(heap.creation().free_frames<acc::Cuda>(1), frames) << "the other parts are untouched";
}

TEST(CudaHeapBuffer, ChurnAtAnEmptyRingNeverOverwritesALiveFrame) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  // The pool follows the worker count (MANYALLOC_TEST_WORKERS is small
  // under the sanitizers), so that the ring always runs empty.
  const std::uint32_t workers = std::min<std::uint32_t>(CudaRunner::many_workers(), 1u << 16);
  Heap heap(std::size_t{workers} / 16 * FourSpecies::frame_bytes * FourSpecies::species + (std::size_t{1} << 20));
  const std::uint32_t frames = heap.creation().frames_per_species();
  ASSERT_GT(workers, frames * 8) << "the ring must run empty";
  CudaRunner::Buffer<std::uint32_t> counters(2);
  CudaRunner::run(workers, Churn{heap.handle(), 20, counters.data()});
  const auto c = counters.to_host();
  EXPECT_EQ(c[1], 0u) << "a live frame was overwritten";
  EXPECT_GT(c[0], 0u);
  const auto r = heap.creation().reports<acc::Cuda>();
  EXPECT_EQ(r.empty, c[0]) << "every refusal is counted";
  EXPECT_EQ(r.live_refused, 0u);
  EXPECT_EQ(r.misuse, 0u);
  EXPECT_EQ(heap.creation().free_frames<acc::Cuda>(0), frames) << "every frame came back";
}

}  // namespace
}  // namespace manyalloc::heap::testing
