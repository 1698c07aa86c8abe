// What every heap probe under docs/results/heap/peers shares and that needs
// none of our headers (so that probes of the peers, compiled as C++17
// against their own headers, use it too): a CUDA error check, the request
// sizes, the L2 flush, a count of failed requests, a launch timer, a clock
// warm-up and the median of timings. probe_common.cuh adds our heap.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
// Names the call and exits on a CUDA error.
inline void probe_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e)); std::exit(1); }
}
// Request sizes: one size for every thread, or (bytes == 0) 16 B-4 KiB by a hash of the index.
__device__ inline unsigned probe_size(unsigned i, unsigned bytes) {
  if (bytes != 0) return bytes;
  unsigned x = i * 2654435761u; x ^= x >> 15; x *= 2246822519u; x ^= x >> 13; return 16 + x % 4081; }
// Writes n words: with 256 MB, the heaps' metadata leaves the L2.
__global__ void flush_k(unsigned* buf, size_t n) { size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; if (i < n) buf[i] = unsigned(i); }
// Counts the null pointers among p[0..n) into *count: the requests that failed.
__global__ void nulls_k(void* const* p, unsigned n, unsigned* count) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n && p[i] == nullptr) atomicAdd(count, 1u); }
// Spins one thread for `cycles` clocks: run first, so that the GPU's clocks
// are up before the first timed launch.
__global__ void busy_k(long long cycles) { long long t = clock64(); while (clock64() - t < cycles) {} }
// The median (the upper one of an even count) of timings.
inline float probe_median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
// Microseconds from one event before f() to one after it.
template <class F> float timed(F f) { cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); cudaEventRecord(a); f(); cudaEventRecord(b);
  probe_check(cudaEventSynchronize(b), "launch"); float ms; cudaEventElapsedTime(&ms, a, b); cudaEventDestroy(a); cudaEventDestroy(b);
  probe_check(cudaGetLastError(), "launch"); return ms * 1000; }
