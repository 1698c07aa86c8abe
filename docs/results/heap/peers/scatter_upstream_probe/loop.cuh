// The probe loop shared by ours.cu (C++20, our headers) and upstream.cu
// (C++17, alpaka and mallocMC): alloc and free launches of n threads, one
// request each, L2 flushed between them; medians of 11 launches after one.
// Mode `cold` (probe_cold) times only first launches, each on a fresh heap.
// An adapter H has __device__ void* alloc(unsigned bytes) const and
// __device__ void free(void*) const. Sizes: 16, 64, 256, 1024, 4096 B and
// mixed (0: 16 B-4 KiB by a hash of the thread index).
#pragma once
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>
#include "../probe_kernels.cuh"
#define CK(x) probe_check((x), #x)
template <class H> __global__ void alloc_k(H h, void** p, unsigned n, unsigned bytes) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = h.alloc(probe_size(i, bytes)); }
template <class H> __global__ void free_k(H h, void** p, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) h.free(p[i]); }
// What the peers benchmark's check does between the launches
// (heap/bench/peers/verify.cu): every chunk written and read back, device
// arrays allocated and freed around kernels of their own, a synchronize.
__global__ void touch_k(void* const* p, unsigned n, unsigned bytes, unsigned* bad) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n || p[i] == nullptr) return;
  volatile unsigned* w = static_cast<unsigned*>(p[i]); const unsigned last = (probe_size(i, bytes) - 4u) / 4u;
  w[0] = i; w[last] = ~i; if (w[0] != i || w[last] != ~i) atomicAdd(bad, 1u); }
__global__ void keys_k(void* const* p, unsigned n, unsigned long long* keys) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) keys[i] = reinterpret_cast<unsigned long long>(p[i]); }
inline void verify_like(void* const* p, unsigned n, unsigned bytes, unsigned* bad) {
  touch_k<<<n / 256, 256>>>(p, n, bytes, bad);
  unsigned long long *keys, *more; CK(cudaMalloc(&keys, n * 8ull)); CK(cudaMalloc(&more, n * 24ull));
  keys_k<<<n / 256, 256>>>(p, n, keys); CK(cudaMemcpy(more, keys, n * 8ull, cudaMemcpyDeviceToDevice));
  CK(cudaDeviceSynchronize()); CK(cudaFree(more)); CK(cudaFree(keys)); CK(cudaDeviceSynchronize());
}
// Runs the loop for adapter h; `label` heads every line. A launch whose
// requests fail is reported (fails=), not hidden. Between alloc and free:
// the L2 flushed (verify false) or verify_like.
// Make() returns a std::unique_ptr to a heap holder with adapter(); with
// `fresh` a new heap for every (threads, size), as the peers benchmark
// does, else one heap for all.
template <class Make> void probe_loop(Make make, const char* label, bool only_2_17, bool verify, bool fresh) {
  auto heap = make();
  void** p; CK(cudaMalloc(&p, (1u << 20) * sizeof(void*)));
  unsigned* nulls; CK(cudaMalloc(&nulls, sizeof(unsigned)));
  const size_t flush_words = size_t{256} << 18;  // 256 MB
  unsigned* fl; CK(cudaMalloc(&fl, flush_words * 4));
  for (unsigned n : {1u << 17, 1u << 20}) {
    if (only_2_17 && n != (1u << 17)) continue;
    for (unsigned bytes : {16u, 64u, 256u, 1024u, 4096u, 0u}) {
      if (fresh) { heap.reset(); heap = make(); }
      const auto h = heap->adapter();
      std::vector<float> a, f;
      float cold_a = 0, cold_f = 0;
      unsigned fails = 0;
      for (int rep = 0; rep < 12; ++rep) {
        float ta = timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, bytes); });
        CK(cudaMemset(nulls, 0, sizeof(unsigned)));
        nulls_k<<<n / 256, 256>>>(p, n, nulls);
        unsigned got = 0; CK(cudaMemcpy(&got, nulls, sizeof got, cudaMemcpyDeviceToHost)); fails += got;
        if (verify) verify_like(p, n, bytes, nulls); else flush_k<<<unsigned(flush_words / 256), 256>>>(fl, flush_words);
        float tf = timed([&] { free_k<<<n / 256, 256>>>(h, p, n); });
        if (rep > 0) { a.push_back(ta); f.push_back(tf); } else { cold_a = ta; cold_f = tf; }
      }
      std::sort(a.begin(), a.end()); std::sort(f.begin(), f.end());
      std::printf("%s %s%s n=%7u %5s alloc %7.1f us free %6.1f us (min %5.1f max %5.1f) cold %7.1f / %6.1f us fails=%u\n", label,
                  verify ? "verify" : "flush", fresh ? "+fresh" : "", n, bytes ? std::to_string(bytes).c_str() : "mixed", a[5],
                  f[5], f[0], f[10], cold_a, cold_f, fails);
    }
  }
  std::fflush(stdout);
}

