// Probe (README.md here, issue 15): does a GPU-scope release fence wait for
// an earlier load of the page entry, and does that depend on how the load is
// made? free_fence_probe (H100, 2026-11-25) found PTX's one-way release fence,
// issued while the entry load (ld.relaxed.gpu) was in flight, almost free at
// 2^17 threads; in Scatter's free (scatter_early_fence, H200) the same fence
// after the heap's entry load (a volatile load, LDG.E.STRONG.SYS) gained
// nothing. Here: no allocator, each lane reads its pointer, then its page's
// entry with one of three loads, then clears its bit in the entry with one
// atomic, ordered in one of three ways. Every variant runs on the same bits,
// interleaved; median of the last 20 of 21 launches (CUDA events).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
#include "../probe_kernels.cuh"  // probe_check, timed
#define CK(x) probe_check((x), #x)
struct alignas(32) Entry { unsigned cls, used, run, lead, bits[4]; };

enum Load { volatile_load = 0, relaxed_gpu = 1, weak = 2, loads = 3 };
enum Order { relaxed_atom = 0, release_atom = 1, release_fence = 2, orders = 3 };
const char* load_names[] = {"ld.volatile (STRONG.SYS)", "ld.relaxed.gpu (STRONG.GPU)", "ld.global (weak)"};
const char* order_names[] = {"relaxed atom", "atom.release.gpu", "fence.release.gpu after the load, relaxed atom"};

template <int L> __device__ __forceinline__ unsigned load_entry(const unsigned* a) {
  unsigned v;
  if constexpr (L == volatile_load) asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  else if constexpr (L == relaxed_gpu) asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  else asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  return v;
}
__device__ __forceinline__ unsigned and_relaxed(unsigned* a, unsigned v) {
  unsigned old; asm volatile("atom.relaxed.gpu.global.and.b32 %0, [%1], %2;" : "=r"(old) : "l"(a), "r"(v) : "memory"); return old; }
__device__ __forceinline__ unsigned and_release(unsigned* a, unsigned v) {
  unsigned old; asm volatile("atom.release.gpu.global.and.b32 %0, [%1], %2;" : "=r"(old) : "l"(a), "r"(v) : "memory"); return old; }

template <int L, int O, bool Write>
__global__ void free_shape(char* const* p, char* base, unsigned n, Entry* e, unsigned* sink) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  char* c = p[i];
  if (Write) { *reinterpret_cast<volatile unsigned*>(c) = i; }
  size_t off = c - base; unsigned page = (unsigned)(off >> 16), idx = (unsigned)(off >> 10) & 63u;
  unsigned cls = load_entry<L>(&e[page].cls);
  if (O == release_fence) asm volatile("fence.release.gpu;" ::: "memory");
  unsigned* w = &e[page].bits[(idx / 32u + cls) & 3u];
  unsigned bit = 1u << (idx % 32u), old;
  if (O == release_atom) old = and_release(w, ~bit); else old = and_relaxed(w, ~bit);
  if ((old & bit) == 0u && old == 0x12345u) atomicAdd(sink, 1u);
}
__global__ void fill_ptrs(char** p, char* base, unsigned n) { unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = base + (size_t)i * 1024; }
__global__ void set_bits(Entry* e, unsigned pages) { unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < pages) for (int k = 0; k < 4; ++k) e[i].bits[k] = ~0u; }

using K = void (*)(char* const*, char*, unsigned, Entry*, unsigned*);
template <bool W, int L> void add_load(std::vector<K>& ks) {
  ks.push_back(free_shape<L, relaxed_atom, W>); ks.push_back(free_shape<L, release_atom, W>); ks.push_back(free_shape<L, release_fence, W>);
}
template <bool Write> void run_all(char** p, char* base, unsigned n, Entry* e, unsigned pages, unsigned* sink, int reps) {
  std::vector<K> ks; add_load<Write, 0>(ks); add_load<Write, 1>(ks); add_load<Write, 2>(ks);
  std::vector<std::vector<float>> t(ks.size());
  for (int r = 0; r < reps; ++r)
    for (size_t k = 0; k < ks.size(); ++k) {
      set_bits<<<(pages + 255) / 256, 256>>>(e, pages);
      t[k].push_back(timed([&] { ks[k]<<<n / 256, 256>>>(p, base, n, e, sink); }));
    }
  cudaDeviceSynchronize();
  float rel = 0;
  for (size_t k = 0; k < ks.size(); ++k) {
    std::vector<float> v(t[k].begin() + 1, t[k].end()); std::sort(v.begin(), v.end());
    float med = v[v.size() / 2]; if (k == 0) rel = med;
    std::printf("threads %7u write-before %d | %-28s | %-47s median %7.2f us (%.3fx volatile+relaxed) min %7.2f max %7.2f\n", n, (int)Write,
                load_names[k / orders], order_names[k % orders], med, med / rel, v.front(), v.back());
  }
}
int main() {
  char** p; CK(cudaMalloc(&p, (1u << 20) * sizeof(char*)));
  char* base; CK(cudaMalloc(&base, size_t{1} << 30));
  const unsigned pages = (1u << 30) >> 16; Entry* e; CK(cudaMalloc(&e, sizeof(Entry) * pages)); CK(cudaMemset(e, 0, sizeof(Entry) * pages));
  unsigned* sink; CK(cudaMalloc(&sink, 4));
  for (int round = 0; round < 2; ++round)
    for (unsigned n : {1u << 17, 1u << 20}) {
      fill_ptrs<<<n / 256, 256>>>(p, base, n);
      run_all<false>(p, base, n, e, pages, sink, 21);
      run_all<true>(p, base, n, e, pages, sink, 21);
    }
  CK(cudaDeviceSynchronize());
}
