// Worker functions shared by the host and GPU tests (and the benchmarks):
// each is a functor called as f(acc, worker) on every worker of a run.
#pragma once

#include <cstddef>
#include <cstdint>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::testing {

struct Record {
  void* ptr;
  std::uint32_t worker;
  std::uint32_t counter;
};

// Value of word `i` of the chunk that `worker` got as its `counter`-th
// allocation ([Eckert2014] 5.4: a checksum of the worker id and a counter).
MANYALLOC_FN inline std::uint32_t checksum(std::uint32_t worker, std::uint32_t counter, std::uint32_t i) {
  std::uint32_t x = worker * 0x9e3779b1u ^ (counter + 1u) * 0x85ebca77u ^ i * 0xc2b2ae3du;
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  return x ^ (x >> 13);
}

// [Eckert2014] 5.4, first phase: allocate `bytes`-byte chunks until the heap is
// full, fill each with checksums and record it.
template <class Handle>
struct FillUntilFull {
  Handle heap;
  std::size_t bytes;
  Record* records;
  std::uint32_t capacity;
  std::uint32_t* count;      // records taken
  std::uint32_t* overflow;   // chunks that found no record slot

  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t worker) const {
    for (std::uint32_t counter = 0;; ++counter) {
      void* p = heap.alloc(acc, bytes);
      if (p == nullptr) return;
      auto* words = static_cast<std::uint32_t*>(p);
      for (std::uint32_t i = 0; i < bytes / 4; ++i) words[i] = checksum(worker, counter, i);
      const std::uint32_t slot = acc.atomic_add(count, 1u);
      if (slot < capacity) {
        records[slot] = Record{p, worker, counter};
      } else {
        acc.atomic_add(overflow, 1u);
        heap.dealloc(acc, p);
      }
    }
  }
};

// [Eckert2014] 5.4, second phase: every recorded chunk still holds its checksums.
struct VerifyRecords {
  const Record* records;
  std::uint32_t count;
  std::size_t bytes;
  std::uint32_t* corrupt;

  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t i) const {
    if (i >= count) return;
    const Record r = records[i];
    const auto* words = static_cast<const std::uint32_t*>(r.ptr);
    for (std::uint32_t k = 0; k < bytes / 4; ++k) {
      if (words[k] != checksum(r.worker, r.counter, k)) {
        acc.atomic_add(corrupt, 1u);
        return;
      }
    }
  }
};

template <class Handle>
struct FreeRecords {
  Handle heap;
  const Record* records;
  std::uint32_t count;

  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t i) const {
    if (i < count) heap.dealloc(acc, records[i].ptr);
  }
};

// Random sizes from 1 byte to `max_bytes`, log-uniformly distributed, random
// frees; every chunk is checked before it is freed. Leaves nothing allocated.
template <class Handle>
struct Churn {
  static constexpr unsigned live_slots = 8;
  Handle heap;
  std::uint32_t rounds;
  std::uint32_t max_log2;    // sizes up to 2^max_log2 bytes
  std::uint32_t* corrupt;
  std::uint32_t* failed;     // allocations the heap could not serve
  // Orders a chunk's writes before its free (what a heap whose frees do not,
  // SizeClassSlabs' RelaxedFreesConfig, asks of its workers).
  bool fence_before_free = false;

