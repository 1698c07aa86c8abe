// The experiments of the peers benchmark, templates over an adapter (the
// contract is in bench.hpp). Every adapter translation unit includes this
// file and instantiates run_experiment<Adapter> for its allocators, so the
// kernels are compiled with the peer's own flags and headers but are the same
// code for everyone. C++17 (see bench.hpp).
//
//   throughput  T threads, one chunk each, separate alloc and free launches on
//               a fresh heap per (threads, size): the first launch is "cold"
//               (its kernels loaded beforehand, so that it times the heap),
//               the median of the next `repeat` is "warm" (min/max kept)
//   churn       T threads x R rounds of alloc/write/read/free in ONE kernel,
//               16 B - 1 KiB, `reps` repetitions on the same heap
//   large       1024 x 1 MiB, 64 x 16 MiB, 1 x 1 GiB, launched like throughput
//   usable      a fresh heap of `usable_gib`, filled with one size in waves of
//               requests (up to 2^20 each) until a wave has a failure:
//               usable_share = bytes handed out / pool bytes
//   pic_steps, pic_growth  (only when named) the particle-in-cell benchmark's
//               experiments (heap/bench/pic/run.hpp) with the PIC program's
//               default sizes; records have suite "pic" (pic/report.py)
// Every chunk is verified (bench.hpp, check_chunks) outside the timed launches.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bench.hpp"
#include "peer_pic.cuh"  // heap/bench/pic: the PIC experiments ([Eckert2014] 5.2)

namespace manyalloc::heap::peers {

constexpr unsigned kBlock = 256;

inline unsigned grid_for(std::uint64_t n) { return static_cast<unsigned>((n + kBlock - 1) / kBlock); }

template <class H>
__global__ void alloc_kernel(H h, void** ptrs, std::uint64_t n, std::uint64_t base, SizeSpec sizes) {
  const std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  if (i < n) ptrs[i] = h.malloc(sizes(base + i));
}

template <class H>
__global__ void free_kernel(H h, void* const* ptrs, std::uint64_t n) {
  const std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  if (i < n) h.free(ptrs[i]);
}

__device__ inline std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// counters: [0] pairs done, [1] failed requests, [2] chunks that did not read
// back. A thread starts no further round once budget_ns passed since it began.
template <class H>
__global__ void churn_kernel(H h, std::uint32_t n, std::uint32_t rounds, std::uint32_t rep, std::uint64_t budget_ns,
                             unsigned long long* counters) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const std::uint64_t start = global_ns();
  unsigned long long done = 0, fails = 0, bad = 0;
  for (std::uint32_t r = 0; r < rounds; ++r) {
    if (budget_ns != 0 && global_ns() - start > budget_ns) break;
    const std::uint32_t k = rep * rounds + r;
    const std::uint32_t bytes = 16u + hash2(i, k) % (1024u - 16u + 1u);
    void* p = h.malloc(bytes);
    if (p != nullptr && (reinterpret_cast<std::uintptr_t>(p) & 3u) == 0) {
      volatile std::uint32_t* first = static_cast<std::uint32_t*>(p);
      volatile std::uint32_t* last = reinterpret_cast<std::uint32_t*>(static_cast<char*>(p) + ((bytes - 4u) & ~3u));
      const std::uint32_t w = hash2(i ^ 0x51ed27u, k) | 1u;
      *first = w;
      *last = ~w;
      if (*first != w || *last != ~w) ++bad;
    } else if (p != nullptr) {
      ++bad;
    } else {
      ++fails;
    }
    h.free(p);  // every lane frees (nullptr included): collective frees need the whole active set
    ++done;
  }
  atomicAdd(&counters[0], done);
  if (fails != 0) atomicAdd(&counters[1], fails);
  if (bad != 0) atomicAdd(&counters[2], bad);
}

// Holds the stream until the host has queued the timed launch behind it:
// `open` is host memory mapped into the device. Gives up after max_ns and
// says so in *gave_up. Internal linkage: every adapter translation unit
// includes this file.
static __global__ void launch_gate_kernel(const volatile unsigned* open, std::uint64_t max_ns, unsigned* gave_up) {
  const std::uint64_t t0 = global_ns();
  while (*open == 0u) {
    if (global_ns() - t0 > max_ns) {
      *gave_up = 1u;
      return;
    }
    __nanosleep(500);
  }
}

