// Our heaps in the peers benchmark: one generic adapter over any
// manyalloc::heap::Allocator<Creation, Distribution, OOM, ReservePool, Alignment>
// (bench.hpp states the adapter contract). Adding a configuration of ours is
// one line in the list at the end of this file.
#include <memory>

#include "experiments.cuh"
#include "manyalloc/heap/heap.hpp"

// SizeClassSlabs (heap/include/manyalloc/heap/creation/size_class_slabs.hpp)
// joins the list once its header exists.
#if __has_include("manyalloc/heap/creation/size_class_slabs.hpp")
#include "manyalloc/heap/creation/size_class_slabs.hpp"
#endif

namespace {
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

int next_order = 0;
template <class Heap>
mp::Entry ours(const char* name, bool by_default = true) {
  return mp::Entry{name, false, next_order++, &mp::run_experiment<OurAdapter<Heap>>, by_default};
}

// ---- our allocators, one line each (column order of the tables) ----------
const mp::Register our_heaps[] = {
    mp::Register(ours<CudaHeap<ma::heap::CreationPolicies::Scatter<>>>("Scatter")),
    mp::Register(ours<CudaHeap<ma::heap::CreationPolicies::Scatter<>, ma::heap::DistributionPolicies::XMallocSIMD<4096>>>(
        "Scatter+XMallocSIMD")),
    // Only when named: the full peers run must fit in one 10-minute call.
    mp::Register(ours<CudaHeap<ma::heap::CreationPolicies::Scatter<ma::heap::CreationPolicies::ScatterRelaxedFreesConfig>>>(
        "Scatter+RelaxedFrees", /*by_default=*/false)),
#if __has_include("manyalloc/heap/creation/size_class_slabs.hpp")
    mp::Register(ours<CudaHeap<ma::heap::CreationPolicies::SizeClassSlabs<>>>("SizeClassSlabs")),
    mp::Register(ours<CudaHeap<ma::heap::CreationPolicies::SizeClassSlabs<ma::heap::CreationPolicies::FineSizeClassesConfig>>>(
        "SizeClassSlabs+FineClasses")),
    mp::Register(ours<CudaHeap<ma::heap::CreationPolicies::SizeClassSlabs<ma::heap::CreationPolicies::RelaxedFreesConfig>>>(
        "SizeClassSlabs+RelaxedFrees")),
#endif
    mp::Register(ours<DeviceMallocHeap>("DeviceMalloc")),
};

}  // namespace
