// Temporal development ([Steinberger2012] Fig. 2): 16384 workers keep
// requesting chunks of 128..160 bytes (uniform), each with probability
// p_alloc = 0.05 per step, never freeing, until the heap (16 MiB by default,
// as [Steinberger2012]'s two 8 MB super blocks) is full. Per step: mean cycles per
// alloc and their CV, the fill level (requested bytes held / heap bytes),
// and for Scatter the fragmentation (eq. 1, 2) and the share of pages in
// use. Every chunk is marked when allocated; at the end all are checked for
// overlaps and marks, then freed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "context.hpp"
#include "scatter_metrics.hpp"

namespace manyalloc::heap::bench {

template <class Handle>
struct TemporalStep {
  Handle heap;
  std::uint32_t step, workers, depth, lo, hi;
  double p_alloc;
  void** live;            // [slot * workers + w]
  std::uint32_t* count;
  std::uint32_t* born;    // step of each live chunk
  void** fresh;           // this step's chunk per worker (or null)
  OpStats* stats;         // this step's cycles per worker
  std::uint32_t* fails;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    fresh[w] = nullptr;
    stats[w] = OpStats{};
    const std::uint32_t c = count[w];
    if (c >= depth || !chance(w, step, p_alloc)) return;
    const std::uint32_t n = uniform_size(w, step, lo, hi);
    const std::uint64_t t0 = cycle_counter();
    void* p = heap.alloc(acc, n);
    const std::uint64_t t1 = cycle_counter();
    stats[w].add(t1 - t0);
    if (p == nullptr) {
      acc.atomic_add(fails, 1u);
      return;
    }
    mark_chunk(p, n, w, step);
    live[std::size_t{c} * workers + w] = p;
    born[std::size_t{c} * workers + w] = step;
    count[w] = c + 1;
    fresh[w] = p;
  }
};

// Checks and frees every live chunk; sizes and tags come from `born`.
template <class Handle>
struct TemporalFree {
  Handle heap;
  std::uint32_t workers, lo, hi;
  void** live;
  std::uint32_t* born;    // step of each live chunk, [slot * workers + w]
  std::uint32_t* count;
  std::uint32_t* corrupt;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    for (std::uint32_t c = 0; c < count[w]; ++c) {
      const std::size_t i = std::size_t{c} * workers + w;
      const std::uint32_t step = born[i];
      if (!check_chunk(live[i], uniform_size(w, step, lo, hi), w, step)) acc.atomic_add(corrupt, 1u);
      heap.dealloc(acc, live[i]);
    }
    count[w] = 0;
  }
};

struct TemporalConfig {
  std::uint32_t workers = 16384, depth = 64, lo = 128, hi = 160, max_steps = 600;
  double p_alloc = 0.05;
  std::size_t heap = std::size_t{16} << 20;
};

template <class P>
TemporalConfig temporal_config(const Context& ctx) {
  const Options& o = ctx.opt;
  TemporalConfig c;
  if (o.quick) c.workers = 1024, c.heap = std::size_t{1} << 20;
  if (o.threads) c.workers = static_cast<std::uint32_t>(o.threads);
  if (o.heap_mb) c.heap = o.heap_mb << 20;
  if (o.steps) c.max_steps = o.steps;
  // Enough slots per worker to fill the heap twice over on average.
  const double per_worker = 2.0 * static_cast<double>(c.heap) / (c.lo * static_cast<double>(c.workers));
  c.depth = std::max<std::uint32_t>(16, static_cast<std::uint32_t>(per_worker));
  return c;
}