  MANYALLOC_FN static std::uint32_t next(std::uint64_t& s) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(s >> 33);
  }
  MANYALLOC_FN static unsigned char pattern(std::uint32_t worker, std::uint32_t round, std::size_t i) {
    return static_cast<unsigned char>(checksum(worker, round, static_cast<std::uint32_t>(i)) & 0xffu);
  }
  // Writes/checks the first and last 32 bytes (all of a small chunk).
  template <bool Check>
  MANYALLOC_FN static bool touch(unsigned char* p, std::size_t n, std::uint32_t worker, std::uint32_t round) {
    bool ok = true;
    for (std::size_t i = 0; i < n; i = (i == 31 && n > 64) ? n - 32 : i + 1) {
      if constexpr (Check) ok = ok && p[i] == pattern(worker, round, i);
      else p[i] = pattern(worker, round, i);
    }
    return ok;
  }

  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t worker) const {
    unsigned char* live[live_slots] = {};
    std::size_t size[live_slots] = {};
    std::uint32_t born[live_slots] = {};
    std::uint64_t rng = 0x853c49e6748fea9bull ^ (static_cast<std::uint64_t>(worker) << 20);
    for (std::uint32_t round = 0; round < rounds; ++round) {
      const unsigned j = next(rng) % live_slots;
      if (live[j] != nullptr) {
        if (!touch<true>(live[j], size[j], worker, born[j])) acc.atomic_add(corrupt, 1u);
        if (fence_before_free) acc.fence();
        heap.dealloc(acc, live[j]);
        live[j] = nullptr;
      } else {
        const std::uint32_t log2 = next(rng) % (max_log2 + 1);
        const std::size_t n = 1 + next(rng) % (std::size_t{1} << log2);
        live[j] = static_cast<unsigned char*>(heap.alloc(acc, n));
        if (live[j] == nullptr) {
          acc.atomic_add(failed, 1u);
          continue;
        }
        size[j] = n;
        born[j] = round;
        touch<false>(live[j], n, worker, round);
      }
    }
    for (unsigned j = 0; j < live_slots; ++j) {
      if (live[j] == nullptr) continue;
      if (!touch<true>(live[j], size[j], worker, born[j])) acc.atomic_add(corrupt, 1u);
      heap.dealloc(acc, live[j]);
    }
  }
};

// Every worker asks the heap for its count of free `slot`-byte chunks.
template <class Handle>
struct SlotsFromWorkers {
  Handle heap;
  std::size_t slot;
  unsigned long long* out;

  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t worker) const {
    out[worker] = heap.getAvailableSlots(acc, slot);
  }
};

// Bad input from a worker: zero-size alloc, nullptr/foreign/interior/double
// frees. results: [0] alloc(0) was nullptr, [1] a chunk could be allocated,
// [2] the chunk's data survived the misuse.
template <class Handle>
struct BadInputProbe {
  Handle heap;
  std::uint32_t* results;

  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t worker) const {
    if (worker != 0) return;
    results[0] = heap.alloc(acc, 0) == nullptr;
    heap.dealloc(acc, nullptr);
    auto* p = static_cast<std::uint32_t*>(heap.alloc(acc, 64));
    auto* q = static_cast<std::uint32_t*>(heap.alloc(acc, 64));
    results[1] = p != nullptr && q != nullptr;
    if (p == nullptr || q == nullptr) return;
    for (int i = 0; i < 16; ++i) q[i] = 0xabcd0000u + i;
    heap.dealloc(acc, reinterpret_cast<void*>(std::uintptr_t{0x1000}));  // foreign
    heap.dealloc(acc, p + 1);                                             // interior
    heap.dealloc(acc, p);
    heap.dealloc(acc, p);                                                 // double free
    bool intact = true;
    for (int i = 0; i < 16; ++i) intact = intact && q[i] == 0xabcd0000u + i;
    results[2] = intact;
    heap.dealloc(acc, q);
  }
};

// One worker: requests beyond the heap fail; a `big`-byte run of pages is
// usable at both ends; results [0] pool+1 failed, [1] SIZE_MAX failed,
// [2] big succeeded, [3] pool-big+1 pages more failed, [4] small chunks work.
template <class Handle>
struct LargeRequestProbe {
  Handle heap;
  std::size_t pool;
  std::size_t big;
  std::uint32_t* out;

  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t worker) const {
    if (worker != 0) return;
    out[0] = heap.alloc(acc, pool + 1) == nullptr;
    out[1] = heap.alloc(acc, ~std::size_t{0}) == nullptr;
    auto* run = static_cast<unsigned char*>(heap.alloc(acc, big));
    out[2] = run != nullptr;
    if (run == nullptr) return;
    run[0] = 1;
    run[big - 1] = 2;
    out[3] = heap.alloc(acc, pool - big + 4096) == nullptr;
    void* small = heap.alloc(acc, 32);
    out[4] = small != nullptr && run[0] == 1 && run[big - 1] == 2;
    heap.dealloc(acc, small);
    heap.dealloc(acc, run);
  }
};

}  // namespace manyalloc::heap::testing
