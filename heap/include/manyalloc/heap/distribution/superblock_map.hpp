// The concurrent hash map of no-header coalescing ([Blach2022] 3.1):
// part address -> superblock start. Open addressing with linear probing over
// 64-bit keys; a removed key leaves a tombstone that later inserts reuse.
//
// Invariants: a key is present at most once (a live part address is unique);
// a slot goes empty -> key -> tombstone -> key ..., never back to empty, so a
// lookup that meets an empty slot knows the key is absent; the value of a
// slot is written by the inserting worker before the part is handed out and
// read only by the worker that frees the part, before (fence) that worker
// turns the key into a tombstone.
//
// There is one map per process (host workers) and one per translation unit
// on the device (a __device__ variable in an unnamed namespace): install it
// with SuperblockTable<ReservePool> (RAII) in the translation unit whose
// kernels allocate, before they run. Size it for the most parts alive at once
// (a full map makes allocations fail: the part is reported and leaked).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "manyalloc/common/platform.hpp"
#include "manyalloc/heap/acc/host_thread.hpp"
#if defined(__CUDACC__)
#include "manyalloc/heap/acc/cuda.hpp"
#endif

namespace manyalloc::heap::distribution {

struct SuperblockMapView {
  std::uint64_t* keys = nullptr;
  std::uint64_t* values = nullptr;
  std::uint64_t mask = 0;  // capacity - 1 (capacity a power of two); 0: no map

  static constexpr std::uint64_t empty = 0;
  static constexpr std::uint64_t tombstone = 1;

  MANYALLOC_FN static std::uint64_t hash(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    return k ^ (k >> 33);
  }

  template <class Acc>
  MANYALLOC_FN bool insert(const Acc& acc, std::uint64_t key, std::uint64_t value) const {
    if (mask == 0) return false;
    std::uint64_t i = hash(key) & mask;
    for (std::uint64_t probes = 0; probes <= mask; ++probes, i = (i + 1) & mask) {
      std::uint64_t k = acc.load64(keys + i);
      while (k == empty || k == tombstone) {
        const std::uint64_t seen = acc.atomic_cas64(keys + i, k, key);
        if (seen == k) {
          acc.store64(values + i, value);
          return true;
        }
        k = seen;
      }
    }
    return false;
  }

  // Removes `key` and returns its value, or 0 when absent.
  template <class Acc>
  MANYALLOC_FN std::uint64_t remove(const Acc& acc, std::uint64_t key) const {
    if (mask == 0) return 0;
    std::uint64_t i = hash(key) & mask;
    for (std::uint64_t probes = 0; probes <= mask; ++probes, i = (i + 1) & mask) {
      const std::uint64_t k = acc.load64(keys + i);
      if (k == empty) return 0;
      if (k == key) {
        const std::uint64_t v = acc.load64(values + i);
        // The value must be read before the slot is given up: once the CAS
        // below makes it a tombstone, an insert may reuse it and overwrite
        // the value. The load and the CAS are independent and go to different
        // addresses, so without a fence the GPU may perform the CAS first and
        // the load return the next owner's value. (On an H200 1 run in 5 of
        // the full-occupancy test ended with one superblock whose counter
        // stayed at 1 while no key was left: a decrement had gone elsewhere.)
        acc.fence();
        // Only the freeing worker removes its key: a CAS settles a racing
        // double free, so exactly one remover gets the value.
        if (acc.atomic_cas64(keys + i, key, tombstone) != key) return 0;
        return v;
      }
    }
    return 0;
  }
};

// The installed map of this process (host workers).
inline SuperblockMapView& host_superblock_map() {
  static SuperblockMapView view;
  return view;
}

namespace {
#if defined(__CUDACC__)
__device__ SuperblockMapView device_superblock_map;
#endif

MANYALLOC_FN inline SuperblockMapView current_superblock_map() {
#if defined(__CUDA_ARCH__)
  return device_superblock_map;
#else
  return host_superblock_map();
#endif
}

#if defined(__CUDACC__)
inline void install_superblock_map(const SuperblockMapView& v, bool on_device) {
  if (on_device) {
    acc::cuda_check(cudaMemcpyToSymbol(device_superblock_map, &v, sizeof v), "SuperblockTable (cudaMemcpyToSymbol)");
  } else {
    host_superblock_map() = v;
  }
}
#else
inline void install_superblock_map(const SuperblockMapView& v, bool on_device) {
  if (on_device) throw std::logic_error("SuperblockTable: a device map needs nvcc");
  host_superblock_map() = v;
}
#endif
}  // namespace

// Owns a map of `capacity` slots (rounded up to a power of two) in memory of
// the ReservePoolPolicy `Pool` (HostPool, CudaMalloc) and installs it for the
// no-header policies; uninstalls and frees it on destruction. One at a time.
template <class Pool>
class SuperblockTable {
 public:
  explicit SuperblockTable(std::uint64_t capacity) {
    std::uint64_t cap = 1024;
    while (cap < capacity) cap <<= 1;
    bytes_ = static_cast<std::size_t>(cap) * 2u * sizeof(std::uint64_t);
    memory_ = Pool::set_mem_pool(bytes_);
    Pool::backend::fill_zero(memory_, bytes_);
    view_.keys = static_cast<std::uint64_t*>(memory_);
    view_.values = view_.keys + cap;
    view_.mask = cap - 1u;
    install_superblock_map(view_, on_device());
  }
  ~SuperblockTable() {
    try {
      install_superblock_map(SuperblockMapView{}, on_device());
    } catch (...) {
    }
    Pool::reset_mem_pool(memory_, bytes_);
  }
  SuperblockTable(const SuperblockTable&) = delete;
  SuperblockTable& operator=(const SuperblockTable&) = delete;

  std::uint64_t capacity() const { return view_.mask + 1u; }
  const SuperblockMapView& view() const { return view_; }

 private:
  static bool on_device() { return !std::is_same_v<typename Pool::backend, acc::HostThreads>; }

  void* memory_ = nullptr;
  std::size_t bytes_ = 0;
  SuperblockMapView view_{};
};

}  // namespace manyalloc::heap::distribution
