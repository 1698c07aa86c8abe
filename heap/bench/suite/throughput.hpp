// Throughput experiment ([Steinberger2012] section 7, "operator
// performance", at full occupancy): every worker allocates one chunk in one
// timed launch, then frees it in another. Writing, checking and the overlap
// test run in untimed launches between them, so the timings hold only the
// allocator; every repetition is verified. Also used by the large-request
// experiment (experiment name prefix "large").
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "context.hpp"
#include "manyalloc/common/platform.hpp"
#include "records.hpp"

namespace manyalloc::heap::bench {

// bytes == 0: the mixed distribution (request_size).
template <class Handle>
struct AllocOne {
  Handle heap;
  std::size_t bytes;
  void** ptrs;
  std::uint32_t* fails;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    void* p = heap.alloc(acc, request_size(bytes, w, 0));
    ptrs[w] = p;
    if (p == nullptr) acc.atomic_add(fails, 1u);
  }
};

template <class Handle>
struct FreeOne {
  Handle heap;
  void** ptrs;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    heap.dealloc(acc, ptrs[w]);
  }
};

// Marks the first and last word of the worker's chunk, or checks them
// (Check = true) and counts mismatches.
template <bool Check>
struct MarkChunk {
  void** ptrs;
  std::size_t bytes;
  std::uint32_t* corrupt;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    const std::size_t n = request_size(bytes, w, 0);
    if constexpr (Check) {
      if (!check_chunk(ptrs[w], n, w, 7u)) acc.atomic_add(corrupt, 1u);
    } else {
      mark_chunk(ptrs[w], n, w, 7u);
    }
  }
};

inline std::vector<std::size_t> request_sizes(std::size_t bytes, std::uint32_t threads) {
  std::vector<std::size_t> s(threads);
  for (std::uint32_t w = 0; w < threads; ++w) s[w] = request_size(bytes, w, 0);
  return s;
}

// Largest worker count up to `target` (doubling from 4096) for which one
// alloc launch plus one free launch is expected to stay under `per_launch`
// seconds, assuming the time at most quadruples when the count doubles (CUDA's
// malloc grows about that fast). The probes warm the heap up.
template <class Runner, class Heap>
std::uint32_t affordable_threads(const Heap& heap, std::size_t bytes, std::uint32_t target, double per_launch) {
  using Handle = typename Heap::Handle;
  std::uint32_t t = std::min<std::uint32_t>(target, 4096);
  typename Runner::template Buffer<void*> ptrs(target);
  typename Runner::template Buffer<std::uint32_t> fails(1);
  while (true) {
    const double s = Runner::timed_run(t, AllocOne<Handle>{heap.handle(), bytes, ptrs.data(), fails.data()}) +
                     Runner::timed_run(t, FreeOne<Handle>{heap.handle(), ptrs.data()});
    if (t >= target || s * 4 > per_launch) return t;
    t = static_cast<std::uint32_t>(std::min<std::uint64_t>(target, std::uint64_t{t} * 2));
  }
}

