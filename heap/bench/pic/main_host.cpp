// The PIC benchmark on host threads (smoke test and CI): the same experiments
// as on the GPU, the C library's malloc as the baseline.
#include <cstdio>
#include <exception>
#include <thread>

#include "experiments.hpp"
#include "heaps.hpp"
#include "manyalloc_support/host_runner.hpp"

namespace {
namespace ma = manyalloc::heap;

struct HostPlatform : ma::pic::Heaps<ma::ReservePoolPolicies::HostPool> {
  using Runner = ma::testing::HostRunner;
  using Baseline = ma::Allocator<ma::CreationPolicies::HostMalloc, ma::DistributionPolicies::NoOp,
                                 ma::OOMPolicies::ReturnNull, ma::ReservePoolPolicies::HostPool,
                                 ma::AlignmentPolicies::NoOp>;
  static constexpr const char* baseline_name = "HostMalloc";
  static constexpr bool baseline_bounded = false;
  static Baseline& baseline(std::size_t) {
    static Baseline heap(std::size_t{1} << 20);
    return heap;
  }
};
}  // namespace

int main(int argc, char** argv) {
  ma::testing::HostRunner::threads = std::max(2u, std::thread::hardware_concurrency());
  return ma::pic::bench_main<HostPlatform>(argc, argv, "manyalloc_heap_pic_host");
}
