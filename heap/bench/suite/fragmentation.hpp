// Memory efficiency ("out-of-memory" test, [Eckert2014] 5.4; fragmentation by
// [Steinberger2012] equations (1) and (2)). For each size, N workers
// allocate one chunk each per step (a launch) until a whole step fails; every
// chunk is filled with checksums of (worker, step). Reported:
//   usable_share_first_fail  requested bytes held at the end of the first
//                            step in which any request failed, over the
//                            heap's bytes (launch granularity: requests of
//                            one step are concurrent and have no order)
//   usable_share_full        requested bytes held when a step got nothing
//   internal_frag / external_frag / overhead (Scatter, from its page table;
//                            SizeClassSlabs and the list heaps from their
//                            layouts: slab_metrics.hpp, list_metrics.hpp)
//                            at the full state and again after a random half
//                            of the chunks was freed (state "half_freed")
//   slots_before / slots_after  getAvailableSlots(size) on the empty heap and
//                            after everything was freed (Scatter; [Eckert2014]'s
//                            memory-loss check)
// Then every chunk is verified (checksums of every word, no overlaps) and
// freed. The host baseline (malloc) has no bounded heap and is skipped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "context.hpp"
#include "list_metrics.hpp"
#include "scatter_metrics.hpp"
#include "slab_metrics.hpp"

namespace manyalloc::heap::bench {

template <class Handle>
struct FillStep {
  Handle heap;
  std::size_t bytes;  // 0: mixed
  std::uint32_t step, workers;
  void** ptrs;        // [step * workers + w]
  std::uint32_t* got; // per worker: 1 if this step's request succeeded
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    const std::size_t n = request_size(bytes, w, step);
    void* p = heap.alloc(acc, n);
    ptrs[std::size_t{step} * workers + w] = p;
    got[w] = p != nullptr;
    if (p == nullptr) return;
    auto* words = static_cast<std::uint32_t*>(p);
    for (std::size_t k = 0; k < n / 4; ++k) words[k] = testing::checksum(w, step, static_cast<std::uint32_t>(k));
  }
};

// Over all chunks i = step * workers + w: checks every word; frees the
// chunk when `free_mode` says so (1: a random half, 2: all) and clears it.
template <class Handle>
struct CheckAndFree {
  Handle heap;
  std::size_t bytes;
  std::uint32_t workers;
  void** ptrs;
  std::uint32_t* corrupt;
  int free_mode;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t i) const {
    void* p = ptrs[i];
    if (p == nullptr) return;
    const std::uint32_t w = i % workers, step = i / workers;
    const std::size_t n = request_size(bytes, w, step);
    const auto* words = static_cast<const std::uint32_t*>(p);
    for (std::size_t k = 0; k < n / 4; ++k) {
      if (words[k] != testing::checksum(w, step, static_cast<std::uint32_t>(k))) {
        acc.atomic_add(corrupt, 1u);
        break;
      }
    }
    if (free_mode == 2 || (free_mode == 1 && chance(w, step + 0x10000u, 0.5))) {
      heap.dealloc(acc, p);
      ptrs[i] = nullptr;
    }
  }
};

struct FragmentationConfig {
  std::vector<std::uint64_t> sizes;
  std::uint32_t workers = 16384;
  std::size_t heap = 0;
};

template <class P>
FragmentationConfig fragmentation_config(const Context& ctx) {
  const Options& o = ctx.opt;
  FragmentationConfig c;
  c.sizes = !o.sizes.empty() ? o.sizes
            : o.quick        ? std::vector<std::uint64_t>{16, 128, 1024, 8192, 0}
                             : std::vector<std::uint64_t>{16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 0};
  c.workers = static_cast<std::uint32_t>(o.threads ? o.threads : (o.quick ? 256u : (P::gpu ? 16384u : 1024u)));
  c.heap = o.heap_mb ? (o.heap_mb << 20) : (o.quick ? (std::size_t{4} << 20) : (std::size_t{128} << 20));
  return c;
}

// Equations (1) and (2) of [Steinberger2012], the overhead and the page use, read
// from a copy of the heap's page table with `live` the chunks still held.
template <class Heap, class Sizes>
void record_page_table(Measurement& m, const Heap& heap, const std::vector<void*>& live, const Sizes& sizes,
                       double heap_bytes) {
  const PageTableSnapshot<Heap> snap(heap);
  const FreeStats f = snap.free_stats();
  m.extra["internal_frag"] = snap.internal(live, sizes);
  m.extra["external_frag"] = f.external;
  m.extra["overhead"] = f.overhead_bytes / heap_bytes;
  m.extra["pages_in_use"] = f.pages_in_use;
  m.extra["free_bytes"] = f.free_bytes;
}

// The same measures for the heaps of other layouts; false when a list heap
// failed its invariant walk.
template <class Heap, class Sizes>
bool record_layout(Measurement& m, const Heap& heap, const std::vector<void*>& live, const Sizes& sizes,
                   double heap_bytes) {
  if constexpr (HasPageTable<Heap>) {
    record_page_table(m, heap, live, sizes, heap_bytes);
  } else if constexpr (HasSlabPages<Heap>) {
    const SlabStats st = slab_stats(heap, live, sizes);
    m.extra["internal_frag"] = st.internal;
    m.extra["external_frag"] = st.external;
    m.extra["free_bytes"] = st.free_bytes;
  } else if constexpr (HasSegmentLists<Heap>) {
    const ListStats st = list_stats(heap);
    m.extra["internal_frag"] = st.internal;
    m.extra["external_frag"] = st.external;
    m.extra["overhead"] = st.overhead_bytes / heap_bytes;
    m.extra["free_bytes"] = st.free_bytes;
    return st.consistent;
  }
  return true;
}

