// What every heap probe under docs/results/heap/peers shares and that needs
// none of our headers (so that probes of the peers, compiled as C++17
// against their own headers, use it too): a CUDA error check, the request
// sizes, the L2 flush and a launch timer. probe_common.cuh adds our heap.
#pragma once
#include <cstdio>
#include <cstdlib>
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
// Microseconds from one event before f() to one after it.
template <class F> float timed(F f) { cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); cudaEventRecord(a); f(); cudaEventRecord(b);
  probe_check(cudaEventSynchronize(b), "launch"); float ms; cudaEventElapsedTime(&ms, a, b); cudaEventDestroy(a); cudaEventDestroy(b);
  probe_check(cudaGetLastError(), "launch"); return ms * 1000; }
