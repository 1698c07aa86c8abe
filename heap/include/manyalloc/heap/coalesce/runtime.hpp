// What code rewritten by manyalloc-coalesce (heap/tools/coalesce) calls
// ([Blach2022] 3.1, "Static Coalescing"): the tool replaces device-side
// malloc/free with the entry points below and puts a Session at the start of
// main, so the heaps exist before the first kernel and are gone after main.
//
//   uniform_malloc(n)           a call that every thread of the block reaches
//                               with the same n: the uniform coalescing policy
//                               (MANYALLOC_COALESCE_UNIFORM_POLICY, default
//                               WarpHeader; BlockHeader, WarpNoHeader and
//                               BlockNoHeader work too)
//   dynamic_malloc(n)           any other call: DynamicWarp ([Blach2022] 3.2)
//   malloc_uniform_if(n, u)     inside a device function that the tool gave a
//                               `bool manyalloc_coalesce` parameter (the
//                               paper's "optional argument"): uniform when u,
//                               dynamic otherwise
//   malloc_uniform_if_else_plain(n, u)  the same, CUDA's malloc when !u
//                               (the tool's --unproven=keep)
//   free(p)                     any pointer from the above or from CUDA's
//                               malloc: the pool that holds p decides which
//                               policy frees it, CUDA's free otherwise
//
// Rule: free must learn where a part came from without the call site's help
// ([Blach2022] 3.1: pairing malloc and free statically is not possible in
// general). Each policy gets a Scatter heap on a pool of its own, so the
// address says it; CUDA's malloc heap is neither pool.
//
// Device state is per translation unit (no relocatable device code needed):
// every file that includes this header registers a host function that copies
// the heaps' handles into its own __constant__ variable; Session fills all of
// them. Kernels may therefore live in other files than main.
//
// Configuration (macros, the same in every file of a program):
//   MANYALLOC_COALESCE_UNIFORM_POLICY    WarpHeader | WarpNoHeader | BlockHeader | BlockNoHeader
//   MANYALLOC_COALESCE_PAGE_BYTES        Scatter page size (default 4096)
//   MANYALLOC_COALESCE_HEAP_BYTES        bytes per heap when Session is built
//                                        without a size (default 1 GiB); the
//                                        environment variable of the same name
//                                        overrides it at run time
//   MANYALLOC_COALESCE_MAP_SLOTS         no-header policies: hash map slots
//                                        (default 2^22)
//
// The tool parses files with a declarations-only view of this header
// (MANYALLOC_COALESCE_PARSING, set by its parse shim), so parsing never needs
// the heap's CUDA internals.
#pragma once

#include <cstddef>

#if defined(MANYALLOC_COALESCE_PARSING)

namespace manyalloc::heap::coalesce {
__device__ void* uniform_malloc(std::size_t bytes);
__device__ void* dynamic_malloc(std::size_t bytes);
__device__ void* malloc_uniform_if(std::size_t bytes, bool uniform);
__device__ void* malloc_uniform_if_else_plain(std::size_t bytes, bool uniform);
__device__ void free(void* ptr);
class Session {
 public:
  Session();
  explicit Session(std::size_t heap_bytes);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};
}  // namespace manyalloc::heap::coalesce

#else

#if !defined(__CUDACC__)
#error "manyalloc/heap/coalesce/runtime.hpp must be compiled by nvcc"
#endif

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// Only the policies used here (rewritten files compile faster than with
// heap.hpp).
#include "manyalloc/heap/acc/cuda.hpp"
#include "manyalloc/heap/alignment/noop.hpp"
#include "manyalloc/heap/allocator.hpp"
#include "manyalloc/heap/creation/scatter.hpp"
#include "manyalloc/heap/distribution/dynamic_warp.hpp"
#include "manyalloc/heap/distribution/superblock_map.hpp"
#include "manyalloc/heap/distribution/uniform.hpp"
#include "manyalloc/heap/oom/return_null.hpp"
#include "manyalloc/heap/reserve_pool/cuda_malloc.hpp"

