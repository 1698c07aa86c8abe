// Probe: the limit of a 2^17-thread free launch in loop.cuh's harness, with
// no allocator in the way. "Alloc" hands thread i the chunk at base + i *
// 4 KiB (no search, no metadata); "free" does the least a Scatter free must:
// read the page's entry (its chunk size) and clear the chunk's bit in it
// with one atomic per lane, as upstream mallocMC does (ours clears the bits
// of a warp's lanes on one page with one atomic and returns their
// reservations with one more). PROBE_FREE_READ_ONLY: the free only reads the
// entry (no atomic). PROBE_FREE_RELEASE: the clear is a release at GPU scope
// (atom.release.gpu), the least a free that orders the lane's writes to its
// chunk before the chunk can be handed out again must do (Scatter's default,
// ordered_frees).
#include <memory>
#include "loop.cuh"
struct Entry { unsigned chunk, fill, mask, pad; };
struct Adapter {
  char* base;
  Entry* entries;
  unsigned* sink;
  __device__ void* alloc(unsigned) const {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    return base + std::size_t{i} * 4096;
  }
  __device__ void free(void* p) const {
    const std::size_t off = static_cast<char*>(p) - base;
    Entry& e = entries[off >> 12];
    const unsigned chunk = *static_cast<volatile unsigned*>(&e.chunk);
    const unsigned bit = 1u << ((off & 4095) / (chunk | 1u) % 32);
#if defined(PROBE_FREE_READ_ONLY)
    if (chunk == 0xdeadbeefu) atomicAdd(sink, bit);
#elif defined(PROBE_FREE_RELEASE)
    unsigned old;
    asm volatile("atom.release.gpu.global.and.b32 %0, [%1], %2;" : "=r"(old) : "l"(&e.mask), "r"(~bit) : "memory");
    if (old == 0xdeadbeefu) atomicAdd(sink, 1u);
#else
    if (atomicAnd(&e.mask, ~bit) == 0xdeadbeefu) atomicAdd(sink, 1u);
#endif
  }
};
struct Holder {
  char* base = nullptr;
  Entry* entries = nullptr;
  unsigned* sink = nullptr;
  Holder() {
    CK(cudaMalloc(&base, std::size_t{4096} << 20));  // 2^20 chunks of 4 KiB
    CK(cudaMalloc(&entries, sizeof(Entry) << 20));
    CK(cudaMemset(entries, 0xff, sizeof(Entry) << 20));
    CK(cudaMalloc(&sink, 4));
  }
  ~Holder() { cudaFree(base); cudaFree(entries); cudaFree(sink); }
  Adapter adapter() { return Adapter{base, entries, sink}; }
};
int main(int argc, char** argv) { return probe_main([] { return std::make_unique<Holder>(); }, argc, argv); }
