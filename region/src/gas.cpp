#include "gas.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

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

// The host's shared object: the host leader creates a memfd of `bytes`
// (sparse: tmpfs pages appear on first touch) and the other ranks of the
// host open the same file through the leader's /proc/<pid>/fd entry. Returns
// the fd, or -1 on this rank when the host as a whole could not agree.
int open_host_object(MPI_Comm host, std::uint64_t bytes) {
  int hrank = 0;
  MPI_Comm_rank(host, &hrank);
  long who[2] = {-1, -1};  // leader pid, fd
  int fd = -1;
  if (hrank == 0) {
    fd = memfd_create("manyalloc-region-gas", MFD_CLOEXEC);
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      close(fd);
      fd = -1;
    }
    if (fd >= 0) who[0] = static_cast<long>(getpid()), who[1] = fd;
  }
  MPI_Bcast(who, 2, MPI_LONG, 0, host);
  if (hrank != 0 && who[0] >= 0) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/fd/%ld", who[0], who[1]);
    fd = open(path, O_RDWR | O_CLOEXEC);
  }
  int ok = fd >= 0 ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, host);
  if (!all && fd >= 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}
}  // namespace

GasMapping map_global_address_space(std::uint64_t bytes, bool want_shared, bool force_remote, const void* comm_handle) {
  const MPI_Comm all = *static_cast<const MPI_Comm*>(comm_handle);
  GasMapping m;
  m.bytes = bytes;
  int world = 0, rank = 0;
  MPI_Comm_size(all, &world);
  MPI_Comm_rank(all, &rank);
  // Hosts: split by shared-memory domain; each host is named by its lowest
  // world rank (key = world rank makes that rank 0 of the host comm).
  // Forced remote: one "host" per rank.
  MPI_Comm host;
  if (force_remote)
    MPI_Comm_split(all, rank, 0, &host);
  else
    MPI_Comm_split_type(all, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
  int leader = rank;
  MPI_Bcast(&leader, 1, MPI_INT, 0, host);
  m.host_of.assign(static_cast<std::size_t>(world), 0);
  MPI_Allgather(&leader, 1, MPI_INT, m.host_of.data(), 1, MPI_INT, all);
  const int fd = want_shared && !force_remote ? open_host_object(host, bytes) : -1;
  MPI_Comm_free(&host);
  m.shared = fd >= 0;

  for (int attempt = 0; attempt < 8; ++attempt) {
    const std::uint64_t want = candidate(attempt);
    void* p = m.shared ? mmap(reinterpret_cast<void*>(want), bytes, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_NORESERVE | fixed_noreplace, fd, 0)
                       : mmap(reinterpret_cast<void*>(want), bytes, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | fixed_noreplace, -1, 0);
    int ok = p == reinterpret_cast<void*>(want) ? 1 : 0;
    if (p != MAP_FAILED && !ok) munmap(p, bytes);
    int agreed = 0;
    MPI_Allreduce(&ok, &agreed, 1, MPI_INT, MPI_MIN, all);
    m.attempts = attempt + 1;
    if (agreed) {
      m.base = want;
      break;
    }
    if (ok) munmap(p, bytes);
  }
  // The mappings keep the object alive; the fds are no longer needed (every
  // rank of the host has opened it before the allreduce above).
  if (fd >= 0) close(fd);
  if (m.base == 0) m.shared = false;
  return m;
}

void unmap_global_address_space(const GasMapping& m) {
  if (m.base != 0) munmap(reinterpret_cast<void*>(m.base), m.bytes);
}

}  // namespace manyalloc::region::detail
