// The OS interface: the few Linux calls the allocator makes, behind a table
// of function pointers so that tests can inject failures (mmap or mremap
// failing), count the calls and set the clock of a private allocator
// context.
//
// A back end is a class with static members checked by the OsBackend concept;
// make_os_ops<Backend>() turns it into the table. LinuxOs is the real one.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace manyalloc::numa {

template <class T>
concept OsBackend = requires(void* p, std::size_t n) {
  // Anonymous private read-write mapping of n bytes (n a multiple of 4 KiB)
  // near `p` when possible; nullptr on failure. Fresh memory reads as zero.
  { T::map(p, n) } -> std::same_as<void*>;
  // 0 on success.
  { T::unmap(p, n) } -> std::same_as<int>;
  // Resize mapping [p, p + n) to m bytes. With target == nullptr only in
  // place; otherwise move to exactly `target` (which the caller reserved and
  // which the kernel replaces atomically). Returns the new address or nullptr.
  { T::remap(p, n, n, p) } -> std::same_as<void*>;
  // Give the physical pages back; the range stays mapped and reads as zero.
  { T::decommit(p, n) } -> std::same_as<int>;
  // Ask for transparent huge pages on the range.
  { T::advise_huge(p, n) } -> std::same_as<int>;
  // Bind the range's pages to the NUMA node with OS index `node` (and move
  // the pages already there with `move`); 0 on success. Must not allocate:
  // it is called under a heap's merge lock (invariants.hpp), where an
  // allocation of the same thread would wait for itself.
  { T::bind(p, n, 0u, true) } -> std::same_as<int>;
  // A monotonic clock in nanoseconds, read on slow paths only (the decay
  // of cached segments, source.hpp); a coarse one (a few ms) will do.
  { T::now() } -> std::same_as<std::uint64_t>;
};

struct OsOps {
  void* (*map)(void* hint, std::size_t bytes);
  int (*unmap)(void* p, std::size_t bytes);
  void* (*remap)(void* p, std::size_t old_bytes, std::size_t new_bytes, void* target);
  int (*decommit)(void* p, std::size_t bytes);
  int (*advise_huge)(void* p, std::size_t bytes);
  int (*bind)(void* p, std::size_t bytes, unsigned node, bool move);
  std::uint64_t (*now)();
};

template <OsBackend B>
constexpr OsOps make_os_ops() {
  return OsOps{&B::map,         &B::unmap, &B::remap, &B::decommit,
               &B::advise_huge, &B::bind,  &B::now};
}

struct LinuxOs {
  static void* map(void* hint, std::size_t bytes);
  static int unmap(void* p, std::size_t bytes);
  static void* remap(void* p, std::size_t old_bytes, std::size_t new_bytes, void* target);
  static int decommit(void* p, std::size_t bytes);
  static int advise_huge(void* p, std::size_t bytes);
  // mbind(2) with the node mask on the stack (hwloc_set_area_membind
  // allocates its mask with calloc).
  static int bind(void* p, std::size_t bytes, unsigned node, bool move);
  // CLOCK_MONOTONIC_COARSE (the vDSO, no system call).
  static std::uint64_t now();
};
static_assert(OsBackend<LinuxOs>);

extern const OsOps linux_os_ops;

// A mapping of `bytes` (a multiple of the 2 MiB segment size) starting on a
// 2 MiB boundary, or nullptr. Tries a plain mapping first (recent kernels
// align large anonymous mappings already), then over-maps and trims.
// `unmaps` (if given) is increased by the munmap calls it made.
void* map_aligned(const OsOps& os, std::size_t bytes, unsigned* unmaps = nullptr);

}  // namespace manyalloc::numa