#ifndef MANYALLOC_COALESCE_UNIFORM_POLICY
#define MANYALLOC_COALESCE_UNIFORM_POLICY WarpHeader
#endif
#ifndef MANYALLOC_COALESCE_PAGE_BYTES
#define MANYALLOC_COALESCE_PAGE_BYTES 4096
#endif
#ifndef MANYALLOC_COALESCE_HEAP_BYTES
#define MANYALLOC_COALESCE_HEAP_BYTES (std::size_t{1} << 30)
#endif
#ifndef MANYALLOC_COALESCE_MAP_SLOTS
#define MANYALLOC_COALESCE_MAP_SLOTS (std::uint64_t{1} << 22)
#endif

namespace manyalloc::heap::coalesce {

// Emptied pages give up their chunk size: a rewritten program may allocate
// any mix of sizes over its run.
struct ScatterPages : CreationPolicies::ScatterHeapConfig {
  static constexpr std::uint32_t pagesize = MANYALLOC_COALESCE_PAGE_BYTES;
  static constexpr bool resetfreedpages = true;
};

// Address range of one heap's pool, for free's dispatch.
struct PoolRange {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  MANYALLOC_FN bool holds(const void* p) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return a >= begin && a < end;
  }
};

// ReservePoolPolicies::CudaMalloc that remembers where the pool lies (one
// pool per Role at a time) and whose release never throws: a Session ends in
// a destructor, possibly after the program reset the device.
template <int Role>
struct RecordedCudaPool : ReservePoolPolicies::CudaMalloc {
  static PoolRange& range() {
    static PoolRange r;
    return r;
  }
  static void* set_mem_pool(std::size_t bytes) {
    void* p = ReservePoolPolicies::CudaMalloc::set_mem_pool(bytes);
    range() = {reinterpret_cast<std::uintptr_t>(p), reinterpret_cast<std::uintptr_t>(p) + bytes};
    return p;
  }
  static void reset_mem_pool(void* pool, std::size_t) {
    range() = {};
    if (pool == nullptr) return;
    const cudaError_t err = cudaFree(pool);
    if (err != cudaSuccess) {
      std::fprintf(stderr, "manyalloc::heap::coalesce: cudaFree of a heap pool failed at tear-down: %s\n",
                   cudaGetErrorString(err));
    }
  }
  static std::string classname() { return "RecordedCudaPool"; }
};

inline constexpr int uniform_role = 0;
inline constexpr int dynamic_role = 1;

using UniformPolicy = DistributionPolicies::MANYALLOC_COALESCE_UNIFORM_POLICY;
using UniformHeap = Allocator<CreationPolicies::Scatter<ScatterPages>, UniformPolicy, OOMPolicies::ReturnNull,
                              RecordedCudaPool<uniform_role>, AlignmentPolicies::NoOp>;
using DynamicHeap = Allocator<CreationPolicies::Scatter<ScatterPages>, DistributionPolicies::DynamicWarp,
                              OOMPolicies::ReturnNull, RecordedCudaPool<dynamic_role>, AlignmentPolicies::NoOp>;

inline constexpr bool uniform_policy_uses_map =
    std::is_same_v<UniformPolicy, DistributionPolicies::WarpNoHeader> ||
    std::is_same_v<UniformPolicy, DistributionPolicies::BlockNoHeader>;

// What the device side of one translation unit needs.
struct DeviceHandles {
  UniformHeap::Handle uniform;
  DynamicHeap::Handle dynamic;
  PoolRange uniform_pool;
  PoolRange dynamic_pool;
};

namespace detail {
// Host functions that install (or, with nullptr, clear) the handles in one
// translation unit's device state; one entry per file including this header.
using Installer = void (*)(const DeviceHandles*);
inline std::vector<Installer>& installers() {
  static std::vector<Installer> all;
  return all;
}
}  // namespace detail

