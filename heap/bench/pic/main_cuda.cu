// The PIC benchmark on a CUDA GPU ([Eckert2014] 5.2): HeapBuffer, Scatter and
// SizeClassSlabs against CUDA's device malloc. Steps are timed with CUDA
// events around the two launches of a step.
#include <cstdio>
#include <exception>

#include "experiments.hpp"
#include "heaps.hpp"
#include "manyalloc_support/cuda_runner.hpp"

namespace {
namespace ma = manyalloc::heap;

struct CudaPlatform : ma::pic::Heaps<ma::ReservePoolPolicies::CudaMalloc> {
  using Runner = ma::testing::CudaRunner;
  using Baseline = ma::Allocator<ma::CreationPolicies::DeviceMalloc, ma::DistributionPolicies::NoOp,
                                 ma::OOMPolicies::ReturnNull, ma::ReservePoolPolicies::CudaSetLimits,
                                 ma::AlignmentPolicies::NoOp>;
  static constexpr const char* baseline_name = "DeviceMalloc";
  static constexpr bool baseline_bounded = true;
  // CUDA's heap is sized once per process, before the first kernel that
  // calls malloc: the first experiment's size holds for the whole run
  // (CudaSetLimits throws if a later one asks for more).
  static Baseline& baseline(std::size_t bytes) {
    static Baseline heap(bytes);
    if (bytes > heap.pool_bytes()) Baseline::ReservePoolPolicy::set_mem_pool(bytes);
    return heap;
  }
};
}  // namespace

int main(int argc, char** argv) {
  return ma::pic::bench_main<CudaPlatform>(argc, argv, "manyalloc_heap_pic_cuda");
}
