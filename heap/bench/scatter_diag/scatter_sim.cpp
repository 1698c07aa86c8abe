// Sequential model of Scatter on a GPU-sized heap, on one host thread: the
// real policy code runs on a counting accelerator that plays warp w's lane l
// on SM s (blocks of 256 threads placed on random SMs per launch, as the
// GPU's block scheduler does). Counts memory operations per request, so that
// page-table behaviour (probes, claims, walks over full or mis-split pages)
// can be compared between versions without a GPU. No timing, no
// concurrency: lanes run one after another.
//
//   scatter_sim [workload] [threads] ...   (see main)
#include <sys/mman.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "baseline/scatter.hpp"
#include "bench_common.hpp"
#include "manyalloc/heap/acc/host_thread.hpp"
#include "manyalloc/heap/creation/scatter.hpp"

namespace ma = manyalloc;

struct Counters {
  std::uint64_t loads = 0, stores = 0, atomics = 0, fences = 0;
  std::uint64_t total() const { return loads + stores + atomics; }
};

// A host thread playing lane `lane` of warp `warp` on SM `sm`, counting its
// memory operations (the rest of the accelerator interface is HostThread's).
struct SimAcc : ma::acc::HostThread {
  static constexpr unsigned warp_size = 32;
  unsigned lane = 0, warp = 0, sm = 0;
  Counters* c = nullptr;

  unsigned lane_id() const { return lane; }
  std::uint32_t active_mask() const { return 1u << lane; }
  std::uint32_t ballot(std::uint32_t, bool pred) const { return pred ? 1u << lane : 0u; }
  std::uint32_t match_any(std::uint32_t, std::uint32_t) const { return 1u << lane; }
  unsigned processor_id() const { return sm; }
  unsigned warp_id() const { return warp; }
  std::uint32_t load(const std::uint32_t* p) const { ++c->loads; return *p; }
  void store(std::uint32_t* p, std::uint32_t v) const { ++c->stores; *p = v; }
  std::uint32_t atomic_add(std::uint32_t* p, std::uint32_t v) const { ++c->atomics; auto o = *p; *p = o + v; return o; }
  std::uint32_t atomic_sub(std::uint32_t* p, std::uint32_t v) const { ++c->atomics; auto o = *p; *p = o - v; return o; }
  std::uint32_t atomic_or(std::uint32_t* p, std::uint32_t v) const { ++c->atomics; auto o = *p; *p = o | v; return o; }
  std::uint32_t atomic_and(std::uint32_t* p, std::uint32_t v) const { ++c->atomics; auto o = *p; *p = o & v; return o; }
  std::uint32_t atomic_exch(std::uint32_t* p, std::uint32_t v) const { ++c->atomics; auto o = *p; *p = v; return o; }
  std::uint32_t atomic_cas(std::uint32_t* p, std::uint32_t e, std::uint32_t d) const {
    ++c->atomics;
    auto o = *p;
    if (o == e) *p = d;
    return o;
  }
  void fence() const { ++c->fences; }
  void relax() const {}
};
static_assert(ma::acc::Accelerator<SimAcc>);

struct NoMpHash : ma::scatter_v0::ScatterHashConfig {
  static constexpr std::uint32_t hashingDistMP = 0;
};
struct ResetHeap : ma::CreationPolicies::ScatterHeapConfig {
  static constexpr bool resetfreedpages = true;
};
constexpr unsigned sms = 132;
inline bool shuffle_blocks = false;
inline bool salt = false;

constexpr std::size_t heap_bytes = std::size_t{16} << 30;

struct Pool {
  void* p;
  Pool() {
    p = mmap(nullptr, heap_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) std::abort();
  }
  ~Pool() { munmap(p, heap_bytes); }
};

std::size_t padded(std::size_t b) { return (b + 15) & ~std::size_t{15}; }

struct Stats {
  Counters c;
  std::uint64_t ops = 0, fails = 0, worst_warp = 0;
};

// One launch: every worker runs f(acc, worker); blocks of 256 on random SMs.
// `sms_of`: the SM of every block, drawn per launch when empty (a kernel
// keeps its blocks on their SMs, the next launch places them anew).
template <class F>
void launch(std::uint32_t threads, std::mt19937& rng, Counters& c, std::uint64_t& worst_warp, const F& f,
            const std::vector<unsigned>& sms_of = {}) {
  const std::uint32_t blocks = (threads + 255) / 256;
  std::vector<std::uint32_t> order(blocks);
  for (std::uint32_t b = 0; b < blocks; ++b) order[b] = b;
  if (shuffle_blocks) std::shuffle(order.begin(), order.end(), rng);
  for (std::uint32_t b : order) {
    const unsigned sm = sms_of.empty() ? rng() % sms : sms_of[b];
    for (unsigned wb = 0; wb < 8; ++wb) {
      const Counters before = c;
      for (unsigned lane = 0; lane < 32; ++lane) {
        const std::uint32_t w = b * 256 + wb * 32 + lane;
        if (w >= threads) break;
        SimAcc acc;
        acc.lane = lane;
        acc.warp = b * 8 + wb;
        acc.sm = sm;
        acc.c = &c;
        f(acc, w);
      }
      worst_warp = std::max<std::uint64_t>(worst_warp, c.total() - before.total());
    }
  }
}

