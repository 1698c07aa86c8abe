// Fragmentation inside one region's slab pool ([Lyberis2012] Fig. 4a-c): random
// allocs and frees, full/partial slab counts and application size over time.
// Serial and MPI-free, as in [Lyberis2012] (section 6.2).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_json.hpp"
#include "slab_pool.hpp"

using namespace manyalloc::region::detail;

namespace {
struct Phase {
  double p_alloc;
  int ops;
};

void run(const char* name, const std::vector<std::uint64_t>& sizes, const std::vector<Phase>& phases, int samples) {
  SlabPool pool(0x500000000000ull);
  pool.add_free(0, std::uint64_t{1} << 20);  // 4 GiB of slabs: never the limit
  std::mt19937_64 rng(12345);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> live;  // addr, requested size
  std::uint64_t app_bytes = 0;
  long fails = 0;
  int total_ops = 0;
  for (auto& p : phases) total_ops += p.ops;
  const int every = std::max(1, total_ops / samples);
  std::vector<long> t, full, partial, extents;
  std::vector<double> app_kb;
  auto t0 = std::chrono::steady_clock::now();
  int op = 0;
  for (const Phase& ph : phases) {
    for (int i = 0; i < ph.ops; ++i, ++op) {
      std::uniform_real_distribution<double> u(0, 1);
      if (live.empty() || u(rng) < ph.p_alloc) {
        const std::uint64_t s = sizes[rng() % sizes.size()];
        const std::uint64_t a = pool.alloc(s);
        if (a == 0) {
          ++fails;
          continue;
        }
        live.emplace_back(a, s);
        app_bytes += s;
      } else {
        const std::size_t j = rng() % live.size();
        if (pool.free(live[j].first) != FreeStatus::ok) ++fails;
        app_bytes -= live[j].second;
        live[j] = live.back();
        live.pop_back();
      }
      if (op % every == 0) {
        long runs = 0;
        pool.for_each_used_run([&](std::uint64_t, std::uint64_t) { ++runs; });
        t.push_back(op);
        full.push_back(static_cast<long>(pool.stats().full_slabs));
        partial.push_back(static_cast<long>(pool.stats().partial_slabs));
        extents.push_back(runs);
        app_kb.push_back(static_cast<double>(app_bytes) / 1024.0);
      }
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Verify: invariants hold, live objects do not overlap, accounting matches.
  std::sort(live.begin(), live.end());
  bool ok = pool.check_invariants() && pool.stats().live_objects == live.size();
  for (std::size_t i = 1; i < live.size(); ++i)
    ok = ok && live[i - 1].first + SlabPool::slot_size(live[i - 1].second) <= live[i].first;
  region_bench::Record r;
  r.experiment = name;
  r.allocator = "myrmics-slab";
  r.threads = 1;
  r.bytes = static_cast<double>(app_bytes);
  r.ops = total_ops;
  r.seconds = secs;
  r.fails = fails;
  r.verified = ok;
  r.extra("final_full_slabs", static_cast<double>(pool.stats().full_slabs));
  r.extra("final_partial_slabs", static_cast<double>(pool.stats().partial_slabs));
  r.extra("final_used_bytes", static_cast<double>(pool.stats().used_pages * slab_bytes));
  r.extra_raw("series_op", region_bench::array(t));
  r.extra_raw("series_full", region_bench::array(full));
  r.extra_raw("series_partial", region_bench::array(partial));
  r.extra_raw("series_extents", region_bench::array(extents));
  r.extra_raw("series_app_kb", region_bench::array(app_kb));
  r.print();
}
}  // namespace

int main(int argc, char** argv) {
  const int scale = argc > 1 ? std::atoi(argv[1]) : 1;
  // (a) 192-B objects, 60% allocs / 40% frees.
  run("frag_192B_60_40", {192}, {{0.6, 5000 * scale}}, 200);
  // (b) 192-B objects, alloc- and free-heavy phases.
  const std::vector<Phase> phases = {{0.8, 1500 * scale}, {0.3, 1500 * scale}, {0.8, 1500 * scale},
                                     {0.25, 1500 * scale}, {0.9, 1500 * scale}, {0.3, 1500 * scale}};
  run("frag_192B_phases", {192}, phases, 200);
  // (c) six sizes: three slab-aligned (64, 1024, 4096), three not (192, 1536, 50048).
  run("frag_6sizes_phases", {64, 192, 1024, 1536, 4096, 50048}, phases, 200);
  return 0;
}
