// Operator performance ([Steinberger2012] section 7 and Fig. 3; [Eckert2014]
// 5.1.1): the host draws random numbers and launches, with probability
// p_alloc, a kernel in which every one of N_worker workers allocates one
// chunk, and with probability p_free one in which every worker frees its most
// recent chunk. After a warm-up, each worker measures the cycles of each of
// its alloc and free calls (clock64 on the GPU, rdtsc on the host); the mean
// and the coefficient of variation over all calls are reported per N_worker.
//
// Each worker keeps up to `depth` live chunks (a stack); an alloc kernel
// skips workers with a full stack, a free kernel those with an empty one.
// Chunks are marked when allocated and checked when freed; after the
// measured steps no two live chunks may overlap.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "context.hpp"

namespace manyalloc::heap::bench {

template <class Handle>
struct OpAlloc {
  Handle heap;
  std::uint32_t bytes, depth, workers;
  void** live;            // [slot * workers + w]
  std::uint32_t* count;   // live chunks per worker
  OpStats* stats;         // per worker
  std::uint32_t* fails;
  bool measure;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    const std::uint32_t c = count[w];
    if (c >= depth) return;
    void* p = timed_alloc(heap, acc, bytes, stats[w], measure, fails);
    if (p == nullptr) return;
    mark_chunk(p, bytes, w, c);
    live[std::size_t{c} * workers + w] = p;
    count[w] = c + 1;
  }
};

template <class Handle>
struct OpFree {
  Handle heap;
  std::uint32_t bytes, workers;
  void** live;
  std::uint32_t* count;
  OpStats* stats;
  std::uint32_t* corrupt;
  bool measure;
  bool all;  // free every live chunk (end of a run), untimed
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    std::uint32_t c = count[w];
    while (c > 0) {
      --c;
      void*& slot = live[std::size_t{c} * workers + w];
      if (!check_chunk(slot, bytes, w, c)) acc.atomic_add(corrupt, 1u);
      timed_free(heap, acc, slot, stats[w], measure);
      slot = nullptr;
      if (!all) break;
    }
    count[w] = c;
  }
};

struct OperatorConfig {
  std::vector<std::uint64_t> sizes;
  std::vector<std::uint32_t> workers;
  unsigned warmup = 12, steps = 24, depth = 8;
  double p_alloc = 0.75, p_free = 0.75;
  double budget = 10;
  std::size_t baseline_heap = 0;
};

// 2, 3, 4, 6, 8, 11, 16, ... (two points per octave), then `full`.
inline std::vector<std::uint32_t> log_spaced_workers(std::uint32_t full) {
  std::vector<std::uint32_t> v;
  for (unsigned k = 2;; ++k) {
    const auto n = static_cast<std::uint32_t>(std::lround(std::pow(2.0, k / 2.0)));
    if (n >= full) break;
    if (v.empty() || v.back() != n) v.push_back(n);
  }
  v.push_back(full);
  return v;
}

template <class P>
OperatorConfig operator_config(const Context& ctx) {
  const Options& o = ctx.opt;
  OperatorConfig c;
  c.sizes = o.sizes.empty() ? std::vector<std::uint64_t>{16, 32, 64, 128} : o.sizes;
  const auto full = static_cast<std::uint32_t>(o.max_workers ? o.max_workers : (o.quick ? 64u : P::full_occupancy()));
  c.workers = log_spaced_workers(full);
  if (o.quick) c.warmup = 3, c.steps = 6;
  if (o.steps) c.steps = o.steps;
  c.budget = o.budget;
  std::uint64_t largest = 16;
  for (auto s : c.sizes) largest = std::max<std::uint64_t>(largest, s);
  c.baseline_heap = std::min<std::size_t>(largest * c.depth * full * 2 + (std::size_t{128} << 20), P::memory_cap() / 3);
  return c;
}

