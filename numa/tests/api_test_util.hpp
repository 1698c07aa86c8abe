// Helpers for tests of the public interface: a table of every C entry point
// (standard names and manyalloc_numa_* names) and "is malloc ours?".
#pragma once

#include <gtest/gtest.h>
#include <malloc.h>
#include <stdlib.h>

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

inline const Entry kPrefixed{"manyalloc_numa_*", manyalloc_numa_malloc, manyalloc_numa_free,
                             manyalloc_numa_calloc, manyalloc_numa_realloc,
                             manyalloc_numa_reallocarray, manyalloc_numa_memalign,
                             manyalloc_numa_posix_memalign, manyalloc_numa_aligned_alloc,
                             manyalloc_numa_valloc, manyalloc_numa_pvalloc,
                             manyalloc_numa_usable_size};
inline const Entry kStandard{"standard names", ::malloc, ::free, ::calloc, ::realloc,
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
  std::vector<const Entry*> v{&kPrefixed};
  if (standard_names_are_ours()) v.push_back(&kStandard);
  return v;
}

inline manyalloc_numa_stats stats() {
  manyalloc_numa_stats s;
  manyalloc_numa_get_stats(&s);
  return s;
}

}  // namespace manyalloc::numa::test
