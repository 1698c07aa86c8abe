// Probe (alloc_roofline/README.md): the floor of a warm alloc launch of page-
// sized chunks (2^17 or 2^20 threads, one chunk each, blocks of 256) with no
// allocator in the way, step by step up to what SizeClassSlabs' full warps do
// (one lane claims a run of whole pages for its warp: take_private_pages), and
// SizeClassSlabs itself in the same program. Before each timed launch: a
// 256 MB write (the peers benchmark reads every chunk between launches, which
// leaves no metadata in the L2), and for the bare kernels a cleared bitmap
// (the warm heap has every page back in its pool).
//   ptr     each thread writes a pointer computed from its index
//   or      + the warp's first lane ORs a run into a hashed bitmap word, blind
//           (no read first), and hands the page to its warp by a shuffle
//   load+or + the word read first, the run placed at its lowest free bits
//           (PagePool::try_word's shape)
//   full    + what a claim of whole pages does after the OR: the taken-counter
//           and busy-hint atomics whose results are not waited for, and one
//           32-byte page-table store per page (init_pages)
//   +limit  full, with the heap's steps before the OR: the start word by a
//           64-bit hash modulo a run-time word count, and the usable page
//           count loaded from memory and checked (P3) before the claim
//   occ3    +limit, with dynamic shared memory that leaves room for only 3
//           blocks per SM (as the heap's alloc kernel's 72 registers do)
//   heap    SizeClassSlabs (default configuration), a free launch between
//   heap64  the same heap through a kernel built for 4 blocks of 256 per SM
//           (__launch_bounds__: at most 64 registers)
#include "../probe_common.cuh"
#include <cstdint>
#include <string>

constexpr unsigned page_shift = 16;             // 64 KiB pages, as the 16 GiB heap's
constexpr unsigned words = static_cast<unsigned>((std::size_t{16} << 30 >> page_shift) / 32u);  // 8192 bitmap words
constexpr unsigned small_words = words / 4u * 3u;            // below the large-request zone (P4)

__device__ inline unsigned start_word64(unsigned warp, unsigned sm, unsigned modulus) {
  const unsigned long long x = (static_cast<unsigned long long>(warp) * 2654435761u) ^ (static_cast<unsigned long long>(sm) * 40503u);
  return static_cast<unsigned>(x % modulus);
}
__device__ inline unsigned start_word(unsigned warp) {
  const unsigned long long x = static_cast<unsigned long long>(warp) * 2654435761u;
  return static_cast<unsigned>(x % small_words);
}
__device__ inline unsigned run_starts(unsigned free_bits, unsigned k) {
  unsigned s = free_bits;
  for (unsigned have = 1; have < k && s != 0u;) { unsigned step = have < k - have ? have : k - have; s &= s >> step; have += step; }
  return s;
}
struct alignas(32) Entry { unsigned w[8]; };

// mode 0: ptr, 1: or, 2: load+or, 3: full, 4: +limit (also occ3)
__global__ void bare_k(int mode, char* base, void** p, unsigned n, unsigned bytes, unsigned* taken, unsigned* counters,
                       unsigned* busy, Entry* entries, unsigned* misses, const unsigned* unmapped, unsigned modulus) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned lane = threadIdx.x & 31u, warp = i / 32u;
  const unsigned per_page = (1u << page_shift) / bytes, k = 32u / per_page;  // pages per warp
  unsigned page = warp * k;  // mode 0
  if (mode > 0) {
    unsigned got = 0xffffffffu;
    if (lane == 0) {
      unsigned sm;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
      const unsigned w = mode >= 4 ? start_word64(warp, sm % 128u, modulus) : start_word(warp);
      const unsigned mask0 = (1u << k) - 1u;
      unsigned pos = (warp * k) % 32u;
      if (mode >= 2) {
        unsigned valid = 0xffffffffu;
        if (mode >= 4) {
          const unsigned limit = words * 32u - *(volatile const unsigned*)unmapped;
          valid = w * 32u >= limit ? 0u : limit - w * 32u >= 32u ? 0xffffffffu : (1u << (limit - w * 32u)) - 1u;
        }
        const unsigned free_bits = ~*(volatile unsigned*)&taken[w] & valid;
        const unsigned s = run_starts(free_bits, k);
        pos = s != 0u ? __ffs(s) - 1u : 32u;
      }
      if (pos < 32u) {
        const unsigned mask = mask0 << pos;
        const unsigned old = atomicOr(&taken[w], mask);
        if ((old & mask) == 0u) {
          got = w * 32u + pos;
          if (mode >= 3) {
            atomicAdd(&counters[(w % 128u) * 32u], k);
            if (old == 0u) atomicOr(&busy[w / 32u], 1u << (w % 32u));
            for (unsigned q = 0; q < k; ++q) {
              uint4* e = reinterpret_cast<uint4*>(&entries[got + q]);
              e[0] = make_uint4(7u, 0xffffffffu, k, q);
            }
          }
        }
      }
      if (got == 0xffffffffu) atomicAdd(misses, 1u);
    }
    got = __shfl_sync(0xffffffffu, got, 0);
    page = got;
  }
  p[i] = page == 0xffffffffu ? nullptr : base + (static_cast<size_t>(page) << page_shift) + (lane * bytes);
}