template <class P>
void operator_experiment(Context& ctx, AllocatorSet<P>& set, const OperatorConfig& c) {
  using Runner = typename P::Runner;
  const std::uint32_t most = c.workers.back();
  Progress progress("operator", c.sizes.size() * set.count());
  for (std::uint64_t bytes : c.sizes) {
    set.for_each([&](auto& source) {
      using Heap = typename std::decay_t<decltype(source)>::heap_type;
      using Handle = typename Heap::Handle;
      auto& heap = source.get(heap_bytes_for(bytes, std::uint64_t{most} * c.depth));
      typename Runner::template Buffer<void*> live(std::size_t{most} * c.depth);
      typename Runner::template Buffer<std::uint32_t> count(most);
      typename Runner::template Buffer<OpStats> astats(most), fstats(most);
      typename Runner::template Buffer<std::uint32_t> counters(2);  // fails, corrupt
      for (std::uint32_t n : c.workers) {
        live.zero(), count.zero(), astats.zero(), fstats.zero(), counters.zero();
        std::mt19937_64 rng(0x5eed + n);
        std::uniform_real_distribution<double> u(0, 1);
        const auto b = static_cast<std::uint32_t>(bytes);
        double alloc_s = 0, free_s = 0;
        unsigned alloc_launches = 0, free_launches = 0;
        for (unsigned step = 0; step < c.warmup + c.steps; ++step) {
          const bool measure = step >= c.warmup;
          if (u(rng) < c.p_alloc) {
            const double s = Runner::timed_run(n, OpAlloc<Handle>{heap.handle(), b, c.depth, n, live.data(), count.data(),
                                                                  astats.data(), counters.data(), measure});
            if (measure) alloc_s += s, ++alloc_launches;
          }
          if (u(rng) < c.p_free) {
            const double s = Runner::timed_run(n, OpFree<Handle>{heap.handle(), b, n, live.data(), count.data(),
                                                                 fstats.data(), counters.data() + 1, measure, false});
            if (measure) free_s += s, ++free_launches;
          }
        }
        // Live chunks of this run: [slot * n + w] for slot < depth.
        auto ptrs = live.to_host();
        ptrs.resize(std::size_t{n} * c.depth);
        const std::uint64_t overlaps = count_overlaps(ptrs, bytes);
        Runner::run(n, OpFree<Handle>{heap.handle(), b, n, live.data(), count.data(), fstats.data(),
                                      counters.data() + 1, false, true});
        const auto cnt = counters.to_host();
        auto as = astats.to_host(), fs = fstats.to_host();
        as.resize(n), fs.resize(n);
        const MeanCv ma = reduce(as), mf = reduce(fs);
        for (int which = 0; which < 2; ++which) {
          const MeanCv& mc = which == 0 ? ma : mf;
          Measurement m;
          m.experiment = which == 0 ? "operator_alloc" : "operator_free";
          m.allocator = Heap::info(" ");
          m.threads = n;
          m.bytes = bytes;
          m.ops = static_cast<std::uint64_t>(mc.n);
          m.seconds = which == 0 ? alloc_s : free_s;
          m.fails = which == 0 ? cnt[0] : 0;
          m.verified = cnt[1] == 0 && overlaps == 0;
          m.extra["cycles_per_op"] = mc.mean;
          m.extra[which == 0 ? "cycles_alloc" : "cycles_free"] = mc.mean;
          m.extra["cycles_cv"] = mc.cv;
          m.extra["launches"] = which == 0 ? alloc_launches : free_launches;
          m.extra["p_alloc"] = c.p_alloc;
          m.extra["p_free"] = c.p_free;
          if (!m.verified) m.extra["corrupt"] = cnt[1], m.extra["overlaps"] = static_cast<double>(overlaps);
          ctx.emit(m);
        }
        if (alloc_s + free_s > c.budget && n != c.workers.back()) {
          progress.note(source.name + " " + size_label(bytes) + ": stopped after N_worker=" + std::to_string(n) +
                        " (--budget)");
          break;
        }
      }
      progress.step(source.name + " " + size_label(bytes));
      source.release();
    });
  }
}

}  // namespace manyalloc::heap::bench
