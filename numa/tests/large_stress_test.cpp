// Multi-threaded stress of large arrays (the hera pattern of numa_bench,
// smaller): each thread keeps a few arrays of some MiB and, at every step,
// reallocates one to a new size (larger: mremap in place or moved; smaller:
// the tail given back, at once in the lowmem profile) or frees it and
// allocates a fresh one. Every array carries a stamp every 64 KiB (tag and
// position), checked after each realloc over the part that was kept and
// before each free; every pointer must still be known to the allocator
// (usable size, owns). At the end no large bytes may be left in use, and no
// misuse may have been reported (a pointer the registry lost looks foreign).
// Run it oversubscribed (more threads than cores): a thread preempted right
// after giving addresses back to the kernel is what lets another thread's
// mmap get them first (the registry race fixed in source_resize_large).
// Uses the manyalloc_numa_* names so that it runs under every sanitizer.
//
//   numa_large_stress THREADS SECONDS [MIN_KIB MAX_KIB [ARRAYS]]
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "manyalloc/numa/numa.h"
#include "xorshift.hpp"

namespace {

constexpr std::size_t stride = 64 * 1024;  // one stamp per 64 KiB
constexpr int max_arrays = 8;

std::atomic<long> g_errors{0}, g_ops{0}, g_reallocs{0};

#if defined(__SANITIZE_THREAD__)
constexpr bool tsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool tsan = true;
#else
constexpr bool tsan = false;
#endif
#else
constexpr bool tsan = false;
#endif
std::atomic<long> g_tsan_order{0};

// ThreadSanitizer intercepts mmap (as a write by the calling thread) and
// munmap but not mremap: addresses that an array grows into in place may
// still carry the shadow of another thread's earlier mmap there (a range it
// later moved away from with mremap), and the first write to them would be
// reported as a race with that mmap. Under TSan every allocator call is
// therefore followed by an acq_rel step on one counter, which orders it after
// every earlier call of every thread (as the kernel's mmap lock does).
void after_allocator_call() {
  if constexpr (tsan) g_tsan_order.fetch_add(1, std::memory_order_acq_rel);
}

std::uint64_t stamp_word(std::uint32_t tag, std::size_t i) {
  return (std::uint64_t{tag} << 32) ^ (i * 0x9E3779B1u) ^ 0x5A5A0000u;
}

// Stamps [from, n) at every stride and the last word.
void stamp(std::uint8_t* p, std::size_t from, std::size_t n, std::uint32_t tag) {
  for (std::size_t i = (from + stride - 1) / stride * stride; i + 8 <= n; i += stride) {
    const std::uint64_t w = stamp_word(tag, i);
    std::memcpy(p + i, &w, 8);
  }
  const std::uint64_t w = stamp_word(tag, n - 8);
  std::memcpy(p + n - 8, &w, 8);
}

// Checks the stride stamps of [0, n) (not the last word when `tail` is
// false: after a shrink it was cut off).
bool check(const std::uint8_t* p, std::size_t n, std::uint32_t tag, bool tail, int t,
           const char* when) {
  bool ok = true;
  for (std::size_t i = 0; i + 8 <= n; i += stride) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (w != stamp_word(tag, i)) {
      std::fprintf(stderr, "thread %d: %s: stamp at %zu of %p lost\n", t, when, i,
                   static_cast<const void*>(p));
      ok = false;
      break;
    }
  }
  if (tail) {
    std::uint64_t w;
    std::memcpy(&w, p + n - 8, 8);
    if (w != stamp_word(tag, n - 8)) {
      std::fprintf(stderr, "thread %d: %s: last word of %p (%zu bytes) lost\n", t, when,
                   static_cast<const void*>(p), n);
      ok = false;
    }
  }
  return ok;
}

bool known(void* p, std::size_t n, int t, const char* when) {
  const std::size_t u = manyalloc_numa_usable_size(p);
  if (u < n || !manyalloc_numa_owns(p)) {
    std::fprintf(stderr, "thread %d: %s: %p (%zu bytes) unknown to the allocator (usable %zu)\n",
                 t, when, p, n, u);
    return false;
  }
  return true;
}

using manyalloc::numa::Rng;

