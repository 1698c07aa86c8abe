// A small test-and-test-and-set lock for host code that must not allocate
// and must be usable before main (constexpr constructor, no pthread object).
//
// Used on slow paths only (memory sources, metadata pools): holders never
// block on anything else, so spinning with sched_yield() is enough. The lock
// is an ordinary std::atomic, so ThreadSanitizer understands it.
#pragma once

#include <sched.h>

#include <atomic>

namespace manyalloc {

class SpinLock {
 public:
  constexpr SpinLock() noexcept = default;
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  void lock() noexcept {
    for (unsigned spins = 0;; ++spins) {
      if (!locked_.load(std::memory_order_relaxed) &&
          !locked_.exchange(true, std::memory_order_acquire))
        return;
      if (spins > 64) sched_yield();
#if defined(__x86_64__)
      else __builtin_ia32_pause();
#endif
    }
  }
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }
  // Only in a single-threaded child after fork: the holder no longer exists.
  void reset_unlocked() noexcept { locked_.store(false, std::memory_order_relaxed); }

 private:
  std::atomic<bool> locked_{false};
};

class SpinGuard {
 public:
  explicit SpinGuard(SpinLock& l) noexcept : l_(l) { l_.lock(); }
  ~SpinGuard() { l_.unlock(); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  SpinLock& l_;
};

}  // namespace manyalloc
