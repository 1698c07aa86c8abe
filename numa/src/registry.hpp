// The registry: finds the segment descriptor of any address without locks.
//
// [Valat2014] (backup "Parenté des blocs"): to know, at free time, which heap a
// block belongs to, a page-table-like register is added; unlike a tree it
// needs no lock because (1) mmap never returns the same address twice while
// it is mapped, (2) one 2 MiB entry is covered by at most one macro-block
// (segments are 2 MiB aligned, invariants.hpp), and (3) intermediate levels are
// never removed.
//
// Two levels over a 48-bit address space: a static top table of 2^14 leaf
// pointers, each leaf (64 KiB, mapped on first use and never unmapped) maps
// 2^13 slots of 2 MiB, i.e. 16 GiB. Readers do two acquire loads; writers
// publish a fully initialised descriptor with a release store.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "os.hpp"
#include "invariants.hpp"

namespace manyalloc::numa {

class Registry {
 public:
  static constexpr unsigned address_bits = 48;
  static constexpr unsigned leaf_bits = 13;
  static constexpr unsigned top_bits = address_bits - segment_shift - leaf_bits;
  static constexpr std::size_t leaf_slots = std::size_t{1} << leaf_bits;
  static constexpr std::size_t top_slots = std::size_t{1} << top_bits;
  using Slot = std::atomic<Segment*>;

  constexpr Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The descriptor whose segment contains p, or nullptr. Wait-free.
  Segment* lookup(const void* p) const noexcept {
    // One compare of the top index checks the 48-bit range as well.
    const std::uintptr_t top = reinterpret_cast<std::uintptr_t>(p) >> (segment_shift + leaf_bits);
    if (top >= top_slots) return nullptr;
    const Slot* leaf = top_[top].load(std::memory_order_acquire);
    if (leaf == nullptr) return nullptr;
    return leaf[(reinterpret_cast<std::uintptr_t>(p) >> segment_shift) & (leaf_slots - 1)].load(std::memory_order_acquire);
  }

  // Makes sure the leaves covering [base, base + bytes) exist, so that a
  // later set() cannot fail. False when a leaf could not be mapped or the
  // range lies outside the 48-bit space.
  bool reserve(const OsOps& os, const void* base, std::size_t bytes) noexcept;

  // Maps every 2 MiB slot of the range to seg (after a successful reserve).
  void set(const void* base, std::size_t bytes, Segment* seg) noexcept;
  // Forgets the range (before it is unmapped).
  void clear(const void* base, std::size_t bytes) noexcept { set(base, bytes, nullptr); }

  // Bytes of leaves mapped (statistics).
  std::size_t leaf_bytes() const noexcept {
    return leaves_.load(std::memory_order_relaxed) * leaf_slots * sizeof(Slot);
  }

 private:
  std::atomic<Slot*> top_[top_slots]{};
  std::atomic<std::size_t> leaves_{0};
};

}  // namespace manyalloc::numa
