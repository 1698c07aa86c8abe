// Fragmentation and access time against the spread of request sizes
// ([Steinberger2012] section 8, Figure 4): N workers (1024 and 4096) run a
// random sequence of kernels as in the operator experiment (operator.hpp),
// with p_alloc = p_free = 0.6 and sizes drawn uniformly from
// [512 - spread/2, 512 + spread/2] (mean 512 B, spread 0 .. 896 B). The
// heap's state after each measured step gives the internal and external
// fragmentation (equations (1) and (2), averaged over the measured steps, for
// the heaps whose layout can be read: Scatter, SizeClassSlabs, ListBased,
// MultiList; CUDA's malloc cannot be inspected). Then one more alloc kernel
// (so that every worker holds a chunk) and every worker reads and rewrites
// each word of its live chunks in a timed launch: the access time in cycles
// per word.
//
// Verification: chunks are marked when allocated and checked when freed; the
// live chunks do not overlap; every word written before the access launch
// holds the expected value after it; for list heaps the segment lists pass
// their invariant walk (list_metrics.hpp).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "context.hpp"
#include "fragmentation.hpp"
#include "list_metrics.hpp"
#include "scatter_metrics.hpp"
#include "slab_metrics.hpp"

namespace manyalloc::heap::bench {

inline constexpr std::uint32_t spread_mean_bytes = 512;

// Request of worker w for its `serial`-th allocation: a multiple of 4 in
// [mean - spread/2, mean + spread/2], uniform.
MANYALLOC_FN inline std::uint32_t spread_size(std::uint32_t spread, std::uint32_t w, std::uint32_t serial) {
  const std::uint32_t steps = spread / 4u;
  return spread_mean_bytes - steps * 2u + 4u * (hash2(w, serial) % (steps + 1u));
}

// The worker's live chunks: a stack of up to `depth`, slot c at [c * workers + w].
struct SpreadStacks {
  void** live;
  std::uint32_t* sizes;
  std::uint32_t* count;
  std::uint32_t depth, workers;
  MANYALLOC_FN std::size_t at(std::uint32_t c, std::uint32_t w) const { return std::size_t{c} * workers + w; }
};

template <class Handle>
struct SpreadAlloc {
  Handle heap;
  SpreadStacks s;
  std::uint32_t spread, step;
  OpStats* stats;
  std::uint32_t* fails;
  bool measure;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    const std::uint32_t c = s.count[w];
    if (c >= s.depth) return;
    const std::uint32_t bytes = spread_size(spread, w, step * s.depth + c);
    void* p = timed_alloc(heap, acc, bytes, stats[w], measure, fails);
    if (p == nullptr) return;
    mark_chunk(p, bytes, w, c);
    s.live[s.at(c, w)] = p;
    s.sizes[s.at(c, w)] = bytes;
    s.count[w] = c + 1;
  }
};

template <class Handle>
struct SpreadFree {
  Handle heap;
  SpreadStacks s;
  OpStats* stats;
  std::uint32_t* corrupt;
  bool measure, all;
  bool check_marks;  // false after the access launches rewrote every word
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    std::uint32_t c = s.count[w];
    while (c > 0) {
      --c;
      void*& p = s.live[s.at(c, w)];
      if (check_marks && !check_chunk(p, s.sizes[s.at(c, w)], w, c)) acc.atomic_add(corrupt, 1u);
      timed_free(heap, acc, p, stats[w], measure);
      p = nullptr;
      if (!all) break;
    }
    s.count[w] = c;
  }
};

// Access launch: Mode 0 fills every word of the worker's live chunks, mode 1
// reads and rewrites them (timed, cycles per word into stats), mode 2 checks
// them. Word k of slot c starts as checksum(w, c, k); each touch maps v to
// 3v + 1.
template <int Mode>
struct SpreadAccess {
  SpreadStacks s;
  unsigned passes;
  OpStats* stats;
  std::uint32_t* corrupt;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    const std::uint32_t n = s.count[w];
    std::uint64_t words = 0;
    const std::uint64_t t0 = cycle_counter();
    for (std::uint32_t c = 0; c < n; ++c) {
      auto* p = static_cast<std::uint32_t*>(s.live[s.at(c, w)]);
      const std::uint32_t len = s.sizes[s.at(c, w)] / 4u;
      for (std::uint32_t k = 0; k < len; ++k) {
        if constexpr (Mode == 0) {
          p[k] = testing::checksum(w, c, k);
        } else if constexpr (Mode == 1) {
          for (unsigned r = 0; r < passes; ++r) p[k] = p[k] * 3u + 1u;
        } else {
          std::uint32_t v = testing::checksum(w, c, k);
          for (unsigned r = 0; r < passes; ++r) v = v * 3u + 1u;
          if (p[k] != v) {
            acc.atomic_add(corrupt, 1u);
            return;
          }
        }
      }
      words += len;
    }
    const std::uint64_t t1 = cycle_counter();
    if constexpr (Mode == 1) {
      stats[w] = OpStats{};
      if (words > 0) stats[w].add((t1 - t0) / (words * passes));
    }
  }
};

