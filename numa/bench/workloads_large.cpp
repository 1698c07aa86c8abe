// Large-array workloads (workloads.hpp): the cases the MPC allocator was
// designed for ([Valat2014] part III: Hera's alloc/realloc around 20 MB, page
// faults of first touch; part II backup: 4K aliasing).
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "workloads.hpp"

namespace manyalloc::numa::bench {

namespace {

constexpr std::size_t page_bytes = 4096;

// Writes one byte per page of [from, to): the first touch of each page.
void touch(void* p, std::size_t from, std::size_t to, std::uint8_t v) {
  auto* b = static_cast<volatile std::uint8_t*>(p);
  for (std::size_t i = from; i < to; i += page_bytes) b[i] = v;
}

struct Counters {
  std::atomic<std::uint64_t> ops{0}, bytes{0}, fails{0};
};

}  // namespace

// Hera pattern: each thread keeps three arrays whose sizes wander around
// 20 MiB; each step either reallocates an array to a new size (touching the
// pages that are new) or frees it and allocates a fresh one (touching all of
// it, as an application initialises a new array). bytes = bytes touched.
// fails = NULL returns plus stamps that did not read back (an array whose
// realloc failed keeps its stamp, so a NULL return is counted once).
Result hera(const Params& p) {
  Counters c;
  const int steps = static_cast<int>(24 * p.scale);
  run_threads(p.threads, [&](int t) {
    Rng r(static_cast<std::uint64_t>(t) + 3);
    void* arr[3] = {nullptr, nullptr, nullptr};
    std::size_t len[3] = {0, 0, 0};
    std::uint8_t last[3] = {0, 0, 0};  // the stamp each array carries
    std::uint64_t ops = 0, bytes = 0, fails = 0;
    for (int s = 0; s < steps; ++s) {
      for (int k = 0; k < 3; ++k) {
        const std::size_t n = (16u << 20) + r.below(8u << 20);  // 16 .. 24 MiB
        const auto tag = static_cast<std::uint8_t>(s * 3 + k);
        if (arr[k] != nullptr && r.below(2) == 0) {
          if (!stamped(arr[k], len[k], last[k])) ++fails;
          std::free(arr[k]);
          arr[k] = std::malloc(n);
          ops += 2;
          if (!arr[k]) { ++fails; len[k] = 0; continue; }
          touch(arr[k], 0, n, tag);
          bytes += n;
        } else {
          void* q = std::realloc(arr[k], n);
          ++ops;
          if (!q) { ++fails; continue; }
          if (arr[k] != nullptr && static_cast<std::uint8_t*>(q)[0] != last[k]) ++fails;
          if (n > len[k]) touch(q, len[k], n, tag), bytes += n - len[k];
          arr[k] = q;
        }
        len[k] = n;
        last[k] = tag;
        stamp(arr[k], n, tag);
      }
    }
    for (void* a : arr) std::free(a), ++ops;
    c.ops += ops;
    c.bytes += bytes;
    c.fails += fails;
  });
  return Result{c.ops.load(), c.bytes.load(), c.fails.load(), {}};
}

// First touch: each thread allocates a 32 MiB array, writes every page,
// waits for the others, frees it, sixteen times. The first round always pays one page fault per
// page; an allocator that recycles large arrays avoids them afterwards.
// bytes = bytes touched.
Result firsttouch(const Params& p) {
  Counters c;
  const int rounds = static_cast<int>(16 * p.scale);
  constexpr std::size_t total_bytes = 32u << 20;
  // Rounds in lockstep: every thread holds its array at the barrier, so the
  // peak RSS is `threads` arrays for every allocator. Free-running rounds
  // made it depend on how the threads' rounds happened to overlap (glibc's
  // peak varied from 462 to 503 MiB over 5 runs at 16 threads).
  std::barrier<> all_touched(p.threads);
  run_threads(p.threads, [&](int t) {
    std::uint64_t fails = 0;
    for (int i = 0; i < rounds; ++i) {
      void* a = std::malloc(total_bytes);
      if (a) {
        touch(a, 0, total_bytes, static_cast<std::uint8_t>(i + t));
        stamp(a, total_bytes, static_cast<std::uint8_t>(i));
        if (!stamped(a, total_bytes, static_cast<std::uint8_t>(i))) ++fails;
      } else {
        ++fails;
      }
      all_touched.arrive_and_wait();
      std::free(a);
    }
    c.ops += 2u * static_cast<std::uint64_t>(rounds);
    c.bytes += static_cast<std::uint64_t>(rounds) * total_bytes;
    c.fails += fails;
  });
  return Result{c.ops.load(), c.bytes.load(), c.fails.load(), {}};
}

namespace {
// The loop of [Valat2014], a[i] = b[i-1] (plus a zero read at run time so the
// compiler cannot turn it into memmove). When a and b have the same address
// modulo 4 KiB, the load of b[i-1] looks like it depends on the store to
// a[i-1] of the previous iteration (only 12 address bits are compared).
__attribute__((noinline)) void shift_copy(float* __restrict a, const float* __restrict b,
                                          std::size_t n, float zero) {
  for (std::size_t i = 1; i < n; ++i) a[i] = b[i - 1] + zero;
}
}  // namespace

// 4K aliasing: two 1 MiB float arrays from malloc (large: plain mmap in most
// allocators, hence the same offset modulo 4 KiB), then the loop over their
// first 16 KiB (L1-resident) many times. ops = loop iterations.
Result alias4k(const Params& p) {
  Counters c;
  std::atomic<int> same_offset{0};
  std::uintptr_t mod_a = 0, mod_b = 0;
  const long reps = static_cast<long>(200000 * p.scale);
  run_threads(p.threads, [&](int t) {
    constexpr std::size_t item_count = 1u << 18;  // 1 MiB of floats
    constexpr std::size_t window = 4096;  // 16 KiB
    auto* a = static_cast<float*>(std::malloc(item_count * sizeof(float)));
    auto* b = static_cast<float*>(std::malloc(item_count * sizeof(float)));
    if (!a || !b) { ++c.fails; std::free(a); std::free(b); return; }
    for (std::size_t i = 0; i < item_count; ++i) a[i] = 0.0f, b[i] = static_cast<float>(i);
    const auto ma = reinterpret_cast<std::uintptr_t>(a) % 4096;
    const auto mb = reinterpret_cast<std::uintptr_t>(b) % 4096;
    if (ma == mb) same_offset.fetch_add(1);
    if (t == 0) mod_a = ma, mod_b = mb;
    const float zero = static_cast<float>(std::getenv("MANYALLOC_BENCH_NEVER_SET") != nullptr);
    for (long r = 0; r < reps; ++r) shift_copy(a, b, window, zero);
    if (a[window - 1] != b[window - 2]) ++c.fails;
    c.ops += static_cast<std::uint64_t>(reps) * (window - 1);
    c.bytes += 2 * item_count * sizeof(float);
    std::free(a);
    std::free(b);
  });
  Result res{c.ops.load(), c.bytes.load(), c.fails.load(), {}};
  res.note = "\"a_mod4k\":" + std::to_string(mod_a) + ",\"b_mod4k\":" + std::to_string(mod_b) +
             ",\"threads_same_mod4k\":" + std::to_string(same_offset.load());
  return res;
}

}  // namespace manyalloc::numa::bench
