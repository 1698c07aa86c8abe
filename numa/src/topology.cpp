// NUMA topology through hwloc (topology.hpp), loaded with dlopen
// (hwloc_api.hpp).
#include "topology.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "context.hpp"
#include "hwloc_api.hpp"

namespace manyalloc::numa {

namespace {

// 0: not loaded, 1: loading, 2: loaded, 3: failed (one node assumed).
constinit std::atomic<int> g_state{0};
constinit hwloc_topology_t g_topo = nullptr;
constinit bool g_this_system = false;
constinit int g_nodes = 1;
// Re-entry guard: hwloc allocates while loading, through this allocator.
constinit thread_local bool t_loading = false;

void say(const Context& c, const char* what, int n) {
  if (!c.opts.verbose) return;
  char buf[200];
  const int len = std::snprintf(buf, sizeof buf, "manyalloc-numa: %s (%d)\n", what, n);
  if (len > 0) (void)!::write(2, buf, static_cast<std::size_t>(len));
}

// NUMA nodes of topo and the i-th of them (hwloc's inline helpers
// hwloc_get_nbobjs_by_type and hwloc_get_obj_by_type, over the loaded API).
int numa_node_count(const HwlocApi& a, hwloc_topology_t topo) {
  const int depth = a.get_type_depth(topo, HWLOC_OBJ_NUMANODE);
  if (depth == HWLOC_TYPE_DEPTH_UNKNOWN || depth == HWLOC_TYPE_DEPTH_MULTIPLE) return 0;
  return static_cast<int>(a.get_nbobjs_by_depth(topo, depth));
}
hwloc_obj_t numa_node(const HwlocApi& a, hwloc_topology_t topo, unsigned i) {
  const int depth = a.get_type_depth(topo, HWLOC_OBJ_NUMANODE);
  if (depth == HWLOC_TYPE_DEPTH_UNKNOWN || depth == HWLOC_TYPE_DEPTH_MULTIPLE) return nullptr;
  return a.get_obj_by_depth(topo, depth, i);
}

// True when no topology is needed to place threads and memory: sysfs shows
// one NUMA node (Context::nodes, until a loaded topology says otherwise)
// and no topology is configured. Every thread then runs inside node 0, and
// binding memory to node 0 changes nothing. hwloc is not loaded for that:
// its library, libudev and libm stay unmapped, and its topology_init does
// not run, which loads (and unloads) every hwloc plugin, with libraries of
// their own (numa/DESIGN.md, "Footprint of the numa profile").
bool single_node(const Context& c) {
  return c.opts.topology == nullptr && c.nodes.load(std::memory_order_relaxed) == 1;
}

}  // namespace

int topology_node_of_cpuset(hwloc_topology* topo, const hwloc_bitmap_s* cpuset) {
  const HwlocApi* a = hwloc_api();
  if (a == nullptr || topo == nullptr || cpuset == nullptr || a->bitmap_iszero(cpuset)) return -1;
  const int n = numa_node_count(*a, topo);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t node = numa_node(*a, topo, static_cast<unsigned>(i));
    if (node != nullptr && node->cpuset != nullptr && a->bitmap_isincluded(cpuset, node->cpuset))
      return static_cast<int>(node->logical_index);
  }
  return -1;
}

int topology_load(Context& c) {
  int st = g_state.load(std::memory_order_acquire);
  if (st >= 2) return g_nodes;
  if (t_loading) return 0;
  st = 0;
  if (!g_state.compare_exchange_strong(st, 1, std::memory_order_acq_rel)) return 0;
  t_loading = true;
  const HwlocApi* a = hwloc_api();
  hwloc_topology_t topo = nullptr;
  bool ok = a != nullptr && a->topology_init(&topo) == 0;
  const char* spec = c.opts.topology;
  if (ok && spec != nullptr) {
    if (std::strncmp(spec, "synthetic:", 10) == 0)
      ok = a->topology_set_synthetic(topo, spec + 10) == 0;
    else if (std::strncmp(spec, "xml:", 4) == 0)
      ok = a->topology_set_xml(topo, spec + 4) == 0;
    else
      ok = false;
  }
  if (ok) ok = a->topology_load(topo) == 0;
  if (ok) {
    int n = numa_node_count(*a, topo);
    if (n < 1) n = 1;
    if (n > static_cast<int>(max_nodes)) n = max_nodes;
    g_topo = topo;
    g_this_system = a->topology_is_thissystem(topo) != 0;
    g_nodes = n;
    c.nodes.store(n, std::memory_order_release);
    say(c, g_this_system ? "topology loaded, NUMA nodes" : "foreign topology loaded, NUMA nodes", n);
  } else {
    if (topo != nullptr) a->topology_destroy(topo);
    say(c, a == nullptr ? "could not load libhwloc.so.15; using one node"
                        : "could not load the topology; using one node", 1);
  }
  t_loading = false;
  g_state.store(ok ? 2 : 3, std::memory_order_release);
  return g_nodes;
}

int topology_thread_node(Context& c) {
  if (single_node(c)) return 0;
  if (topology_load(c) <= 0 || g_topo == nullptr || !g_this_system) return -1;
  const HwlocApi& a = *hwloc_api();  // loaded: g_topo exists
  hwloc_bitmap_t set = a.bitmap_alloc();
  if (set == nullptr) return -1;
  int node = -1;
  if (a.get_cpubind(g_topo, set, HWLOC_CPUBIND_THREAD) == 0)
    node = topology_node_of_cpuset(g_topo, set);
  a.bitmap_free(set);
  return node;
}

bool topology_bind(Context& c, void* p, std::size_t bytes, int node, bool migrate) {
  if (single_node(c)) return false;
  if (topology_load(c) <= 0 || g_topo == nullptr || !g_this_system || node < 0) return false;
  const HwlocApi& a = *hwloc_api();  // loaded: g_topo exists
  hwloc_obj_t obj = numa_node(a, g_topo, static_cast<unsigned>(node));
  if (obj == nullptr) return false;
  // Through the OS interface, not hwloc_set_area_membind: that allocates,
  // and the sources bind new segments under a heap's merge lock.
  return c.os->bind(p, bytes, obj->os_index, migrate) == 0;
}

bool topology_is_this_system() {
  return g_state.load(std::memory_order_acquire) == 2 && g_this_system;
}

}  // namespace manyalloc::numa