template <class P>
void temporal_experiment(Context& ctx, AllocatorSet<P>& set, const TemporalConfig& c) {
  using Runner = typename P::Runner;
  Progress progress("temporal", set.count());
  set.for_each([&](auto& source) {
    using Source = std::decay_t<decltype(source)>;
    using Heap = typename Source::heap_type;
    using Handle = typename Heap::Handle;
    if constexpr (Source::shared && !P::baseline_bounded) {
      progress.step(source.name + " skipped (no bounded heap)");
      return;
    } else {
      auto& heap = source.get(c.heap);
      const double heap_bytes = static_cast<double>(source.heap_bytes());
      const std::size_t slots = std::size_t{c.workers} * c.depth;
      typename Runner::template Buffer<void*> live(slots), fresh(c.workers);
      typename Runner::template Buffer<std::uint32_t> count(c.workers), fails(1), born(slots), corrupt(1);
      typename Runner::template Buffer<OpStats> stats(c.workers);
      std::vector<Measurement> records;
      std::vector<void*> all_ptrs;
      std::vector<std::size_t> all_sizes;
      double held = 0, internal_sum = 0;
      std::uint64_t internal_n = 0;
      std::uint32_t quiet = 0;
      for (std::uint32_t step = 0; step < c.max_steps; ++step) {
        fails.zero();
        const double s = Runner::timed_run(c.workers, TemporalStep<Handle>{heap.handle(), step, c.workers, c.depth, c.lo, c.hi,
                                                                           c.p_alloc, live.data(), count.data(), born.data(), fresh.data(),
                                                                           stats.data(), fails.data()});
        const auto fr = fresh.to_host();
        const MeanCv mc = reduce(stats.to_host());
        const std::uint32_t nf = fails.to_host()[0];
        std::vector<void*> step_ptrs;
        std::vector<std::size_t> step_sizes;
        for (std::uint32_t w = 0; w < c.workers; ++w) {
          if (fr[w] == nullptr) continue;
          const std::size_t n = uniform_size(w, step, c.lo, c.hi);
          held += static_cast<double>(n);
          step_ptrs.push_back(fr[w]);
          step_sizes.push_back(n);
        }
        Measurement m;
        m.experiment = "temporal";
        m.allocator = Heap::info(" ");
        m.threads = c.workers;
        m.bytes = c.hi;
        m.ops = static_cast<std::uint64_t>(mc.n);
        m.seconds = s;
        m.fails = nf;
        m.extra["step"] = step;
        m.extra["min_bytes"] = c.lo;
        m.extra["cycles_per_op"] = mc.mean;
        m.extra["cycles_cv"] = mc.cv;
        m.extra["fill"] = held / heap_bytes;
        m.extra["heap_bytes"] = heap_bytes;
        if constexpr (HasPageTable<Heap>) {
          const PageTableSnapshot<Heap> snap(heap);
          // Chunks never move and are never freed here, so eq. (1) accumulates.
          for (std::size_t i = 0; i < step_ptrs.size(); ++i) {
            const std::size_t e = snap.extent(step_ptrs[i]);
            if (e == 0) continue;
            internal_sum += static_cast<double>(e - std::min(e, step_sizes[i])) / static_cast<double>(e);
            ++internal_n;
          }
          const FreeStats f = snap.free_stats();
          m.extra["internal_frag"] = internal_n ? internal_sum / static_cast<double>(internal_n) : 0.0;
          m.extra["external_frag"] = f.external;
          m.extra["overhead"] = f.overhead_bytes / heap_bytes;
          m.extra["pages_in_use"] = f.pages_in_use;
        }
        all_ptrs.insert(all_ptrs.end(), step_ptrs.begin(), step_ptrs.end());
        all_sizes.insert(all_sizes.end(), step_sizes.begin(), step_sizes.end());
        // Stop once the heap is full: several steps in a row where every
        // request failed.
        quiet = (step_ptrs.empty() && nf > 0) ? quiet + 1 : 0;
        records.push_back(m);
        if (quiet >= 3) break;
      }
      // Verification of the whole run; every step's record carries its result.
      const std::uint64_t overlaps = count_overlaps(all_ptrs, all_sizes);
      Runner::run(c.workers, TemporalFree<Handle>{heap.handle(), c.workers, c.lo, c.hi, live.data(), born.data(),
                                                  count.data(), corrupt.data()});
      const std::uint32_t bad = corrupt.to_host()[0];
      for (auto& r : records) {
        r.verified = bad == 0 && overlaps == 0;
        if (!r.verified) r.extra["corrupt"] = bad, r.extra["overlaps"] = static_cast<double>(overlaps);
        ctx.emit(r);
      }
      progress.step(source.name);
      source.release();
    }
  });
}

}  // namespace manyalloc::heap::bench
