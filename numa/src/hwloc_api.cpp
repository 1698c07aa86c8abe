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
  return resolve(lib, a.topology_init, "hwloc_topology_init") &&
         resolve(lib, a.topology_set_synthetic, "hwloc_topology_set_synthetic") &&
         resolve(lib, a.topology_set_xml, "hwloc_topology_set_xml") &&
         resolve(lib, a.topology_load, "hwloc_topology_load") &&
         resolve(lib, a.topology_destroy, "hwloc_topology_destroy") &&
         resolve(lib, a.topology_is_thissystem, "hwloc_topology_is_thissystem") &&
         resolve(lib, a.get_type_depth, "hwloc_get_type_depth") &&
         resolve(lib, a.get_nbobjs_by_depth, "hwloc_get_nbobjs_by_depth") &&
         resolve(lib, a.get_obj_by_depth, "hwloc_get_obj_by_depth") &&
         resolve(lib, a.bitmap_alloc, "hwloc_bitmap_alloc") &&
         resolve(lib, a.bitmap_free, "hwloc_bitmap_free") &&
         resolve(lib, a.bitmap_iszero, "hwloc_bitmap_iszero") &&
         resolve(lib, a.bitmap_isincluded, "hwloc_bitmap_isincluded") &&
         resolve(lib, a.get_cpubind, "hwloc_get_cpubind") &&
         resolve(lib, a.set_area_membind, "hwloc_set_area_membind");
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
