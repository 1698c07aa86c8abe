// Probe: our Scatter (PROBE_CONFIG: its configuration, default
// ScatterHeapConfig) through the host class, as the peers benchmark
// composes it, in loop.cuh's sequence. Built against the header tree
// .carry/ncu/NAME (run.sh).
#include "manyalloc/heap/heap.hpp"
#include "manyalloc/heap/creation/scatter.hpp"
#include <memory>
#include <utility>
#include "loop.cuh"
#ifndef PROBE_CONFIG
#define PROBE_CONFIG manyalloc::heap::CreationPolicies::ScatterHeapConfig
#endif
namespace ma = manyalloc;
using Heap = ma::heap::Allocator<ma::heap::CreationPolicies::Scatter<PROBE_CONFIG>, ma::heap::DistributionPolicies::NoOp,
                                 ma::heap::OOMPolicies::ReturnNull, ma::heap::ReservePoolPolicies::CudaMalloc,
                                 ma::heap::AlignmentPolicies::Shrink<16>>;
template <class Handle> struct Adapter {
  Handle h;
  __device__ void* alloc(unsigned bytes) const { ma::heap::acc::CudaThread a; return h.alloc(a, bytes); }
  __device__ void free(void* p) const { ma::heap::acc::CudaThread a; h.dealloc(a, p); }
};
struct Holder {
  Heap heap{size_t{16} << 30};
  Adapter<decltype(std::declval<Heap&>().handle())> adapter() { return {heap.handle()}; }
};
int main(int argc, char** argv) { return probe_main([] { return std::make_unique<Holder>(); }, argc, argv); }
