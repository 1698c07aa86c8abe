// Prefaulting received extents on a zero-copy receive.
//
// With zero copy the receiver uses the sender's bytes in place ([Lyberis2012]
// section 2: the data is at the same addresses everywhere), but its own page
// tables have no entries for pages it has never touched. An application's
// first access to a node is often a read-modify-write instruction
// (`x->value += 1`), which the CPU reports as a write fault, and the kernel
// maps write faults one 4 KiB page at a time, so a first walk over a received
// list costs several times the walk of the same list once mapped (figures in
// region/DESIGN.md). mr_recv instead maps the received extents' pages that
// this process has not mapped before (MappedPages) with one
// madvise(MADV_POPULATE_READ) per run of such pages.
//
// Read, not write: a read populate goes through the kernel's fault-around
// (fault_around_bytes, 64 KiB = 16 pages per fault by default), and on a
// MAP_SHARED tmpfs mapping (no write notification) the entries it makes are
// writable, so the application's writes take no further fault, and one
// fault maps 16 pages where a write populate maps one (region/DESIGN.md).
// Pages of a used slab the sender never wrote are holes in the memfd;
// populating allocates them, as the receiver's first touch would.
//
// MADV_POPULATE_READ exists from Linux 5.14; on older kernels madvise
// returns EINVAL and prefaulting switches itself off for the process (the
// walk then faults as before). Other errors (ENOMEM, EFAULT) leave the pages
// to be faulted on touch. MANYALLOC_REGION_PREFAULT=off (mr_config.prefault)
// turns it off.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "local_regions.hpp"
#include "mapped_pages.hpp"

namespace manyalloc::region::detail {

// madvise advice (Linux >= 5.14, include/uapi/asm-generic/mman-common.h);
// older headers lack the name, older kernels answer EINVAL.
#ifdef MADV_POPULATE_READ
inline constexpr int populate_read = MADV_POPULATE_READ;
#else
inline constexpr int populate_read = 22;
#endif

class Prefaulter {
 public:
  Prefaulter() = default;
  Prefaulter(std::uint64_t gas_base, bool enabled) : base_(gas_base), enabled_(enabled) {}

  // Maps the pages of `extents` (inside the GAS) that this process has not
  // mapped before.
  void populate(const std::vector<Extent>& extents);
  // Records the pages of `extents` as mapped without a system call (pages
  // this process has written itself). A page recorded but not mapped is only
  // faulted on touch, as without prefaulting.
  void note_mapped(const std::vector<Extent>& extents);

 private:
  // The pages [first, end) of the GAS that `e` touches.
  std::pair<std::uint64_t, std::uint64_t> pages(const Extent& e) const;

  std::uint64_t base_ = 0;
  bool enabled_ = false;
  MappedPages mapped_;
};

}  // namespace manyalloc::region::detail
