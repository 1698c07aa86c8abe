// Pieces every experiment of the heap benchmark uses: the in-kernel cycle
// counter, deterministic per-worker randomness, per-worker statistics, chunk
// marking, the overlap check and the progress indicator.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "manyalloc/common/platform.hpp"
#include "manyalloc_support/workers.hpp"

namespace manyalloc::heap::bench {

// Cycle counter read inside workers: clock64() (SM clock cycles) on the GPU,
// the time-stamp counter (rdtsc, constant-rate TSC ticks) on x86-64 hosts,
// steady_clock nanoseconds elsewhere. clock_name() says which.
MANYALLOC_FN inline std::uint64_t cycle_counter() {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(clock64());
#elif defined(__x86_64__)
  std::uint32_t lo, hi;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
#else
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
#endif
}

inline const char* host_clock_name() {
#if defined(__x86_64__)
  return "rdtsc";
#else
  return "steady_clock_ns";
#endif
}

// Deterministic hash of (worker, counter): the random decisions of a worker
// are reproducible and independent of scheduling.
MANYALLOC_FN inline std::uint32_t hash2(std::uint32_t a, std::uint32_t b) {
  return testing::checksum(a, b, 0x5bd1e995u);
}
// Uniform in [lo, hi].
MANYALLOC_FN inline std::uint32_t uniform_size(std::uint32_t w, std::uint32_t k, std::uint32_t lo,
                                               std::uint32_t hi) {
  return lo + hash2(w, k) % (hi - lo + 1u);
}
// True with probability p (resolution 2^-24).
MANYALLOC_FN inline bool chance(std::uint32_t w, std::uint32_t k, double p) {
  return static_cast<double>(hash2(w ^ 0xa5a5a5a5u, k) >> 8) < p * 16777216.0;
}

// Size of the request of worker w in step k: `bytes`, or for bytes == 0 the
// mixed distribution of the suite (uniform 16 B .. 4 KiB).
inline constexpr std::uint32_t mixed_min = 16, mixed_max = 4096;
MANYALLOC_FN inline std::size_t request_size(std::size_t bytes, std::uint32_t w, std::uint32_t k) {
  return bytes != 0 ? bytes : uniform_size(w, k, mixed_min, mixed_max);
}

// Per-worker accumulators of cycle counts (one worker writes each entry, so
// no atomics); the host reduces them.
struct OpStats {
  double n = 0, sum = 0, sumsq = 0;
  MANYALLOC_FN void add(std::uint64_t cycles) {
    const double c = static_cast<double>(cycles);
    n += 1;
    sum += c;
    sumsq += c * c;
  }
};

// One allocation and one free whose cycles go to `stats` when `measure`
// (the operator and spread experiments); a failed allocation is counted in
// `fails` and returns nullptr.
template <class Handle, class Acc>
MANYALLOC_FN void* timed_alloc(const Handle& heap, const Acc& acc, std::size_t bytes, OpStats& stats, bool measure,
                               std::uint32_t* fails) {
  const std::uint64_t t0 = cycle_counter();
  void* p = heap.alloc(acc, bytes);
  const std::uint64_t t1 = cycle_counter();
  if (measure) stats.add(t1 - t0);
  if (p == nullptr) acc.atomic_add(fails, 1u);
  return p;
}
template <class Handle, class Acc>
MANYALLOC_FN void timed_free(const Handle& heap, const Acc& acc, void* p, OpStats& stats, bool measure) {
  const std::uint64_t t0 = cycle_counter();
  heap.dealloc(acc, p);
  const std::uint64_t t1 = cycle_counter();
  if (measure) stats.add(t1 - t0);
}

struct MeanCv {
  double n = 0, mean = 0, cv = 0;
};
inline MeanCv reduce(const std::vector<OpStats>& v) {
  OpStats t;
  for (const auto& s : v) {
    t.n += s.n;
    t.sum += s.sum;
    t.sumsq += s.sumsq;
  }
  MeanCv r;
  r.n = t.n;
  if (t.n == 0) return r;
  r.mean = t.sum / t.n;
  const double var = std::max(0.0, t.sumsq / t.n - r.mean * r.mean);
  r.cv = r.mean > 0 ? std::sqrt(var) / r.mean : 0.0;
  return r;
}

// Chunk marks: the first and the last 32-bit word of a chunk hold checksums
// of (worker, tag); chunks under 8 bytes are not marked.
MANYALLOC_FN inline void mark_chunk(void* p, std::size_t bytes, std::uint32_t w, std::uint32_t tag) {
  if (p == nullptr || bytes < 8) return;
  auto* words = static_cast<std::uint32_t*>(p);
  words[0] = testing::checksum(w, tag, 0);
  words[bytes / 4 - 1] = testing::checksum(w, tag, 1);
}
MANYALLOC_FN inline bool check_chunk(const void* p, std::size_t bytes, std::uint32_t w, std::uint32_t tag) {
  if (p == nullptr || bytes < 8) return true;
  const auto* words = static_cast<const std::uint32_t*>(p);
  return words[0] == testing::checksum(w, tag, 0) && words[bytes / 4 - 1] == testing::checksum(w, tag, 1);
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Live chunks [ptr, ptr + size) must not overlap. Null pointers are skipped.
inline std::uint64_t count_overlaps(const std::vector<void*>& ptrs, const std::vector<std::size_t>& sizes) {
  std::vector<std::pair<std::uintptr_t, std::size_t>> v;
  v.reserve(ptrs.size());
  for (std::size_t i = 0; i < ptrs.size(); ++i)
    if (ptrs[i] != nullptr) v.emplace_back(reinterpret_cast<std::uintptr_t>(ptrs[i]), sizes[i]);
  std::sort(v.begin(), v.end());
  std::uint64_t overlaps = 0;
  std::uintptr_t end = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0 && v[i].first < end) ++overlaps;
    end = std::max(end, v[i].first + v[i].second);
  }
  return overlaps;
}
inline std::uint64_t count_overlaps(const std::vector<void*>& ptrs, std::size_t bytes) {
  return count_overlaps(ptrs, std::vector<std::size_t>(ptrs.size(), bytes));
}

// Progress on stderr: "\r"-updated on a terminal, one line per item
// otherwise (logs stay readable). Items are (allocator, size, ...) points.
class Progress {
 public:
  Progress(std::string experiment, std::size_t total)
      : name_(std::move(experiment)), total_(total), tty_(isatty(2) != 0), t0_(clock::now()) {}
  ~Progress() {
    if (tty_ && done_ > 0) std::fputc('\n', stderr);
  }
  void step(const std::string& what) {
    ++done_;
    const double s = std::chrono::duration<double>(clock::now() - t0_).count();
    std::fprintf(stderr, "%s[%s] %zu/%zu %5.1fs %-60.60s%s", tty_ ? "\r" : "", name_.c_str(), done_,
                 std::max(done_, total_), s, what.c_str(), tty_ ? "" : "\n");
    std::fflush(stderr);
  }
  void note(const std::string& what) {
    std::fprintf(stderr, "%s[%s] note: %s\n", tty_ ? "\n" : "", name_.c_str(), what.c_str());
  }

 private:
  using clock = std::chrono::steady_clock;
  std::string name_;
  std::size_t total_, done_ = 0;
  bool tty_;
  clock::time_point t0_;
};

inline std::string size_label(std::size_t bytes) {
  if (bytes == 0) return "mixed";
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + "MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + "KiB";
  return std::to_string(bytes) + "B";
}

}  // namespace manyalloc::heap::bench