// Times one launch with CUDA events. Gated (the default): the events and
// the launch are queued behind launch_gate_kernel, which the host lets go
// once all three are queued, so that the time between the events holds no
// part of the host's submission (the GPU's own start of the kernel is
// still in it). Idle (--launch-timing idle, the method before 2026-11-30):
// the first event is recorded on an idle GPU and the host's submission of
// the launch (a few microseconds, and its jitter) falls between the events.
// A gate that gave up (the host took over gate_max_ns to queue the launch)
// times as idle does: last_gave_up() says so for the launch just timed, and
// the callers count such launches in their records (gate_timeouts). Where
// launches are serialized (CUDA_LAUNCH_BLOCKING=1, as under some tools) the
// gate could only give up, so the timer times idle and says so on stderr.
class EventTimer {
 public:
  explicit EventTimer(const Options& o) : gated_(o.gated_timing && !launches_block()) {
    if (o.gated_timing && !gated_) {
      std::fprintf(stderr, "  CUDA_LAUNCH_BLOCKING=1: launches timed idle (a gate would only give up)\n");
    }
    check(cudaEventCreate(&a_), "cudaEventCreate");
    check(cudaEventCreate(&b_), "cudaEventCreate");
    if (gated_) {
      check(cudaHostAlloc(reinterpret_cast<void**>(&host_), 2 * sizeof(unsigned), cudaHostAllocMapped),
            "cudaHostAlloc (launch gate)");
      check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), host_, 0),
            "cudaHostGetDevicePointer (launch gate)");
    }
  }
  ~EventTimer() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
    if (host_ != nullptr) {
      cudaDeviceSynchronize();  // a gate of a launch that threw is open (Opener), but may still be running
      cudaFreeHost(host_);
    }
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  template <class Launch>
  double seconds(const char* what, Launch&& launch) {
    volatile unsigned* gate = host_;
    {
      // Opens the gate on every way out of this block, a throw included.
      struct Opener {
        volatile unsigned* gate;
        ~Opener() {
          if (gate != nullptr) gate[0] = 1u;
        }
      } opener{gated_ ? gate : nullptr};
      if (gated_) {
        gate[0] = 0u;  // open
        gate[1] = 0u;  // gave up
        launch_gate_kernel<<<1, 1>>>(device_, gate_max_ns, device_ + 1);
        check(cudaGetLastError(), "launch_gate_kernel");
      }
      check(cudaEventRecord(a_), "cudaEventRecord");
      launch();
      check(cudaGetLastError(), what);
      check(cudaEventRecord(b_), "cudaEventRecord");
    }
    check(cudaEventSynchronize(b_), what);
    gave_up_ = gated_ && gate[1] != 0u;
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a_, b_), "cudaEventElapsedTime");
    return ms / 1e3;
  }

  // Whether the gate of the launch timed last gave up (it timed as idle).
  bool last_gave_up() const { return gave_up_; }

 private:
  static bool launches_block() {
    const char* v = std::getenv("CUDA_LAUNCH_BLOCKING");
    return v != nullptr && v[0] == '1';
  }

  static constexpr std::uint64_t gate_max_ns = 200'000'000;
  bool gated_;
  cudaEvent_t a_{}, b_{};
  unsigned* host_ = nullptr;    // [0] open, [1] gave up
  unsigned* device_ = nullptr;  // the same two words, as the device sees them
  bool gave_up_ = false;
};

inline double wall_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The pool an experiment gets: what it asks for, capped to what the GPU has
// free minus room for the benchmark's own arrays.
inline std::size_t capped_pool(std::size_t want, std::size_t reserve, std::string& note) {
  std::size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  const std::size_t cap = free > reserve ? (free - reserve) / 10 * 9 : free / 2;
  if (want <= cap) return want;
  note = "pool capped to " + std::to_string(cap >> 20) + " MiB by cudaMemGetInfo";
  return cap & ~((std::size_t{1} << 20) - 1);
}

inline std::string join_notes(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "; " + b;
}

// Experiment-wide state of the "too slow" rule: once a cold launch of
// (threads, bytes) took longer than --slow-s, configurations with at least as
// many threads and at least as large requests are skipped.
struct SlowRule {
  std::vector<std::pair<std::uint64_t, std::uint32_t>> slow;  // (threads, largest bytes)
  bool skips(std::uint64_t threads, std::uint32_t largest) const {
    for (const auto& [t, b] : slow)
      if (threads >= t && largest >= b) return true;
    return false;
  }
};

