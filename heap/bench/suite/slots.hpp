// getAvailableSlots cost ([Eckert2014] 4.3.5, 5.4) for allocators that provide it:
// from the host (Allocator::getAvailableSlots, parallel over pages) and from
// the device, where all lanes of a warp share the count (one warp, and 32
// warps each computing it). On an empty heap and on one where `threads`
// workers hold a 64-byte chunk each. Verified: every worker's answer equals
// the host's.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "context.hpp"
#include "throughput.hpp"

namespace manyalloc::heap::bench {

struct SlotsConfig {
  std::vector<std::uint64_t> sizes;
  std::vector<std::uint32_t> device_workers{32, 1024};
  std::uint32_t fill_threads = 0;
  unsigned repeat = 5;
  std::size_t heap = 0;
};

template <class P>
SlotsConfig slots_config(const Context& ctx) {
  const Options& o = ctx.opt;
  SlotsConfig c;
  c.sizes = !o.sizes.empty() ? o.sizes : std::vector<std::uint64_t>{16, 256, 4096, 65536};
  c.fill_threads = static_cast<std::uint32_t>(o.threads ? o.threads : (o.quick ? 4096u : P::default_threads()));
  c.repeat = o.repeat ? o.repeat : (o.quick ? 2u : 5u);
  c.heap = o.heap_mb ? (o.heap_mb << 20) : (o.quick ? (std::size_t{16} << 20) : (std::size_t{1} << 30));
  if (o.quick) c.device_workers = {1, 4};
  return c;
}

template <class P>
void slots_experiment(Context& ctx, AllocatorSet<P>& set, const SlotsConfig& c) {
  using Runner = typename P::Runner;
  Progress progress("slots", 2 * set.count());
  set.for_each([&](auto& source) {
    using Heap = typename std::decay_t<decltype(source)>::heap_type;
    using Handle = typename Heap::Handle;
    if constexpr (!Heap::providesAvailableSlots) {
      progress.step(source.name + " skipped (no getAvailableSlots)");
      progress.step(source.name + " skipped");
      return;
    } else {
      auto& heap = source.get(c.heap);
      const std::uint32_t most = *std::max_element(c.device_workers.begin(), c.device_workers.end());
      typename Runner::template Buffer<unsigned long long> out(most);
      typename Runner::template Buffer<void*> ptrs(c.fill_threads);
      typename Runner::template Buffer<std::uint32_t> fails(1);
      for (int state = 0; state < 2; ++state) {
        if (state == 1) Runner::run(c.fill_threads, AllocOne<Handle>{heap.handle(), 64, ptrs.data(), fails.data()});
        const std::string state_name = state == 0 ? "empty" : "filled";
        for (std::uint64_t slot : c.sizes) {
          std::vector<double> host_s;
          std::size_t host_count = 0;
          for (unsigned rep = 0; rep <= c.repeat; ++rep) {
            const auto t0 = std::chrono::steady_clock::now();
            host_count = heap.getAvailableSlots(slot);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (rep > 0) host_s.push_back(s);
          }
          Measurement h;
          h.experiment = "slots_host";
          h.allocator = Heap::info(" ");
          h.threads = 1;
          h.bytes = slot;
          h.ops = 1;
          h.seconds = median(host_s);
          h.verified = true;
          h.extra["slots"] = static_cast<double>(host_count);
          if constexpr (requires { heap.creation().layout().page_count; })
            h.extra["pages"] = heap.creation().layout().page_count;
          else
            h.extra["lists"] = heap.creation().layout().lists;
          h.extra["heap_bytes"] = static_cast<double>(c.heap);
          h.tags["state"] = state_name;
          ctx.emit(h);
          for (std::uint32_t n : c.device_workers) {
            std::vector<double> secs;
            std::uint64_t wrong = 0;
            for (unsigned rep = 0; rep <= c.repeat; ++rep) {
              out.zero();
              const double s = Runner::timed_run(n, testing::SlotsFromWorkers<Handle>{heap.handle(), slot, out.data()});
              const auto v = out.to_host();
              for (std::uint32_t w = 0; w < n; ++w) wrong += v[w] != host_count;
              if (rep > 0) secs.push_back(s);
            }
            Measurement d = h;
            d.experiment = "slots_device";
            d.threads = n;
            d.ops = n;
            d.seconds = median(secs);
            d.verified = wrong == 0;
            if (wrong) d.extra["wrong_answers"] = static_cast<double>(wrong);
            ctx.emit(d);
          }
        }
        progress.step(source.name + " " + state_name);
      }
      Runner::run(c.fill_threads, FreeOne<Handle>{heap.handle(), ptrs.data()});
      source.release();
    }
  });
}

}  // namespace manyalloc::heap::bench
