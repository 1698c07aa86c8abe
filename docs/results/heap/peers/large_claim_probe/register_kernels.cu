// Two kernels that allocate and free on the default SizeClassSlabs heap, compiled only to read their
// register counts (ptxas_registers.txt): nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr
// -I<tree>/heap/include -I<tree>/common/include -I<generated> -c register_kernels.cu --resource-usage
#include <manyalloc/heap/heap.hpp>
using namespace manyalloc::heap;
using Heap = Allocator<CreationPolicies::SizeClassSlabs<>, DistributionPolicies::NoOp, OOMPolicies::ReturnNull,
                       ReservePoolPolicies::CudaMalloc, AlignmentPolicies::Shrink<16>>;
__global__ void alloc_k(Heap::Handle h, void** out, std::size_t bytes) {
  acc::CudaThread acc;
  const auto i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = h.alloc(acc, bytes);
}
__global__ void free_k(Heap::Handle h, void** out) {
  acc::CudaThread acc;
  const auto i = blockIdx.x * blockDim.x + threadIdx.x;
  h.dealloc(acc, out[i]);
}
