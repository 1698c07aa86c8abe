// Statistics: gathered from the sources' and heaps' counters on request
// (nothing is aggregated on the fast paths), printed at exit on request.
#pragma once

#include "context.hpp"
#include "manyalloc/numa/numa.h"

namespace manyalloc::numa {

void stats_gather(Context& c, manyalloc_numa_stats& out) noexcept;
// Formats without allocating and writes to fd.
void stats_print(Context& c, int fd) noexcept;

}  // namespace manyalloc::numa