// Runs the experiment for one allocator and one size; returns the alloc and
// free measurements (median of `repeat` verified repetitions after a warm-up).
template <class Runner, class Heap>
std::vector<Measurement> throughput(const Heap& heap, std::size_t bytes, std::uint32_t threads,
                                    unsigned repeat, const std::string& device,
                                    const std::string& prefix = "throughput") {
  using Handle = typename Heap::Handle;
  typename Runner::template Buffer<void*> ptrs(threads);
  typename Runner::template Buffer<std::uint32_t> counters(2);
  const auto sizes = request_sizes(bytes, threads);
  std::vector<double> alloc_s, free_s;
  std::uint64_t fails = 0, corrupt = 0, overlaps = 0;
  for (unsigned rep = 0; rep <= repeat; ++rep) {
    counters.zero();
    const double ta = Runner::timed_run(threads, AllocOne<Handle>{heap.handle(), bytes, ptrs.data(), counters.data()});
    Runner::run(threads, MarkChunk<false>{ptrs.data(), bytes, counters.data() + 1});
    Runner::run(threads, MarkChunk<true>{ptrs.data(), bytes, counters.data() + 1});
    if (rep == 0 || rep == repeat) overlaps += count_overlaps(ptrs.to_host(), sizes);
    const double tf = Runner::timed_run(threads, FreeOne<Handle>{heap.handle(), ptrs.data()});
    const auto c = counters.to_host();
    corrupt += c[1];
    if (rep == 0) continue;  // warm-up
    alloc_s.push_back(ta);
    free_s.push_back(tf);
    fails += c[0];
  }
  Measurement a;
  a.experiment = prefix + (bytes == 0 ? "_mixed_alloc" : "_alloc");
  a.allocator = Heap::info(" ");
  a.device = device;
  a.threads = threads;
  a.bytes = bytes == 0 ? mixed_max : bytes;
  a.ops = threads;
  a.seconds = median(alloc_s);
  a.fails = fails / repeat;
  a.verified = corrupt == 0 && overlaps == 0;
  a.extra["seconds_min"] = *std::min_element(alloc_s.begin(), alloc_s.end());
  a.extra["seconds_max"] = *std::max_element(alloc_s.begin(), alloc_s.end());
  a.extra["repeats"] = repeat;
  if (!a.verified) a.extra["corrupt"] = static_cast<double>(corrupt), a.extra["overlaps"] = static_cast<double>(overlaps);
  if (bytes == 0) {
    a.extra["min_bytes"] = mixed_min;
    a.tags["sizes"] = "uniform 16..4096";
  }
  Measurement f = a;
  f.experiment = prefix + (bytes == 0 ? "_mixed_free" : "_free");
  f.ops = threads - a.fails;
  f.seconds = median(free_s);
  f.extra["seconds_min"] = *std::min_element(free_s.begin(), free_s.end());
  f.extra["seconds_max"] = *std::max_element(free_s.begin(), free_s.end());
  return {a, f};
}

// ---- experiment driver -------------------------------------------------------
struct ThroughputConfig {
  std::vector<std::uint64_t> sizes;  // 0 = mixed
  std::uint32_t threads = 0;
  unsigned repeat = 5;
  double budget = 10;                // seconds per (allocator, size)
  std::size_t baseline_heap = 0;
  std::size_t heap = 0;              // 0: sized per request size (heap_bytes_for)
};

template <class P>
ThroughputConfig throughput_config(const Context& ctx) {
  ThroughputConfig c;
  const Options& o = ctx.opt;
  c.sizes = o.sizes.empty() ? (o.quick ? std::vector<std::uint64_t>{16, 256, 4096, 0}
                                       : std::vector<std::uint64_t>{16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
                                                                    8192, 0})
                            : o.sizes;
  c.threads = static_cast<std::uint32_t>(o.threads ? o.threads : (o.quick ? 4096u : P::default_threads()));
  c.repeat = o.repeat ? o.repeat : (o.quick ? 2u : 5u);
  c.budget = o.budget;
  c.heap = o.heap_mb << 20;
  std::uint64_t largest = 0;
  for (auto s : c.sizes) largest = std::max<std::uint64_t>(largest, s == 0 ? mixed_max : s);
  c.baseline_heap = std::min<std::size_t>(largest * c.threads * 2 + (std::size_t{256} << 20), P::memory_cap() / 3);
  return c;
}

template <class P>
void throughput_experiment(Context& ctx, AllocatorSet<P>& set, const ThroughputConfig& c) {
  using Runner = typename P::Runner;
  Progress progress("throughput", c.sizes.size() * set.count());
  for (std::uint64_t bytes : c.sizes) {
    set.for_each([&](auto& source) {
      const std::size_t chunk = bytes == 0 ? mixed_max : bytes;
      auto& heap = source.get(c.heap != 0 ? c.heap
                                          : std::min<std::size_t>(heap_bytes_for(chunk, c.threads), P::memory_cap() / 3));
      const double per_launch = c.budget / (2.0 * (c.repeat + 1));
      const std::uint32_t threads = affordable_threads<Runner>(heap, bytes, c.threads, per_launch);
      if (threads < c.threads)
        progress.note(source.name + " " + size_label(bytes) + ": " + std::to_string(threads) +
                      " workers (time budget)");
      for (auto m : throughput<Runner>(heap, bytes, threads, c.repeat, ctx.device)) {
        if (threads < c.threads) m.tags["note"] = "workers bounded by --budget";
        ctx.emit(m);
      }
      progress.step(source.name + " " + size_label(bytes));
      source.release();
    });
  }
}

}  // namespace manyalloc::heap::bench
