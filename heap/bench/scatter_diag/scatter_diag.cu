// Diagnostic driver for Scatter's anomalies (issue 15 item 2,
// docs/results/heap/scatter_anomalies.md): the current Scatter side by side
// with Scatter as of commit 0efe624 (baseline/, renamed into
// manyalloc::scatter_v0 by make_baseline.sh), in one process.
//
//   throughput  one chunk per thread, blocks of 256, an alloc launch then a
//               free launch on a fresh 16 GiB heap, a cold launch and up to
//               20 warm ones; every launch's time, the heap's pages in use
//               and active block after it, failures; chunks written and
//               checked (no overlap, marks read back) on the first and the
//               last launch; a last launch with clock64() per request
//               (the slowest request, the straggler)
//   churn       2^18 threads x 50 rounds of alloc/write/free of 16 B-1 KiB in
//               one kernel, 5 repetitions on one heap (as heap/bench/peers),
//               with the heap's region marks after each (all chunks are free
//               then, so every set mark is stale)
//   fence       cost of __threadfence() between a warp's two atomics (not
//               run by default)
//
//   scatter_diag [--variants v0,new] [--experiments throughput,churn]
//                [--threads 131072,1048576] [--sizes 16,64,256,1024,4096,8192,0,1]
//                [--launches 20] [--budget-s 4] [--out DIR]
// Variants: v0 (baseline/), v0-nomp (v0 with hashingDistMP = 0), new (the
// current Scatter<>), new-reset (resetfreedpages). Sizes: 0 = mixed
// 16 B-4 KiB (the same sizes every launch), 1 = mixed with new sizes every
// launch. Per-launch CSV in DIR/scatter_diag.csv, a summary and the targets
// of issue 15 last on stdout (upstream figures: mallocMC 2.6 on an H100).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "baseline/scatter.hpp"
#include "bench_common.hpp"
#include "manyalloc_support/cuda_runner.hpp"

namespace {

namespace ma = manyalloc;
using Runner = ma::testing::CudaRunner;
using ma::acc::cuda_check;

template <class Creation>
using Heap = ma::Allocator<Creation, ma::DistributionPolicies::NoOp, ma::OOMPolicies::ReturnNull,
                           ma::ReservePoolPolicies::CudaMalloc, ma::AlignmentPolicies::Shrink<16>>;

struct NoMpHash : ma::scatter_v0::ScatterHashConfig {
  static constexpr std::uint32_t hashingDistMP = 0;
};
struct ResetHeap : ma::CreationPolicies::ScatterHeapConfig {
  static constexpr bool resetfreedpages = true;
};

constexpr std::size_t pool_bytes = std::size_t{16} << 30;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t a = 0;
  while (a <= s.size()) {
    const std::size_t b = s.find(',', a);
    out.push_back(s.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return out;
}

struct Options {
  std::vector<std::string> variants{"v0", "new"};
  std::vector<std::string> experiments{"throughput", "churn"};
  std::vector<std::uint32_t> threads{1u << 17, 1u << 20};
  std::vector<std::uint32_t> sizes{16, 64, 256, 1024, 4096, 8192, 0, 1};
  int launches = 20;
  double budget_s = 4;
  std::string out = ".";
};

// Request size of worker w in launch `launch`: `code` bytes, or mixed.
MANYALLOC_FN inline std::size_t size_of(std::uint32_t code, std::uint32_t w, std::uint32_t launch) {
  if (code == 0) return ma::bench::uniform_size(w, 0, 16, 4096);
  if (code == 1) return ma::bench::uniform_size(w, launch + 1, 16, 4096);
  return code;
}
std::string size_name(std::uint32_t code) {
  return code == 0 ? "mixed" : code == 1 ? "mixed-rot" : ma::bench::size_label(code);
}

template <class Handle>
struct AllocK {
  Handle heap;
  std::uint32_t code, launch;
  void** ptrs;
  std::uint32_t* fails;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    void* p = heap.alloc(acc, size_of(code, w, launch));
    ptrs[w] = p;
    if (p == nullptr) acc.atomic_add(fails, 1u);
  }
};
template <class Handle>
struct AllocCycles {
  Handle heap;
  std::uint32_t code, launch;
  void** ptrs;
  std::uint32_t* cycles;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    const std::uint64_t t0 = ma::bench::cycle_counter();
    void* p = heap.alloc(acc, size_of(code, w, launch));
    const std::uint64_t t1 = ma::bench::cycle_counter();
    ptrs[w] = p;
    cycles[w] = static_cast<std::uint32_t>(std::min<std::uint64_t>(t1 - t0, 0xffffffffu));
  }
};
template <class Handle>
struct FreeK {
  Handle heap;
  void** ptrs;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    heap.dealloc(acc, ptrs[w]);
  }
};
template <bool Check>
struct MarkK {
  void** ptrs;
  std::uint32_t code, launch;
  std::uint32_t* bad;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    const std::size_t n = size_of(code, w, launch);
    if constexpr (Check) {
      if (!ma::bench::check_chunk(ptrs[w], n, w, launch)) acc.atomic_add(bad, 1u);
    } else {
      ma::bench::mark_chunk(ptrs[w], n, w, launch);
    }
  }
};

