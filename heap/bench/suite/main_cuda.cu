// Heap benchmark on a CUDA GPU: Scatter (default and tuned), XMalloc, SizeClassSlabs and
// the list-based baselines ListBased and MultiList against CUDA's device
// malloc. Cycles are clock64() SM cycles.
#include <algorithm>

#include "manyalloc_support/cuda_runner.hpp"
#include "suite.hpp"

namespace {
namespace ma = manyalloc;

struct TunedHeap : ma::heap::CreationPolicies::ScatterHeapConfig {
  static constexpr bool resetfreedpages = true;
};
template <class Creation, class Distribution = ma::heap::DistributionPolicies::NoOp>
using CudaHeap = ma::heap::Allocator<Creation, Distribution, ma::heap::OOMPolicies::ReturnNull,
                               ma::heap::ReservePoolPolicies::CudaMalloc, ma::heap::AlignmentPolicies::Shrink<16>>;

cudaDeviceProp& props() {
  static cudaDeviceProp p = [] {
    cudaDeviceProp q{};
    int dev = 0;
    ma::heap::acc::cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
    ma::heap::acc::cuda_check(cudaGetDeviceProperties(&q, dev), "cudaGetDeviceProperties");
    return q;
  }();
  return p;
}

struct CudaPlatform {
  using Runner = ma::heap::testing::CudaRunner;
  using Scatter = CudaHeap<ma::heap::CreationPolicies::Scatter<>>;
  using ScatterTuned = CudaHeap<ma::heap::CreationPolicies::Scatter<TunedHeap>>;
  // XMalloc of [Steinberger2012]'s comparison: Scatter with the SIMD
  // coalescing of XMalloc ([Huang2010]) as its distribution policy.
  using XMalloc = CudaHeap<ma::heap::CreationPolicies::Scatter<>, ma::heap::DistributionPolicies::XMallocSIMD<>>;
  using Slabs = CudaHeap<ma::heap::CreationPolicies::SizeClassSlabs<>>;
  using Lists = CudaHeap<ma::heap::CreationPolicies::ListBased<>>;
  using MultiLists = CudaHeap<ma::heap::CreationPolicies::MultiList<>>;
  using Baseline = ma::heap::Allocator<ma::heap::CreationPolicies::DeviceMalloc, ma::heap::DistributionPolicies::NoOp,
                                 ma::heap::OOMPolicies::ReturnNull, ma::heap::ReservePoolPolicies::CudaSetLimits,
                                 ma::heap::AlignmentPolicies::NoOp>;
  static constexpr bool gpu = true;
  static constexpr bool baseline_bounded = true;
  // Threads resident at once (H200: 132 SMs x 2048 = 270336).
  static std::uint32_t full_occupancy() {
    return static_cast<std::uint32_t>(props().multiProcessorCount) *
           static_cast<std::uint32_t>(props().maxThreadsPerMultiProcessor);
  }
  static std::uint32_t default_threads() { return 1u << 20; }
  // What the heaps of one experiment may take: 80% of the free memory at start.
  static std::size_t memory_cap() {
    static const std::size_t cap = [] {
      std::size_t free = 0, total = 0;
      ma::heap::acc::cuda_check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
      return free / 10 * 8;
    }();
    return cap;
  }
  static std::size_t baseline_pool(std::size_t bytes) { return bytes; }
  static const char* clock_name() { return "clock64"; }
  static void prepare(const ma::heap::bench::Options&) {}
};
}  // namespace

int main(int argc, char** argv) {
  return manyalloc::heap::bench::run_suite<CudaPlatform>(argc, argv, "manyalloc_heap_bench_cuda");
}
