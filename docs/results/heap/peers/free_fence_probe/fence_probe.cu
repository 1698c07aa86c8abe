// Probe (free_fence_probe/README.md): what the release of a free costs, and
// whether a fence placed elsewhere, or PTX's one-way release fence, costs
// less. No allocator: each lane reads its pointer, then its page's entry,
// then clears its bit in the entry with one atomic (a free's shape), in
// five ways that differ only in how the atomic is ordered after the lane's
// earlier accesses. Optionally each lane first writes its chunk in the same
// kernel (a free right after the last write, as in one-kernel churn).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
#define CK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(err_)); return 1; } } while (0)
struct alignas(32) Entry { unsigned cls, used, run, lead, bits[4]; };

enum Order { relaxed = 0, atom_release = 1, fence_first = 2, fence_before_entry = 3, fence_after_entry = 4,
             release_fence_after_entry = 5, count = 6 };
const char* names[] = {"relaxed atom", "atom.release.gpu", "fence.acq_rel before the pointer load",
                       "fence.acq_rel before the entry load", "fence.acq_rel after the entry load is issued",
                       "fence.release (one-way) after the entry load is issued"};

__device__ __forceinline__ void fence_acq_rel() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
__device__ __forceinline__ void fence_release() { asm volatile("fence.release.gpu;" ::: "memory"); }
__device__ __forceinline__ unsigned and_relaxed(unsigned* a, unsigned v) {
  unsigned old; asm volatile("atom.relaxed.gpu.global.and.b32 %0, [%1], %2;" : "=r"(old) : "l"(a), "r"(v) : "memory"); return old; }
__device__ __forceinline__ unsigned and_release(unsigned* a, unsigned v) {
  unsigned old; asm volatile("atom.release.gpu.global.and.b32 %0, [%1], %2;" : "=r"(old) : "l"(a), "r"(v) : "memory"); return old; }
__device__ __forceinline__ unsigned ld_relaxed(const unsigned* a) {
  unsigned v; asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory"); return v; }

template <int O, bool Write>
__global__ void free_shape(char* const* p, char* base, unsigned n, Entry* e, unsigned* sink) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  if (O == fence_first) fence_acq_rel();
  char* c = p[i];
  if (Write) { *reinterpret_cast<volatile unsigned*>(c) = i; }
  if (Write && O == fence_first) fence_acq_rel();  // after the write, before anything of the free
  size_t off = c - base; unsigned page = (unsigned)(off >> 16), idx = (unsigned)(off >> 10) & 63u;
  if (O == fence_before_entry) fence_acq_rel();
  unsigned cls = ld_relaxed(&e[page].cls);
  if (O == fence_after_entry) fence_acq_rel();
  if (O == release_fence_after_entry) fence_release();
  unsigned* w = &e[page].bits[(idx / 32u + cls) & 3u];
  unsigned bit = 1u << (idx % 32u), old;
  if (O == atom_release) old = and_release(w, ~bit); else old = and_relaxed(w, ~bit);
  if ((old & bit) == 0u && old == 0x12345u) atomicAdd(sink, 1u);
}
template <class F> float timed(F f) { cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); cudaEventRecord(a); f(); cudaEventRecord(b);
  cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); cudaEventDestroy(a); cudaEventDestroy(b); return ms * 1000; }
__global__ void fill_ptrs(char** p, char* base, unsigned n) { unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = base + (size_t)i * 1024; }
__global__ void set_bits(Entry* e, unsigned pages) { unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < pages) for (int k = 0; k < 4; ++k) e[i].bits[k] = ~0u; }

template <bool Write> void run_all(char** p, char* base, unsigned n, Entry* e, unsigned pages, unsigned* sink, int reps) {
  using K = void (*)(char* const*, char*, unsigned, Entry*, unsigned*);
  K ks[count] = {free_shape<0, Write>, free_shape<1, Write>, free_shape<2, Write>, free_shape<3, Write>, free_shape<4, Write>, free_shape<5, Write>};
  std::vector<float> t[count];
  for (int r = 0; r < reps; ++r)
    for (int o = 0; o < count; ++o) {  // interleaved, every variant on the same bits
      set_bits<<<(pages + 255) / 256, 256>>>(e, pages);
      t[o].push_back(timed([&] { ks[o]<<<n / 256, 256>>>(p, base, n, e, sink); }));
    }
  cudaDeviceSynchronize();
  float rel = 0;
  for (int o = 0; o < count; ++o) {
    std::vector<float> v(t[o].begin() + 1, t[o].end()); std::sort(v.begin(), v.end());
    float med = v[v.size() / 2]; if (o == 0) rel = med;
    std::printf("threads %7u write-before %d | %-55s median %7.2f us (%.3fx relaxed) min %7.2f\n", n, (int)Write, names[o], med, med / rel, v[0]);
  }
}
int main() {
  char** p; CK(cudaMalloc(&p, (1u << 20) * sizeof(char*)));
  char* base; CK(cudaMalloc(&base, size_t{1} << 30));
  const unsigned pages = (1u << 30) >> 16; Entry* e; CK(cudaMalloc(&e, sizeof(Entry) * pages)); CK(cudaMemset(e, 0, sizeof(Entry) * pages));
  unsigned* sink; CK(cudaMalloc(&sink, 4));
  for (unsigned n : {1u << 17, 1u << 20}) {
    fill_ptrs<<<n / 256, 256>>>(p, base, n);
    run_all<false>(p, base, n, e, pages, sink, 21);
    run_all<true>(p, base, n, e, pages, sink, 21);
  }
  CK(cudaDeviceSynchronize());
}
