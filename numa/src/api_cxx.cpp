// C++ allocation functions, routed to the same allocator as malloc, without
// a link dependency on the C++ runtime.
//
// Why: a C program (Python, a Fortran or C MPI code) that preloads the
// library should not have to load libstdc++ and libgcc_s (about 1 MiB of
// resident code, and their relocation at every process start). The library
// is built without exceptions and does not link libstdc++ (CMakeLists.txt),
// so the C++ runtime is only reached on a failure, at run time
// (cxx_runtime below), where it is loaded already: a program that calls
// operator new is a C++ program.
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

#include <cstddef>
#include <cstdlib>
#include <new>

#include "manyalloc/numa/numa.h"

#define MA_EXPORT __attribute__((visibility("default")))

namespace {

// The two entry points of the C++ runtime that a failing operator new needs,
// looked up in the libstdc++ the program has loaded (RTLD_NOLOAD: never
// loads one), or in the global scope (a program linked with a static
// libstdc++ that exports them).
struct CxxRuntime {
  std::new_handler (*get_new_handler)() = nullptr;
  void (*throw_bad_alloc)() = nullptr;  // std::__throw_bad_alloc: throws
};

CxxRuntime cxx_runtime() noexcept {
  void* lib = ::dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
  void* scope = lib != nullptr ? lib : RTLD_DEFAULT;
  CxxRuntime rt;
  rt.get_new_handler = reinterpret_cast<std::new_handler (*)()>(::dlsym(scope, "_ZSt15get_new_handlerv"));
  rt.throw_bad_alloc = reinterpret_cast<void (*)()>(::dlsym(scope, "_ZSt17__throw_bad_allocv"));
  if (lib != nullptr) ::dlclose(lib);  // drops the reference NOLOAD took
  return rt;
}

// No C++ runtime to throw with: say so rather than return nullptr from a
// function that must not.
[[noreturn]] void no_runtime() noexcept {
  static const char msg[] =
      "manyalloc-numa: operator new failed and no C++ runtime (libstdc++) is loaded to throw "
      "std::bad_alloc; aborting\n";
  (void)!::write(2, msg, sizeof msg - 1);
  std::abort();
}

void* new_impl(std::size_t n, std::size_t align) {
  for (;;) {
    void* p = align <= __STDCPP_DEFAULT_NEW_ALIGNMENT__ ? manyalloc_numa_malloc(n)
                                                         : manyalloc_numa_aligned_alloc(align, n);
    if (p != nullptr) [[likely]]
      return p;
    const CxxRuntime rt = cxx_runtime();
    const std::new_handler handler = rt.get_new_handler != nullptr ? rt.get_new_handler() : nullptr;
    if (handler == nullptr) {
      if (rt.throw_bad_alloc != nullptr) rt.throw_bad_alloc();
      no_runtime();
    }
    handler();
  }
}

constexpr std::size_t kDefault = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

}  // namespace

MA_EXPORT void* operator new(std::size_t n) { return new_impl(n, kDefault); }
MA_EXPORT void* operator new[](std::size_t n) { return new_impl(n, kDefault); }
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
