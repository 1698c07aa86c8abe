// NUMA topology through hwloc (with hwloc_api.*, the only files that include
// hwloc.h; the library is loaded with dlopen when a topology is needed).
//
// [Valat2014], "NUMA strategy": memory sources are selected with hwloc at thread
// start; threads are not bound by default and move, so an unbound thread uses
// the common source and a thread bound inside one node uses that node's
// source. The topology is loaded lazily (hwloc allocates, so never under an
// allocator lock) and only when the numa profile or a NUMA call needs it.
#pragma once

#include <cstddef>

struct hwloc_topology;
struct hwloc_bitmap_s;

namespace manyalloc::numa {

struct Context;

// Loads the topology once (the machine's, or the one of the `topology`
// option). Returns the number of NUMA nodes (>= 1), or 0 while another
// thread (or this one, re-entering from inside hwloc) is loading it.
int topology_load(Context& c);

// NUMA node of the calling thread: the node whose CPUs contain the thread's
// CPU binding, or -1 when the thread may run on several nodes (or the
// topology is not this machine's, e.g. synthetic). On a machine of one node
// without a configured topology, 0 without loading a topology.
int topology_thread_node(Context& c);

// Node whose cpuset includes `cpuset` entirely, or -1 (pure logic, tested
// with synthetic topologies).
int topology_node_of_cpuset(hwloc_topology* topo, const hwloc_bitmap_s* cpuset);

// Binds (and with migrate, moves) the pages of [p, p + bytes) to `node`
// (c.os->bind, which does not allocate). No-op returning false when the
// topology is not this machine's, and on a machine of one node without a
// configured topology (without loading one).
bool topology_bind(Context& c, void* p, std::size_t bytes, int node, bool migrate);

// True once a topology is loaded and it describes this machine.
bool topology_is_this_system();

}  // namespace manyalloc::numa
