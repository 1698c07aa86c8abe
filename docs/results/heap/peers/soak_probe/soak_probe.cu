// Probe (soak_probe/README.md): the soak's churn (every worker keeps up to 8
// chunks of 1 B-16 KiB, 64 rounds, 2^20 workers, a 512 MiB pool: the pool is
// full almost all the time) under three reuse settings of SizeClassSlabs,
// launch by launch: launch time, failed requests, served requests.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "manyalloc/heap/heap.hpp"
#include "manyalloc/heap/creation/size_class_slabs.hpp"
#include "manyalloc_support/cuda_runner.hpp"
#include "manyalloc_support/workers.hpp"
namespace ma = manyalloc;
namespace cp = ma::heap::CreationPolicies;
struct NoReuse : cp::SizeClassSlabsConfig { static constexpr std::uint32_t reuse_freed_chunks_from_bytes = never_reuse; };
template <class Config>
using H = ma::heap::Allocator<cp::SizeClassSlabs<Config>, ma::heap::DistributionPolicies::NoOp,
                              ma::heap::OOMPolicies::ReturnNull, ma::heap::ReservePoolPolicies::CudaMalloc,
                              ma::heap::AlignmentPolicies::Shrink<16>>;
using Runner = ma::heap::testing::CudaRunner;
template <class Config> void run(const char* name, int launches) {
  H<Config> heap(std::size_t{512} << 20);
  Runner::Buffer<std::uint32_t> counters(2);
  std::vector<double> ms; std::vector<unsigned> failed;
  for (int l = 0; l < launches; ++l) {
    counters.zero();
    const auto t0 = std::chrono::steady_clock::now();
    Runner::run(1u << 20, ma::heap::testing::Churn<typename H<Config>::Handle>{heap.handle(), 64, 14, counters.data(), counters.data() + 1});
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    const auto c = counters.to_host();
    failed.push_back(c[1]);
    std::printf("%-14s launch %2d: %8.1f ms, %9u failed, corrupt %u\n", name, l, ms.back(), c[1], c[0]);
  }
  const auto st = heap.creation().template statistics<ma::heap::acc::Cuda>();
  std::printf("%-14s reused_chunks %u dry_refills %u misuse %u pages_in_use %u\n", name, st.reused_chunks, st.dry_refills, st.misuse_reports, st.pages_in_use);
  std::sort(ms.begin(), ms.end()); std::sort(failed.begin(), failed.end());
  std::printf("%-14s median %.1f ms per launch, median %u failed of about 33.5 M requests\n", name, ms[ms.size() / 2], failed[failed.size() / 2]);
}
// soak_probe [ROUNDS [CONFIGS]]: ROUNDS (default 2) rounds of the
// configurations named in CONFIGS (default "default,never_reuse,reuse_all").
int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 2;
  const std::string configs = argc > 2 ? argv[2] : "default,never_reuse,reuse_all";
  auto wanted = [&](const char* name) { return ("," + configs + ",").find(std::string(",") + name + ",") != std::string::npos; };
  for (int rep = 0; rep < rounds; ++rep) {
    if (wanted("default")) run<cp::SizeClassSlabsConfig>("default", 5);
    if (wanted("never_reuse")) run<NoReuse>("never_reuse", 5);
    if (wanted("reuse_all")) run<cp::ReuseFreedChunksConfig>("reuse_all", 5);
  }
}
