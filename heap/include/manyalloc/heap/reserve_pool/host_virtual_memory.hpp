// ReservePoolPolicies::HostVirtualMemory: a pool that grows (issue 15, the
// host counterpart of CudaVirtualMemory). set_mem_pool reserves address
// space only (PROT_NONE); map() makes a prefix of it readable and writable.
// A heap that touched memory beyond what was mapped would fault at once, so
// host tests prove that a creation policy stays inside the mapped part.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>

#include "manyalloc/heap/acc/host_thread.hpp"

namespace manyalloc::heap::ReservePoolPolicies {

struct HostVirtualMemory {
  using backend = acc::HostThreads;
  static constexpr bool addressable = true;

  // Reserves `bytes` of address space; throws std::bad_alloc when that fails.
  static void* set_mem_pool(std::size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
  }
  static void reset_mem_pool(void* pool, std::size_t bytes) {
    if (pool != nullptr) munmap(pool, bytes);
  }
  // Memory is mapped in multiples of this.
  static std::size_t granularity() { return 4096; }
  // Makes [pool + from, pool + to) usable (from, to multiples of the
  // granularity, from = what was mapped before). Throws std::bad_alloc.
  static void map(void* pool, std::size_t from, std::size_t to) {
    if (to <= from) return;
    if (mprotect(static_cast<char*>(pool) + from, to - from, PROT_READ | PROT_WRITE) != 0) throw std::bad_alloc();
  }
  static std::string classname() { return "HostVirtualMemory"; }
};

}  // namespace manyalloc::heap::ReservePoolPolicies
