// Probe (slow_start_probe/README.md): cold and warm launches of SizeClassSlabs
// (default and FineClasses) at 2^17 and 2^20 threads, one size per series or
// mixed 16 B-4 KiB. Cold = median of the first alloc launch on three fresh
// 16 GiB heaps; warm = median of five alloc launches after it (each followed
// by a free launch) on the last heap; free = median of those five frees.
// Built against one header tree by run_probe.sh.
#include "../probe_common.cuh"
template <class C> void series(const char* name, unsigned n, unsigned bytes, void** p) {
  std::vector<float> cold, warm, fr;
  unsigned open = 0;
  for (int rep = 0; rep < 3; ++rep) {
    ProbeHeap<C> heap(size_t{16} << 30);
    auto h = heap.handle();
    cold.push_back(timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, bytes); }));
    open = heap.creation().template statistics<ma::heap::acc::Cuda>().open_pages;
    timed([&] { free_k<<<n / 256, 256>>>(h, p, n); });
    if (rep < 2) continue;
    for (int i = 0; i < 5; ++i) {
      warm.push_back(timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, bytes); }));
      fr.push_back(timed([&] { free_k<<<n / 256, 256>>>(h, p, n); }));
    }
  }
  std::sort(cold.begin(), cold.end()); std::sort(warm.begin(), warm.end()); std::sort(fr.begin(), fr.end());
  std::printf("%-8s n=2^%-2d %5s cold %8.1f us  warm %7.1f us  cold/warm %5.2f  free %7.1f us  open pages after cold %u\n",
              name, n == (1u << 17) ? 17 : 20, bytes ? std::to_string(bytes).c_str() : "mixed", cold[1], warm[2],
              cold[1] / warm[2], fr[2], open);
}
// FineClasses with a quarter of the shards per class (the same shards per
// doubling of sizes as 32 for the default's 2 classes per doubling would be 8).
struct FineQuarterShards : cp::FineSizeClassesConfig {
  static constexpr std::uint32_t max_shards = 32;
};
int main() {
  void** p; CK(cudaMalloc(&p, (1u << 20) * sizeof(void*)));
  busy_k<<<1, 1>>>(40000000); CK(cudaDeviceSynchronize());
  for (unsigned n : {1u << 17, 1u << 20})
    for (unsigned bytes : {16u, 256u, 1024u, 4096u, 8192u, 0u}) {
      series<cp::SizeClassSlabs<>>("default", n, bytes, p);
      series<cp::SizeClassSlabs<cp::FineSizeClassesConfig>>("fine", n, bytes, p);
      series<cp::SizeClassSlabs<FineQuarterShards>>("fine/32", n, bytes, p);
    }
  cudaFree(p);
}
