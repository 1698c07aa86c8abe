// Throughput experiment (ScatterAlloc paper section 7, "operator
// performance", at full occupancy): every worker allocates one chunk in one
// timed launch, then frees it in another. Writing, checking and the overlap
// test run in untimed launches between them, so the timings hold only the
// allocator; every repetition is verified.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "manyalloc/common/platform.hpp"
#include "records.hpp"

namespace manyalloc::bench {

template <class Handle>
struct AllocOne {
  Handle heap;
  std::size_t bytes;
  void** ptrs;
  std::uint32_t* fails;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    void* p = heap.alloc(acc, bytes);
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

// Writes the worker id into the first and last word of its chunk, or checks
// it (Check = true) and counts mismatches.
template <bool Check>
struct MarkChunk {
  void** ptrs;
  std::size_t bytes;
  std::uint32_t* corrupt;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    auto* p = static_cast<std::uint32_t*>(ptrs[w]);
    if (p == nullptr || bytes < 4) return;
    const std::size_t last = bytes / 4 - 1;
    if constexpr (Check) {
      if (p[0] != w || p[last] != ~w) acc.atomic_add(corrupt, 1u);
    } else {
      p[0] = w;
      p[last] = ~w;
    }
  }
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Sorted live chunks of `bytes` must not overlap.
inline std::uint64_t count_overlaps(std::vector<void*> ptrs, std::size_t bytes) {
  ptrs.erase(std::remove(ptrs.begin(), ptrs.end(), nullptr), ptrs.end());
  std::sort(ptrs.begin(), ptrs.end());
  std::uint64_t overlaps = 0;
  for (std::size_t i = 1; i < ptrs.size(); ++i)
    overlaps += static_cast<char*>(ptrs[i - 1]) + bytes > static_cast<char*>(ptrs[i]);
  return overlaps;
}

// Runs the experiment for one allocator and one size; returns the alloc and
// free measurements (median of `repeat` verified repetitions after a warm-up).
template <class Runner, class Heap>
std::vector<Measurement> throughput(const Heap& heap, std::size_t bytes, std::uint32_t threads,
                                    unsigned repeat, const std::string& device) {
  using Handle = typename Heap::Handle;
  typename Runner::template Buffer<void*> ptrs(threads);
  typename Runner::template Buffer<std::uint32_t> counters(2);
  std::vector<double> alloc_s, free_s;
  std::uint64_t fails = 0, corrupt = 0, overlaps = 0;
  for (unsigned rep = 0; rep <= repeat; ++rep) {
    counters.zero();
    const double ta = Runner::timed_run(threads, AllocOne<Handle>{heap.handle(), bytes, ptrs.data(), counters.data()});
    Runner::run(threads, MarkChunk<false>{ptrs.data(), bytes, counters.data() + 1});
    Runner::run(threads, MarkChunk<true>{ptrs.data(), bytes, counters.data() + 1});
    if (rep == 0 || rep == repeat) overlaps += count_overlaps(ptrs.to_host(), bytes);
    const double tf = Runner::timed_run(threads, FreeOne<Handle>{heap.handle(), ptrs.data()});
    const auto c = counters.to_host();
    if (rep == 0) continue;  // warm-up
    alloc_s.push_back(ta);
    free_s.push_back(tf);
    fails += c[0];
    corrupt += c[1];
  }
  Measurement a;
  a.experiment = "throughput_alloc";
  a.allocator = Heap::info(" ");
  a.device = device;
  a.threads = threads;
  a.bytes = bytes;
  a.ops = threads;
  a.seconds = median(alloc_s);
  a.fails = fails / repeat;
  a.verified = corrupt == 0 && overlaps == 0;
  a.extra["seconds_min"] = *std::min_element(alloc_s.begin(), alloc_s.end());
  a.extra["seconds_max"] = *std::max_element(alloc_s.begin(), alloc_s.end());
  a.extra["repeats"] = repeat;
  Measurement f = a;
  f.experiment = "throughput_free";
  f.ops = threads - a.fails;
  f.seconds = median(free_s);
  f.extra["seconds_min"] = *std::min_element(free_s.begin(), free_s.end());
  f.extra["seconds_max"] = *std::max_element(free_s.begin(), free_s.end());
  return {a, f};
}

}  // namespace manyalloc::bench
