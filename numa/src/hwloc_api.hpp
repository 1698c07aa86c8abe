// The hwloc functions the node allocator calls, resolved with dlopen on
// first use instead of linking libhwloc.
//
// Linking hwloc (and, through it, libudev) mapped more into every process
// at start, counted in its resident set, although only the
// numa profile and the NUMA calls need a topology (topology.hpp). Only
// topology.cpp calls these.
#pragma once

#include <hwloc.h>

namespace manyalloc::numa {

// Every function, by its name without the "hwloc_" prefix: X(name) for each.
#define MANYALLOC_NUMA_HWLOC_FUNCTIONS(X)                                          \
  X(topology_init) X(topology_set_synthetic) X(topology_set_xml) X(topology_load) \
  X(topology_destroy) X(topology_is_thissystem) X(get_type_depth)                 \
  X(get_nbobjs_by_depth) X(get_obj_by_depth) X(bitmap_alloc) X(bitmap_free)       \
  X(bitmap_iszero) X(bitmap_isincluded) X(get_cpubind)

// HwlocApi::f is hwloc_f.
struct HwlocApi {
#define MANYALLOC_NUMA_HWLOC_FIELD(f) decltype(&::hwloc_##f) f;
  MANYALLOC_NUMA_HWLOC_FUNCTIONS(MANYALLOC_NUMA_HWLOC_FIELD)
#undef MANYALLOC_NUMA_HWLOC_FIELD
};

// Loads libhwloc and resolves every function once (thread-safe; may
// allocate, so never under an allocator lock). nullptr when the library or
// one of the functions is missing: the allocator then sees one node.
const HwlocApi* hwloc_api();

}  // namespace manyalloc::numa
