// Probe: size-class granularity (classes_per_doubling) vs mixed usable share and alloc/free rates.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <memory>
#include "manyalloc/heap/heap.hpp"
namespace mh = manyalloc::heap;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); std::exit(1);} } while (0)
template <unsigned D, unsigned Shards = 128> struct Cfg : mh::CreationPolicies::SizeClassSlabsConfig {
  static constexpr std::uint32_t classes_per_doubling = D;
  static constexpr std::uint32_t max_shards = Shards;
};
template <class C> using H = mh::Allocator<mh::CreationPolicies::SizeClassSlabs<C>, mh::DistributionPolicies::NoOp,
  mh::OOMPolicies::ReturnNull, mh::ReservePoolPolicies::CudaMalloc, mh::AlignmentPolicies::Shrink<16>>;
__host__ __device__ inline unsigned hsh(unsigned x, unsigned s) { x ^= s * 0x9e3779b9u; x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16; return x; }
__device__ inline unsigned size_of(unsigned long long i, unsigned fixed, unsigned salt) { return fixed ? fixed : 16u + hsh((unsigned)i, salt) % 4081u; }
template <class Hd> __global__ void ak(Hd h, void** p, unsigned long long n, unsigned long long base, unsigned fixed, unsigned salt, unsigned long long* bytes) {
  unsigned long long i = blockIdx.x * 256ull + threadIdx.x; if (i >= n) return;
  const mh::acc::CudaThread acc; unsigned s = size_of(base + i, fixed, salt); void* q = h.alloc(acc, s); p[i] = q;
  if (q) { static_cast<unsigned*>(q)[0] = s; if (bytes) atomicAdd(bytes, (unsigned long long)s); }
}
template <class Hd> __global__ void fk(Hd h, void** p, unsigned long long n) {
  unsigned long long i = blockIdx.x * 256ull + threadIdx.x; if (i >= n) return;
  const mh::acc::CudaThread acc; h.dealloc(acc, p[i]);
}
__global__ void nulls(void** p, unsigned long long n, unsigned long long* c) { unsigned long long i = blockIdx.x * 256ull + threadIdx.x; if (i < n && !p[i]) atomicAdd(c, 1ull); }
template <class C> void run(const char* name) {
  using Heap = H<C>;
  unsigned long long* dbytes; CK(cudaMalloc(&dbytes, 16));
  // usable share: 2 GiB pool, waves of 2^20 mixed until a wave fails
  { const size_t pool = size_t{2} << 30; Heap heap(pool); auto h = heap.handle();
    const unsigned long long wave = 1ull << 20, cap = 8ull << 20; void** p; CK(cudaMalloc(&p, cap * 8));
    CK(cudaMemset(dbytes, 0, 16)); unsigned long long n = 0, nn = 0;
    for (int w = 0; w < 8; ++w) { ak<<<(wave + 255) / 256, 256>>>(h, p + n, wave, n, 0, 7, dbytes); CK(cudaDeviceSynchronize());
      nulls<<<(wave + 255) / 256, 256>>>(p + n, wave, dbytes + 1); CK(cudaDeviceSynchronize()); n += wave;
      unsigned long long hb[2]; CK(cudaMemcpy(hb, dbytes, 16, cudaMemcpyDeviceToHost)); if (hb[1]) { nn = hb[1]; break; } }
    unsigned long long hb[2]; CK(cudaMemcpy(hb, dbytes, 16, cudaMemcpyDeviceToHost));
    std::printf("%-12s usable mixed %.4f (%llu failed of %llu) classes=%u\n", name, double(hb[0]) / double(pool), nn, n, Heap::CreationPolicy::class_count);
    CK(cudaFree(p)); }
  // throughput
  const size_t pool = size_t{16} << 30; 
  for (unsigned long long t : {1ull << 17, 1ull << 20}) for (unsigned fixed : {0u, 16u, 256u, 4096u}) {
    Heap heap(pool); auto h = heap.handle(); void** p; CK(cudaMalloc(&p, t * 8)); cudaEvent_t a, b, c; cudaEventCreate(&a); cudaEventCreate(&b); cudaEventCreate(&c);
    std::vector<float> ta, tf; float cold = 0;
    for (int r = 0; r < 7; ++r) { cudaEventRecord(a); ak<<<(t + 255) / 256, 256>>>(h, p, t, 0, fixed, r, nullptr); cudaEventRecord(b); fk<<<(t + 255) / 256, 256>>>(h, p, t); cudaEventRecord(c); CK(cudaEventSynchronize(c));
      float x, y; cudaEventElapsedTime(&x, a, b); cudaEventElapsedTime(&y, b, c); if (r == 0) cold = x; else { ta.push_back(x); tf.push_back(y); } }
    std::sort(ta.begin(), ta.end()); std::sort(tf.begin(), tf.end());
    std::printf("%-12s t=%7llu size=%5s alloc %7.2f G/s free %7.2f G/s cold/warm %.2f\n", name, t, fixed ? std::to_string(fixed).c_str() : "mixed", t / ta[3] / 1e6, t / tf[3] / 1e6, cold / ta[3]);
    CK(cudaFree(p)); }
  CK(cudaFree(dbytes));
}
int main() {
  run<Cfg<2>>("D2");
  run<Cfg<16>>("D16");
  run<Cfg<32>>("D32");
  run<Cfg<64>>("D64");
  run<Cfg<8>>("D8");
  run<Cfg<16>>("D16again");
  run<Cfg<2>>("D2again");
  return 0;
}