// One (threads, sizes) series on a fresh heap: cold + warm alloc and free
// launches, each verified. Emits `<experiment>_alloc` and `<experiment>_free`
// records (cold and warm).
template <class A>
void alloc_free_series(const RunContext& c, const std::string& experiment, std::uint64_t threads, SizeSpec sizes,
                       std::size_t pool, const std::string& pool_note, SlowRule& rule) {
  const Options& o = c.opt;
  Record base;
  base.m.suite = "heap";
  base.m.threads = threads;
  base.m.bytes = sizes.largest();
  base.size = sizes.label();
  base.m.extra["pool_bytes"] = static_cast<double>(pool);
  if (sizes.fixed == 0) {
    base.m.extra["min_bytes"] = sizes.lo;
    base.m.extra["max_bytes"] = sizes.hi;
  }
  const std::string adapter_note = join_notes(pool_note, A::note(pool));
  if (rule.skips(threads, sizes.largest())) {
    for (const char* op : {"_alloc", "_free"}) {
      Record r = base;
      r.m.experiment = experiment + op;
      r.skipped = true;
      r.note = "skipped: a smaller configuration took longer than --slow-s";
      c.emit(r);
    }
    std::fprintf(stderr, "  %s %llu x %s: skipped (slow)\n", experiment.c_str(),
                 static_cast<unsigned long long>(threads), sizes.label().c_str());
    return;
  }

  DeviceArray<void*> ptrs(threads);
  EventTimer timer(o);
  const auto t0 = std::chrono::steady_clock::now();
  A heap(pool);
  const double init_s = wall_since(t0);
  const auto h = heap.handle();
  // CUDA loads a kernel when it is first used (lazy module loading): load
  // both now, so that the cold launch times the heap, not the loader.
  cudaFuncAttributes attributes{};
  check(cudaFuncGetAttributes(&attributes, alloc_kernel<decltype(h)>), "cudaFuncGetAttributes (alloc kernel)");
  check(cudaFuncGetAttributes(&attributes, free_kernel<decltype(h)>), "cudaFuncGetAttributes (free kernel)");

  std::vector<double> alloc_s, free_s;
  std::vector<std::uint64_t> fails;
  CheckResult all;
  // A cold launch above --slow-s gets one warm launch (none above 4x); if the
  // last launch was still above it, larger configurations are skipped.
  bool over_budget = false;
  // Launches whose gate gave up (EventTimer), per record: [op][cold, warm].
  std::uint64_t gave_up[2][2] = {{0, 0}, {0, 0}};
  // One alloc launch on `handle`, the check of its chunks, one free launch:
  // their seconds appended to `alloc_t` and `free_t`; `warm`: the record
  // whose gate timeouts they count.
  auto alloc_check_free = [&](const auto& handle, std::uint32_t launch, std::vector<double>& alloc_t,
                              std::vector<double>& free_t, bool warm) {
    alloc_t.push_back(timer.seconds("alloc kernel", [&] {
      alloc_kernel<<<grid_for(threads), kBlock>>>(handle, ptrs.get(), threads, 0, sizes);
    }));
    gave_up[0][warm] += timer.last_gave_up();
    const CheckResult cr = check_chunks(ptrs.get(), threads, sizes, launch);
    all.add(cr);
    free_t.push_back(timer.seconds("free kernel", [&] {
      free_kernel<<<grid_for(threads), kBlock>>>(handle, ptrs.get(), threads);
    }));
    gave_up[1][warm] += timer.last_gave_up();
    return cr;
  };
  for (int launch = 0; launch <= o.repeat; ++launch) {
    fails.push_back(alloc_check_free(h, static_cast<std::uint32_t>(launch), alloc_s, free_s, launch > 0).nulls);
    const double took = alloc_s.back() + free_s.back();
    if (launch == 0 && took > o.slow_s) over_budget = true;
    if (over_budget && (launch == 1 || took > 4 * o.slow_s)) {
      if (took > o.slow_s) rule.slow.emplace_back(threads, sizes.largest());
      break;
    }
  }
  // A single cold launch is one sample of a noisy machine: the first
  // launches on further fresh heaps (where the heap is fresh and the launch
  // quick) give the median that the cold record reports. A fresh heap whose
  // first alloc launch had failed requests adds no sample (the record's
  // fails are those of the first heap) and ends the extra heaps.
  std::vector<double> cold_alloc{alloc_s[0]}, cold_free{free_s[0]};
  const double quick_cold_s = 0.05;
  if (A::fresh_heap && alloc_s[0] + free_s[0] < quick_cold_s && fails[0] == 0) {
    for (int extra = 1; extra < o.cold_heaps; ++extra) {
      A fresh(pool);
      std::vector<double> a, f;
      if (alloc_check_free(fresh.handle(), 0, a, f, false).nulls != 0) break;
      cold_alloc.push_back(a[0]);
      cold_free.push_back(f[0]);
    }
  }
  std::fprintf(stderr, "  %s %llu x %s: cold alloc %.3g s, %zu launches, verified %s\n", experiment.c_str(),
               static_cast<unsigned long long>(threads), sizes.label().c_str(), alloc_s[0], alloc_s.size(),
               all.ok() ? "yes" : "NO");

  for (int op = 0; op < 2; ++op) {
    const std::vector<double>& s = op == 0 ? alloc_s : free_s;
    const std::string name = experiment + (op == 0 ? "_alloc" : "_free");
    // cold
    // ops: requests for alloc, chunks actually freed for free
    Record r = base;
    r.m.experiment = name;
    r.launch = "cold";
    r.m.ops = op == 0 ? threads : threads - fails[0];
    const std::vector<double>& cold = op == 0 ? cold_alloc : cold_free;
    r.m.seconds = median(cold);
    r.m.extra["cold_heaps"] = static_cast<double>(cold.size());
    r.m.extra["seconds_max"] = *std::max_element(cold.begin(), cold.end());
    r.m.fails = fails[0];
    r.m.verified = all.ok();
    r.m.extra["init_s"] = init_s;
    r.m.extra["overlaps"] = static_cast<double>(all.overlaps);
    r.m.extra["bad_chunks"] = static_cast<double>(all.bad);
    if (gave_up[op][0] != 0) r.m.extra["gate_timeouts"] = static_cast<double>(gave_up[op][0]);
    r.note = join_notes(adapter_note, A::fresh_heap ? "" : "heap not fresh (lives as long as the CUDA context)");
    if (over_budget) r.note = join_notes(r.note, "cold launch above --slow-s: at most one warm launch");
    c.emit(r);
    if (s.size() < 2) continue;
    // warm: median of the following launches
    std::vector<double> warm(s.begin() + 1, s.end());
    Record w = base;
    w.m.experiment = name;
    w.launch = "warm";
    w.m.fails = *std::max_element(fails.begin() + 1, fails.end());
    w.m.ops = op == 0 ? threads : threads - w.m.fails;
    w.m.seconds = median(warm);
    w.m.verified = all.ok();
    w.m.extra["seconds_min"] = *std::min_element(warm.begin(), warm.end());
    w.m.extra["seconds_max"] = *std::max_element(warm.begin(), warm.end());
    w.m.extra["launches"] = static_cast<double>(warm.size());
    if (gave_up[op][1] != 0) w.m.extra["gate_timeouts"] = static_cast<double>(gave_up[op][1]);
    w.m.extra["ops_per_s_max"] = static_cast<double>(w.m.ops) / w.m.extra["seconds_min"];
    w.m.extra["ops_per_s_min"] = static_cast<double>(w.m.ops) / w.m.extra["seconds_max"];
    w.note = adapter_note;
    c.emit(w);
  }
}