// Churn as heap/bench/peers/experiments.cuh: counters [0] pairs, [1] fails, [2] bad.
template <class Handle>
__global__ void churn_kernel(Handle h, std::uint32_t n, std::uint32_t rounds, std::uint32_t rep,
                             unsigned long long* counters) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const ma::acc::CudaThread acc;
  unsigned long long done = 0, fails = 0, bad = 0;
  for (std::uint32_t r = 0; r < rounds; ++r) {
    const std::uint32_t k = rep * rounds + r;
    const std::uint32_t bytes = 16u + ma::bench::hash2(i, k) % (1024u - 16u + 1u);
    void* p = h.alloc(acc, bytes);
    if (p != nullptr) {
      volatile std::uint32_t* first = static_cast<std::uint32_t*>(p);
      volatile std::uint32_t* last = reinterpret_cast<std::uint32_t*>(static_cast<char*>(p) + ((bytes - 4u) & ~3u));
      const std::uint32_t v = ma::bench::hash2(i ^ 0x51ed27u, k) | 1u;
      *first = v;
      *last = ~v;
      if (*first != v || *last != ~v) ++bad;
    } else {
      ++fails;
    }
    h.dealloc(acc, p);
    ++done;
  }
  atomicAdd(&counters[0], done);
  if (fails != 0) atomicAdd(&counters[1], fails);
  if (bad != 0) atomicAdd(&counters[2], bad);
}

template <class F>
double time_launch(const F& f) {
  cudaEvent_t a, b;
  cuda_check(cudaEventCreate(&a), "cudaEventCreate");
  cuda_check(cudaEventCreate(&b), "cudaEventCreate");
  cuda_check(cudaEventRecord(a), "cudaEventRecord");
  f();
  cuda_check(cudaGetLastError(), "launch");
  cuda_check(cudaEventRecord(b), "cudaEventRecord");
  cuda_check(cudaEventSynchronize(b), "kernel");
  float ms = 0;
  cuda_check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / 1e3;
}

template <class F>
void launch_workers(std::uint32_t n, const F& f) {
  ma::testing::detail::run_workers<<<(n + 255) / 256, 256>>>(f, n);
}

double median(std::vector<double> v) { return ma::bench::median(std::move(v)); }

