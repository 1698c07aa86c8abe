// Heap benchmark on host threads: Scatter (default and tuned), XMalloc, SizeClassSlabs
// and the list-based baselines ListBased and MultiList against the C library's
// malloc. Cycles are rdtsc ticks (steady_clock ns off x86-64).
#include <algorithm>
#include <thread>

#include "manyalloc_support/host_runner.hpp"
#include "suite.hpp"

namespace {
namespace ma = manyalloc;

struct TunedHeap : ma::heap::CreationPolicies::ScatterHeapConfig {
  static constexpr bool resetfreedpages = true;
};
template <class Creation, class Distribution = ma::heap::DistributionPolicies::NoOp>
using HostHeap = ma::heap::Allocator<Creation, Distribution, ma::heap::OOMPolicies::ReturnNull,
                               ma::heap::ReservePoolPolicies::HostPool, ma::heap::AlignmentPolicies::Shrink<16>>;

struct HostPlatform {
  using Runner = ma::heap::testing::HostRunner;
  using Scatter = HostHeap<ma::heap::CreationPolicies::Scatter<>>;
  using ScatterTuned = HostHeap<ma::heap::CreationPolicies::Scatter<TunedHeap>>;
  // XMalloc of [Steinberger2012]'s comparison: Scatter with the SIMD
  // coalescing of XMalloc ([Huang2010]) as its distribution policy.
  using XMalloc = HostHeap<ma::heap::CreationPolicies::Scatter<>, ma::heap::DistributionPolicies::XMallocSIMD<>>;
  using Slabs = HostHeap<ma::heap::CreationPolicies::SizeClassSlabs<>>;
  using Lists = HostHeap<ma::heap::CreationPolicies::ListBased<>>;
  using MultiLists = HostHeap<ma::heap::CreationPolicies::MultiList<>>;
  using Baseline = ma::heap::Allocator<ma::heap::CreationPolicies::HostMalloc, ma::heap::DistributionPolicies::NoOp,
                                 ma::heap::OOMPolicies::ReturnNull, ma::heap::ReservePoolPolicies::HostPool,
                                 ma::heap::AlignmentPolicies::NoOp>;
  static constexpr bool gpu = false;
  static constexpr bool baseline_bounded = false;  // malloc: no heap to fill
  static unsigned cpus() { return std::max(1u, std::thread::hardware_concurrency()); }
  static std::uint32_t full_occupancy() { return 64 * cpus(); }
  static std::uint32_t default_threads() { return 65536u * cpus(); }
  // The pools are MAP_NORESERVE mappings committed on first touch.
  static std::size_t memory_cap() { return std::size_t{48} << 30; }
  static std::size_t baseline_pool(std::size_t) { return std::size_t{1} << 20; }
  static const char* clock_name() { return ma::heap::bench::host_clock_name(); }
  static void prepare(const ma::heap::bench::Options&) { Runner::threads = cpus(); }
};
}  // namespace

int main(int argc, char** argv) {
  return manyalloc::heap::bench::run_suite<HostPlatform>(argc, argv, "manyalloc_heap_bench_host");
}
