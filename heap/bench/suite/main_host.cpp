// Heap benchmark on host threads: Scatter against the C library's malloc.
#include <cstdio>
#include <exception>
#include <thread>

#include "manyalloc_support/host_runner.hpp"
#include "suite.hpp"

namespace {
template <class Runner>
struct ScatterFor {
  using type = manyalloc::Allocator<manyalloc::CreationPolicies::Scatter<>, manyalloc::DistributionPolicies::NoOp,
                                    manyalloc::OOMPolicies::ReturnNull, manyalloc::ReservePoolPolicies::HostPool,
                                    manyalloc::AlignmentPolicies::Shrink<16>>;
};
using HostMallocHeap =
    manyalloc::Allocator<manyalloc::CreationPolicies::HostMalloc, manyalloc::DistributionPolicies::NoOp,
                         manyalloc::OOMPolicies::ReturnNull, manyalloc::ReservePoolPolicies::HostPool,
                         manyalloc::AlignmentPolicies::NoOp>;
}  // namespace

int main(int argc, char** argv) try {
  using namespace manyalloc::bench;
  const Options o = parse(argc, argv);
  if (o.help) {
    std::fputs(usage(), stdout);
    return 0;
  }
  manyalloc::testing::HostRunner::threads = std::thread::hardware_concurrency();
  const auto threads =
      static_cast<std::uint32_t>(o.threads ? o.threads : 65536u * manyalloc::testing::HostRunner::threads);
  const HostMallocHeap baseline(1 << 20);
  return run_suite<manyalloc::testing::HostRunner, ScatterFor>(o, baseline, threads);
} catch (const std::exception& e) {
  std::fprintf(stderr, "manyalloc_heap_bench_host: %s\n", e.what());
  return 1;
}