// Heap state read on the host (both versions share the layout fields used).
struct State {
  std::uint32_t active = 0, pages_in_use = 0, marks = 0, closed_regions = 0;
  std::int64_t block_words = -1;  // sum of the block words (current version only)
};
template <class H>
State state_of(const H& heap, bool regions) {
  const auto& l = heap.creation().layout();
  State s;
  cuda_check(cudaMemcpy(&s.active, l.shared, 4, cudaMemcpyDeviceToHost), "copy active block");
  s.active %= l.block_count;
  s.pages_in_use = heap.creation().template statistics<ma::acc::Cuda>().pages_in_use;
  if (regions) {
    const std::uint32_t rs = H::CreationPolicy::HeapProperties::regionsize;
    std::vector<std::uint32_t> w(l.page_count / rs);
    cuda_check(cudaMemcpy(w.data(), l.regions, w.size() * 4, cudaMemcpyDeviceToHost), "copy regions");
    for (auto x : w) {
      const auto n = static_cast<std::uint32_t>(__builtin_popcount(x));
      s.marks += n;
      s.closed_regions += n * 10 > rs * 9;
    }
    if constexpr (requires { l.blocks; }) {
      std::vector<std::uint32_t> b(l.block_count);
      cuda_check(cudaMemcpy(b.data(), l.blocks, b.size() * 4, cudaMemcpyDeviceToHost), "copy blocks");
      s.block_words = 0;
      for (auto x : b) s.block_words += x;
    }
  }
  return s;
}

struct Result {
  std::string variant;
  std::uint32_t threads, code;
  double alloc_rate, free_rate, alloc_maxmin, free_maxmin;
};
std::vector<Result> results;
std::vector<std::pair<std::string, double>> churn_ratio;  // variant, last / first
std::vector<std::string> summary;
std::FILE* csv = nullptr;

template <class H>
void throughput(const std::string& variant, std::uint32_t threads, std::uint32_t code, const Options& o) {
  using Handle = typename H::Handle;
  Runner::Buffer<void*> ptrs(threads);
  Runner::Buffer<std::uint32_t> counters(2), cycles(threads);
  H heap(pool_bytes);
  const auto h = heap.handle();
  std::vector<double> as, fs;
  std::vector<std::uint32_t> pages;
  std::uint64_t fails = 0, bad = 0, overlaps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  int launch = 0;
  for (; launch <= o.launches; ++launch) {
    counters.zero();
    const double ta = time_launch([&] {
      launch_workers(threads, AllocK<Handle>{h, code, static_cast<std::uint32_t>(launch), ptrs.data(), counters.data()});
    });
    const State st = state_of(heap, false);
    const bool verify = launch == 0 || launch == 1 || launch == o.launches;
    if (verify) {
      Runner::run(threads, MarkK<false>{ptrs.data(), code, static_cast<std::uint32_t>(launch), counters.data() + 1});
      Runner::run(threads, MarkK<true>{ptrs.data(), code, static_cast<std::uint32_t>(launch), counters.data() + 1});
      std::vector<std::size_t> sz(threads);
      for (std::uint32_t w = 0; w < threads; ++w) sz[w] = size_of(code, w, static_cast<std::uint32_t>(launch));
      overlaps += ma::bench::count_overlaps(ptrs.to_host(), sz);
    }
    const double tf = time_launch([&] { launch_workers(threads, FreeK<Handle>{h, ptrs.data()}); });
    const auto c = counters.to_host();
    bad += c[1];
    std::fprintf(csv, "throughput,%s,%u,%s,%d,%.9g,%.9g,%u,%u,%u\n", variant.c_str(), threads, size_name(code).c_str(),
                 launch, ta, tf, c[0], st.pages_in_use, st.active);
    if (launch > 0) {
      as.push_back(ta);
      fs.push_back(tf);
      fails += c[0];
      pages.push_back(st.pages_in_use);
    }
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (launch >= 3 && el > o.budget_s) break;
  }
  // The straggler: one more launch with clock64() around each request.
  Runner::run(threads, AllocCycles<Handle>{h, code, 0u, ptrs.data(), cycles.data()});
  auto cyc = cycles.to_host();
  Runner::run(threads, FreeK<Handle>{h, ptrs.data()});
  std::sort(cyc.begin(), cyc.end());
  const double amin = *std::min_element(as.begin(), as.end()), amax = *std::max_element(as.begin(), as.end());
  const double fmin = *std::min_element(fs.begin(), fs.end()), fmax = *std::max_element(fs.begin(), fs.end());
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%-9s %8u %-9s %3zu | alloc %8.3f ms %9.4g/s max/min %6.2f | free %8.3f ms %9.4g/s max/min %5.2f | "
                "fails %llu pages %u..%u | cyc p50 %u p99 %u max %u | %s",
                variant.c_str(), threads, size_name(code).c_str(), as.size(), median(as) * 1e3, threads / median(as),
                amax / amin, median(fs) * 1e3, threads / median(fs), fmax / fmin,
                static_cast<unsigned long long>(fails), pages.front(), pages.back(), cyc[cyc.size() / 2],
                cyc[cyc.size() / 100 * 99], cyc.back(), bad == 0 && overlaps == 0 ? "verified" : "NOT VERIFIED");
  std::printf("%s\n", buf);
  std::fflush(stdout);
  summary.push_back(buf);
  results.push_back({variant, threads, code, threads / median(as), threads / median(fs), amax / amin, fmax / fmin});
}

