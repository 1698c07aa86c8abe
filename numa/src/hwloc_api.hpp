// The hwloc functions the node allocator calls, resolved with dlopen on
// first use instead of linking libhwloc.
//
// Linking hwloc (and, through it, libudev) mapped about 200 KiB more into
// every process at start, counted in its resident set, although only the
// numa profile and the NUMA calls need a topology (topology.hpp). Only
// topology.cpp calls these.
#pragma once

#include <hwloc.h>

namespace manyalloc::numa {

struct HwlocApi {
  decltype(&::hwloc_topology_init) topology_init;
  decltype(&::hwloc_topology_set_synthetic) topology_set_synthetic;
  decltype(&::hwloc_topology_set_xml) topology_set_xml;
  decltype(&::hwloc_topology_load) topology_load;
  decltype(&::hwloc_topology_destroy) topology_destroy;
  decltype(&::hwloc_topology_is_thissystem) topology_is_thissystem;
  decltype(&::hwloc_get_type_depth) get_type_depth;
  decltype(&::hwloc_get_nbobjs_by_depth) get_nbobjs_by_depth;
  decltype(&::hwloc_get_obj_by_depth) get_obj_by_depth;
  decltype(&::hwloc_bitmap_alloc) bitmap_alloc;
  decltype(&::hwloc_bitmap_free) bitmap_free;
  decltype(&::hwloc_bitmap_iszero) bitmap_iszero;
  decltype(&::hwloc_bitmap_isincluded) bitmap_isincluded;
  decltype(&::hwloc_get_cpubind) get_cpubind;
  decltype(&::hwloc_set_area_membind) set_area_membind;
};

// Loads libhwloc and resolves every function once (thread-safe; may
// allocate, so never under an allocator lock). nullptr when the library or
// one of the functions is missing: the allocator then sees one node.
const HwlocApi* hwloc_api();

}  // namespace manyalloc::numa
