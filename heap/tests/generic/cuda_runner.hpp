// Test runner for the CUDA back end: one worker per CUDA thread, blocks of
// 256, with every launch checked.
#pragma once

#include <cstdint>
#include <vector>

#include "manyalloc/heap/heap.hpp"

namespace manyalloc::testing {

namespace detail {
template <class F>
__global__ void run_workers(F f, std::uint32_t workers) {
  const std::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w < workers) f(acc::CudaThread{}, w);
}
}  // namespace detail

struct CudaRunner {
  using backend = acc::Cuda;
  using Pool = ReservePoolPolicies::CudaMalloc;
  static constexpr const char* name = "cuda";

  static bool available() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  }
  static std::uint32_t many_workers() { return 1u << 20; }
  static std::size_t heap_bytes() { return 512u << 20; }

  template <class F>
  static void run(std::uint32_t workers, const F& f) {
    const unsigned block = 256;
    detail::run_workers<<<(workers + block - 1) / block, block>>>(f, workers);
    acc::cuda_check(cudaGetLastError(), "test kernel launch");
    acc::cuda_check(cudaDeviceSynchronize(), "test kernel");
  }

  template <class T>
  class Buffer {
   public:
    explicit Buffer(std::size_t n) : n_(n) {
      acc::cuda_check(cudaMalloc(&data_, n * sizeof(T)), "cudaMalloc (test buffer)");
      acc::cuda_check(cudaMemset(data_, 0, n * sizeof(T)), "cudaMemset (test buffer)");
    }
    ~Buffer() { cudaFree(data_); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    T* data() { return data_; }
    std::vector<T> to_host() const {
      std::vector<T> h(n_);
      acc::cuda_check(cudaMemcpy(h.data(), data_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "copy back");
      return h;
    }

   private:
    T* data_ = nullptr;
    std::size_t n_;
  };
};

}  // namespace manyalloc::testing