template <class Creation>
struct Sim {
  Pool pool;
  Creation heap = Creation::template init_heap<ma::acc::HostThreads>(pool.p, heap_bytes);

  std::uint32_t pages_in_use() { return heap.template statistics<ma::acc::HostThreads>().pages_in_use; }

  // One chunk per worker, alloc launch then free launch, `launches` times.
  void one_per_thread(std::size_t bytes, std::uint32_t threads, unsigned launches, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<void*> ptrs(threads);
    std::printf("%-6s %8u thr: launch alloc_ops/req alloc_fences/req worst_warp_ops free_ops/req fails pages_in_use\n",
                ma::bench::size_label(bytes).c_str(), threads);
    for (unsigned l = 0; l < launches; ++l) {
      Counters a, f;
      std::uint64_t worst = 0, wf = 0, fails = 0;
      std::vector<std::uint32_t> per(threads);
      launch(threads, rng, a, worst, [&](const SimAcc& acc, std::uint32_t w) {
        const auto before = acc.c->total();
        ptrs[w] = heap.create(acc, padded(ma::bench::request_size(bytes, w, salt ? l : 0)));
        per[w] = static_cast<std::uint32_t>(acc.c->total() - before);
        fails += ptrs[w] == nullptr;
      });
      std::sort(per.begin(), per.end());
      std::printf("      ops/req p50 %u p90 %u p99 %u p999 %u max %u\n", per[threads / 2], per[threads * 9 / 10],
                  per[threads / 100 * 99], per[threads / 1000 * 999], per[threads - 1]);
      const auto used = pages_in_use();
      launch(threads, rng, f, wf, [&](const SimAcc& acc, std::uint32_t w) { heap.destroy(acc, ptrs[w]); });
      std::printf("  %2u %8.1f %6.2f %10" PRIu64 " %8.1f %8" PRIu64 " %8u\n", l, double(a.total()) / threads,
                  double(a.fences) / threads, worst, double(f.total()) / threads, fails, used);
    }
  }

  // Churn: `rounds` of alloc (16 B-1 KiB) then free, every worker in step.
  void churn(std::uint32_t threads, unsigned rounds, unsigned reps, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<void*> ptrs(threads);
    std::printf("churn %u thr x %u rounds: rep alloc_ops/req alloc_fences/req worst_warp_ops fails pages_in_use\n",
                threads, rounds);
    for (unsigned r = 0; r < reps; ++r) {
      Counters a, f;
      std::uint64_t worst = 0, wf = 0, fails = 0;
      // One kernel per repetition: its blocks stay on their SMs for all rounds.
      std::vector<unsigned> sms_of((threads + 255) / 256);
      for (auto& x : sms_of) x = rng() % sms;
      for (unsigned k = 0; k < rounds; ++k) {
        launch(threads, rng, a, worst, [&](const SimAcc& acc, std::uint32_t w) {
          ptrs[w] = heap.create(acc, padded(ma::bench::uniform_size(w, r * rounds + k, 16, 1024)));
          fails += ptrs[w] == nullptr;
        }, sms_of);
        launch(threads, rng, f, wf, [&](const SimAcc& acc, std::uint32_t w) { heap.destroy(acc, ptrs[w]); }, sms_of);
      }
      std::printf("  %u %8.1f %6.2f %10" PRIu64 " %8" PRIu64 " %8u\n", r, double(a.total()) / (double(threads) * rounds),
                  double(a.fences) / (double(threads) * rounds), worst, fails, pages_in_use());
    }
  }
};

template <class Creation>
void run(const std::string& what, std::size_t bytes, std::uint32_t threads, unsigned n) {
  Sim<Creation> sim;
  if (what == "churn") sim.churn(threads, 50, n, 1);
  else sim.one_per_thread(bytes, threads, n, 1);
}

int main(int argc, char** argv) {
  const std::string version = argc > 1 ? argv[1] : "new";
  const std::string what = argc > 2 ? argv[2] : "one";
  const std::size_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 16;
  const auto threads = static_cast<std::uint32_t>(argc > 4 ? std::strtoul(argv[4], nullptr, 10) : 1u << 20);
  const unsigned n = argc > 5 ? static_cast<unsigned>(std::atoi(argv[5])) : 5;
  std::printf("version %s\n", version.c_str());
  shuffle_blocks = std::getenv("SIM_SHUFFLE") != nullptr;
  salt = std::getenv("SIM_SALT") != nullptr;
  if (version == "old") run<ma::scatter_v0::Scatter<>>(what, bytes, threads, n);
  else if (version == "old-nomp") run<ma::scatter_v0::Scatter<ma::scatter_v0::ScatterHeapConfig, NoMpHash>>(what, bytes, threads, n);
  else if (version == "new-reset") run<ma::CreationPolicies::Scatter<ResetHeap>>(what, bytes, threads, n);
  else run<ma::CreationPolicies::Scatter<>>(what, bytes, threads, n);
}
