// One request of 1 GiB on the SizeClassSlabs heap (issue 15's "one 1 GiB
// request" row): the alloc and the free launch of one thread, timed one by
// one, on a fresh 16 GiB heap (the peers benchmark's pool) and on one whose
// pool holds the slabs of 2^17 small requests spread over it. Built against
// a header tree whose page pool takes words `batch` CAS at a time (run.sh).
#include "../probe_common.cuh"
#include <cstdint>
#include <vector>

// `rounds` alloc/free pairs of one 1 GiB request; prints the cold (first)
// alloc and the medians, minima and maxima of the rest.
static void series(const char* tag, const char* state, Heap& heap, void** slot, int rounds) {
  std::vector<float> a, f;
  unsigned nulls = 0;
  for (int r = 0; r < rounds; ++r) {
    a.push_back(timed([&] { one_alloc_k<<<1, 1>>>(heap.handle(), slot, size_t{1} << 30); }));
    void* got = nullptr;
    CK(cudaMemcpy(&got, slot, sizeof got, cudaMemcpyDeviceToHost));
    if (got == nullptr) ++nulls;
    f.push_back(timed([&] { one_free_k<<<1, 1>>>(heap.handle(), slot); }));
  }
  const float cold = a[0];
  std::vector<float> warm_a(a.begin() + 1, a.end());
  std::printf("%-6s %-12s alloc cold %6.1f us, warm median %6.1f (min %6.1f, max %6.1f); free median %6.1f (min %6.1f, max %6.1f) us; failed %u of %d\n",
              tag, state, cold, probe_median(warm_a), *std::min_element(warm_a.begin(), warm_a.end()),
              *std::max_element(warm_a.begin(), warm_a.end()), probe_median(f), *std::min_element(f.begin(), f.end()),
              *std::max_element(f.begin(), f.end()), nulls, rounds);
}

int main(int argc, char** argv) {
  const char* tag = argc > 1 ? argv[1] : "?";
  void** slot;
  CK(cudaMalloc(&slot, sizeof(void*)));
  {
    Heap heap(size_t{16} << 30);
    series(tag, "fresh", heap, slot, 21);
  }
  {
    // 2^17 requests of 16 B-4 KiB leave slabs of every class in the pool.
    Heap heap(size_t{16} << 30);
    const unsigned n = 1u << 17;
    void** p;
    CK(cudaMalloc(&p, n * sizeof(void*)));
    alloc_k<<<n / 256, 256>>>(heap.handle(), p, n, 0u);
    CK(cudaDeviceSynchronize());
    series(tag, "with_slabs", heap, slot, 21);
    free_k<<<n / 256, 256>>>(heap.handle(), p, n);
    CK(cudaDeviceSynchronize());
    CK(cudaFree(p));
  }
  CK(cudaFree(slot));
}
