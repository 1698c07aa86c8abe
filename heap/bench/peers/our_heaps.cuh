// Our heaps in the peers benchmark: one generic adapter over any
// manyalloc::heap::Allocator<Creation, Distribution, OOM, ReservePool, Alignment>
// (bench.hpp states the adapter contract). The configurations are
// registered in our_heaps_scatter.cu, our_heaps_slabs.cu and
// our_heaps_slabs_relaxed.cu, one line each: each configuration instantiates
// every experiment, and one file of all of them was the longest step of the
// build.
#pragma once

#include <memory>
#include <string>

#include "experiments.cuh"
#include "manyalloc/heap/heap.hpp"

namespace manyalloc::heap::peers::ours {
namespace ma = manyalloc;
namespace mp = manyalloc::heap::peers;

template <class Heap>
struct OurAdapter {
  struct Handle {
    typename Heap::Handle heap;
    __device__ void* malloc(std::size_t bytes) const {
      const ma::heap::acc::CudaThread acc;
      return heap.alloc(acc, bytes);
    }
    // dealloc(nullptr) is a no-op for every policy (and a collective release
    // needs every lane of the active set to take part).
    __device__ void free(void* p) const {
      const ma::heap::acc::CudaThread acc;
      heap.dealloc(acc, p);
    }
  };

  explicit OurAdapter(std::size_t pool_bytes) : heap_(std::make_unique<Heap>(pool_bytes)) {}
  // After a kernel fault the context is gone: leave the heap (the process ends).
  ~OurAdapter() {
    if (cudaDeviceSynchronize() != cudaSuccess) (void)heap_.release();
  }
  OurAdapter(const OurAdapter&) = delete;
  OurAdapter& operator=(const OurAdapter&) = delete;
  Handle handle() const { return Handle{heap_->handle()}; }

  // CUDA's device malloc keeps its heap for the context's lifetime.
  static constexpr bool fresh_heap = Heap::ReservePoolPolicy::addressable;
  static std::string note(std::size_t) { return ""; }

 private:
  std::unique_ptr<Heap> heap_;
};

template <class Creation, class Distribution = ma::heap::DistributionPolicies::NoOp>
using CudaHeap = ma::heap::Allocator<Creation, Distribution, ma::heap::OOMPolicies::ReturnNull, ma::heap::ReservePoolPolicies::CudaMalloc,
                               ma::heap::AlignmentPolicies::Shrink<16>>;
// CUDA's device malloc, composed as in heap/bench/suite/main_cuda.cu.
using DeviceMallocHeap = ma::heap::Allocator<ma::heap::CreationPolicies::DeviceMalloc, ma::heap::DistributionPolicies::NoOp,
                                       ma::heap::OOMPolicies::ReturnNull, ma::heap::ReservePoolPolicies::CudaSetLimits,
                                       ma::heap::AlignmentPolicies::NoOp>;

// `order`: the allocator's table column (ours 0..99, bench.hpp Entry).
// Every configuration of ours runs by default.
template <class Heap>
mp::Entry ours(const char* name, int order) {
  return mp::Entry{name, false, order, &mp::run_experiment<OurAdapter<Heap>>};
}

}  // namespace manyalloc::heap::peers::ours
