// Probe: SizeClassSlabs alloc/free at 2^17 threads, one size per series, many launches.
#include <cstdio>
#include <vector>
#include <algorithm>
#include "manyalloc/heap/heap.hpp"
#include "manyalloc/heap/creation/size_class_slabs.hpp"
namespace ma = manyalloc;
namespace cp = ma::heap::CreationPolicies;
using Heap = ma::heap::Allocator<cp::SizeClassSlabs<>, ma::heap::DistributionPolicies::NoOp,
    ma::heap::OOMPolicies::ReturnNull, ma::heap::ReservePoolPolicies::CudaMalloc, ma::heap::AlignmentPolicies::Shrink<16>>;
#define CK(x) manyalloc::heap::acc::cuda_check((x), #x)
template <class H> __global__ void alloc_k(H h, void** p, unsigned n, unsigned bytes) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { ma::heap::acc::CudaThread a; p[i] = h.alloc(a, bytes); } }
template <class H> __global__ void free_k(H h, void** p, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { ma::heap::acc::CudaThread a; h.dealloc(a, p[i]); } }
template <class F> float timed(F f) { cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); cudaEventRecord(a); f(); cudaEventRecord(b);
  CK(cudaEventSynchronize(b)); float ms; cudaEventElapsedTime(&ms, a, b); cudaEventDestroy(a); cudaEventDestroy(b); CK(cudaGetLastError()); return ms * 1000; }
int main() {
  void** p; CK(cudaMalloc(&p, (1u << 20) * sizeof(void*)));
  Heap heap(size_t{16} << 30); auto h = heap.handle();
  cudaFuncAttributes at; CK(cudaFuncGetAttributes(&at, alloc_k<decltype(h)>)); std::printf("alloc kernel regs %d\n", at.numRegs);
  for (unsigned n : {1u << 17, 1u << 20}) for (unsigned bytes : {256u, 4096u, 8192u}) {
    std::vector<float> a, f;
    for (int rep = 0; rep < 21; ++rep) { a.push_back(timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, bytes); })); f.push_back(timed([&] { free_k<<<n / 256, 256>>>(h, p, n); })); }
    std::sort(a.begin(), a.end()); std::sort(f.begin(), f.end());
    std::printf("n=%7u %5u B alloc %6.1f us (%5.2f G/s) free %6.1f us\n", n, bytes, a[10], n / a[10] / 1e3, f[10]);
  }
}
