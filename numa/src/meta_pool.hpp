// Pools of descriptors, in memory that is never handed to users.
//
// Descriptors (heaps, segment descriptors) are carved from 1 MiB blocks
// mapped for this purpose only and not registered in the registry, so a user
// pointer can never point into metadata and a user overflow can never reach
// it ([Valat2014]: metadata apart from the split macro-blocks; issue: "metadata is
// kept apart from user data"). Freed descriptors go to a free list and are
// reused; blocks are never unmapped. Allocation and free take a spin lock:
// descriptors are created on slow paths only.
//
// Resident memory: a descriptor carved from a fresh block is not
// constructed, because a fresh anonymous mapping already reads as zero and
// every pooled type (Heap, SmallSegment, LargeSegment) is defined so that
// all-zero bytes are its value-initialised state. Writing those zeros would
// fault in every page of every descriptor (a SmallSegment or a Heap spans
// several pages) although most of it is never used: this kept
// hundreds of KiB resident per process for nothing. A slot of several
// pages gets the same treatment when it is freed: its pages after the first
// are decommitted (they read as zero again), and reuse clears only the
// first page (lowmem returns segments, and with them their descriptors, all
// the time; value-initialising a reused segment descriptor wrote all of its
// 40 KiB). Smaller slots are value-initialised on reuse.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "manyalloc/common/spin_lock.hpp"
#include "os.hpp"
#include "size_class.hpp"  // os_page

namespace manyalloc::numa {

template <class T>
class MetaPool {
 public:
  static constexpr std::size_t block_bytes = std::size_t{1} << 20;
  // Descriptors larger than a page start on a page boundary: only their
  // first lines are written by a thread that uses one class (heap fields,
  // segment header and first run), and a slot straddling a page boundary
  // made that two resident pages instead of one (the untouched rest of
  // the rounding costs address space only).
  static constexpr std::size_t align = sizeof(T) > os_page ? os_page : alignof(T);
  static constexpr std::size_t slot_bytes = (sizeof(T) + align - 1) / align * align;
  static constexpr bool paged = align == os_page && slot_bytes >= 2 * os_page;
  static_assert(slot_bytes <= block_bytes && alignof(T) <= os_page);

  constexpr MetaPool() = default;

  // A value-initialised T, or nullptr when no block could be mapped.
  T* create(const OsOps& os) noexcept {
    void* mem = nullptr;
    bool fresh = false;
    {
      SpinGuard g(lock_);
      if (free_ != nullptr) {
        mem = free_;
        free_ = free_->next;
      } else if (bump_ != nullptr && end_ - bump_ >= static_cast<std::ptrdiff_t>(slot_bytes)) {
        mem = bump_;
        bump_ += slot_bytes;
        fresh = true;
      }
    }
    if (mem == nullptr) {
      // Map outside the lock; a racing thread may map a block too, which
      // only wastes the rest of the older block.
      auto* block = static_cast<std::uint8_t*>(os.map(nullptr, block_bytes));
      if (block == nullptr) return nullptr;
      mapped_.fetch_add(block_bytes, std::memory_order_relaxed);
      SpinGuard g(lock_);
      mem = block;
      bump_ = block + slot_bytes;
      end_ = block + block_bytes;
      fresh = true;
    }
    live_.fetch_add(1, std::memory_order_relaxed);
    if (!fresh && !paged) return new (mem) T();
    if (!fresh) std::memset(mem, 0, os_page);  // the rest was decommitted by destroy
    return std::launder(static_cast<T*>(mem));  // zero == value-initialised
  }

  // Returns the bytes it decommitted with one call (0: none), for the
  // statistics.
  std::size_t destroy(T* obj, const OsOps& os) noexcept {
    obj->~T();
    std::size_t decommitted = 0;
    if constexpr (paged) {
      // Zero again and not resident (see above); if the kernel refuses, the
      // slot is cleared by hand.
      auto* tail = reinterpret_cast<std::uint8_t*>(obj) + os_page;
      decommitted = slot_bytes - os_page;
      if (os.decommit(tail, slot_bytes - os_page) != 0) std::memset(tail, 0, slot_bytes - os_page);
    }
    auto* f = reinterpret_cast<FreeSlot*>(obj);
    live_.fetch_sub(1, std::memory_order_relaxed);
    SpinGuard g(lock_);
    f->next = free_;
    free_ = f;
    return decommitted;
  }

  std::size_t mapped_bytes() const noexcept { return mapped_.load(std::memory_order_relaxed); }
  std::size_t live() const noexcept { return live_.load(std::memory_order_relaxed); }
  SpinLock& lock() noexcept { return lock_; }

 private:
  struct FreeSlot {
    FreeSlot* next;
  };
  SpinLock lock_;
  FreeSlot* free_ = nullptr;
  std::uint8_t* bump_ = nullptr;
  std::uint8_t* end_ = nullptr;
  std::atomic<std::size_t> mapped_{0};
  std::atomic<std::size_t> live_{0};
};

}  // namespace manyalloc::numa
