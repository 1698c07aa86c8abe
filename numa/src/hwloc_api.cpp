// hwloc through dlopen (hwloc_api.hpp).
#include "hwloc_api.hpp"

#include <dlfcn.h>

#include <atomic>

namespace manyalloc::numa {

// hwloc 2.x keeps one ABI, whose library is libhwloc.so.15.
static_assert(HWLOC_API_VERSION >= 0x00020000 && HWLOC_API_VERSION < 0x00030000,
              "hwloc_api.cpp loads libhwloc.so.15, the library of hwloc 2.x");

namespace {

constinit HwlocApi g_api{};
// 0: not tried, 1: loading, 2: loaded, 3: unavailable.
constinit std::atomic<int> g_state{0};

template <class Fn>
bool resolve(void* lib, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  return fn != nullptr;
}

bool load(HwlocApi& a) {
  void* lib = dlopen("libhwloc.so.15", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return false;
  // The handle is kept: the functions stay valid for the process's life.
#define MANYALLOC_NUMA_HWLOC_RESOLVE(f) && resolve(lib, a.f, "hwloc_" #f)
  return true MANYALLOC_NUMA_HWLOC_FUNCTIONS(MANYALLOC_NUMA_HWLOC_RESOLVE);
#undef MANYALLOC_NUMA_HWLOC_RESOLVE
}

}  // namespace

const HwlocApi* hwloc_api() {
  int st = g_state.load(std::memory_order_acquire);
  if (st == 0 && g_state.compare_exchange_strong(st, 1, std::memory_order_acq_rel)) {
    st = load(g_api) ? 2 : 3;
    g_state.store(st, std::memory_order_release);
  }
  // Another thread is loading: wait. Inside the allocator only the thread
  // that loads the topology gets here first (topology_load), so no malloc
  // called by dlopen waits on itself.
  while (st == 1) st = g_state.load(std::memory_order_acquire);
  return st == 2 ? &g_api : nullptr;
}

}  // namespace manyalloc::numa
