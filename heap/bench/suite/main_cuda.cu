// Heap benchmark on a CUDA GPU: Scatter against CUDA's device malloc.
#include <cstdio>
#include <exception>

#include "manyalloc_support/cuda_runner.hpp"
#include "suite.hpp"

namespace {
template <class Runner>
struct ScatterFor {
  using type = manyalloc::Allocator<manyalloc::CreationPolicies::Scatter<>, manyalloc::DistributionPolicies::NoOp,
                                    manyalloc::OOMPolicies::ReturnNull, manyalloc::ReservePoolPolicies::CudaMalloc,
                                    manyalloc::AlignmentPolicies::Shrink<16>>;
};
using DeviceMallocHeap =
    manyalloc::Allocator<manyalloc::CreationPolicies::DeviceMalloc, manyalloc::DistributionPolicies::NoOp,
                         manyalloc::OOMPolicies::ReturnNull, manyalloc::ReservePoolPolicies::CudaSetLimits,
                         manyalloc::AlignmentPolicies::NoOp>;
}  // namespace

int main(int argc, char** argv) try {
  using namespace manyalloc::bench;
  const Options o = parse(argc, argv);
  if (o.help) {
    std::fputs(usage(), stdout);
    return 0;
  }
  const auto threads = static_cast<std::uint32_t>(o.threads ? o.threads : (1u << 20));
  std::uint64_t largest = 0;
  for (auto s : o.sizes) largest = std::max(largest, s);
  // CUDA's heap: room for every chunk plus its own bookkeeping.
  const DeviceMallocHeap baseline(std::max<std::size_t>(std::size_t{1} << 30, heap_bytes_for(largest, threads) * 2));
  return run_suite<manyalloc::testing::CudaRunner, ScatterFor>(o, baseline, threads);
} catch (const std::exception& e) {
  std::fprintf(stderr, "manyalloc_heap_bench_cuda: %s\n", e.what());
  return 1;
}
