// Host back end: every std::thread (or OpenMP thread, ...) is a worker of
// warp width 1. Every access to shared heap words, loads and stores
// included, is a sequentially consistent std::atomic_ref operation: they are
// totally ordered, so fence() has nothing to add, and ThreadSanitizer
// understands every access.
#pragma once

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "manyalloc/heap/acc/concepts.hpp"

namespace manyalloc::heap::acc {

class HostThread {
 public:
  static constexpr unsigned warp_size = 1;
  static constexpr bool shuffle_after_divergence = true;  // one lane

  unsigned lane_id() const { return 0; }
  std::uint32_t active_mask() const { return 1u; }
  std::uint32_t ballot(std::uint32_t, bool pred) const { return pred ? 1u : 0u; }
  std::uint32_t shfl(std::uint32_t, std::uint32_t v, unsigned) const { return v; }
  std::uint32_t match_any(std::uint32_t, std::uint32_t) const { return 1u; }
  std::uint32_t reduce_or(std::uint32_t, std::uint32_t v) const { return v; }
  void sync_lanes(std::uint32_t) const {}
  // One worker per CPU at a time: the CPU id alone separates them.
  unsigned warp_id() const { return 0; }
  unsigned processor_id() const {
    const int cpu = sched_getcpu();
    return cpu < 0 ? 0u : static_cast<unsigned>(cpu);
  }

  std::uint32_t load(const std::uint32_t* p) const {
    return std::atomic_ref<std::uint32_t>(*const_cast<std::uint32_t*>(p))
        .load();
  }
  void store(std::uint32_t* p, std::uint32_t v) const {
    std::atomic_ref<std::uint32_t>(*p).store(v);
  }
  std::uint32_t atomic_add(std::uint32_t* p, std::uint32_t v) const { return ref(p).fetch_add(v); }
  std::uint32_t atomic_sub(std::uint32_t* p, std::uint32_t v) const { return ref(p).fetch_sub(v); }
  std::uint32_t atomic_sub_release(std::uint32_t* p, std::uint32_t v) const { return ref(p).fetch_sub(v); }
  std::uint32_t atomic_and_release(std::uint32_t* p, std::uint32_t v) const { return ref(p).fetch_and(v); }
  std::uint32_t atomic_or(std::uint32_t* p, std::uint32_t v) const { return ref(p).fetch_or(v); }
  std::uint32_t atomic_and(std::uint32_t* p, std::uint32_t v) const { return ref(p).fetch_and(v); }
  std::uint32_t atomic_exch(std::uint32_t* p, std::uint32_t v) const { return ref(p).exchange(v); }
  std::uint32_t atomic_cas(std::uint32_t* p, std::uint32_t expected, std::uint32_t desired) const {
    ref(p).compare_exchange_strong(expected, desired);
    return expected;  // the old value, as CUDA's atomicCAS returns it
  }
  void fence() const {}
  // Waiting for another worker: give the CPU to it (workers may outnumber CPUs).
  void relax() const { std::this_thread::yield(); }

  // MixedWidthAtomics (sequentially consistent, like the 32-bit words).
  std::uint16_t load16(const std::uint16_t* p) const {
    return std::atomic_ref<std::uint16_t>(*const_cast<std::uint16_t*>(p)).load();
  }
  void store16(std::uint16_t* p, std::uint16_t v) const { std::atomic_ref<std::uint16_t>(*p).store(v); }
  std::uint16_t atomic_cas16(std::uint16_t* p, std::uint16_t expected, std::uint16_t desired) const {
    std::atomic_ref<std::uint16_t>(*p).compare_exchange_strong(expected, desired);
    return expected;
  }
  std::uint64_t load64(const std::uint64_t* p) const {
    return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(p)).load();
  }
  void store64(std::uint64_t* p, std::uint64_t v) const { std::atomic_ref<std::uint64_t>(*p).store(v); }
  void store128(std::uint64_t* p, std::uint64_t lo, std::uint64_t hi) const {
    store64(p, lo);
    store64(p + 1, hi);
  }
  std::uint64_t atomic_cas64(std::uint64_t* p, std::uint64_t expected, std::uint64_t desired) const {
    std::atomic_ref<std::uint64_t>(*p).compare_exchange_strong(expected, desired);
    return expected;
  }
  std::uint64_t atomic_add64(std::uint64_t* p, std::uint64_t v) const {
    return std::atomic_ref<std::uint64_t>(*p).fetch_add(v);
  }
  std::uint64_t atomic_exch64(std::uint64_t* p, std::uint64_t v) const {
    return std::atomic_ref<std::uint64_t>(*p).exchange(v);
  }
  std::uint64_t atomic_and64(std::uint64_t* p, std::uint64_t v) const {
    return std::atomic_ref<std::uint64_t>(*p).fetch_and(v);
  }
  std::uint64_t atomic_and64_release(std::uint64_t* p, std::uint64_t v) const { return atomic_and64(p, v); }

