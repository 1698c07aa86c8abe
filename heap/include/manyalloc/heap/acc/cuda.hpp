// CUDA back end: a worker is one CUDA thread; a warp has 32 lanes. Needs nvcc
// and compute capability 7.0 or newer (independent thread scheduling, so the
// *_sync warp intrinsics with __activemask() are well defined).
//
// This is the only heap file that includes CUDA headers.
#pragma once

#if !defined(__CUDACC__)
#error "manyalloc/heap/acc/cuda.hpp must be compiled by nvcc"
#endif

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "manyalloc/heap/acc/concepts.hpp"

namespace manyalloc::heap::acc {

// Throws std::runtime_error naming the failed call. Used for every CUDA
// runtime call on the host side of the library, its tests and benchmarks.
inline void cuda_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(err));
  }
}

class CudaThread {
  // Linear index of the thread in its block (x fastest, as warps are formed).
  __device__ static unsigned thread_in_block() {
    return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  }

 public:
  static constexpr unsigned warp_size = 32;
  static constexpr bool shuffle_after_divergence = false;  // group_broadcast64 below

  __device__ unsigned lane_id() const {
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
  }
  __device__ std::uint32_t active_mask() const { return __activemask(); }
  __device__ std::uint32_t ballot(std::uint32_t mask, bool pred) const { return __ballot_sync(mask, pred); }
  __device__ std::uint32_t shfl(std::uint32_t mask, std::uint32_t v, unsigned lane) const {
    return __shfl_sync(mask, v, static_cast<int>(lane));
  }
  __device__ std::uint32_t match_any(std::uint32_t mask, std::uint32_t v) const { return __match_any_sync(mask, v); }
  __device__ std::uint32_t reduce_or(std::uint32_t mask, std::uint32_t v) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return __reduce_or_sync(mask, v);
#else
    std::uint32_t all = 0;
    for (std::uint32_t rest = mask; rest != 0u; rest &= rest - 1u)
      all |= __shfl_sync(mask, v, __ffs(static_cast<int>(rest)) - 1);
    return all;
#endif
  }
  __device__ void sync_lanes(std::uint32_t mask) const { __syncwarp(mask); }
  // `value` of lane `root` for the lanes of `group`, which may arrive at
  // different times (divergent code since the group formed): the root stores
  // to a shared-memory box of its own (one per warp and lane, 8 KiB per
  // block), a warp barrier of the group orders it before the loads, a second
  // one keeps the root from reusing the box before every lane has read it.
  __device__ std::uint64_t group_broadcast64(std::uint32_t group, unsigned root, std::uint64_t value) const {
    __shared__ std::uint64_t box[32][32];
    const unsigned tid = thread_in_block();
    volatile std::uint64_t* slot = &box[tid / 32u][root];
    if (lane_id() == root) *slot = value;
    __syncwarp(group);
    const std::uint64_t v = *slot;
    __syncwarp(group);
    return v;
  }
  __device__ unsigned processor_id() const {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    return sm;
  }
  // Index of the warp in its launch (grid-wide, block-major). Consecutive
  // warps hash to consecutive page ranges (scatter_config.hpp).
  __device__ unsigned warp_id() const {
    const unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    const unsigned tid = thread_in_block();
    return block * ((threads + 31u) / 32u) + tid / 32u;
  }
  // Coherent accesses to the heap's words: relaxed at GPU scope, in the
  // global state space. Every word the heap reads and writes this way lies
  // in global memory (its pool and metadata) and is shared by the threads
  // of one GPU only; the words the host reads or writes during a launch go
  // through load_system64 and store_system64. Not volatile accesses: those
  // are relaxed at system scope (LDG.E.STRONG.SYS), which slowed Scatter's
  // searches (docs/results/heap/peers/gpu_scope_accesses). store128 below
  // is still a volatile store: its GPU-scope form is not measured yet.
  __device__ std::uint32_t load(const std::uint32_t* p) const {
    std::uint32_t v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
  }
  // HintLoads: relaxed at CTA scope, so that the SM's L1 may serve it once a
  // warp of the SM brought the line in, where load() goes to L2 every time
  // (ptxas of CUDA 13.0 emits LDG.E.STRONG.SM for sm_90, against
  // LDG.E.STRONG.GPU: docs/results/heap/peers/scatter_release_pair, call 6).
  // Another CTA's writes are not ordered with it: a race that PTX allows (it
  // does not require freedom from data races, [Lustig2019]), and the caller
  // must accept an old value: PTX bounds neither how old nor for how long.
  __device__ std::uint32_t load_hint(const std::uint32_t* p) const {
    std::uint32_t v;
    asm volatile("ld.relaxed.cta.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
  }
  __device__ void store(std::uint32_t* p, std::uint32_t v) const {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
  }
  __device__ std::uint32_t atomic_add(std::uint32_t* p, std::uint32_t v) const { return atomicAdd(p, v); }
  __device__ std::uint32_t atomic_sub(std::uint32_t* p, std::uint32_t v) const { return atomicSub(p, v); }
  __device__ std::uint32_t atomic_sub_release(std::uint32_t* p, std::uint32_t v) const {
    std::uint32_t old;
    asm volatile("atom.release.gpu.global.add.u32 %0, [%1], %2;"
                 : "=r"(old)
                 : "l"(p), "r"(0u - v)
                 : "memory");
    return old;
  }
  __device__ std::uint32_t atomic_and_release(std::uint32_t* p, std::uint32_t v) const {
    std::uint32_t old;
    asm volatile("atom.release.gpu.global.and.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
  }
  __device__ std::uint32_t atomic_or(std::uint32_t* p, std::uint32_t v) const { return atomicOr(p, v); }
  __device__ std::uint32_t atomic_and(std::uint32_t* p, std::uint32_t v) const { return atomicAnd(p, v); }
  __device__ std::uint32_t atomic_exch(std::uint32_t* p, std::uint32_t v) const { return atomicExch(p, v); }
  __device__ std::uint32_t atomic_cas(std::uint32_t* p, std::uint32_t e, std::uint32_t d) const {
    return atomicCAS(p, e, d);
  }
  __device__ void fence() const { __threadfence(); }
  // Waiting for another worker: leave the issue slots to other warps.
  __device__ void relax() const { __nanosleep(64); }

  // MixedWidthAtomics (16-bit atomicCAS needs compute capability 7.0).
  __device__ std::uint16_t load16(const std::uint16_t* p) const {
    std::uint16_t v;
    asm volatile("ld.relaxed.gpu.global.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
    return v;
  }
  __device__ void store16(std::uint16_t* p, std::uint16_t v) const {
    asm volatile("st.relaxed.gpu.global.u16 [%0], %1;" : : "l"(p), "h"(v) : "memory");
  }
  __device__ std::uint16_t atomic_cas16(std::uint16_t* p, std::uint16_t e, std::uint16_t d) const {
    return atomicCAS(reinterpret_cast<unsigned short*>(p), static_cast<unsigned short>(e),
                     static_cast<unsigned short>(d));
  }
  __device__ std::uint64_t load64(const std::uint64_t* p) const {
    std::uint64_t v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
  }
  __device__ void store64(std::uint64_t* p, std::uint64_t v) const {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
  }
  // One 16-byte access; each 64-bit half is single-copy atomic.
  __device__ void store128(std::uint64_t* p, std::uint64_t lo, std::uint64_t hi) const {
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" : : "l"(p), "l"(lo), "l"(hi) : "memory");
  }
  __device__ std::uint64_t atomic_cas64(std::uint64_t* p, std::uint64_t e, std::uint64_t d) const {
    return atomicCAS(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(e),
                     static_cast<unsigned long long>(d));
  }
  __device__ std::uint64_t atomic_add64(std::uint64_t* p, std::uint64_t v) const {
    return atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  }
  __device__ std::uint64_t atomic_exch64(std::uint64_t* p, std::uint64_t v) const {
    return atomicExch(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  }
  __device__ std::uint64_t atomic_and64(std::uint64_t* p, std::uint64_t v) const {
    return atomicAnd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  }
  __device__ std::uint64_t atomic_and64_release(std::uint64_t* p, std::uint64_t v) const {
    std::uint64_t old;
    asm volatile("atom.release.gpu.global.and.b64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
    return old;
  }

  // SystemScopeWorker: words in mapped host memory, ordered with the host's
  // accesses (PTX acquire/release at system scope), and the global timer.
  __device__ std::uint64_t load_system64(const std::uint64_t* p) const {
    std::uint64_t v;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
  }
  __device__ void store_system64(std::uint64_t* p, std::uint64_t v) const {
    asm volatile("st.release.sys.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
  }
  __device__ std::uint64_t now_ns() const {
    std::uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }

  // BlockAccelerator: __syncthreads_* and block-shared words. Threads that
  // exited the kernel do not take part (sm_70+ barriers skip them).
  __device__ BlockRank block_rank() const {
    __shared__ unsigned warp_bits[32];
    const unsigned tid = thread_in_block();
    const unsigned warp = tid / 32u;
    const unsigned lane = tid % 32u;
    const unsigned warps = (blockDim.x * blockDim.y * blockDim.z + 31u) / 32u;
    __syncthreads();  // an earlier call's readers are done
    // Some live thread clears every entry (all write the same zero), so warps
    // whose threads all exited count as empty.
    const unsigned act = __activemask();
    if (lane == static_cast<unsigned>(__ffs(static_cast<int>(act)) - 1)) {
      for (unsigned w = 0; w < warps; ++w) warp_bits[w] = 0u;
    }
    __syncthreads();
    atomicOr(&warp_bits[warp], 1u << lane);
    __syncthreads();
    unsigned rank = static_cast<unsigned>(__popc(warp_bits[warp] & ((1u << lane) - 1u)));
    unsigned count = 0;
    for (unsigned w = 0; w < warps; ++w) {
      const unsigned c = static_cast<unsigned>(__popc(warp_bits[w]));
      if (w < warp) rank += c;
      count += c;
    }
    return {rank, count};
  }
  __device__ bool block_sync_or(bool pred) const { return __syncthreads_or(pred) != 0; }
  __device__ std::uint64_t block_broadcast(std::uint64_t v, bool root) const {
    __shared__ std::uint64_t slot;
    __syncthreads();  // an earlier call's readers are done
    if (root) slot = v;
    __syncthreads();
    return slot;
  }
};
static_assert(Accelerator<CudaThread>);
static_assert(MixedWidthAtomics<CudaThread>);
static_assert(BlockAccelerator<CudaThread>);
static_assert(SystemScopeWorker<CudaThread>);
static_assert(HintLoads<CudaThread>);

namespace detail {
// Zeroes [p, p + n): 16-byte stores over the aligned middle, bytes at the ends.
template <int = 0>
__global__ void fill_zero_kernel(unsigned char* p, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  std::size_t head = (16u - addr % 16u) % 16u;
  if (head > n) head = n;
  const std::size_t vectors = (n - head) / 16u;
  uint4* mid = reinterpret_cast<uint4*>(p + head);
  for (std::size_t i = tid; i < vectors; i += stride) mid[i] = make_uint4(0u, 0u, 0u, 0u);
  const std::size_t tail = head + vectors * 16u;
  if (tid < head) p[tid] = 0;
  if (tid < n - tail) p[tail + tid] = 0;
}

template <class F, class R>
__global__ void map_ranges_kernel(F f, std::uint64_t n, std::uint64_t parts, R* out) {
  const std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  if (i < parts) out[i] = f(n * i / parts, n * (i + 1) / parts);
}
}  // namespace detail

struct Cuda {
  using acc_type = CudaThread;
  static constexpr bool has_exceptions = false;  // no exceptions in device code
  static constexpr bool pool_memory_resident = true;  // cudaMalloc'd or mapped whole (concepts.hpp)

  static void copy_to_device(void* dst, const void* src, std::size_t n) {
    cuda_check(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  static void copy_to_host(void* dst, const void* src, std::size_t n) {
    cuda_check(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }
  // A kernel rather than cudaMemset: the first kernel to run after a large
  // cudaMalloc pays for making the new memory usable by the SMs, and a heap's
  // initialisation, not the first launch of the user's kernels, should pay
  // it (docs/results/heap/peers/cold_launch_probe).
  static void fill_zero(void* dst, std::size_t n) {
    if (n == 0) return;
    const unsigned block = 256;
    const std::size_t want = (n / 16u + block - 1) / block;
    const auto blocks = static_cast<unsigned>(want < 4096u ? (want == 0 ? 1u : want) : 4096u);
    detail::fill_zero_kernel<><<<blocks, block>>>(static_cast<unsigned char*>(dst), n);
    cuda_check(cudaGetLastError(), "fill_zero kernel (launch)");
    cuda_check(cudaDeviceSynchronize(), "fill_zero kernel");
  }
  static std::string name() { return "Cuda"; }

  // SharedHostMemory: page-locked host memory mapped into the device's
  // address space (unified addressing: one address on both sides).
  using ThreadContext = int;  // the device
  static void* alloc_shared(std::size_t n) {
    void* p = nullptr;
    cuda_check(cudaHostAlloc(&p, n, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc (shared words)");
    void* device = nullptr;
    const cudaError_t err = cudaHostGetDevicePointer(&device, p, 0);
    if (err != cudaSuccess || device != p) {
      cudaFreeHost(p);
      cuda_check(err == cudaSuccess ? cudaErrorNotSupported : err, "cudaHostGetDevicePointer (unified addressing)");
    }
    std::memset(p, 0, n);
    return p;
  }
  static void free_shared(void* p) {
    if (p != nullptr) cudaFreeHost(p);
  }
  static ThreadContext capture_context() {
    int device = 0;
    cuda_check(cudaGetDevice(&device), "cudaGetDevice");
    return device;
  }
  static void enter_context(ThreadContext device) { cuda_check(cudaSetDevice(device), "cudaSetDevice"); }

  // Runs f(begin, end) over contiguous ranges of [0, n) on the GPU, one range
  // per thread, and returns the results in range order.
  template <class F>
  static auto map_ranges(const F& f, std::uint64_t n)
      -> std::vector<decltype(f(std::uint64_t{}, std::uint64_t{}))> {
    using R = decltype(f(std::uint64_t{}, std::uint64_t{}));
    const std::uint64_t parts = n < (1u << 16) ? (n / 64 + 1) : (1u << 16);
    R* out = nullptr;
    cuda_check(cudaMalloc(&out, parts * sizeof(R)), "cudaMalloc (map_ranges)");
    const unsigned block = 256;
    detail::map_ranges_kernel<<<static_cast<unsigned>((parts + block - 1) / block), block>>>(
        f, n, parts, out);
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    std::vector<R> host(parts);
    if (err == cudaSuccess) err = cudaMemcpy(host.data(), out, parts * sizeof(R), cudaMemcpyDeviceToHost);
    cudaFree(out);
    cuda_check(err, "map_ranges kernel");
    return host;
  }
};
static_assert(Backend<Cuda>);
static_assert(SharedHostMemory<Cuda>);

}  // namespace manyalloc::heap::acc