// Mode `cold`: the first alloc launch on a fresh heap, `reps` heaps per
// (threads, size), each launch queued behind a gate kernel that the host
// opens once both events and the launch are submitted (so that the host's
// submission is not in the time, as in the peers benchmark's gated timing);
// then the free launch on the same heap, timed the same way. Prints the
// median, min and max of each over the heaps.
__global__ void gate_k(const volatile unsigned* open) {
  const long long t = clock64();
  while (*open == 0u && clock64() - t < 400000000ll) {}
}
struct ProbeGate {
  volatile unsigned* host = nullptr;
  unsigned* dev = nullptr;
  ProbeGate() {
    CK(cudaHostAlloc(const_cast<unsigned**>(&host), 4, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), const_cast<unsigned*>(host), 0));
  }
  template <class F> float operator()(F f) {
    *host = 0u;
    gate_k<<<1, 1>>>(dev);
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    cudaEventRecord(a); f(); cudaEventRecord(b);
    *host = 1u;
    probe_check(cudaEventSynchronize(b), "gated launch");
    float ms; cudaEventElapsedTime(&ms, a, b); cudaEventDestroy(a); cudaEventDestroy(b);
    probe_check(cudaGetLastError(), "gated launch");
    return ms * 1000;
  }
};
template <class Make> void probe_cold(Make make, const char* label, const std::vector<unsigned>& threads,
                                      const std::vector<unsigned>& sizes, int reps) {
  void** p; CK(cudaMalloc(&p, (1u << 20) * sizeof(void*)));
  unsigned* nulls; CK(cudaMalloc(&nulls, sizeof(unsigned)));
  ProbeGate gate;
  for (unsigned n : threads) {
    for (unsigned bytes : sizes) {
      std::vector<float> a, f;
      unsigned fails = 0;
      for (int rep = 0; rep < reps; ++rep) {
        auto heap = make();
        const auto h = heap->adapter();
        busy_k<<<1, 1>>>(2000000);  // clocks up after the heap's set-up
        a.push_back(gate([&] { alloc_k<<<n / 256, 256>>>(h, p, n, bytes); }));
        CK(cudaMemset(nulls, 0, sizeof(unsigned)));
        nulls_k<<<n / 256, 256>>>(p, n, nulls);
        unsigned got = 0; CK(cudaMemcpy(&got, nulls, sizeof got, cudaMemcpyDeviceToHost)); fails += got;
        f.push_back(gate([&] { free_k<<<n / 256, 256>>>(h, p, n); }));
        CK(cudaDeviceSynchronize());
      }
      std::sort(a.begin(), a.end()); std::sort(f.begin(), f.end());
      std::printf("%s cold n=%7u %5s alloc %7.1f us (min %6.1f max %6.1f) free %6.1f us (min %5.1f max %5.1f) heaps=%d fails=%u\n",
                  label, n, bytes ? std::to_string(bytes).c_str() : "mixed", a[a.size() / 2], a.front(), a.back(),
                  f[f.size() / 2], f.front(), f.back(), reps, fails);
    }
  }
  std::fflush(stdout);
  cudaFree(p); cudaFree(nulls);
}
// The probes' command line: LABEL THREADS MODE [SIZES [REPS]], THREADS
// 2_17 (2^17 only) or anything else (2^17 and 2^20); MODE flush, verify,
// verify_fresh (probe_loop) or cold (probe_cold: SIZES a list like
// 16,64,mixed, default 16,64,256,1024,mixed; REPS heaps, default 7).
template <class Make> int probe_main(Make make, int argc, char** argv) {
  const std::string label = argc > 1 ? argv[1] : "";
  const bool only_2_17 = argc > 2 && std::string(argv[2]) == "2_17";
  const std::string mode = argc > 3 ? argv[3] : "flush";
  if (mode == "cold") {
    std::vector<unsigned> sizes;
    std::string list = argc > 4 ? argv[4] : "16,64,256,1024,mixed";
    for (size_t at = 0; at <= list.size();) {
      const size_t end = std::min(list.find(',', at), list.size());
      const std::string item = list.substr(at, end - at);
      if (!item.empty()) sizes.push_back(item == "mixed" ? 0u : static_cast<unsigned>(std::stoul(item)));
      at = end + 1;
    }
    std::vector<unsigned> threads{1u << 17};
    if (!only_2_17) threads.push_back(1u << 20);
    probe_cold(make, label.c_str(), threads, sizes, argc > 5 ? std::atoi(argv[5]) : 7);
    return 0;
  }
  probe_loop(make, label.c_str(), only_2_17, mode.rfind("verify", 0) == 0, mode.find("fresh") != std::string::npos);
  return 0;
}