  // SystemScopeWorker: the host's words are ordinary memory here.
  std::uint64_t load_system64(const std::uint64_t* p) const { return load64(p); }
  void store_system64(std::uint64_t* p, std::uint64_t v) const { store64(p, v); }
  std::uint64_t now_ns() const {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  }

  // BlockAccelerator: a host thread is a block of one.
  BlockRank block_rank() const { return {0, 1}; }
  bool block_sync_or(bool pred) const { return pred; }
  std::uint64_t block_broadcast(std::uint64_t v, bool) const { return v; }

 private:
  static std::atomic_ref<std::uint32_t> ref(std::uint32_t* p) {
    return std::atomic_ref<std::uint32_t>(*p);
  }
};
static_assert(Accelerator<HostThread>);
static_assert(MixedWidthAtomics<HostThread>);
static_assert(BlockAccelerator<HostThread>);
static_assert(SystemScopeWorker<HostThread>);

// Host-side operations of the host back end. "Device" memory is host memory.
struct HostThreads {
  using acc_type = HostThread;
  static constexpr bool has_exceptions = true;
  static constexpr bool pool_memory_resident = false;  // HostPool: committed on first touch (concepts.hpp)

  static void copy_to_device(void* dst, const void* src, std::size_t n) { std::memcpy(dst, src, n); }
  static void copy_to_host(void* dst, const void* src, std::size_t n) { std::memcpy(dst, src, n); }
  static void fill_zero(void* dst, std::size_t n) { std::memset(dst, 0, n); }
  static std::string name() { return "HostThreads"; }

  // SharedHostMemory: ordinary memory; no context to take over.
  struct ThreadContext {};
  static void* alloc_shared(std::size_t n) {
    void* p = ::operator new(n, std::align_val_t{64});
    std::memset(p, 0, n);
    return p;
  }
  static void free_shared(void* p) {
    if (p != nullptr) ::operator delete(p, std::align_val_t{64});
  }
  static ThreadContext capture_context() { return {}; }
  static void enter_context(ThreadContext) {}

  // Splits [0, n) into contiguous ranges, calls f(begin, end) for each on its
  // own thread and returns the results in range order (so callers may combine
  // order-dependent summaries).
  template <class F>
  static auto map_ranges(const F& f, std::uint64_t n)
      -> std::vector<decltype(f(std::uint64_t{}, std::uint64_t{}))> {
    using R = decltype(f(std::uint64_t{}, std::uint64_t{}));
    const std::uint64_t parts =
        std::max<std::uint64_t>(1, std::min<std::uint64_t>(std::thread::hardware_concurrency(),
                                                           n / 4096 + 1));
    std::vector<R> out(parts);
    std::vector<std::thread> threads;
    for (std::uint64_t i = 0; i < parts; ++i) {
      threads.emplace_back([&, i] { out[i] = f(n * i / parts, n * (i + 1) / parts); });
    }
    for (auto& t : threads) t.join();
    return out;
  }
};
static_assert(Backend<HostThreads>);
static_assert(SharedHostMemory<HostThreads>);

}  // namespace manyalloc::heap::acc