namespace {
// Constant memory, like kernel arguments: every call reads the handles, and
// the constant cache serves a warp's identical reads at once (a hand-written
// kernel gets its handle as an argument, which lives there too).
// Raw bytes: a __constant__ variable may not have a dynamic initializer.
// All zero (no session) makes every entry point fall back to CUDA's malloc.
__constant__ alignas(DeviceHandles) unsigned char installed_handles[sizeof(DeviceHandles)];
__constant__ bool installed = false;

__device__ inline const DeviceHandles& handles() {
  return *reinterpret_cast<const DeviceHandles*>(installed_handles);
}

// No-header policies look parts up in a hash map that is per translation unit
// on the device (distribution/superblock_map.hpp): each file gets its own.
std::unique_ptr<distribution::SuperblockTable<ReservePoolPolicies::CudaMalloc>>& superblock_table_here() {
  static std::unique_ptr<distribution::SuperblockTable<ReservePoolPolicies::CudaMalloc>> table;
  return table;
}

void install_here(const DeviceHandles* h) {
  const bool on = h != nullptr;
  if (on) {
    acc::cuda_check(cudaMemcpyToSymbol(installed_handles, h, sizeof *h), "coalesce Session (handles)");
    if constexpr (uniform_policy_uses_map) {
      superblock_table_here() =
          std::make_unique<distribution::SuperblockTable<ReservePoolPolicies::CudaMalloc>>(MANYALLOC_COALESCE_MAP_SLOTS);
    }
  } else {
    superblock_table_here().reset();
  }
  const cudaError_t err = cudaMemcpyToSymbol(installed, &on, sizeof on);
  if (on) acc::cuda_check(err, "coalesce Session (installed flag)");
}

const bool registered_here = (detail::installers().push_back(&install_here), true);
}  // namespace

// The entry points copy the handle they use out of constant memory into a
// local first: called through the reference, the policy code re-reads its
// fields from constant memory wherever it uses them, which takes more
// registers than a kernel that got its handle as an argument (and so may
// leave fewer warps resident per multiprocessor).
__device__ inline void* uniform_malloc(std::size_t bytes) {
  if (!installed) return ::malloc(bytes);
  const UniformHeap::Handle heap = handles().uniform;
  return heap.alloc(acc::CudaThread{}, bytes);
}

__device__ inline void* dynamic_malloc(std::size_t bytes) {
  if (!installed) return ::malloc(bytes);
  const DynamicHeap::Handle heap = handles().dynamic;
  return heap.alloc(acc::CudaThread{}, bytes);
}

__device__ inline void* malloc_uniform_if(std::size_t bytes, bool uniform) {
  return uniform ? uniform_malloc(bytes) : dynamic_malloc(bytes);
}

__device__ inline void* malloc_uniform_if_else_plain(std::size_t bytes, bool uniform) {
  return uniform ? uniform_malloc(bytes) : ::malloc(bytes);
}

__device__ inline void free(void* ptr) {
  if (ptr == nullptr) return;
  if (installed) {
    const DeviceHandles& h = handles();
    if (h.uniform_pool.holds(ptr)) {
      const UniformHeap::Handle heap = h.uniform;
      return heap.dealloc(acc::CudaThread{}, ptr);
    }
    if (h.dynamic_pool.holds(ptr)) {
      const DynamicHeap::Handle heap = h.dynamic;
      return heap.dealloc(acc::CudaThread{}, ptr);
    }
  }
  ::free(ptr);
}

// The heaps of a rewritten program: built by the tool's line at the start of
// main, torn down when main returns (every return path). One at a time.
class Session {
 public:
  Session() : Session(heap_bytes_from_environment()) {}
  explicit Session(std::size_t heap_bytes) : uniform_(heap_bytes), dynamic_(heap_bytes) {
    DeviceHandles h{uniform_.handle(), dynamic_.handle(), RecordedCudaPool<uniform_role>::range(),
                    RecordedCudaPool<dynamic_role>::range()};
    for (detail::Installer install : detail::installers()) install(&h);
  }
  ~Session() {
    // Kernels still running may hold parts: finish them before the pools go.
    (void)cudaDeviceSynchronize();
    for (detail::Installer install : detail::installers()) {
      try {
        install(nullptr);
      } catch (...) {
      }
    }
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const UniformHeap& uniform_heap() const { return uniform_; }
  const DynamicHeap& dynamic_heap() const { return dynamic_; }

  static std::size_t heap_bytes_from_environment() {
    if (const char* v = std::getenv("MANYALLOC_COALESCE_HEAP_BYTES")) {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v, &end, 10);
      if (end != v && *end == '\0' && n > 0) return static_cast<std::size_t>(n);
      std::fprintf(stderr, "manyalloc::heap::coalesce: MANYALLOC_COALESCE_HEAP_BYTES='%s' is not a byte count; "
                   "using the default\n", v);
    }
    return MANYALLOC_COALESCE_HEAP_BYTES;
  }

 private:
  UniformHeap uniform_;
  DynamicHeap dynamic_;
};

}  // namespace manyalloc::heap::coalesce

#endif  // MANYALLOC_COALESCE_PARSING
