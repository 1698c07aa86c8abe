// ReservePoolPolicies::CudaVirtualMemory: a GPU pool that grows without
// moving (issue 15). set_mem_pool reserves a range of the device's virtual
// address space (cuMemAddressReserve) and maps nothing; map() backs a further
// part of it with physical memory (cuMemCreate, cuMemMap, cuMemSetAccess),
// so a heap can start small and grow between launches while its chunks stay
// where they are. The driver functions are reached through the runtime's
// entry-point lookup, so programs need not link libcuda.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "manyalloc/heap/acc/cuda.hpp"

namespace manyalloc::heap::ReservePoolPolicies {

class CudaVirtualMemory {
  struct Driver {
    decltype(&cuMemAddressReserve) reserve = nullptr;
    decltype(&cuMemAddressFree) address_free = nullptr;
    decltype(&cuMemCreate) create = nullptr;
    decltype(&cuMemRelease) release = nullptr;
    decltype(&cuMemMap) map = nullptr;
    decltype(&cuMemUnmap) unmap = nullptr;
    decltype(&cuMemSetAccess) set_access = nullptr;
    decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  };
  struct Pool {
    std::size_t mapped = 0;
    struct Piece {
      std::size_t offset, bytes;
      CUmemGenericAllocationHandle handle;
    };
    std::vector<Piece> pieces;
  };

  template <class F>
  static void load(F*& fn, const char* name) {
    cudaDriverEntryPointQueryResult found{};
    void* p = nullptr;
    acc::cuda_check(cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found), name);
    if (found != cudaDriverEntryPointSuccess || p == nullptr)
      throw std::runtime_error(std::string("CudaVirtualMemory: driver entry point not found: ") + name);
    fn = reinterpret_cast<F*>(p);
  }
  static const Driver& driver() {
    static const Driver d = [] {
      Driver x;
      load(x.reserve, "cuMemAddressReserve");
      load(x.address_free, "cuMemAddressFree");
      load(x.create, "cuMemCreate");
      load(x.release, "cuMemRelease");
      load(x.map, "cuMemMap");
      load(x.unmap, "cuMemUnmap");
      load(x.set_access, "cuMemSetAccess");
      load(x.granularity, "cuMemGetAllocationGranularity");
      return x;
    }();
    return d;
  }
  static void check(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS)
      throw std::runtime_error(std::string("CudaVirtualMemory: ") + what + " failed with CUresult " + std::to_string(r));
  }
  static CUmemAllocationProp properties() {
    int device = 0;
    acc::cuda_check(cudaGetDevice(&device), "cudaGetDevice");
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return prop;
  }
  static std::mutex& lock() {
    static std::mutex m;
    return m;
  }
  static std::map<void*, Pool>& pools() {
    static std::map<void*, Pool> p;
    return p;
  }

 public:
  using backend = acc::Cuda;
  static constexpr bool addressable = true;

  // Physical memory is mapped in multiples of this (2 MiB on current GPUs).
  static std::size_t granularity() {
    acc::cuda_check(cudaFree(nullptr), "cudaFree(nullptr) (context)");
    const CUmemAllocationProp prop = properties();
    std::size_t g = 0;
    check(driver().granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
    return g;
  }

  // Reserves `bytes` (rounded up to the granularity) of virtual address
  // space; maps nothing. Throws std::runtime_error naming the failed call.
  static void* set_mem_pool(std::size_t bytes) {
    const std::size_t g = granularity();
    CUdeviceptr base = 0;
    check(driver().reserve(&base, (bytes + g - 1) / g * g, g, 0, 0), "cuMemAddressReserve");
    void* p = reinterpret_cast<void*>(base);
    const std::lock_guard<std::mutex> guard(lock());
    pools()[p] = Pool{};
    return p;
  }

  // Backs [pool + from, pool + to) with device memory readable and
  // writable by this device; `from` must be what was mapped before (both
  // multiples of the granularity). Throws std::runtime_error (e.g. when the
  // GPU has no memory left); what was mapped before stays mapped.
  static void map(void* pool, std::size_t from, std::size_t to) {
    if (to <= from) return;
    const std::lock_guard<std::mutex> guard(lock());
    Pool& p = pools().at(pool);
    if (from != p.mapped) throw std::invalid_argument("CudaVirtualMemory::map: must continue at the mapped end");
    const CUmemAllocationProp prop = properties();
    CUmemGenericAllocationHandle handle{};
    check(driver().create(&handle, to - from, &prop, 0), "cuMemCreate");
    const auto at = reinterpret_cast<CUdeviceptr>(pool) + from;
    CUresult r = driver().map(at, to - from, 0, handle, 0);
    if (r == CUDA_SUCCESS) {
      CUmemAccessDesc access{};
      access.location = prop.location;
      access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      r = driver().set_access(at, to - from, &access, 1);
      if (r != CUDA_SUCCESS) driver().unmap(at, to - from);
    }
    if (r != CUDA_SUCCESS) {
      driver().release(handle);
      check(r, "cuMemMap/cuMemSetAccess");
    }
    p.pieces.push_back({from, to - from, handle});
    p.mapped = to;
  }

  static void reset_mem_pool(void* pool, std::size_t bytes) {
    if (pool == nullptr) return;
    cudaDeviceSynchronize();
    const std::lock_guard<std::mutex> guard(lock());
    auto it = pools().find(pool);
    if (it == pools().end()) return;
    const auto base = reinterpret_cast<CUdeviceptr>(pool);
    for (const auto& piece : it->second.pieces) {
      driver().unmap(base + piece.offset, piece.bytes);
      driver().release(piece.handle);
    }
    const std::size_t g = granularity();
    driver().address_free(base, (bytes + g - 1) / g * g);
    pools().erase(it);
  }
  static std::string classname() { return "CudaVirtualMemory"; }
};

}  // namespace manyalloc::heap::ReservePoolPolicies
