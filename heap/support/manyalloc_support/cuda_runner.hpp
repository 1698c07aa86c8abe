// Runner for the CUDA back end (tests and benchmarks): one worker per CUDA
// thread, blocks of 256, every launch checked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "manyalloc/heap/heap.hpp"
#include "manyalloc_support/test_env.hpp"

namespace manyalloc::heap::testing {

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
  // Full occupancy by default; MANYALLOC_TEST_WORKERS / MANYALLOC_TEST_HEAP_MB
  // shrink the tests for compute-sanitizer runs.
  static std::uint32_t many_workers() { return positive_env_or("MANYALLOC_TEST_WORKERS", 1u << 20); }
  static std::size_t heap_bytes() { return std::size_t{positive_env_or("MANYALLOC_TEST_HEAP_MB", 512)} << 20; }

  template <class F>
  static void run(std::uint32_t workers, const F& f) {
    const unsigned block = 256;
    detail::run_workers<<<(workers + block - 1) / block, block>>>(f, workers);
    acc::cuda_check(cudaGetLastError(), "test kernel launch");
    acc::cuda_check(cudaDeviceSynchronize(), "test kernel");
  }

  // Like run(), timed with CUDA events around the kernel. Returns seconds.
  template <class F>
  static double timed_run(std::uint32_t workers, const F& f) {
    const unsigned block = 256;
    cudaEvent_t start, stop;
    acc::cuda_check(cudaEventCreate(&start), "cudaEventCreate");
    acc::cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
    acc::cuda_check(cudaEventRecord(start), "cudaEventRecord");
    detail::run_workers<<<(workers + block - 1) / block, block>>>(f, workers);
    acc::cuda_check(cudaGetLastError(), "timed kernel launch");
    acc::cuda_check(cudaEventRecord(stop), "cudaEventRecord");
    acc::cuda_check(cudaEventSynchronize(stop), "timed kernel");
    float ms = 0;
    acc::cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return ms / 1000.0;
  }

  static std::string device_name() {
    cudaDeviceProp prop{};
    int dev = 0;
    acc::cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
    acc::cuda_check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
    return prop.name;
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
    void zero() { acc::cuda_check(cudaMemset(data_, 0, n_ * sizeof(T)), "cudaMemset (test buffer)"); }
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

}  // namespace manyalloc::heap::testing
