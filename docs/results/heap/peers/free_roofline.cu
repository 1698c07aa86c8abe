// Roofline of a 2^20-thread free launch with no allocator: the dependent
// global accesses a free makes, as bare kernels (L2 flushed before each).
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(err_)); return 1; } } while (0)
struct alignas(32) Entry { unsigned cls, used, run, lead, bits, pad[3]; };
__global__ void flush_k(uint4* b, size_t n, unsigned v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) b[i] = make_uint4(v, v, v, v); }
__global__ void fill_ptrs(char** p, char* base, unsigned n, unsigned bytes) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = base + (size_t)i * bytes; }
// 0: only read the pointer
__global__ void k_ptr(char* const* p, char* base, unsigned n, unsigned* sink) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n && p[i] == nullptr) atomicAdd(sink, 1u); }
// 1: Gallatin-like: a tiny table read, one atomic per warp-group on a block counter (4096 chunks a block)
__global__ void k_one(char* const* p, char* base, unsigned n, unsigned bytes, const unsigned* table, unsigned* counters, unsigned* sink) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  size_t off = p[i] - base; unsigned t = table[off >> 24];
  unsigned blk = (unsigned)(off / bytes / 4096);
  unsigned g = __match_any_sync(__activemask(), blk);
  if ((threadIdx.x & 31) == __ffs(g) - 1) { unsigned old = atomicAdd(&counters[blk], __popc(g) + t); if (old == 0xffffffffu) atomicAdd(sink, 1u); } }
// 2: entry read, then one atomic on the entry (bits), then one on the page bitmap
__global__ void k_two(char* const* p, char* base, unsigned n, Entry* e, unsigned* taken, unsigned* sink, int atomics) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  size_t off = p[i] - base; unsigned page = (unsigned)(off >> 16);
  unsigned cls = *(volatile unsigned*)&e[page].cls, lead = *(volatile unsigned*)&e[page].lead;
  unsigned first = page - lead;
  unsigned g = __match_any_sync(__activemask(), first + cls);
  if ((threadIdx.x & 31) == __ffs(g) - 1) {
    unsigned old = atomicAnd(&e[first].bits, 0u);
    if (atomics == 2) { unsigned o2 = atomicAnd(&taken[first / 32], ~(old | 3u << (first % 32))); if (o2 == 1u) atomicAdd(sink, 1u); }
    else if (old == 1u) atomicAdd(sink, 1u);
  } }
template <class F> float timed(F f) { cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); cudaEventRecord(a); f(); cudaEventRecord(b);
  cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); return ms * 1000; }
int main() {
  const unsigned n = 1u << 20;
  char** p; CK(cudaMalloc(&p, n * sizeof(char*)));
  char* base; CK(cudaMalloc(&base, size_t{16} << 30));
  uint4* buf; const size_t fb = size_t{256} << 20; CK(cudaMalloc(&buf, fb));
  Entry* e; CK(cudaMalloc(&e, sizeof(Entry) * 262144)); CK(cudaMemset(e, 0, sizeof(Entry) * 262144));
  unsigned *taken, *table, *counters, *sink;
  CK(cudaMalloc(&taken, 32768)); CK(cudaMalloc(&table, 4096)); CK(cudaMalloc(&counters, 1 << 20)); CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(taken, 0xff, 32768)); CK(cudaMemset(table, 0, 4096)); CK(cudaMemset(counters, 0, 1 << 20));
  for (unsigned bytes : {1024u, 4096u, 8192u}) {
    fill_ptrs<<<n / 256, 256>>>(p, base, n, bytes);
    std::vector<float> t[4];
    for (int rep = 0; rep < 7; ++rep) {
      flush_k<<<1024, 256>>>(buf, fb / 16, rep); t[0].push_back(timed([&] { k_ptr<<<n / 256, 256>>>(p, base, n, sink); }));
      flush_k<<<1024, 256>>>(buf, fb / 16, rep); t[1].push_back(timed([&] { k_one<<<n / 256, 256>>>(p, base, n, bytes, table, counters, sink); }));
      flush_k<<<1024, 256>>>(buf, fb / 16, rep); t[2].push_back(timed([&] { k_two<<<n / 256, 256>>>(p, base, n, e, taken, sink, 1); }));
      flush_k<<<1024, 256>>>(buf, fb / 16, rep); t[3].push_back(timed([&] { k_two<<<n / 256, 256>>>(p, base, n, e, taken, sink, 2); }));
    }
    CK(cudaDeviceSynchronize());
    auto med = [](std::vector<float> v) { v.erase(v.begin()); std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
    std::printf("%5u B chunks, 2^20 threads, L2 flushed: pointer only %5.1f us | table + 1 atomic per group (Gallatin's shape) %5.1f us | entry + 1 atomic %5.1f us | entry + 2 dependent atomics (ours) %5.1f us\n",
                bytes, med(t[0]), med(t[1]), med(t[2]), med(t[3]));
  }
}
