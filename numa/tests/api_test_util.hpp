// Helpers for tests of the public interface: a table of every C entry point
// (standard names and manyalloc_numa_* names) and "is malloc ours?".
#pragma once

#include <gtest/gtest.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>

#include <string>
#include <vector>

#include "manyalloc/numa/numa.h"

namespace manyalloc::numa::test {

struct Entry {
  const char* name;
  void* (*malloc_)(size_t);
  void (*free_)(void*);
  void* (*calloc_)(size_t, size_t);
  void* (*realloc_)(void*, size_t);
  void* (*reallocarray_)(void*, size_t, size_t);
  void* (*memalign_)(size_t, size_t);
  int (*posix_memalign_)(void**, size_t, size_t);
  void* (*aligned_alloc_)(size_t, size_t);
  void* (*valloc_)(size_t);
  void* (*pvalloc_)(size_t);
  size_t (*usable_)(void*);
};

inline const Entry prefixed_names{"manyalloc_numa_*", manyalloc_numa_malloc, manyalloc_numa_free,
                             manyalloc_numa_calloc, manyalloc_numa_realloc,
                             manyalloc_numa_reallocarray, manyalloc_numa_memalign,
                             manyalloc_numa_posix_memalign, manyalloc_numa_aligned_alloc,
                             manyalloc_numa_valloc, manyalloc_numa_pvalloc,
                             manyalloc_numa_usable_size};
inline const Entry standard_names{"standard names", ::malloc, ::free, ::calloc, ::realloc,
                             ::reallocarray, ::memalign, ::posix_memalign, ::aligned_alloc,
                             ::valloc, ::pvalloc, ::malloc_usable_size};

// True when the standard names reach this allocator (not the case when a
// sanitizer runtime interposed malloc first).
inline bool standard_names_are_ours() {
  void* p = ::malloc(24);
  const bool ours = manyalloc_numa_owns(p) != 0;
  ::free(p);
  return ours;
}

inline std::vector<const Entry*> entries() {
  std::vector<const Entry*> v{&prefixed_names};
  if (standard_names_are_ours()) v.push_back(&standard_names);
  return v;
}

inline manyalloc_numa_stats stats() {
  manyalloc_numa_stats s;
  manyalloc_numa_get_stats(&s);
  return s;
}

// Calls that gave memory back to the OS so far, as the statistics count them.
inline std::uint64_t givebacks() {
  const manyalloc_numa_stats s = stats();
  return s.os_decommits + s.os_unmaps;
}

// The churn loop of issue 19, `malloc(n); memset(p, 1, n); free(p)`
// `iters` times, through the manyalloc_numa_* names; returns the calls that
// gave memory back meanwhile, and the last block in *last (freed).
inline std::uint64_t churn(std::size_t n, int iters, void** last = nullptr) {
  const std::uint64_t before = givebacks();
  for (int i = 0; i < iters; ++i) {
    void* p = manyalloc_numa_malloc(n);
    EXPECT_NE(p, nullptr);
    if (p == nullptr) break;
    std::memset(p, 1, n);
    manyalloc_numa_free(p);
    if (last != nullptr) *last = p;
  }
  return givebacks() - before;
}

// Whether the OS page holding p is resident (false when it is not mapped).
inline bool resident(const void* p) {
  const auto page = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{4095};
  unsigned char vec = 0;
  if (mincore(reinterpret_cast<void*>(page), 4096, &vec) != 0) return false;
  return (vec & 1) != 0;
}

// The churn test of both profiles (api_functional_test in the default
// profile, api_lowmem_test in lowmem): 1000 iterations at 16 KiB, 32 KiB and
// 300 KB give back a handful of times at most (before: lowmem once per
// iteration), and malloc_trim gives back what they kept.
inline void expect_churn_gives_back_rarely() {
  for (std::size_t n : {std::size_t{16384}, std::size_t{32768}, std::size_t{300000}}) {
    manyalloc_numa_trim();
    void* last = nullptr;
    const std::uint64_t calls = churn(n, 1000, &last);
    EXPECT_LE(calls, 10u) << n << " B, profile " << stats().profile;
    EXPECT_TRUE(resident(last)) << n << " B: the block's pages were kept for the next one";
    const std::uint64_t before = givebacks();
    manyalloc_numa_trim();
    EXPECT_GT(givebacks(), before) << n << " B: trim gave nothing back";
    EXPECT_FALSE(resident(last)) << n << " B: still resident after trim";
  }
}

}  // namespace manyalloc::numa::test
