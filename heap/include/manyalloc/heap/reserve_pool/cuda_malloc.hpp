// ReservePoolPolicies::CudaMalloc ([Eckert2014] 4.3.1, SimpleCudaMalloc): one pool
// from cudaMalloc, released with cudaFree.
#pragma once

#include <cstddef>
#include <string>

#include "manyalloc/heap/acc/cuda.hpp"

namespace manyalloc::heap::ReservePoolPolicies {

struct CudaMalloc {
  using backend = acc::Cuda;
  static constexpr bool addressable = true;

  static void* set_mem_pool(std::size_t bytes) {
    void* p = nullptr;
    acc::cuda_check(cudaMalloc(&p, bytes), "cudaMalloc (heap pool)");
    return p;
  }
  static void reset_mem_pool(void* pool, std::size_t) {
    if (pool != nullptr) acc::cuda_check(cudaFree(pool), "cudaFree (heap pool)");
  }
  static std::string classname() { return "CudaMalloc"; }
};

}  // namespace manyalloc::heap::ReservePoolPolicies