void worker(int t, int narrays, std::size_t lo, std::size_t hi,
            std::chrono::steady_clock::time_point deadline) {
  Rng r(static_cast<std::uint64_t>(t) + 1);
  std::uint8_t* arr[max_arrays] = {};
  std::size_t len[max_arrays] = {};
  std::uint32_t tag[max_arrays] = {};
  long errors = 0, ops = 0, reallocs = 0;
  std::uint32_t next_tag = static_cast<std::uint32_t>(t) << 24;
  while (std::chrono::steady_clock::now() < deadline && errors == 0) {
    for (int k = 0; k < narrays && errors == 0; ++k) {
      const std::size_t n = (lo + r.below(hi - lo + 1)) & ~std::size_t{7};
      const std::uint32_t nt = ++next_tag;
      if (arr[k] != nullptr && r.below(3) == 0) {
        if (!check(arr[k], len[k], tag[k], true, t, "before free") ||
            !known(arr[k], len[k], t, "before free"))
          ++errors;
        manyalloc_numa_free(arr[k]);
        after_allocator_call();
        arr[k] = static_cast<std::uint8_t*>(manyalloc_numa_malloc(n));
        after_allocator_call();
        if (arr[k] == nullptr) {
          std::fprintf(stderr, "thread %d: malloc(%zu) failed, errno %d\n", t, n, errno);
          ++errors;
          len[k] = 0;
          continue;
        }
        stamp(arr[k], 0, n, nt);
      } else {
        errno = 0;
        auto* q = static_cast<std::uint8_t*>(manyalloc_numa_realloc(arr[k], n));
        after_allocator_call();
        if (q == nullptr) {
          std::fprintf(stderr, "thread %d: realloc(%p, %zu -> %zu) failed, errno %d\n", t,
                       static_cast<void*>(arr[k]), len[k], n, errno);
          ++errors;
          continue;
        }
        if (arr[k] != nullptr) {
          ++reallocs;
          // The kept part: its stamps (the old last word only if it was kept).
          if (!check(q, len[k] < n ? len[k] : n, tag[k], len[k] <= n, t, "after realloc"))
            ++errors;
          // Restamp everything with the new tag (the new part is touched).
          stamp(q, 0, n, nt);
        } else {
          stamp(q, 0, n, nt);
        }
        arr[k] = q;
      }
      len[k] = n;
      tag[k] = nt;
      if (!known(arr[k], n, t, "after allocation")) ++errors;
      ++ops;
    }
  }
  for (int k = 0; k < narrays; ++k) {
    if (arr[k] == nullptr) continue;
    if (!check(arr[k], len[k], tag[k], true, t, "at exit") ||
        !known(arr[k], len[k], t, "at exit"))
      ++errors;
    manyalloc_numa_free(arr[k]);
    after_allocator_call();
  }
  g_errors += errors;
  g_ops += ops;
  g_reallocs += reallocs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: numa_large_stress THREADS SECONDS [MIN_KIB MAX_KIB [ARRAYS]]\n");
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  const double seconds = std::atof(argv[2]);
  const std::size_t lo = (argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1024) * 1024;
  const std::size_t hi = (argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 12288) * 1024;
  const int narrays = argc > 5 ? std::atoi(argv[5]) : 3;
  if (threads < 1 || lo <= 256 * 1024 || hi < lo || narrays < 1 || narrays > max_arrays) {
    std::fprintf(stderr, "numa_large_stress: bad arguments (arrays must be large: > 256 KiB)\n");
    return 2;
  }
  manyalloc_numa_stats before;
  manyalloc_numa_get_stats(&before);
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t, narrays, lo, hi, deadline);
  for (auto& th : pool) th.join();
  manyalloc_numa_stats after;
  manyalloc_numa_get_stats(&after);
  const long misuses = static_cast<long>(after.misuses - before.misuses);
  std::printf("numa_large_stress: profile %s, %d threads, %ld operations (%ld reallocs) in %.1f s, "
              "%ld errors, %ld misuses, %llu large bytes left in use, %llu remaps\n",
              after.profile, threads, g_ops.load(), g_reallocs.load(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
              g_errors.load(), misuses,
              static_cast<unsigned long long>(after.large_in_use_bytes),
              static_cast<unsigned long long>(after.sources[0].remaps - before.sources[0].remaps));
  const bool ok = g_errors.load() == 0 && misuses == 0 &&
                  after.large_in_use_bytes == before.large_in_use_bytes && g_reallocs.load() > 0;
  return ok ? 0 : 1;
}
