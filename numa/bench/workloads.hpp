// Benchmark workloads of numa_bench, written in the style of the classic
// allocator benchmarks (not copies of them). Each one runs on `threads`
// threads, checks what it allocates (a stamp written at allocation is
// verified before free) and reports its operation count and failures.
// The process's malloc is whatever LD_PRELOAD selected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "xorshift.hpp"  // Rng

namespace manyalloc::numa::bench {

struct Result {
  std::uint64_t ops = 0;    // malloc + free + realloc calls (or loop iterations)
  std::uint64_t bytes = 0;  // bytes requested (or touched, see each workload)
  std::uint64_t fails = 0;  // NULL returns and verification failures
  std::string note;         // extra JSON fields, e.g. "\"a_mod4k\":16"
};

struct Params {
  int threads = 1;
  double scale = 1.0;  // multiplies the per-thread operation counts
};

// Small and medium chunks.
Result ttest1(const Params& p);        // random alloc/realloc/free of random sizes per thread
Result larson(const Params& p);        // server: threads inherit and free others' blocks
Result xmalloc(const Params& p);       // producer/consumer rings: every free is remote
Result cache_scratch(const Params& p); // passive false sharing
Result cache_thrash(const Params& p);  // active false sharing
// Large arrays.
Result hera(const Params& p);          // alloc/realloc around 20 MiB, pages touched
Result firsttouch(const Params& p);    // first-touch page-fault cost of recycled arrays
Result alias4k(const Params& p);       // a[i] = b[i-1] over two large arrays

// Writes / checks a stamp at both ends of a block of n >= 1 bytes.
inline void stamp(void* p, std::size_t n, std::uint8_t v) {
  auto* b = static_cast<std::uint8_t*>(p);
  b[0] = v;
  b[n - 1] = static_cast<std::uint8_t>(v ^ 0xA5);
}
inline bool stamped(const void* p, std::size_t n, std::uint8_t v) {
  auto* b = static_cast<const std::uint8_t*>(p);
  return b[0] == v && b[n - 1] == static_cast<std::uint8_t>(v ^ 0xA5);
}

// Runs fn(thread_index) on `threads` threads started together.
template <class Fn>
void run_threads(int threads, Fn&& fn);

}  // namespace manyalloc::numa::bench

#include "run_threads.hpp"
