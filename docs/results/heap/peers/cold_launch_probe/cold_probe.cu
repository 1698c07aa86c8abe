// Probe (docs/results/heap/peers/cold_launch_probe/README.md): the cold launch of
// SizeClassSlabs at 2^17 threads after four kinds of preparation, and a roofline.
// Probe: where does the first launch on a fresh SizeClassSlabs heap spend its time?
#include "../probe_common.cuh"
__global__ void empty_k() {}
__global__ void touch_k(const unsigned* p, size_t words, unsigned* sink) {
  unsigned s = 0; for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x * 8) s += p[i];
  if (s == 12345u) *sink = s; }
__global__ void roof_k(unsigned* base, size_t words, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n || (threadIdx.x & 31)) return;
  size_t w = ((size_t)(i / 32) * 2654435761ull) % (words / 32) * 32; atomicAdd(base + w, 1u); }
int main() {
  const unsigned n = 131072, tb = 256, g = n / tb; void** p; CK(cudaMalloc(&p, n * sizeof(void*))); unsigned* sink; CK(cudaMalloc(&sink, 4));
  empty_k<<<1,1>>>(); CK(cudaDeviceSynchronize());
  for (int rep = 0; rep < 2; ++rep)
  for (unsigned bytes : {16u, 1024u, 8192u})
  for (int variant = 0; variant < 4; ++variant) {
    Heap heap(size_t{16} << 30); auto h = heap.handle(); const auto& l = heap.creation().layout();
    cudaFuncAttributes at; CK(cudaFuncGetAttributes(&at, alloc_k<decltype(h)>)); CK(cudaFuncGetAttributes(&at, free_k<decltype(h)>));
    CK(cudaDeviceSynchronize());
    float pre = 0;
    if (variant == 1) pre = timed([&] { empty_k<<<1, 1>>>(); });
    if (variant == 2) { // hot metadata: shared, slots, page table
      size_t words = ((const char*)l.chunk_bits - (const char*)l.shared) / 4; pre = timed([&] { touch_k<<<1024, 256>>>((const unsigned*)l.shared, words, sink); }); }
    if (variant == 3) { // all metadata
      size_t words = l.metadata_bytes / 4; pre = timed([&] { touch_k<<<1024, 256>>>((const unsigned*)l.shared, words, sink); }); }
    float cold = timed([&] { alloc_k<<<g, tb>>>(h, p, n, bytes); });
    float coldf = timed([&] { free_k<<<g, tb>>>(h, p, n); });
    std::vector<float> w, wf;
    for (int i = 0; i < 5; ++i) { w.push_back(timed([&] { alloc_k<<<g, tb>>>(h, p, n, bytes); })); wf.push_back(timed([&] { free_k<<<g, tb>>>(h, p, n); })); }
    std::sort(w.begin(), w.end()); std::sort(wf.begin(), wf.end());
    std::printf("rep %d bytes %5u variant %d (pre %.1f us): cold %.1f us warm %.1f us ratio %.2f | free cold %.1f warm %.1f\n", rep, bytes, variant, pre, cold, w[2], cold / w[2], coldf, wf[2]);
  }
  // roofline: one atomic per warp at hashed words of a freshly memset 160 MB region of a fresh 16 GiB allocation
  for (int rep = 0; rep < 3; ++rep) {
    unsigned* big; CK(cudaMalloc(&big, size_t{16} << 30)); size_t words = (size_t{160} << 20) / 4; CK(cudaMemset(big, 0, words * 4)); CK(cudaDeviceSynchronize());
    float c = timed([&] { roof_k<<<g, tb>>>(big, words, n); });
    std::vector<float> w; for (int i = 0; i < 5; ++i) w.push_back(timed([&] { roof_k<<<g, tb>>>(big, words, n); }));
    std::sort(w.begin(), w.end());
    std::printf("roofline: one atomic per warp, fresh memset region: first %.1f us, then %.1f us, ratio %.2f\n", c, w[2], c / w[2]);
    CK(cudaFree(big));
  }
}
