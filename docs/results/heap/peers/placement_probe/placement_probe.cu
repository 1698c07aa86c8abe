// Probe (placement_probe/README.md): what a placement of SizeClassSlabs'
// small runs (slabs/invariants.hpp P4) costs the alloc and free launches,
// and whether one 1 GiB request still fits beside the chunks. For the
// default configuration at 2^17 and 2^20 threads, one size per series or
// mixed 16 B-4 KiB: cold = median of the first alloc launch on three fresh
// 16 GiB heaps; warm = median of five alloc launches after it (each
// followed by a free launch) on the last heap; free = median of those
// frees; then one more alloc launch whose chunks stay live, and one thread
// asks for 1 GiB beside them. Built against one header tree by run.sh. The
// one-thread kernels are launched once before the series (a kernel's first
// launch in a process loads it, which the first series would time; README).
#include "../probe_common.cuh"
#include <string>

void series(const char* tree, unsigned n, unsigned bytes, void** p, void** slot) {
  std::vector<float> cold, warm, fr;
  float large_us = 0;
  void* large = nullptr;
  for (int rep = 0; rep < 3; ++rep) {
    Heap heap(size_t{16} << 30);
    auto h = heap.handle();
    cold.push_back(timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, bytes); }));
    timed([&] { free_k<<<n / 256, 256>>>(h, p, n); });
    if (rep < 2) continue;
    for (int i = 0; i < 5; ++i) {
      warm.push_back(timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, bytes); }));
      fr.push_back(timed([&] { free_k<<<n / 256, 256>>>(h, p, n); }));
    }
    alloc_k<<<n / 256, 256>>>(h, p, n, bytes);
    large_us = timed([&] { one_alloc_k<<<1, 1>>>(h, slot, size_t{1} << 30); });
    CK(cudaMemcpy(&large, slot, sizeof large, cudaMemcpyDeviceToHost));
    if (large != nullptr) one_free_k<<<1, 1>>>(h, slot);
    free_k<<<n / 256, 256>>>(h, p, n);
    CK(cudaDeviceSynchronize());
  }
  std::sort(cold.begin(), cold.end()); std::sort(warm.begin(), warm.end()); std::sort(fr.begin(), fr.end());
  std::printf("%-8s n=2^%-2d %5s cold %8.1f us  warm %7.1f us  free %7.1f us  1 GiB beside them: %s in %.1f us\n", tree,
              n == (1u << 17) ? 17 : 20, bytes ? std::to_string(bytes).c_str() : "mixed", cold[1], warm[2], fr[2],
              large ? "served" : "FAILED", large_us);
}
int main(int argc, char** argv) {
  const char* tree = argc > 1 ? argv[1] : "?";
  void** p; CK(cudaMalloc(&p, (1u << 20) * sizeof(void*)));
  void** slot; CK(cudaMalloc(&slot, sizeof(void*)));
  busy_k<<<1, 1>>>(40000000); CK(cudaDeviceSynchronize());
  {  // the one-thread kernels' first launch loads them (lazy loading): not in a timed series
    Heap heap(size_t{1} << 30);
    one_alloc_k<<<1, 1>>>(heap.handle(), slot, size_t{1} << 20);
    one_free_k<<<1, 1>>>(heap.handle(), slot);
    CK(cudaDeviceSynchronize());
  }
  for (unsigned n : {1u << 17, 1u << 20})
    for (unsigned bytes : {16u, 1024u, 4096u, 8192u, 0u}) series(tree, n, bytes, p, slot);
  cudaFree(slot);
  cudaFree(p);
}
