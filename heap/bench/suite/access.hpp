// Data access ([Steinberger2012] section 7, "data access performance"):
// every worker allocates one chunk (untimed), fills it, then in a timed
// launch reads and rewrites every 32-bit word of it (`passes` times); the
// launch time gives bytes/s (read + write) and each worker's clock gives
// cycles per word. Where allocators place the chunks of neighbouring
// workers decides coalescing. A reference places chunk w at base + w*size in
// one plain array (the ideal layout). The values are checked afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "context.hpp"
#include "throughput.hpp"

namespace manyalloc::heap::bench {

struct FillWords {
  void** ptrs;
  std::size_t bytes;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc&, std::uint32_t w) const {
    auto* p = static_cast<std::uint32_t*>(ptrs[w]);
    if (p == nullptr) return;
    for (std::size_t k = 0; k < bytes / 4; ++k) p[k] = testing::checksum(w, 0, static_cast<std::uint32_t>(k));
  }
};

struct TouchWords {
  void** ptrs;
  std::size_t bytes;
  unsigned passes;
  OpStats* stats;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc&, std::uint32_t w) const {
    auto* p = static_cast<std::uint32_t*>(ptrs[w]);
    if (p == nullptr) return;
    const std::uint64_t t0 = cycle_counter();
    for (unsigned r = 0; r < passes; ++r)
      for (std::size_t k = 0; k < bytes / 4; ++k) p[k] = p[k] * 3u + 1u;
    const std::uint64_t t1 = cycle_counter();
    stats[w] = OpStats{};
    stats[w].add((t1 - t0) / (passes * (bytes / 4)));
  }
};

struct CheckWords {
  void** ptrs;
  std::size_t bytes;
  unsigned rounds;  // total passes applied
  std::uint32_t* corrupt;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    const auto* p = static_cast<const std::uint32_t*>(ptrs[w]);
    if (p == nullptr) return;
    for (std::size_t k = 0; k < bytes / 4; ++k) {
      std::uint32_t v = testing::checksum(w, 0, static_cast<std::uint32_t>(k));
      for (unsigned r = 0; r < rounds; ++r) v = v * 3u + 1u;
      if (p[k] != v) {
        acc.atomic_add(corrupt, 1u);
        return;
      }
    }
  }
};

struct PointInto {
  std::byte* base;
  std::size_t bytes;
  void** ptrs;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc&, std::uint32_t w) const {
    ptrs[w] = base + std::size_t{w} * bytes;
  }
};

struct AccessConfig {
  std::vector<std::uint64_t> sizes;
  std::uint32_t threads = 0;
  unsigned repeat = 5, passes = 2;
  double budget = 10;
  std::size_t baseline_heap = 0;
};

template <class P>
AccessConfig access_config(const Context& ctx) {
  const Options& o = ctx.opt;
  AccessConfig c;
  c.sizes = !o.sizes.empty() ? o.sizes : (o.quick ? std::vector<std::uint64_t>{16, 256} : std::vector<std::uint64_t>{16, 64, 256, 1024, 4096});
  c.threads = static_cast<std::uint32_t>(o.threads ? o.threads : (o.quick ? 2048u : P::default_threads()));
  c.repeat = o.repeat ? o.repeat : (o.quick ? 2u : 5u);
  c.budget = o.budget;
  std::uint64_t largest = 16;
  for (auto s : c.sizes) largest = std::max<std::uint64_t>(largest, s);
  c.baseline_heap = std::min<std::size_t>(largest * c.threads * 2 + (std::size_t{256} << 20), P::memory_cap() / 3);
  return c;
}

// Times the access to the chunks in `ptrs` (n workers) and checks them.
template <class Runner>
Measurement time_access(void** ptrs, std::size_t bytes, std::uint32_t n, const AccessConfig& c) {
  typename Runner::template Buffer<OpStats> stats(n);
  typename Runner::template Buffer<std::uint32_t> corrupt(1);
  Runner::run(n, FillWords{ptrs, bytes});
  std::vector<double> secs;
  std::vector<double> cycles;
  for (unsigned rep = 0; rep <= c.repeat; ++rep) {
    const double s = Runner::timed_run(n, TouchWords{ptrs, bytes, c.passes, stats.data()});
    if (rep == 0) continue;
    secs.push_back(s);
    cycles.push_back(reduce(stats.to_host()).mean);
  }
  Runner::run(n, CheckWords{ptrs, bytes, c.passes * (c.repeat + 1), corrupt.data()});
  Measurement m;
  m.experiment = "access";
  m.threads = n;
  m.bytes = bytes;
  m.ops = std::uint64_t{n} * (bytes / 4) * c.passes;  // word updates per launch
  m.seconds = median(secs);
  m.extra["cycles_per_op"] = median(cycles);
  m.extra["bytes_per_s"] = m.seconds > 0 ? 2.0 * static_cast<double>(n) * static_cast<double>(bytes) * c.passes / m.seconds : 0;
  m.extra["passes"] = c.passes;
  m.extra["repeats"] = c.repeat;
  m.fails = corrupt.to_host()[0];  // replaced by the caller with allocation failures
  m.verified = m.fails == 0;
  if (!m.verified) m.extra["corrupt"] = static_cast<double>(m.fails);
  return m;
}

template <class P>
void access_experiment(Context& ctx, AllocatorSet<P>& set, const AccessConfig& c) {
  using Runner = typename P::Runner;
  Progress progress("access", c.sizes.size() * (set.count() + 1));
  for (std::uint64_t bytes : c.sizes) {
    {
      typename Runner::template Buffer<std::byte> array(std::size_t{c.threads} * bytes);
      typename Runner::template Buffer<void*> ptrs(c.threads);
      Runner::run(c.threads, PointInto{array.data(), bytes, ptrs.data()});
      Measurement m = time_access<Runner>(ptrs.data(), bytes, c.threads, c);
      m.allocator = "Reference[contiguous array, chunk w at base + w*size]";
      m.fails = 0;
      ctx.emit(m);
      progress.step("reference " + size_label(bytes));
    }
    set.for_each([&](auto& source) {
      using Heap = typename std::decay_t<decltype(source)>::heap_type;
      using Handle = typename Heap::Handle;
      auto& heap = source.get(std::min<std::size_t>(heap_bytes_for(bytes, c.threads), P::memory_cap() / 3));
      // The allocation is not timed here, but CUDA's malloc may take minutes
      // for 2^20 large chunks: bound the workers as throughput does.
      const std::uint32_t n = affordable_threads<Runner>(heap, bytes, c.threads, c.budget / 4);
      typename Runner::template Buffer<void*> ptrs(n);
      typename Runner::template Buffer<std::uint32_t> fails(1);
      Runner::run(n, AllocOne<Handle>{heap.handle(), bytes, ptrs.data(), fails.data()});
      const std::uint64_t overlaps = count_overlaps(ptrs.to_host(), bytes);
      Measurement m = time_access<Runner>(ptrs.data(), bytes, n, c);
      Runner::run(n, FreeOne<Handle>{heap.handle(), ptrs.data()});
      m.allocator = Heap::info(" ");
      m.extra["corrupt"] = static_cast<double>(m.fails);
      m.fails = fails.to_host()[0];
      m.verified = m.verified && overlaps == 0;
      if (overlaps) m.extra["overlaps"] = static_cast<double>(overlaps);
      if (n < c.threads) m.tags["note"] = "workers bounded by --budget";
      ctx.emit(m);
      progress.step(source.name + " " + size_label(bytes));
      source.release();
    });
  }
}

}  // namespace manyalloc::heap::bench
