// Reporting misuse of a public API (bad pointer, double free, ...).
//
// Every layer reports misuse through report_misuse(): in a checked build the
// message is printed (stderr on the host, printf on the device); in every
// build the caller then returns a defined result instead of corrupting state.
#pragma once

#include <cstdio>

#include "manyalloc/common/build_config.hpp"
#include "manyalloc/common/platform.hpp"

namespace manyalloc {

// What went wrong; callers also count these so tests can assert on them.
enum class Misuse : unsigned {
  none = 0,
  foreign_pointer = 1,   // pointer not inside the allocator's memory
  not_a_chunk_start = 2, // pointer inside the heap but not where a chunk starts
  double_free = 3,       // chunk is not allocated
  bad_argument = 4,      // e.g. an impossible size or alignment
};

MANYALLOC_FN inline const char* misuse_name(Misuse m) {
  switch (m) {
    case Misuse::foreign_pointer: return "pointer does not belong to this heap";
    case Misuse::not_a_chunk_start: return "pointer is not the start of an allocated chunk";
    case Misuse::double_free: return "chunk is not allocated (double free?)";
    case Misuse::bad_argument: return "bad argument";
    default: return "no error";
  }
}

// Prints "manyalloc: <where>: <what> (<ptr>)" in a checked build.
MANYALLOC_FN inline void report_misuse(const char* where, Misuse what, const void* ptr) {
  if constexpr (build::checked_build) {
#if defined(__CUDA_ARCH__)
    printf("manyalloc: %s: %s (%p)\n", where, misuse_name(what), ptr);
#else
    std::fprintf(stderr, "manyalloc: %s: %s (%p)\n", where, misuse_name(what), ptr);
#endif
  } else {
    (void)where;
    (void)what;
    (void)ptr;
  }
}

}  // namespace manyalloc
