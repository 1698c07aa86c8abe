// The lock of one list (invariant L6 in detail/lists/invariants.hpp): a
// test-and-set word in the list's ListHead. [Steinberger2012] section 4 asks
// for synchronised access to the list pointers; a lock per list is the
// simplest scheme that never leaves a list half linked.
//
// Waiting workers call acc.relax() between attempts: on the GPU a holder in
// the same warp makes progress under independent thread scheduling (compute
// capability 7.0, acc/cuda.hpp); on the host the waiter yields its CPU.
#pragma once

#include <cstdint>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::detail::lists {

template <class Acc>
MANYALLOC_FN void acquire(const Acc& acc, std::uint32_t* lock) {
  while (acc.load(lock) != 0u || acc.atomic_cas(lock, 0u, 1u) != 0u) acc.relax();
  // Orders the holder's reads after the previous holder's writes.
  acc.fence();
}

template <class Acc>
MANYALLOC_FN void release(const Acc& acc, std::uint32_t* lock) {
  // Makes the holder's writes visible before the next holder's reads.
  acc.fence();
  (void)acc.atomic_exch(lock, 0u);
}

// Holds a list's lock for the lifetime of the object.
template <class Acc>
class ListGuard {
 public:
  MANYALLOC_FN ListGuard(const Acc& acc, std::uint32_t* lock) : acc_(acc), lock_(lock) { acquire(acc_, lock_); }
  MANYALLOC_FN ~ListGuard() { release(acc_, lock_); }
  ListGuard(const ListGuard&) = delete;
  ListGuard& operator=(const ListGuard&) = delete;

 private:
  const Acc& acc_;
  std::uint32_t* lock_;
};

}  // namespace manyalloc::heap::detail::lists
