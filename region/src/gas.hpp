// The global address space ([Lyberis2012] section 2): one large range mapped at the
// same virtual address on every rank, so pointers keep their meaning.
#pragma once

#include <cstdint>
#include <vector>

namespace manyalloc::region::detail {

struct GasMapping {
  std::uint64_t base = 0;
  std::uint64_t bytes = 0;
  int attempts = 0;  // candidates tried before all ranks agreed
  // Host sharing: `shared` is true when the ranks of this host map ONE shared
  // memory object (memfd) at `base`, so a byte written by one of them is the
  // same byte for all. host_of[r] is the host index of world rank r (hosts
  // numbered by their lowest world rank), identical on every rank.
  bool shared = false;
  std::vector<int> host_of;
};

// Collective over `comm` (an MPI_Comm* passed opaquely; the library passes
// its duplicate of MPI_COMM_WORLD, MpiTransport::world_comm_handle, so that
// these collectives never meet the application's). Every rank maps `bytes` (a multiple of
// 1 MiB) at a common candidate base with MAP_FIXED_NOREPLACE (never plain
// MAP_FIXED), checks that the kernel returned that very address, and agrees
// with an allreduce; when any rank failed, every rank unmaps and the next
// candidate is tried. Returns base 0 when no candidate worked.
//
// want_shared: the ranks of one host (MPI_Comm_split_type SHARED) back the
// range with one memfd that the host's lowest rank creates and the others
// open through /proc/<pid>/fd/<fd>, mapped MAP_SHARED. When any rank of a
// host cannot open it, that whole host falls back to private anonymous
// memory (shared = false on all of its ranks). want_shared = false: private
// anonymous memory everywhere (every transfer copies).
//
// force_remote (MANYALLOC_REGION_FORCE_REMOTE): every rank is a host of its
// own (host_of[r] == r) and maps private memory, as if each rank ran on a
// different machine: every transfer copies.
GasMapping map_global_address_space(std::uint64_t bytes, bool want_shared, bool force_remote, const void* comm);
void unmap_global_address_space(const GasMapping& m);

// Gives the memory behind slabs [first_slab, first_slab + n) back to the
// operating system; the slabs must hold no live object and be owned by the
// caller. Shared GAS: madvise(MADV_REMOVE) frees the pages of this host's
// memory object for every rank of the host at once (they read as zeros
// afterwards and are allocated again on the next touch). Private memory:
// nothing is done (only the process that touched a page can drop it, and a
// scheduler does not touch the workers' pages: drop_private_pages, below,
// called by the worker). False, with errno, when the kernel refused.
bool release_gas_slabs(const GasMapping& m, std::uint64_t first_slab, std::uint64_t n);

// Private memory only (shared = false; nothing is done on a shared GAS,
// whose pages release_gas_slabs gives back for the whole host): drops this
// process's pages wholly inside [addr, addr + bytes) with
// madvise(MADV_DONTNEED), so that they read as zeros afterwards and take
// memory again only when touched. The caller owns the range and holds no
// live object in it (a worker, right after its mr_rfree succeeded; slabs
// of the range that have moved to another region since hold nothing of
// this worker's either). Pages
// the range covers only in part are kept (they may hold another region's
// slabs); so is anything outside the GAS. False, with errno, when the kernel refused.
bool drop_private_pages(const GasMapping& m, std::uint64_t addr, std::uint64_t bytes);

}  // namespace manyalloc::region::detail
