// Probe: SizeClassSlabs alloc and free launches, L2 flushed between alloc and
// free (as after the peers benchmark's check pass); medians of 11 launches.
// PROBE_CONFIG names another SizeClassSlabs configuration; PROBE_HEAP_TYPE
// another heap altogether, and PROBE_SKIP_8K leaves 8 KiB out
// (../quotient_probe/scatter_variants.cu).
#include "../probe_common.cuh"
int main(int argc, char** argv) {
  void** p; CK(cudaMalloc(&p, (1u << 20) * sizeof(void*)));
  const size_t flush_words = size_t{256} << 18;  // 256 MB
  unsigned* fl; CK(cudaMalloc(&fl, flush_words * 4));
#if defined(PROBE_HEAP_TYPE)
  PROBE_HEAP_TYPE heap(size_t{16} << 30);
#elif defined(PROBE_CONFIG)
  ProbeHeap<cp::SizeClassSlabs<PROBE_CONFIG>> heap(size_t{16} << 30);
#else
  Heap heap(size_t{16} << 30);
#endif
  auto h = heap.handle();
  for (unsigned n : {1u << 17, 1u << 20}) for (unsigned bytes : {16u, 1024u, 4096u, 8192u, 0u}) {
#ifdef PROBE_SKIP_8K
    if (bytes == 8192u) continue;
#endif
    std::vector<float> a, f;
    for (int rep = 0; rep < 12; ++rep) {
      float ta = timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, bytes); });
      flush_k<<<unsigned(flush_words / 256), 256>>>(fl, flush_words);
      float tf = timed([&] { free_k<<<n / 256, 256>>>(h, p, n); });
      if (rep > 0) { a.push_back(ta); f.push_back(tf); }
    }
    std::sort(a.begin(), a.end()); std::sort(f.begin(), f.end());
    std::printf("%s n=%7u %5s alloc %7.1f us (%5.2f G/s) free %6.1f us (%5.2f G/s)\n", argc > 1 ? argv[1] : "", n,
                bytes ? std::to_string(bytes).c_str() : "mixed", a[5], n / a[5] / 1e3, f[5], n / f[5] / 1e3);
  }
}
