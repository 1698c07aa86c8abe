// The global address space (Myrmics section 2): one large range mapped at the
// same virtual address on every rank, so pointers keep their meaning.
#pragma once

#include <cstdint>

namespace manyalloc::region::detail {

struct GasMapping {
  std::uint64_t base = 0;
  std::uint64_t bytes = 0;
  int attempts = 0;  // candidates tried before all ranks agreed
};

// Collective over MPI_COMM_WORLD. Every rank maps `bytes` (a multiple of
// 1 MiB) at a common candidate base with MAP_FIXED_NOREPLACE (never plain
// MAP_FIXED), checks that the kernel returned that very address, and agrees
// with an allreduce; when any rank failed, every rank unmaps and the next
// candidate is tried. Returns base 0 when no candidate worked.
GasMapping map_global_address_space(std::uint64_t bytes);
void unmap_global_address_space(const GasMapping& m);

}  // namespace manyalloc::region::detail
