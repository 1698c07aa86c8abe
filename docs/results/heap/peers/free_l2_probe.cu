// Probe: SizeClassSlabs alloc and free launches with L2 flushed before each
// (as in the peers benchmark, which writes and verifies every chunk).
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
__global__ void flush_k(uint4* b, size_t n, unsigned v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) b[i] = make_uint4(v, v, v, v); }
template <class F> float timed(F f) { cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); cudaEventRecord(a); f(); cudaEventRecord(b);
  CK(cudaEventSynchronize(b)); float ms; cudaEventElapsedTime(&ms, a, b); cudaEventDestroy(a); cudaEventDestroy(b); CK(cudaGetLastError()); return ms * 1000; }
int main() {
  const unsigned n = 1u << 20;
  void** p; CK(cudaMalloc(&p, n * sizeof(void*)));
  uint4* buf; const size_t fb = size_t{256} << 20; CK(cudaMalloc(&buf, fb));
  auto flush = [&] { flush_k<<<1024, 256>>>(buf, fb / 16, 7u); CK(cudaDeviceSynchronize()); };
  Heap heap(size_t{16} << 30); auto h = heap.handle();
  for (unsigned bytes : {256u, 1024u, 4096u, 8192u}) {
    std::vector<float> a, f, aw, fw;
    for (int rep = 0; rep < 7; ++rep) {
      flush(); a.push_back(timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, bytes); }));
      flush(); f.push_back(timed([&] { free_k<<<n / 256, 256>>>(h, p, n); }));
      aw.push_back(timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, bytes); }));
      fw.push_back(timed([&] { free_k<<<n / 256, 256>>>(h, p, n); }));
    }
    auto med = [](std::vector<float> v) { v.erase(v.begin()); std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
    std::printf("%5u B  L2-flushed: alloc %7.1f us (%5.1f G/s) free %7.1f us (%5.1f G/s) | L2-warm: alloc %6.1f free %6.1f us (%5.1f G/s)\n", bytes,
                med(a), n / med(a) / 1e3, med(f), n / med(f) / 1e3, med(aw), med(fw), n / med(fw) / 1e3);
  }
  auto st = heap.creation().statistics<ma::heap::acc::Cuda>();
  std::printf("misuse %u in_use %u\n", st.misuse_reports, st.pages_in_use);
}
