// ReservePoolPolicies::CudaSetLimits: sizes the heap of CUDA's built-in
// device malloc (cudaLimitMallocHeapSize). There is no addressable pool.
// Precondition (CUDA's): the limit can only be raised before the first
// kernel that uses device malloc runs in the context.
#pragma once

#include <cstddef>
#include <string>

#include "manyalloc/heap/acc/cuda.hpp"

namespace manyalloc::heap::ReservePoolPolicies {

struct CudaSetLimits {
  using backend = acc::Cuda;
  static constexpr bool addressable = false;

  // Leaves a heap that is already at least `bytes` large alone, so several
  // allocators can share CUDA's heap after its first use; growing it then
  // fails with CUDA's error.
  static void* set_mem_pool(std::size_t bytes) {
    std::size_t current = 0;
    acc::cuda_check(cudaDeviceGetLimit(&current, cudaLimitMallocHeapSize), "cudaDeviceGetLimit(MallocHeapSize)");
    if (current < bytes) {
      acc::cuda_check(cudaDeviceSetLimit(cudaLimitMallocHeapSize, bytes),
                      "cudaDeviceSetLimit(MallocHeapSize) (only possible before the first kernel using malloc)");
    }
    return nullptr;
  }
  // The CUDA heap keeps its size for the context's lifetime; nothing to undo.
  static void reset_mem_pool(void*, std::size_t) {}
  static std::string classname() { return "CudaSetLimits"; }
};

}  // namespace manyalloc::heap::ReservePoolPolicies