template <class H>
void churn(const std::string& variant, const Options&) {
  const std::uint32_t n = 1u << 18, rounds = 50;
  Runner::Buffer<unsigned long long> counters(3);
  H heap(pool_bytes);
  const auto h = heap.handle();
  std::vector<double> s;
  for (std::uint32_t rep = 0; rep < 5; ++rep) {
    counters.zero();
    const double t = time_launch([&] { churn_kernel<<<(n + 255) / 256, 256>>>(h, n, rounds, rep, counters.data()); });
    const auto c = counters.to_host();
    const State st = state_of(heap, true);
    s.push_back(t);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "churn %-9s rep %u: %8.3f ms %9.4g pairs/s fails %llu bad %llu | active %u pages %u stale marks %u "
                  "closed regions %u block words %lld",
                  variant.c_str(), rep, t * 1e3, c[0] / t, c[1], c[2], st.active, st.pages_in_use, st.marks,
                  st.closed_regions, static_cast<long long>(st.block_words));
    std::printf("%s\n", buf);
    std::fprintf(csv, "churn,%s,%u,%u,%u,%.9g,%llu,%llu,%u,%u,%u\n", variant.c_str(), n, rounds, rep, t, c[1], c[2],
                 st.pages_in_use, st.marks, st.closed_regions);
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "churn %-9s reps %.2f %.2f %.2f %.2f %.2f ms: last/first %.2f", variant.c_str(),
                s[0] * 1e3, s[1] * 1e3, s[2] * 1e3, s[3] * 1e3, s[4] * 1e3, s[4] / s[0]);
  summary.push_back(buf);
  churn_ratio.emplace_back(variant, s[4] / s[0]);
}

// Upstream mallocMC 2.6 Scatter's alloc rate at 2^20 threads on an H100 (issue 15).
double upstream_alloc(std::uint32_t threads, std::uint32_t code) {
  if (threads != (1u << 20)) return 0;
  switch (code) {
    case 16: return 11.3e9;
    case 64: return 0.42e9;
    case 256: return 0.14e9;
    case 1024: return 0.06e9;
    case 4096: return 10.5e6;
    case 0: return 21e6;
    default: return 0;
  }
}

void print_targets() {
  std::printf("\n==== targets: alloc/free rates (median of warm launches), max/min alloc time over them ====\n");
  std::printf("%8s %-9s | %10s %10s %10s | %10s %10s | %7s %7s\n", "threads", "size", "new alloc", "v0 alloc",
              "upstream", "new free", "v0 free", "new m/m", "v0 m/m");
  auto find = [](const std::string& v, std::uint32_t t, std::uint32_t c) -> const Result* {
    for (const auto& r : results)
      if (r.variant == v && r.threads == t && r.code == c) return &r;
    return nullptr;
  };
  for (const auto& r : results) {
    if (r.variant != "new") continue;
    const Result* o = find("v0", r.threads, r.code);
    const double up = upstream_alloc(r.threads, r.code);
    char upbuf[32] = "-";
    if (up > 0) std::snprintf(upbuf, sizeof upbuf, "%.3g", up);
    std::printf("%8u %-9s | %10.3g %10.3g %10s | %10.3g %10.3g | %7.2f %7.2f\n", r.threads, size_name(r.code).c_str(),
                r.alloc_rate, o ? o->alloc_rate : 0.0, upbuf, r.free_rate, o ? o->free_rate : 0.0, r.alloc_maxmin,
                o ? o->alloc_maxmin : 0.0);
  }
  for (const auto& [v, ratio] : churn_ratio) std::printf("churn %-9s last/first repetition %.2f\n", v.c_str(), ratio);
}