struct SpreadConfig {
  std::vector<std::uint32_t> spreads;
  std::vector<std::uint32_t> threads;
  unsigned warmup = 8, steps = 16, depth = 4, passes = 2;
  double p_alloc = 0.6, p_free = 0.6;
  std::size_t heap = 0;
};

template <class P>
SpreadConfig spread_config(const Context& ctx) {
  const Options& o = ctx.opt;
  SpreadConfig c;
  if (!o.sizes.empty()) {
    for (auto s : o.sizes) c.spreads.push_back(static_cast<std::uint32_t>(std::min<std::uint64_t>(s, 2 * (spread_mean_bytes - 16))));
  } else {
    c.spreads = o.quick ? std::vector<std::uint32_t>{0, 448, 896}
                        : std::vector<std::uint32_t>{0, 128, 256, 384, 512, 640, 768, 896};
  }
  if (o.threads) c.threads = {static_cast<std::uint32_t>(o.threads)};
  else c.threads = o.quick ? std::vector<std::uint32_t>{256} : std::vector<std::uint32_t>{1024, 4096};
  if (o.quick) c.warmup = 2, c.steps = 4;
  if (o.steps) c.steps = o.steps;
  // [Steinberger2012] section 8 gives each allocator 16 MB.
  c.heap = o.heap_mb ? (o.heap_mb << 20) : (std::size_t{16} << 20);
  return c;
}

