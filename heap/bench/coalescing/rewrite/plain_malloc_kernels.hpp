// Launchers of the plain-malloc kernels (plain_malloc_kernels.cu), the input
// of manyalloc-coalesce in the rewrite comparison (rewrite_compare.cu).
// Plain C++ on purpose: the tool parses this header with the kernels.
#pragma once

#include <cstdint>

namespace manyalloc::heap::bench::rewrite {

// Counters the kernels add to (one per launch sequence).
struct Counters {
  unsigned long long fails;  // allocations that returned nullptr
  unsigned long long bad;    // parts whose data did not read back
};

// Threads per block of every launch; thread counts are multiples of it, so
// every thread of every block runs the allocating code (no bounds check,
// which would make the calls thread-dependent).
inline constexpr unsigned block_threads = 256;

// Unit benchmark ([Blach2022] 4.1): n floats per thread.
int plain_unit_alloc_init(std::uint32_t threads, std::uint32_t n, float** ptrs, Counters* counters);
int plain_unit_verify_free(std::uint32_t threads, std::uint32_t n, bool quadratic, float** ptrs, Counters* counters);
// All-to-all ([Blach2022] 4.2 in spirit): groups of 32 ranks.
int plain_alltoall_send(std::uint32_t threads, double** send, Counters* counters);
int plain_alltoall_exchange(std::uint32_t threads, double** send, double** recv, Counters* counters);
int plain_alltoall_free(std::uint32_t threads, double** send, double** recv);

}  // namespace manyalloc::heap::bench::rewrite
