// Probe (cold_launch_probe/README.md): SizeClassSlabs alloc/free at 2^17 and 2^20
// threads, one size per series, medians of 21 launches, and the alloc kernel's registers.
#include "../probe_common.cuh"
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