template <class A>
void throughput(const RunContext& c) {
  const Options& o = c.opt;
  SlowRule rule;
  for (const std::uint32_t t : o.threads) {
    for (const std::uint32_t s : o.sizes) {
      SizeSpec spec;
      spec.fixed = s;
      std::string note;
      const std::size_t reserve = (std::size_t{4} << 30) + std::size_t{t} * 64;
      const std::size_t pool = capped_pool(static_cast<std::size_t>(o.pool_gib * (1ull << 30)), reserve, note);
      alloc_free_series<A>(c, "throughput", t, spec, pool, note, rule);
    }
  }
}

template <class A>
void large(const RunContext& c) {
  const Options& o = c.opt;
  struct Config {
    std::uint64_t threads;
    std::uint32_t bytes;
  };
  const std::vector<Config> configs = o.quick ? std::vector<Config>{{64, 1u << 20}, {4, 16u << 20}, {1, 256u << 20}}
                                              : std::vector<Config>{{1024, 1u << 20}, {64, 16u << 20}, {1, 1u << 30}};
  SlowRule rule;
  for (const auto& cfg : configs) {
    SizeSpec spec;
    spec.fixed = cfg.bytes;
    std::string note;
    const std::size_t pool =
        capped_pool(static_cast<std::size_t>(o.pool_gib * (1ull << 30)), std::size_t{4} << 30, note);
    alloc_free_series<A>(c, "large", cfg.threads, spec, pool, note, rule);
  }
}

