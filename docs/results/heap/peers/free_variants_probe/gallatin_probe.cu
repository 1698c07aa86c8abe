// Probe: Gallatin alloc and free launches, same sequence as free_variants.cu.
#include <gallatin/allocators/gallatin.cuh>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <string>
#include "../probe_kernels.cuh"
using G = gallatin::allocators::Gallatin<16ULL * 1024 * 1024, 16ULL, 4096ULL>;
__global__ void alloc_k(G* g, void** p, unsigned n, unsigned bytes) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = g->malloc(probe_size(i, bytes)); }
__global__ void free_k(G* g, void** p, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n && p[i]) g->free(p[i]); }
int main(int argc, char** argv) {
  void** p; cudaMalloc(&p, (1u << 20) * sizeof(void*));
  const size_t flush_words = size_t{256} << 18;
  unsigned* fl; cudaMalloc(&fl, flush_words * 4);
  G* g = G::generate_on_device(size_t{16} << 30, 42, false); cudaDeviceSynchronize();
  for (unsigned n : {1u << 17, 1u << 20}) for (unsigned bytes : {16u, 1024u, 4096u, 8192u, 0u}) {
    if (bytes == 8192u) continue;  // above Gallatin's largest slice: its large path
    std::vector<float> a, f;
    for (int rep = 0; rep < 12; ++rep) {
      float ta = timed([&] { alloc_k<<<n / 256, 256>>>(g, p, n, bytes); });
      flush_k<<<unsigned(flush_words / 256), 256>>>(fl, flush_words);
      float tf = timed([&] { free_k<<<n / 256, 256>>>(g, p, n); });
      if (rep > 0) { a.push_back(ta); f.push_back(tf); }
    }
    std::sort(a.begin(), a.end()); std::sort(f.begin(), f.end());
    std::printf("%s n=%7u %5s alloc %7.1f us (%5.2f G/s) free %6.1f us (%5.2f G/s) %s\n", argc > 1 ? argv[1] : "", n,
                bytes ? std::to_string(bytes).c_str() : "mixed", a[5], n / a[5] / 1e3, f[5], n / f[5] / 1e3,
                cudaGetErrorString(cudaGetLastError()));
  }
}
