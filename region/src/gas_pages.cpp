// Giving GAS pages back to the operating system (gas.hpp): the page-level
// half of the GAS, without MPI, so that unit tests link it alone.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "gas.hpp"
#include "invariants.hpp"

namespace manyalloc::region::detail {

bool release_gas_slabs(const GasMapping& m, std::uint64_t first_slab, std::uint64_t n) {
  if (!m.shared || m.base == 0 || n == 0) return true;
  void* p = reinterpret_cast<void*>(m.base + first_slab * slab_bytes);
  return madvise(p, n * slab_bytes, MADV_REMOVE) == 0;
}

bool drop_private_pages(const GasMapping& m, std::uint64_t addr, std::uint64_t bytes) {
  if (m.shared || m.base == 0 || bytes == 0) return true;
  static const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t lo = std::max(addr, m.base);
  const std::uint64_t hi = std::min(addr + bytes, m.base + m.bytes);
  const std::uint64_t first = (lo + page - 1) / page * page;  // whole pages only
  const std::uint64_t end = hi / page * page;
  if (first >= end) return true;
  return madvise(reinterpret_cast<void*>(first), end - first, MADV_DONTNEED) == 0;
}

}  // namespace manyalloc::region::detail