__global__ void fence_kernel(std::uint32_t* fill, std::uint32_t* words, int mode) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t warp = i / 32, lane = i % 32;
  const std::uint32_t r = atomicAdd(&fill[warp * 4], 1u);
  if (mode == 1) __threadfence();
  if (mode == 2 && lane == 31) __threadfence();
  atomicOr(&words[warp * 1024 + 1023], 1u << (r % 32));
}

void fence() {
  const std::uint32_t n = 1u << 20;
  Runner::Buffer<std::uint32_t> fill(n / 32 * 4), words(n / 32 * 1024);
  for (int mode = 0; mode < 3; ++mode) {
    std::vector<double> t;
    for (int k = 0; k < 11; ++k) t.push_back(time_launch([&] { fence_kernel<<<n / 256, 256>>>(fill.data(), words.data(), mode); }));
    char buf[200];
    std::snprintf(buf, sizeof buf, "fence: 2^20 threads, atomicAdd + atomicOr per thread, %s: %.1f us",
                  mode == 0 ? "no fence         " : mode == 1 ? "__threadfence    " : "fence in 1 lane  ",
                  median(t) * 1e6);
    std::printf("%s\n", buf);
    summary.push_back(buf);
  }
}

template <class H>
void run_variant(const std::string& v, const Options& o) {
  for (const auto& e : o.experiments) {
    if (e == "throughput") {
      for (auto t : o.threads)
        for (auto s : o.sizes) {
          if (s == 1 && t != (1u << 20)) continue;
          throughput<H>(v, t, s, o);
        }
    } else if (e == "churn") {
      churn<H>(v, o);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--variants") o.variants = split(v);
    else if (k == "--experiments") o.experiments = split(v);
    else if (k == "--threads") { o.threads.clear(); for (auto& x : split(v)) o.threads.push_back(std::stoul(x)); }
    else if (k == "--sizes") { o.sizes.clear(); for (auto& x : split(v)) o.sizes.push_back(std::stoul(x)); }
    else if (k == "--launches") o.launches = std::stoi(v);
    else if (k == "--budget-s") o.budget_s = std::stod(v);
    else if (k == "--out") o.out = v;
  }
  csv = std::fopen((o.out + "/scatter_diag.csv").c_str(), "w");
  if (csv == nullptr) csv = stderr;
  std::printf("device %s\n", Runner::device_name().c_str());
  try {
    for (const auto& v : o.variants) {
      if (v == "v0") run_variant<Heap<ma::scatter_v0::Scatter<>>>(v, o);
      else if (v == "v0-nomp") run_variant<Heap<ma::scatter_v0::Scatter<ma::scatter_v0::ScatterHeapConfig, NoMpHash>>>(v, o);
      else if (v == "new") run_variant<Heap<ma::CreationPolicies::Scatter<>>>(v, o);
      else if (v == "new-reset") run_variant<Heap<ma::CreationPolicies::Scatter<ResetHeap>>>(v, o);
      else std::printf("unknown variant %s\n", v.c_str());
    }
    for (const auto& e : o.experiments)
      if (e == "fence") fence();
  } catch (const std::exception& e) {
    std::printf("ERROR: %s\n", e.what());
  }
  std::printf("\n==== summary (alloc/free: median of warm launches; max/min over them) ====\n");
  for (const auto& s : summary) std::printf("%s\n", s.c_str());
  print_targets();
  if (csv != stderr) std::fclose(csv);
  return 0;
}
