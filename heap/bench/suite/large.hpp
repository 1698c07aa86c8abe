// Large requests: 1 page .. 64 MiB, from 1 .. 1024 workers at once, each
// allocating one chunk (timed), marking both ends, checking them, and freeing
// it (timed) -- the throughput procedure with experiment names
// large_alloc / large_free. Combinations that would need more than 3/4 of
// the heap are skipped; a series stops growing the worker count once one
// point exceeds its share of --budget.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "context.hpp"
#include "throughput.hpp"

namespace manyalloc::heap::bench {

struct LargeConfig {
  std::vector<std::uint64_t> sizes;
  std::vector<std::uint32_t> workers;
  unsigned repeat = 3;
  double budget = 10;
  std::size_t heap = 0;
};

template <class P>
LargeConfig large_config(const Context& ctx) {
  const Options& o = ctx.opt;
  LargeConfig c;
  if (!o.sizes.empty()) c.sizes = o.sizes;
  else if (o.quick) c.sizes = {4096, 65536, 1u << 20};
  else c.sizes = {4096, 16384, 65536, 262144, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
  c.workers = o.threads ? std::vector<std::uint32_t>{static_cast<std::uint32_t>(o.threads)}
                        : (o.quick ? std::vector<std::uint32_t>{1, 4, 16} : std::vector<std::uint32_t>{1, 4, 16, 64, 256, 1024});
  c.repeat = o.repeat ? o.repeat : (o.quick ? 1u : 3u);
  c.budget = o.budget;
  c.heap = o.heap_mb ? (o.heap_mb << 20) : (o.quick ? (std::size_t{64} << 20) : std::min<std::size_t>(std::size_t{8} << 30, P::memory_cap() / 3));
  return c;
}

template <class P>
void large_experiment(Context& ctx, AllocatorSet<P>& set, const LargeConfig& c) {
  using Runner = typename P::Runner;
  Progress progress("large", c.sizes.size() * set.count());
  set.for_each([&](auto& source) {
    auto& heap = source.get(c.heap);
    for (std::uint64_t bytes : c.sizes) {
      for (std::uint32_t n : c.workers) {
        if (static_cast<double>(bytes) * n > 0.75 * static_cast<double>(c.heap)) break;
        auto ms = throughput<Runner>(heap, bytes, n, c.repeat, ctx.device, "large");
        for (auto& m : ms) {
          m.extra["heap_bytes"] = static_cast<double>(c.heap);
          ctx.emit(m);
        }
        if ((ms[0].seconds + ms[1].seconds) * (c.repeat + 1) > c.budget / c.workers.size()) {
          if (n != c.workers.back())
            progress.note(source.name + " " + size_label(bytes) + ": stopped after " + std::to_string(n) +
                          " workers (--budget)");
          break;
        }
      }
      progress.step(source.name + " " + size_label(bytes));
    }
    source.release();
  });
}

}  // namespace manyalloc::heap::bench