template <class A>
void churn(const RunContext& c) {
  const Options& o = c.opt;
  std::string note;
  const std::size_t pool = capped_pool(static_cast<std::size_t>(o.pool_gib * (1ull << 30)), std::size_t{4} << 30, note);
  note = join_notes(note, A::note(pool));
  const std::uint32_t n = o.churn_threads;
  DeviceArray<unsigned long long> counters(3);
  EventTimer timer(o);
  A heap(pool);
  const auto h = heap.handle();
  const auto budget_ns = static_cast<std::uint64_t>(o.churn_budget_s * 1e9);
  for (int rep = 0; rep < o.churn_reps; ++rep) {
    check(cudaMemset(counters.get(), 0, 3 * sizeof(unsigned long long)), "cudaMemset");
    const double s = timer.seconds("churn kernel", [&] {
      churn_kernel<<<grid_for(n), kBlock>>>(h, n, o.churn_rounds, static_cast<std::uint32_t>(rep), budget_ns,
                                            counters.get());
    });
    unsigned long long got[3] = {0, 0, 0};
    check(cudaMemcpy(got, counters.get(), sizeof got, cudaMemcpyDeviceToHost), "cudaMemcpy");
    Record r;
    r.m.experiment = "churn";
    r.m.threads = n;
    r.m.bytes = 1024;
    r.size = "16-1024";
    r.launch = rep == 0 ? "cold" : "warm";
    r.m.ops = got[0];
    r.m.seconds = s;
    r.m.fails = got[1];
    r.m.verified = got[2] == 0;
    r.m.extra["rep"] = rep;
    r.m.extra["rounds"] = o.churn_rounds;
    r.m.extra["bad_chunks"] = static_cast<double>(got[2]);
    r.m.extra["pool_bytes"] = static_cast<double>(pool);
    if (timer.last_gave_up()) r.m.extra["gate_timeouts"] = 1;
    r.note = note;
    const unsigned long long planned = static_cast<unsigned long long>(n) * o.churn_rounds;
    if (got[0] < planned)
      r.note = join_notes(r.note, "stopped at --churn-budget-s after " + std::to_string(got[0]) + " of " +
                                      std::to_string(planned) + " pairs");
    // Stopped by the budget: only the last repetition follows.
    const bool jump = got[0] < planned && rep + 2 < o.churn_reps;
    if (jump)
      r.note = join_notes(r.note, "over budget: repetitions " + std::to_string(rep + 1) + ".." +
                                      std::to_string(o.churn_reps - 2) + " skipped");
    c.emit(r);
    std::fprintf(stderr, "  churn rep %d: %.3g s, %.4g M pairs/s, fails %llu, bad %llu\n", rep, s, got[0] / s / 1e6,
                 got[1], got[2]);
    if (jump) rep = o.churn_reps - 2;
  }
}

