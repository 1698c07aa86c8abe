// Probe (README.md, free path): SizeClassSlabs alloc and free launches with L2
// flushed before each (as in the peers benchmark, which writes and verifies
// every chunk), beside the same launches with L2 warm.
#include "probe_common.cuh"
__global__ void flush_k(uint4* b, size_t n, unsigned v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) b[i] = make_uint4(v, v, v, v); }
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
