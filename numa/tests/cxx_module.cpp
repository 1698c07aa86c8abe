// C++ code that a C program loads with dlopen(RTLD_LOCAL) (c_program.c), as
// Python loads an extension: its C++ runtime is loaded but not global, so
// the preloaded allocator's operator new finds it with RTLD_NOLOAD
// (src/api_cxx.cpp) to call the new-handler and throw.
#include <cstdint>
#include <new>

// Bit 0: the throwing form threw std::bad_alloc; bit 1: the nothrow form
// returned nullptr.
extern "C" int cxx_module_failing_new() {
  int result = 0;
  try {
    (void)::operator new(SIZE_MAX / 2);
  } catch (const std::bad_alloc&) {
    result |= 1;
  }
  if (::operator new[](SIZE_MAX / 2, std::nothrow) == nullptr) result |= 2;
  return result;
}

extern "C" void* cxx_module_new(std::size_t n) { return ::operator new(n); }
extern "C" void cxx_module_delete(void* p) { ::operator delete(p); }
