// Probe (cold_launch_probe/README.md): first mixed launch of SizeClassSlabs (default and
// FineClasses) on a fresh heap; built and run by run_mixed.sh. Against headers
// instrumented by add_counters.py it also prints the refill counters after the
// cold launch and after one warm launch.
#include "../probe_common.cuh"
#ifdef PROBE
void counters(const char* when, bool reset) {
  unsigned long long c[16] = {};
  if (!reset) {
    CK(cudaMemcpyFromSymbol(c, ma::heap::detail::slabs::probe_counters, sizeof c));
    std::printf("  %s counters:", when); for (int i = 0; i < 10; ++i) std::printf(" %llu", c[i]); std::printf("\n");
  }
  static const unsigned long long zero[16] = {};
  CK(cudaMemcpyToSymbol(ma::heap::detail::slabs::probe_counters, zero, sizeof zero));
}
#else
void counters(const char*, bool) {}
#endif
template <class C> void run(const char* name, unsigned n) {
  void** p; CK(cudaMalloc(&p, n * sizeof(void*)));
  for (int rep = 0; rep < 2; ++rep) {
    ProbeHeap<C> heap(size_t{16} << 30); auto h = heap.handle();
    cudaFuncAttributes at; CK(cudaFuncGetAttributes(&at, alloc_k<decltype(h)>)); CK(cudaFuncGetAttributes(&at, free_k<decltype(h)>));
    counters("", true);
    float cold = timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, 0); });
    counters("cold", false);
    auto st = heap.creation().template statistics<ma::heap::acc::Cuda>();
    timed([&] { free_k<<<n / 256, 256>>>(h, p, n); });
    std::vector<float> w; for (int i = 0; i < 5; ++i) { w.push_back(timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, 0); })); timed([&] { free_k<<<n / 256, 256>>>(h, p, n); }); }
    counters("", true);
    timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, 0); });
    counters("warm", false);
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
