// CreationPolicies::DeviceMalloc: CUDA's built-in device malloc/free, the
// baseline ([Eckert2014] 2.4.3, [CUDAGuide]). Use it with ReservePoolPolicies::CudaSetLimits.
#pragma once

#include <cstddef>
#include <string>

#include "manyalloc/heap/acc/cuda.hpp"

namespace manyalloc::heap::CreationPolicies {

class DeviceMalloc {
 public:
  static constexpr bool providesAvailableSlots = false;
  static constexpr bool needs_addressable_pool = false;

  template <class Backend>
  static DeviceMalloc init_heap(void*, std::size_t) { return {}; }
  template <class Backend>
  static void finalize_heap(const DeviceMalloc&) {}

  __device__ void* create(const acc::CudaThread&, std::size_t bytes) const {
    return bytes == 0 ? nullptr : ::malloc(bytes);
  }
  __device__ void destroy(const acc::CudaThread&, void* ptr) const { ::free(ptr); }
  MANYALLOC_FN static bool is_oom(const void* ptr, std::size_t bytes) { return bytes != 0 && ptr == nullptr; }

  static std::string classname() { return "DeviceMalloc"; }
};

}  // namespace manyalloc::heap::CreationPolicies
