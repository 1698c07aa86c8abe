// The PIC experiments ([Eckert2014] 5.2, run.hpp) for the peers benchmark's
// allocators (heap/bench/peers: Gallatin, Ouroboros, mallocMC, and our heaps
// through the same adapters): experiments pic_steps and pic_growth. C++17,
// includes no manyalloc heap header (the peers' translation units are C++17).
// Adapters take no species, so every species shares the adapter's one pool.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "run.hpp"

namespace manyalloc::heap::pic {

// What step.hpp passes through to the heap; the adapters need nothing of it.
struct PeerLane {};

template <class F>
__global__ void peer_pic_kernel(F f, std::uint32_t n) {
  const std::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w < n) f(PeerLane{}, w);
}

inline void peer_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(err));
}

// The launcher run.hpp asks for: blocks of 256, CUDA events around a timed launch.
struct PeerLauncher {
  static constexpr unsigned block = 256;
  template <class F>
  static void run(std::uint32_t n, const F& f) {
    peer_pic_kernel<<<(n + block - 1) / block, block>>>(f, n);
    peer_check(cudaGetLastError(), "pic launch");
    peer_check(cudaDeviceSynchronize(), "pic kernel");
  }
  template <class F>
  static double timed_run(std::uint32_t n, const F& f) {
    cudaEvent_t a, b;
    peer_check(cudaEventCreate(&a), "cudaEventCreate");
    peer_check(cudaEventCreate(&b), "cudaEventCreate");
    peer_check(cudaEventRecord(a), "cudaEventRecord");
    peer_pic_kernel<<<(n + block - 1) / block, block>>>(f, n);
    peer_check(cudaGetLastError(), "pic launch");
    peer_check(cudaEventRecord(b), "cudaEventRecord");
    peer_check(cudaEventSynchronize(b), "pic kernel");
    float ms = 0;
    peer_check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms / 1e3;
  }
  template <class T>
  class Buffer {
   public:
    explicit Buffer(std::size_t n) : n_(n) {
      peer_check(cudaMalloc(&p_, n * sizeof(T)), "cudaMalloc (pic array)");
      peer_check(cudaMemset(p_, 0, n * sizeof(T)), "cudaMemset (pic array)");
    }
    ~Buffer() { cudaFree(p_); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    T* data() { return p_; }
    std::vector<T> to_host() const {
      std::vector<T> h(n_);
      peer_check(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "copy back");
      return h;
    }

   private:
    T* p_ = nullptr;
    std::size_t n_;
  };
};

// An adapter's handle as the heap of every species.
template <class Handle>
struct PeerMem {
  Handle h;
  template <class Acc>
  __device__ void* alloc(const Acc&, std::uint32_t, std::size_t bytes) const {
    return h.malloc(bytes);
  }
  template <class Acc>
  __device__ void free(const Acc&, void* p) const {
    h.free(p);
  }
};

// Runs "pic_steps" or "pic_growth" with the PIC program's default sizes
// (options.hpp; --quick: its quick sizes) on fresh heaps of adapter A, with
// a shorter budget and three species counts, so that a peer stays within
// the peers benchmark's child timeout. emit(Measurement) writes a record.
template <class A, class Out>
void run_peer_pic(const std::string& experiment, bool quick, const std::string& allocator, Out&& emit) {
  Options o;
  if (quick) {
    make_quick(o);
  } else {
    o.budget_s = 10;
    o.growth_species = {1, 4, 16};
  }
  bench::Measurement base;
  base.suite = "pic";
  base.allocator = allocator;
  base.bytes = o.frame_bytes;
  auto nothing = [](bench::Measurement&) {};
  if (experiment == "pic_steps") {
    const std::size_t bytes = static_cast<std::size_t>(o.heap_mb) << 20;
    A adapter(bytes);
    Runs<PeerLauncher>::steps(o, PeerMem<typename A::Handle>{adapter.handle()}, base, bytes, emit, nothing);
  } else {
    const std::size_t bytes = static_cast<std::size_t>(o.growth_heap_mb) << 20;
    for (const std::uint32_t n : o.growth_species) {
      A adapter(bytes);
      Runs<PeerLauncher>::growth(o, PeerMem<typename A::Handle>{adapter.handle()}, base, bytes, n, emit, nothing);
    }
  }
}

}  // namespace manyalloc::heap::pic
