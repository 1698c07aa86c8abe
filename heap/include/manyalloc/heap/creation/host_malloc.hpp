// CreationPolicies::HostMalloc: the C library's malloc/free, the baseline of
// the host-thread back end (what DeviceMalloc is on the GPU). Pair it with
// ReservePoolPolicies::HostPool; the pool is not used.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <string>

#include "manyalloc/heap/acc/host_thread.hpp"

namespace manyalloc::heap::CreationPolicies {

class HostMalloc {
 public:
  static constexpr bool providesAvailableSlots = false;
  static constexpr bool needs_addressable_pool = false;

  template <class Backend>
  static HostMalloc init_heap(void*, std::size_t) { return {}; }
  template <class Backend>
  static void finalize_heap(const HostMalloc&) {}

  void* create(const acc::HostThread&, std::size_t bytes) const {
    return bytes == 0 ? nullptr : std::malloc(bytes);
  }
  void destroy(const acc::HostThread&, void* ptr) const { std::free(ptr); }
  static bool is_oom(const void* ptr, std::size_t bytes) { return bytes != 0 && ptr == nullptr; }

  static std::string classname() { return "HostMalloc"; }
};

}  // namespace manyalloc::heap::CreationPolicies
