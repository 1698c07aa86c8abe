// C++ allocation functions, routed to the same allocator as malloc, without
// a link dependency on the C++ runtime.
//
// Why: a C program (Python, a Fortran or C MPI code) that preloads the
// library should not have to load libstdc++ and libgcc_s (resident code,
// and their relocation at every process start). The library
// is built without exceptions and does not link libstdc++ (CMakeLists.txt);
// it reaches the C++ runtime only when an allocation fails (find_runtime).
//
// What is defined here: the throwing forms of operator new (plain, array,
// aligned) and every form of operator delete. Failure calls the new-handler
// and retries, then throws std::bad_alloc. The nothrow forms are the C++
// runtime's: libstdc++ (GCC 9 and later) defines each of them as a call to
// the matching throwing form, which resolves to the one here, inside a
// try block that turns std::bad_alloc into nullptr. Defining them here
// would need that try block, hence the runtime's personality routine.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

#include "manyalloc/numa/numa.h"

#define MA_EXPORT __attribute__((visibility("default")))

// Weak references to libstdc++: bound when the program has its C++ runtime
// in the global scope at start (linked with it, or statically with its
// symbols exported), null otherwise. A weak reference records no dependency
// (the linker's --as-needed drops libstdc++ all the same).
namespace std {
[[gnu::weak]] new_handler get_new_handler() noexcept;
[[gnu::weak, noreturn]] void __throw_bad_alloc();
}  // namespace std

namespace {

using GetHandler = std::new_handler (*)();
using Thrower = void (*)();  // throws std::bad_alloc

// The runtime's two entry points, found once: from the weak references, or
// else in a C++ runtime that is loaded but not global (C++ code that a C
// program loaded with dlopen(RTLD_LOCAL), such as a Python extension):
// libstdc++, then LLVM's libc++, looked up with RTLD_NOLOAD (never loads
// one). The handle is kept open, so the runtime stays loaded while the
// pointers are cached. Only the first failing allocation pays for the lookup.
std::atomic<GetHandler> g_get_handler{nullptr};
std::atomic<Thrower> g_thrower{nullptr};

void find_runtime() noexcept {
  if (g_thrower.load(std::memory_order_acquire) != nullptr) return;
  GetHandler get = nullptr;
  Thrower thrower = nullptr;
  if (&std::get_new_handler != nullptr && &std::__throw_bad_alloc != nullptr) {
    get = &std::get_new_handler;
    thrower = &std::__throw_bad_alloc;
  } else {
    struct Candidate {
      const char* soname;
      const char* thrower;
    };
    static constexpr Candidate runtimes[] = {
        {"libstdc++.so.6", "_ZSt17__throw_bad_allocv"},
        {"libc++.so.1", "_ZNSt3__117__throw_bad_allocEv"},
    };
    for (const Candidate& r : runtimes) {
      void* lib = ::dlopen(r.soname, RTLD_LAZY | RTLD_NOLOAD);
      if (lib == nullptr) continue;
      get = reinterpret_cast<GetHandler>(::dlsym(lib, "_ZSt15get_new_handlerv"));
      thrower = reinterpret_cast<Thrower>(::dlsym(lib, r.thrower));
      if (thrower != nullptr) break;
      ::dlclose(lib);
    }
  }
  if (thrower == nullptr) return;
  g_get_handler.store(get, std::memory_order_relaxed);
  g_thrower.store(thrower, std::memory_order_release);
}

// No C++ runtime to throw with (operator new called from a program whose
// runtime is neither global nor a loaded libstdc++/libc++, e.g. a static
// libstdc++ whose symbols the program does not export): say so rather than
// return nullptr from a function that must not.
[[noreturn]] void no_runtime() noexcept {
  static const char msg[] =
      "manyalloc-numa: operator new failed and no C++ runtime was found to throw "
      "std::bad_alloc with; aborting\n";
  (void)!::write(2, msg, sizeof msg - 1);
  std::abort();
}

void* new_impl(std::size_t n, std::size_t align) {
  for (;;) {
    void* p = align <= __STDCPP_DEFAULT_NEW_ALIGNMENT__ ? manyalloc_numa_malloc(n)
                                                         : manyalloc_numa_aligned_alloc(align, n);
    if (p != nullptr) [[likely]]
      return p;
    find_runtime();
    const GetHandler get = g_get_handler.load(std::memory_order_relaxed);
    const std::new_handler handler = get != nullptr ? get() : nullptr;
    if (handler == nullptr) {
      if (Thrower thrower = g_thrower.load(std::memory_order_acquire)) thrower();
      no_runtime();
    }
    handler();
  }
}

constexpr std::size_t default_alignment = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

}  // namespace

MA_EXPORT void* operator new(std::size_t n) { return new_impl(n, default_alignment); }
MA_EXPORT void* operator new[](std::size_t n) { return new_impl(n, default_alignment); }
MA_EXPORT void* operator new(std::size_t n, std::align_val_t a) {
  return new_impl(n, static_cast<std::size_t>(a));
}
MA_EXPORT void* operator new[](std::size_t n, std::align_val_t a) {
  return new_impl(n, static_cast<std::size_t>(a));
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
