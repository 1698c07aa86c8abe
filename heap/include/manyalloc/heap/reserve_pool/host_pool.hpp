// ReservePoolPolicies::HostPool: the pool for the host-thread back end, an
// anonymous private mapping. Pages are committed by the kernel on first
// touch, so a large heap costs nothing until it is used.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <string>

#include "manyalloc/heap/acc/host_thread.hpp"

namespace manyalloc::heap::ReservePoolPolicies {

struct HostPool {
  using backend = acc::HostThreads;
  static constexpr bool addressable = true;

  // Throws std::bad_alloc when the mapping fails.
  static void* set_mem_pool(std::size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
  }
  static void reset_mem_pool(void* pool, std::size_t bytes) {
    if (pool != nullptr) munmap(pool, bytes);
  }
  static std::string classname() { return "HostPool"; }
};

}  // namespace manyalloc::heap::ReservePoolPolicies
