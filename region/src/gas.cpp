#include "gas.hpp"

#include <mpi.h>
#include <sys/mman.h>

namespace manyalloc::region::detail {

namespace {
// Linux >= 4.17; older kernels ignore the flag, which the address check
// below catches.
#ifdef MAP_FIXED_NOREPLACE
constexpr int fixed_noreplace = MAP_FIXED_NOREPLACE;
#else
constexpr int fixed_noreplace = 0x100000;
#endif

// Candidates in the upper half of the 47-bit user space, above the
// AddressSanitizer shadow (which ends at 0x10007fff7fff on x86-64) and below
// where the kernel places stacks and mmap areas (near 0x7fxxxxxxxxxx).
std::uint64_t candidate(int attempt) {
  return 0x500000000000ull + static_cast<std::uint64_t>(attempt) * 0x40000000000ull;  // 4 TiB steps
}
}  // namespace

GasMapping map_global_address_space(std::uint64_t bytes) {
  GasMapping m;
  m.bytes = bytes;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const std::uint64_t want = candidate(attempt);
    void* p = mmap(reinterpret_cast<void*>(want), bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | fixed_noreplace, -1, 0);
    int ok = p == reinterpret_cast<void*>(want) ? 1 : 0;
    if (p != MAP_FAILED && !ok) munmap(p, bytes);
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    m.attempts = attempt + 1;
    if (all) {
      m.base = want;
      return m;
    }
    if (ok) munmap(p, bytes);
  }
  return m;
}

void unmap_global_address_space(const GasMapping& m) {
  if (m.base != 0) munmap(reinterpret_cast<void*>(m.base), m.bytes);
}

}  // namespace manyalloc::region::detail
