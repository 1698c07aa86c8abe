// Shared pieces of the distribution-policy tests: a counting creation policy,
// heap types per policy, and checks on sets of parts.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "manyalloc_support/emulated_warp.hpp"
#include "manyalloc/heap/heap.hpp"

namespace manyalloc::heap::testing {

// std::malloc for any host worker type, counting what is alive, how many
// superblocks were created and the largest request.
struct CountingMalloc {
  struct Counters {
    std::atomic<long> live{0};
    std::atomic<long> creates{0};
    std::atomic<std::size_t> largest{0};
    void reset() { live = 0; creates = 0; largest = 0; }
  };
  static Counters& counters() {
    static Counters c;
    return c;
  }

  static constexpr bool providesAvailableSlots = false;
  static constexpr bool needs_addressable_pool = false;
  template <class Backend>
  static CountingMalloc init_heap(void*, std::size_t) { return {}; }
  template <class Backend>
  static void finalize_heap(const CountingMalloc&) {}

  template <class Acc>
  void* create(const Acc&, std::size_t bytes) const {
    if (bytes == 0 || bytes > (std::size_t{1} << 32)) return nullptr;
    void* p = std::aligned_alloc(16, (bytes + 15) / 16 * 16);
    if (p != nullptr) {
      counters().live += 1;
      counters().creates += 1;
      std::size_t prev = counters().largest.load();
      while (prev < bytes && !counters().largest.compare_exchange_weak(prev, bytes)) {
      }
    }
    return p;
  }
  template <class Acc>
  void destroy(const Acc&, void* p) const {
    if (p == nullptr) return;  // the host class passes nullptr from lanes that free nothing
    counters().live -= 1;
    std::free(p);
  }
  static bool is_oom(const void* p, std::size_t bytes) { return bytes != 0 && p == nullptr; }
  static std::string classname() { return "CountingMalloc"; }
};

struct ResetScatterConfig : CreationPolicies::ScatterHeapConfig {
  static constexpr bool resetfreedpages = true;
};

template <class DP>
using CountingHeap = Allocator<CountingMalloc, DP, OOMPolicies::ReturnNull, ReservePoolPolicies::HostPool,
                               AlignmentPolicies::NoOp>;
template <class DP>
using ScatterCoalescingHeap = Allocator<CreationPolicies::Scatter<ResetScatterConfig>, DP, OOMPolicies::ReturnNull,
                                        ReservePoolPolicies::HostPool, AlignmentPolicies::NoOp>;

using DistributionPolicies::block_scope;

struct Part {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  std::uint32_t owner = 0;
};

inline unsigned char fill_byte(std::uint32_t owner, std::size_t i) {
  return static_cast<unsigned char>((owner * 131u + i * 7u + 1u) & 0xffu);
}
inline void fill(const Part& p) {
  auto* b = static_cast<unsigned char*>(p.ptr);
  for (std::size_t i = 0; i < p.bytes; ++i) b[i] = fill_byte(p.owner, i);
}
inline bool intact(const Part& p) {
  const auto* b = static_cast<const unsigned char*>(p.ptr);
  for (std::size_t i = 0; i < p.bytes; ++i) {
    if (b[i] != fill_byte(p.owner, i)) return false;
  }
  return true;
}
// No two parts overlap.
inline bool disjoint(std::vector<Part> parts) {
  std::erase_if(parts, [](const Part& p) { return p.ptr == nullptr; });
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.ptr < b.ptr; });
  for (std::size_t i = 1; i < parts.size(); ++i) {
    if (static_cast<const std::byte*>(parts[i - 1].ptr) + parts[i - 1].bytes > parts[i].ptr) return false;
  }
  return true;
}

}  // namespace manyalloc::heap::testing