template <class P>
void spread_experiment(Context& ctx, AllocatorSet<P>& set, const SpreadConfig& c) {
  using Runner = typename P::Runner;
  Progress progress("spread", c.threads.size() * c.spreads.size() * set.count());
  for (std::uint32_t n : c.threads) {
    for (std::uint32_t spread : c.spreads) {
      set.for_each([&](auto& source) {
        using Heap = typename std::decay_t<decltype(source)>::heap_type;
        using Handle = typename Heap::Handle;
        auto& heap = source.get(c.heap);
        const std::size_t slots = std::size_t{n} * c.depth;
        typename Runner::template Buffer<void*> live(slots);
        typename Runner::template Buffer<std::uint32_t> sizes(slots), count(n), counters(3);  // fails, corrupt (free, access)
        typename Runner::template Buffer<OpStats> astats(n), fstats(n), xstats(n);
        live.zero(), sizes.zero(), count.zero(), counters.zero(), astats.zero(), fstats.zero();
        const SpreadStacks stacks{live.data(), sizes.data(), count.data(), c.depth, n};
        std::uint32_t* fails = counters.data();
        std::mt19937_64 rng(0xf16u + n * 1000u + spread);
        std::uniform_real_distribution<double> u(0, 1);
        Measurement m;
        m.experiment = "spread";
        m.allocator = Heap::info(" ");
        m.threads = n;
        m.bytes = spread_mean_bytes;
        m.tags["clock"] = ctx.clock;
        m.extra["spread"] = spread;
        m.extra["min_bytes"] = spread_mean_bytes - spread / 4u * 2u;
        m.extra["max_bytes"] = spread_mean_bytes + spread / 4u * 2u;
        m.extra["p_alloc"] = c.p_alloc;
        m.extra["p_free"] = c.p_free;
        m.extra["heap_bytes"] = static_cast<double>(source.heap_bytes());
        // The state after each measured step: fill and fragmentation are
        // averaged over the measured steps; every state's live chunks must
        // not overlap, and list heaps must pass their invariant walk.
        std::uint64_t overlaps = 0;
        bool lists_consistent = true;
        double internal_sum = 0, external_sum = 0, fill_sum = 0, live_sum = 0;
        unsigned samples = 0;
        auto sample = [&] {
          const auto ptrs = live.to_host();
          const auto sz = sizes.to_host();
          const std::vector<std::size_t> bytes(sz.begin(), sz.end());
          overlaps += count_overlaps(ptrs, bytes);
          double live_bytes = 0, live_chunks = 0;
          for (std::size_t i = 0; i < ptrs.size(); ++i)
            if (ptrs[i] != nullptr) live_bytes += static_cast<double>(bytes[i]), ++live_chunks;
          fill_sum += live_bytes / static_cast<double>(source.heap_bytes());
          live_sum += live_chunks;
          ++samples;
          if constexpr (HasPageTable<Heap>) {
            const PageTableSnapshot<Heap> snap(heap);
            internal_sum += snap.internal(ptrs, bytes);
            external_sum += snap.free_stats().external;
          } else if constexpr (HasSlabPages<Heap>) {
            const SlabStats st = slab_stats(heap, ptrs, bytes);
            internal_sum += st.internal;
            external_sum += st.external;
          } else if constexpr (HasSegmentLists<Heap>) {
            const ListStats st = list_stats(heap);
            internal_sum += st.internal;
            external_sum += st.external;
            m.extra["overhead"] = st.overhead_bytes / static_cast<double>(source.heap_bytes());
            lists_consistent = lists_consistent && st.consistent;
          }
        };
        double alloc_s = 0;
        for (unsigned step = 0; step < c.warmup + c.steps; ++step) {
          const bool measure = step >= c.warmup;
          if (u(rng) < c.p_alloc) {
            const double s = Runner::timed_run(
                n, SpreadAlloc<Handle>{heap.handle(), stacks, spread, step, astats.data(), fails, measure});
            if (measure) alloc_s += s;
          }
          if (u(rng) < c.p_free)
            Runner::run(n, SpreadFree<Handle>{heap.handle(), stacks, fstats.data(), counters.data() + 1, measure, false, true});
          if (measure) sample();
        }
        const double per = samples ? 1.0 / samples : 0.0;
        if constexpr (layout_readable<Heap>) {
          m.extra["internal_frag"] = internal_sum * per;
          m.extra["external_frag"] = external_sum * per;
        } else {
          m.tags["note"] = "fragmentation not measurable (the allocator's layout cannot be read)";
        }
        m.extra["fill"] = fill_sum * per;
        m.extra["live_chunks"] = live_sum * per;
        m.extra["samples"] = samples;
        // The access launch needs live chunks whatever the last steps did:
        // one more (untimed) alloc kernel gives every worker with room one.
        Runner::run(n, SpreadAlloc<Handle>{heap.handle(), stacks, spread, c.warmup + c.steps, astats.data(), fails, false});
        sample();
        Runner::run(n, SpreadAccess<0>{stacks, c.passes, xstats.data(), counters.data() + 2});
        Runner::timed_run(n, SpreadAccess<1>{stacks, c.passes, xstats.data(), counters.data() + 2});  // warm-up
        Runner::run(n, SpreadAccess<2>{stacks, c.passes, xstats.data(), counters.data() + 2});
        m.seconds = Runner::timed_run(n, SpreadAccess<1>{stacks, c.passes, xstats.data(), counters.data() + 2});
        Runner::run(n, SpreadAccess<2>{stacks, 2 * c.passes, xstats.data(), counters.data() + 2});
        m.extra["access_cycles"] = reduce(xstats.to_host()).mean;
        // A free kernel of all chunks (their words were checked above), then
        // the lists must be whole again.
        Runner::run(n, SpreadFree<Handle>{heap.handle(), stacks, fstats.data(), counters.data() + 1, false, true, false});
        if constexpr (HasSegmentLists<Heap>) {
          const ListStats after = list_stats(heap);
          lists_consistent = lists_consistent && after.consistent && after.used_segments == 0;
        }
        const auto cnt = counters.to_host();
        const MeanCv ma = reduce(astats.to_host()), mf = reduce(fstats.to_host());
        m.ops = static_cast<std::uint64_t>(ma.n);
        m.extra["access_seconds"] = m.seconds;
        m.seconds = alloc_s;
        m.fails = cnt[0];
        m.extra["cycles_alloc"] = ma.mean;
        m.extra["cycles_alloc_cv"] = ma.cv;
        m.extra["cycles_free"] = mf.mean;
        m.extra["cycles_free_cv"] = mf.cv;
        m.verified = cnt[1] == 0 && cnt[2] == 0 && overlaps == 0 && lists_consistent;
        if (!m.verified) {
          m.extra["corrupt"] = cnt[1] + cnt[2];
          m.extra["overlaps"] = static_cast<double>(overlaps);
          if (!lists_consistent) m.tags["note"] = "segment-list invariants violated";
        }
        ctx.emit(m);
        progress.step(source.name + " N=" + std::to_string(n) + " spread=" + std::to_string(spread));
        source.release();
      });
    }
  }
}

}  // namespace manyalloc::heap::bench