template <class A>
void usable(const RunContext& c) {
  const Options& o = c.opt;
  const std::uint64_t max_wave = o.quick ? (1u << 14) : (1u << 20);
  for (const std::uint32_t s : o.sizes) {
    SizeSpec spec;
    spec.fixed = s;
    spec.salt = 7;
    std::string note;
    const std::size_t want = static_cast<std::size_t>(o.usable_gib * (1ull << 30));
    const std::uint64_t capacity = want / (s != 0 ? s : spec.lo) + max_wave;
    const std::size_t pool = capped_pool(want, (std::size_t{4} << 30) + capacity * 48, note);
    note = join_notes(note, A::note(pool));
    DeviceArray<void*> ptrs(capacity);
    EventTimer timer(o);
    Record r;
    r.m.experiment = "usable";
    r.m.bytes = spec.largest();
    r.size = spec.label();
    {
      A heap(pool);
      const auto h = heap.handle();
      const auto t0 = std::chrono::steady_clock::now();
      // Waves of requests: the first small, then sized for about 0.25 s each
      // (growing at most 16x, up to max_wave), so that slow allocators never
      // get one launch of minutes and fast ones fill the pool in few launches.
      std::uint64_t n = 0, waves = 0, last_fails = 0, wave = 4096, widest = 0, gate_timeouts = 0;
      double kernel_s = 0;
      std::string stop = "first failure";
      while (true) {
        const std::uint64_t this_wave = std::min(wave, capacity - n);
        if (this_wave == 0) {
          stop = "pointer array full (no failure)";
          break;
        }
        if (wall_since(t0) > o.usable_budget_s) {
          stop = "stopped at --usable-budget-s (no failure yet: a lower bound)";
          break;
        }
        const double t = timer.seconds("usable alloc kernel", [&] {
          alloc_kernel<<<grid_for(this_wave), kBlock>>>(h, ptrs.get() + n, this_wave, n, spec);
        });
        kernel_s += t;
        gate_timeouts += timer.last_gave_up();
        n += this_wave;
        ++waves;
        widest = std::max(widest, this_wave);
        last_fails = count_nulls(ptrs.get() + n - this_wave, this_wave);
        if (last_fails != 0) break;
        const double factor = t > 0 ? std::clamp(0.25 / t, 0.25, 16.0) : 16.0;
        const auto scaled = static_cast<std::uint64_t>(static_cast<double>(this_wave) * factor);
        wave = std::clamp<std::uint64_t>((scaled + kBlock - 1) / kBlock * kBlock, kBlock, max_wave);
      }
      const CheckResult cr = check_chunks(ptrs.get(), n, spec, 11);
      // Empty the heap again (CUDA's heap outlives the adapter).
      free_kernel<<<grid_for(n), kBlock>>>(h, ptrs.get(), n);
      check(cudaGetLastError(), "free kernel");
      check(cudaDeviceSynchronize(), "free kernel");
      r.m.threads = widest;
      r.m.ops = n - cr.nulls;
      r.m.seconds = kernel_s;
      r.m.fails = last_fails;
      r.m.verified = cr.ok();
      r.m.extra["usable_share"] = static_cast<double>(cr.bytes) / static_cast<double>(pool);
      if (gate_timeouts != 0) r.m.extra["gate_timeouts"] = static_cast<double>(gate_timeouts);
      r.m.extra["bytes_handed_out"] = static_cast<double>(cr.bytes);
      r.m.extra["pool_bytes"] = static_cast<double>(pool);
      r.m.extra["waves"] = static_cast<double>(waves);
      r.m.extra["requests"] = static_cast<double>(n);
      r.m.extra["overlaps"] = static_cast<double>(cr.overlaps);
      r.m.extra["bad_chunks"] = static_cast<double>(cr.bad);
      if (s == 0) {
        r.m.extra["min_bytes"] = spec.lo;
        r.m.extra["max_bytes"] = spec.hi;
      }
      r.note = join_notes(note, "ended: " + stop);
      std::fprintf(stderr, "  usable %s: %.4f of %zu MiB in %llu waves (%s), verified %s\n", spec.label().c_str(),
                   r.m.extra["usable_share"], pool >> 20, static_cast<unsigned long long>(waves), stop.c_str(),
                   cr.ok() ? "yes" : "NO");
    }
    c.emit(r);
  }
}

// The entry point of the registry for adapter A.
template <class A>
void run_experiment(const RunContext& c, const std::string& experiment) {
  if (experiment == "throughput") throughput<A>(c);
  else if (experiment == "churn") churn<A>(c);
  else if (experiment == "large") large<A>(c);
  else if (experiment == "usable") usable<A>(c);
  else if (experiment == "pic_steps" || experiment == "pic_growth") {
    pic::run_peer_pic<A>(experiment, c.opt.quick, c.allocator, [&](const bench::Measurement& m) {
      Record r;
      r.m = m;
      r.size = std::to_string(m.bytes);
      c.emit(r);
    });
  }
  else throw std::invalid_argument("unknown experiment " + experiment);
}

}  // namespace manyalloc::heap::peers