template <class Heap>
inline constexpr bool layout_readable = HasPageTable<Heap> || HasSlabPages<Heap> || HasSegmentLists<Heap>;

template <class P>
void fragmentation_experiment(Context& ctx, AllocatorSet<P>& set, const FragmentationConfig& c) {
  using Runner = typename P::Runner;
  Progress progress("fragmentation", c.sizes.size() * set.count());
  for (std::uint64_t bytes : c.sizes) {
    set.for_each([&](auto& source) {
      using Source = std::decay_t<decltype(source)>;
      using Heap = typename Source::heap_type;
      using Handle = typename Heap::Handle;
      if constexpr (Source::shared && !P::baseline_bounded) {
        progress.step(source.name + " " + size_label(bytes) + " skipped (no bounded heap)");
        return;
      } else {
        auto& heap = source.get(c.heap);
        const double heap_bytes = static_cast<double>(source.heap_bytes());
        const std::size_t min_size = bytes == 0 ? mixed_min : bytes;
        const std::uint32_t max_steps =
            static_cast<std::uint32_t>(source.heap_bytes() / (min_size * std::size_t{c.workers})) * 5 / 4 + 8;
        typename Runner::template Buffer<void*> ptrs(std::size_t{max_steps} * c.workers);
        typename Runner::template Buffer<std::uint32_t> got(c.workers), corrupt(1);
        Measurement m;
        m.experiment = "fragmentation";
        m.allocator = Heap::info(" ");
        m.threads = c.workers;
        m.bytes = bytes == 0 ? mixed_max : bytes;
        if (bytes == 0) m.tags["sizes"] = "uniform 16..4096";
        m.extra["heap_bytes"] = heap_bytes;
        if constexpr (HasPageTable<Heap>) {
          if (bytes != 0) m.extra["slots_before"] = static_cast<double>(heap.getAvailableSlots(bytes));
        }
        double held = 0, first_fail = -1;
        std::uint64_t fails = 0, ok = 0;
        std::uint32_t steps = 0;
        for (; steps < max_steps; ++steps) {
          m.seconds += Runner::timed_run(c.workers, FillStep<Handle>{heap.handle(), bytes, steps, c.workers,
                                                                     ptrs.data(), got.data()});
          const auto g = got.to_host();
          std::uint64_t step_ok = 0;
          for (std::uint32_t w = 0; w < c.workers; ++w) {
            if (g[w] == 0) continue;
            ++step_ok;
            held += static_cast<double>(request_size(bytes, w, steps));
          }
          ok += step_ok;
          fails += c.workers - step_ok;
          if (step_ok < c.workers && first_fail < 0) first_fail = held;  // includes this step's successes
          if (step_ok == 0) {
            ++steps;
            break;
          }
        }
        const std::size_t chunks = std::size_t{steps} * c.workers;
        auto host_ptrs = ptrs.to_host();
        host_ptrs.resize(chunks);
        std::vector<std::size_t> sizes(chunks);
        for (std::size_t i = 0; i < chunks; ++i)
          sizes[i] = request_size(bytes, static_cast<std::uint32_t>(i % c.workers), static_cast<std::uint32_t>(i / c.workers));
        const std::uint64_t overlaps = count_overlaps(host_ptrs, sizes);
        m.ops = ok;
        m.fails = fails;
        m.extra["steps"] = steps;
        m.extra["usable_share_first_fail"] = (first_fail < 0 ? held : first_fail) / heap_bytes;
        m.extra["usable_share_full"] = held / heap_bytes;
        if (steps >= max_steps) m.tags["note"] = "step limit reached before the heap was full";
        Measurement half = m;
        half.tags["state"] = "half_freed";
        m.tags["state"] = "full";
        bool consistent = record_layout(m, heap, host_ptrs, sizes, heap_bytes);
        corrupt.zero();
        Runner::run(static_cast<std::uint32_t>(chunks),
                    CheckAndFree<Handle>{heap.handle(), bytes, c.workers, ptrs.data(), corrupt.data(), 1});
        if constexpr (layout_readable<Heap>) {
          auto left = ptrs.to_host();
          left.resize(chunks);
          double live = 0;
          for (std::size_t i = 0; i < chunks; ++i) live += left[i] != nullptr ? static_cast<double>(sizes[i]) : 0.0;
          consistent = record_layout(half, heap, left, sizes, heap_bytes) && consistent;
          half.extra["fill"] = live / heap_bytes;
        }
        Runner::run(static_cast<std::uint32_t>(chunks),
                    CheckAndFree<Handle>{heap.handle(), bytes, c.workers, ptrs.data(), corrupt.data(), 2});
        if constexpr (HasPageTable<Heap>) {
          if (bytes != 0) half.extra["slots_after"] = m.extra["slots_after"] = static_cast<double>(heap.getAvailableSlots(bytes));
        }
        const std::uint32_t bad = corrupt.to_host()[0];
        m.verified = half.verified = bad == 0 && overlaps == 0 && consistent;
        if (!m.verified) m.extra["corrupt"] = half.extra["corrupt"] = bad, m.extra["overlaps"] = half.extra["overlaps"] = static_cast<double>(overlaps);
        ctx.emit(m);
        if constexpr (layout_readable<Heap>) ctx.emit(half);
        progress.step(source.name + " " + size_label(bytes));
        source.release();
      }
    });
  }
}

}  // namespace manyalloc::heap::bench
