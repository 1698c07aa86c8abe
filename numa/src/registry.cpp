// Registry (registry.hpp): leaf creation and range updates.
#include "registry.hpp"

namespace manyalloc::numa {

bool Registry::reserve(const OsOps& os, const void* base, std::size_t bytes) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(base);
  if (bytes == 0 || (a >> address_bits) || ((a + bytes - 1) >> address_bits)) return false;
  const std::size_t first = a >> (segment_shift + leaf_bits);
  const std::size_t last = (a + bytes - 1) >> (segment_shift + leaf_bits);
  for (std::size_t t = first; t <= last; ++t) {
    if (top_[t].load(std::memory_order_acquire) != nullptr) continue;
    // Fresh anonymous memory is zero, i.e. every slot is nullptr.
    auto* leaf = static_cast<Slot*>(os.map(nullptr, leaf_slots * sizeof(Slot)));
    if (leaf == nullptr) return false;
    Slot* expected = nullptr;
    if (top_[t].compare_exchange_strong(expected, leaf, std::memory_order_acq_rel)) {
      leaves_.fetch_add(1, std::memory_order_relaxed);
    } else {
      os.unmap(leaf, leaf_slots * sizeof(Slot));  // another thread won the race
    }
  }
  return true;
}

void Registry::set(const void* base, std::size_t bytes, Segment* seg) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(base);
  for (std::uintptr_t s = a; s < a + bytes; s += segment_bytes) {
    Slot* leaf = top_[s >> (segment_shift + leaf_bits)].load(std::memory_order_acquire);
    if (leaf == nullptr) continue;  // only when reserve() was skipped: nothing to clear
    leaf[(s >> segment_shift) & (leaf_slots - 1)].store(seg, std::memory_order_release);
  }
}

}  // namespace manyalloc::numa