template <class H> __global__ void __launch_bounds__(256, 4) alloc64_k(H h, void** p, unsigned n, unsigned bytes) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { ma::heap::acc::CudaThread a; p[i] = h.alloc(a, probe_size(i, bytes)); } }

int main() {
  void** p; CK(cudaMalloc(&p, (1u << 20) * sizeof(void*)));
  char* base; CK(cudaMalloc(&base, size_t{1} << 20));  // addresses only, never written
  unsigned *taken, *counters, *busy, *misses, *flush;
  Entry* entries;
  const size_t flush_words = (size_t{256} << 20) / 4;
  CK(cudaMalloc(&taken, words * 4)); CK(cudaMalloc(&counters, 128 * 128)); CK(cudaMalloc(&busy, words / 8));
  CK(cudaMalloc(&misses, 4)); CK(cudaMalloc(&flush, flush_words * 4));
  CK(cudaMalloc(&entries, sizeof(Entry) * words * 32)); CK(cudaMemset(entries, 0, sizeof(Entry) * words * 32));
  CK(cudaMemset(counters, 0, 128 * 128)); CK(cudaMemset(misses, 0, 4));
  unsigned* unmapped; CK(cudaMalloc(&unmapped, 4)); CK(cudaMemset(unmapped, 0, 4));
  const int occ3_smem = 72 * 1024;  // 3 blocks of it fit in an SM's 228 KiB, 4 do not
  CK(cudaFuncSetAttribute(bare_k, cudaFuncAttributeMaxDynamicSharedMemorySize, occ3_smem));
  busy_k<<<1, 1>>>(40000000); CK(cudaDeviceSynchronize());
  constexpr int modes = 8;
  const char* names[modes] = {"ptr", "or", "load+or", "full", "+limit", "occ3", "heap", "heap64"};
  for (unsigned n : {1u << 17, 1u << 20})
    for (unsigned bytes : {4096u, 8192u}) {
      Heap heap(size_t{16} << 30);
      auto h = heap.handle();
      alloc_k<<<n / 256, 256>>>(h, p, n, bytes); free_k<<<n / 256, 256>>>(h, p, n);  // first launch untimed
      std::vector<float> t[modes];
      unsigned miss_total = 0;
      for (int rep = 0; rep < 11; ++rep) {
        for (int mode = 0; mode < modes; ++mode) {
          CK(cudaMemset(taken, 0, words * 4)); CK(cudaMemset(busy, 0, words / 8)); CK(cudaMemset(misses, 0, 4));
          flush_k<<<(flush_words + 255) / 256, 256>>>(flush, flush_words);
          if (mode < 6) {
            const int bare_mode = mode < 5 ? mode : 4;
            const int smem = mode == 5 ? occ3_smem : 0;
            t[mode].push_back(timed([&] {
              bare_k<<<n / 256, 256, smem>>>(bare_mode, base, p, n, bytes, taken, counters, busy, entries, misses, unmapped,
                                            small_words);
            }));
            unsigned m = 0; CK(cudaMemcpy(&m, misses, 4, cudaMemcpyDeviceToHost)); miss_total += m;
          } else {
            if (mode == 6) t[mode].push_back(timed([&] { alloc_k<<<n / 256, 256>>>(h, p, n, bytes); }));
            else t[mode].push_back(timed([&] { alloc64_k<<<n / 256, 256>>>(h, p, n, bytes); }));
            free_k<<<n / 256, 256>>>(h, p, n);
          }
        }
      }
      CK(cudaDeviceSynchronize());
      std::printf("n=2^%d %5u B:", n == (1u << 17) ? 17 : 20, bytes);
      for (int mode = 0; mode < modes; ++mode) std::printf("  %s %6.1f us", names[mode], probe_median(t[mode]));
      std::printf("  (bare claims that missed: %u in 55 launches)\n", miss_total);
    }
}
