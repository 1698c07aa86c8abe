// The benchmark driver shared by the host and CUDA programs: every
// experiment runs each allocator configuration in the same process, one
// after the other for each size, so that ratios are measured side by side.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "records.hpp"
#include "throughput.hpp"

namespace manyalloc::bench {

// Heap bytes for `threads` live chunks of `bytes` (plus room for the
// page-granular layout and hashing spread).
inline std::size_t heap_bytes_for(std::size_t bytes, std::uint64_t threads) {
  const std::size_t chunk = bytes < 16 ? 16 : bytes;
  return std::max<std::size_t>(std::size_t{64} << 20, chunk * threads * 3);
}

inline void print_table(const std::vector<Measurement>& ms, const std::string& baseline_name) {
  std::printf("\n%-10s %-9s %-42s %14s %10s %9s %s\n", "experiment", "bytes", "allocator", "Mops/s",
              "vs base", "fails", "verified");
  for (const auto& m : ms) {
    double base = 0;
    for (const auto& b : ms)
      if (b.experiment == m.experiment && b.bytes == m.bytes && b.allocator.find(baseline_name) != std::string::npos)
        base = b.ops_per_s();
    const std::string short_name = m.allocator.substr(0, m.allocator.find(' '));
    std::printf("%-10s %-9llu %-42.42s %14.2f %9.1fx %9llu %s\n", m.experiment.c_str() + 11,
                static_cast<unsigned long long>(m.bytes), short_name.c_str(), m.ops_per_s() / 1e6,
                base > 0 ? m.ops_per_s() / base : 0.0, static_cast<unsigned long long>(m.fails),
                m.verified ? "yes" : "NO");
  }
}

// ScatterHeap<size> builds a fresh Scatter heap for one size; the baseline
// heap is built once by the caller (CUDA's heap limit can only be set before
// the first kernel).
template <class Runner, template <class> class ScatterFor, class Baseline>
int run_suite(const Options& o, const Baseline& baseline, std::uint32_t threads) {
  std::FILE* out = std::fopen(o.out.c_str(), "a");
  if (out == nullptr) {
    std::perror(o.out.c_str());
    return 1;
  }
  const std::string device = Runner::device_name();
  std::vector<Measurement> all;
  if (o.experiment != "throughput") {
    std::fprintf(stderr, "unknown experiment '%s'\n%s", o.experiment.c_str(), usage());
    return 2;
  }
  for (std::uint64_t bytes : o.sizes) {
    using Scatter = typename ScatterFor<Runner>::type;
    {
      Scatter heap(heap_bytes_for(bytes, threads));
      for (auto& m : throughput<Runner>(heap, bytes, threads, o.repeat, device)) {
        write_jsonl(out, m);
        all.push_back(m);
      }
    }
    for (auto& m : throughput<Runner>(baseline, bytes, threads, o.repeat, device)) {
      write_jsonl(out, m);
      all.push_back(m);
    }
    std::fprintf(stderr, "throughput: %llu bytes done\n", static_cast<unsigned long long>(bytes));
  }
  std::fclose(out);
  print_table(all, Baseline::CreationPolicy::classname());
  for (const auto& m : all)
    if (!m.verified) return 3;
  return 0;
}

}  // namespace manyalloc::bench
