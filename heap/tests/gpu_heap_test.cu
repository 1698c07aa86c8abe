// The generic heap suite on a CUDA GPU at full occupancy (2^20 workers),
// plus the DeviceMalloc baseline. Skips itself when no GPU is present.
#include <gtest/gtest.h>

#include "manyalloc_support/cuda_runner.hpp"
#include "generic/heap_typed_tests.hpp"

namespace manyalloc::testing {

using CudaCases = ::testing::Types<ScatterCase<CudaRunner>, SlabsCase<CudaRunner>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Cuda, HeapTest, CudaCases, CaseName);

namespace {
template <class Handle>
struct AllocWriteFree {
  Handle heap;
  std::uint32_t* failures;
  template <class Acc>
  __device__ void operator()(const Acc& acc, std::uint32_t worker) const {
    auto* p = static_cast<std::uint32_t*>(heap.alloc(acc, 16));
    if (p == nullptr) {
      atomicAdd(failures, 1u);
      return;
    }
    p[0] = worker;
    p[3] = ~worker;
    if (p[0] != worker || p[3] != ~worker) atomicAdd(failures + 1, 1u);
    heap.dealloc(acc, p);
  }
};
}  // namespace

TEST(CudaDeviceMalloc, BaselineAllocatesFromKernels) {
  if (!CudaRunner::available()) GTEST_SKIP() << "no CUDA device present: test skipped";
  using Heap = Allocator<CreationPolicies::DeviceMalloc, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                         ReservePoolPolicies::CudaSetLimits, AlignmentPolicies::NoOp>;
  Heap heap(std::size_t{256} << 20);
  EXPECT_FALSE(traits::providesAvailableSlots<Heap>);
  CudaRunner::Buffer<std::uint32_t> counters(2);
  CudaRunner::run(1u << 16, AllocWriteFree<Heap::Handle>{heap.handle(), counters.data()});
  const auto c = counters.to_host();
  EXPECT_EQ(c[0], 0u);
  EXPECT_EQ(c[1], 0u);
}

}  // namespace manyalloc::testing
