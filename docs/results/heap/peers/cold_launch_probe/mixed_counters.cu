// Probe (cold_launch_probe/README.md): first mixed launch of SizeClassSlabs (default and
// FineClasses) on a fresh heap; built and run by run_mixed.sh.
#include <cstdio>
#include <vector>
#include <algorithm>
#include "manyalloc/heap/heap.hpp"
#include "manyalloc/heap/creation/size_class_slabs.hpp"
namespace ma = manyalloc;
namespace cp = ma::heap::CreationPolicies;
template <class C> using Heap = ma::heap::Allocator<C, ma::heap::DistributionPolicies::NoOp,
    ma::heap::OOMPolicies::ReturnNull, ma::heap::ReservePoolPolicies::CudaMalloc, ma::heap::AlignmentPolicies::Shrink<16>>;
// CUDA errors: the back end's check (throws with the call named).
#define CK(x) manyalloc::heap::acc::cuda_check((x), #x)
__device__ unsigned size_of(unsigned i) { unsigned x = i * 2654435761u; x ^= x >> 15; x *= 2246822519u; x ^= x >> 13; return 16 + x % 4081; }
template <class H> __global__ void alloc_k(H h, void** p, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { ma::heap::acc::CudaThread a; p[i] = h.alloc(a, size_of(i)); } }
template <class H> __global__ void free_k(H h, void** p, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { ma::heap::acc::CudaThread a; h.dealloc(a, p[i]); } }
template <class F> float timed(F f) { cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); cudaEventRecord(a); f(); cudaEventRecord(b);
  CK(cudaEventSynchronize(b)); float ms; cudaEventElapsedTime(&ms, a, b); cudaEventDestroy(a); cudaEventDestroy(b); CK(cudaGetLastError()); return ms * 1000; }
template <class C> void run(const char* name, unsigned n) {
  void** p; CK(cudaMalloc(&p, n * sizeof(void*)));
  for (int rep = 0; rep < 2; ++rep) {
    Heap<C> heap(size_t{16} << 30); auto h = heap.handle();
    cudaFuncAttributes at; CK(cudaFuncGetAttributes(&at, alloc_k<decltype(h)>)); CK(cudaFuncGetAttributes(&at, free_k<decltype(h)>));
    unsigned long long z[16] = {}, c[16];
    CK(cudaMemcpyToSymbol(ma::heap::detail::slabs::probe_counters, z, sizeof z));
    float cold = timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n); });
    CK(cudaMemcpyFromSymbol(c, ma::heap::detail::slabs::probe_counters, sizeof c));
    std::printf("  cold counters:"); for (int i = 0; i < 10; ++i) std::printf(" %llu", c[i]); std::printf("\n");
    auto st = heap.creation().template statistics<ma::heap::acc::Cuda>();
    timed([&] { free_k<<<n / 256, 256>>>(h, p, n); });
    std::vector<float> w; for (int i = 0; i < 5; ++i) { w.push_back(timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n); })); timed([&] { free_k<<<n / 256, 256>>>(h, p, n); }); }
    CK(cudaMemcpyToSymbol(ma::heap::detail::slabs::probe_counters, z, sizeof z));
    timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n); });
    CK(cudaMemcpyFromSymbol(c, ma::heap::detail::slabs::probe_counters, sizeof c));
    std::printf("  warm counters:"); for (int i = 0; i < 10; ++i) std::printf(" %llu", c[i]); std::printf("\n");
    timed([&] { free_k<<<n / 256, 256>>>(h, p, n); });
    std::sort(w.begin(), w.end());
    std::printf("%-12s n=%7u cold %8.1f us warm %7.1f us ratio %6.2f | after cold: open %u budget %u dry %u in_use %u\n", name, n, cold, w[2], cold / w[2], st.open_pages, st.open_budget, st.dry_refills, st.pages_in_use);
  }
  cudaFree(p);
}
int main() {
  run<cp::SizeClassSlabs<>>("default", 1u << 20);
  run<cp::SizeClassSlabs<cp::FineSizeClassesConfig>>("fine", 1u << 20);
  run<cp::SizeClassSlabs<cp::FineSizeClassesConfig>>("fine", 1u << 17);
}
