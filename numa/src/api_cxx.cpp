// C++ allocation functions (all replaceable forms of operator new/delete),
// routed to the same allocator as malloc. Failure calls the new-handler and
// retries, then throws std::bad_alloc (nothrow forms return nullptr).
#include <cstddef>
#include <new>

#include "manyalloc/numa/numa.h"

#define MA_EXPORT __attribute__((visibility("default")))

namespace {

void* new_impl(std::size_t n, std::size_t align) {
  for (;;) {
    void* p = align <= __STDCPP_DEFAULT_NEW_ALIGNMENT__ ? manyalloc_numa_malloc(n)
                                                         : manyalloc_numa_aligned_alloc(align, n);
    if (p != nullptr) [[likely]]
      return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void* new_nothrow(std::size_t n, std::size_t align) noexcept {
  try {
    return new_impl(n, align);
  } catch (...) {
    return nullptr;
  }
}

constexpr std::size_t kDefault = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

}  // namespace

MA_EXPORT void* operator new(std::size_t n) { return new_impl(n, kDefault); }
MA_EXPORT void* operator new[](std::size_t n) { return new_impl(n, kDefault); }
MA_EXPORT void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return new_nothrow(n, kDefault);
}
MA_EXPORT void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return new_nothrow(n, kDefault);
}
MA_EXPORT void* operator new(std::size_t n, std::align_val_t a) {
  return new_impl(n, static_cast<std::size_t>(a));
}
MA_EXPORT void* operator new[](std::size_t n, std::align_val_t a) {
  return new_impl(n, static_cast<std::size_t>(a));
}
MA_EXPORT void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return new_nothrow(n, static_cast<std::size_t>(a));
}
MA_EXPORT void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return new_nothrow(n, static_cast<std::size_t>(a));
}

MA_EXPORT void operator delete(void* p) noexcept { manyalloc_numa_free(p); }
MA_EXPORT void operator delete[](void* p) noexcept { manyalloc_numa_free(p); }
MA_EXPORT void operator delete(void* p, std::size_t) noexcept { manyalloc_numa_free(p); }
MA_EXPORT void operator delete[](void* p, std::size_t) noexcept { manyalloc_numa_free(p); }
MA_EXPORT void operator delete(void* p, std::align_val_t) noexcept { manyalloc_numa_free(p); }
MA_EXPORT void operator delete[](void* p, std::align_val_t) noexcept { manyalloc_numa_free(p); }
MA_EXPORT void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  manyalloc_numa_free(p);
}
MA_EXPORT void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  manyalloc_numa_free(p);
}
MA_EXPORT void operator delete(void* p, const std::nothrow_t&) noexcept { manyalloc_numa_free(p); }
MA_EXPORT void operator delete[](void* p, const std::nothrow_t&) noexcept {
  manyalloc_numa_free(p);
}
MA_EXPORT void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  manyalloc_numa_free(p);
}
MA_EXPORT void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  manyalloc_numa_free(p);
}
