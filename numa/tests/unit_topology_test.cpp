// NUMA logic on synthetic and XML topologies of several nodes (the CI
// machine has one node).
#include <gtest/gtest.h>
#include <hwloc.h>

#include <cstdio>
#include <string>

#include "test_os.hpp"
#include "topology.hpp"

namespace manyalloc::numa {
namespace {

struct Topo {
  hwloc_topology_t t = nullptr;
  explicit Topo(const char* synthetic, const char* xml = nullptr) {
    hwloc_topology_init(&t);
    if (xml) hwloc_topology_set_xml(t, xml);
    else hwloc_topology_set_synthetic(t, synthetic);
    hwloc_topology_load(t);
  }
  ~Topo() { hwloc_topology_destroy(t); }
  hwloc_bitmap_t cpus(std::initializer_list<unsigned> ids) {
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    for (unsigned i : ids) hwloc_bitmap_set(b, i);
    return b;
  }
};

void expect_four_node_logic(Topo& topo) {
  ASSERT_EQ(hwloc_get_nbobjs_by_type(topo.t, HWLOC_OBJ_NUMANODE), 4);
  struct Case {
    std::initializer_list<unsigned> cpus;
    int node;
  } cases[] = {{{0}, 0}, {{1}, 0}, {{0, 1}, 0}, {{2, 3}, 1}, {{7}, 3}, {{1, 2}, -1}, {{0, 7}, -1}};
  for (const Case& k : cases) {
    hwloc_bitmap_t b = topo.cpus(k.cpus);
    EXPECT_EQ(topology_node_of_cpuset(topo.t, b), k.node);
    hwloc_bitmap_free(b);
  }
  hwloc_bitmap_t empty = hwloc_bitmap_alloc();
  EXPECT_EQ(topology_node_of_cpuset(topo.t, empty), -1);
  hwloc_bitmap_free(empty);
}

TEST(Topology, BoundThreadsMapToTheirNodeMobileOnesToCommon) {
  Topo topo("pack:2 numa:2 core:2 pu:1");  // 8 PUs, 4 nodes of 2 PUs
  expect_four_node_logic(topo);
}

TEST(Topology, SameLogicFromAnXmlTopology) {
  Topo synthetic("pack:2 numa:2 core:2 pu:1");
  char path[] = "/tmp/manyalloc-numa-topoXXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(hwloc_topology_export_xml(synthetic.t, path, 0), 0);
  Topo xml(nullptr, path);
  expect_four_node_logic(xml);
  std::remove(path);
}

TEST(Topology, ContextLoadsTheConfiguredTopologyOnce) {
  auto c = test::make_context(Profile::numa);
  c->opts.topology = "synthetic:pack:2 numa:1 core:2 pu:1";
  EXPECT_EQ(topology_load(*c), 2);
  EXPECT_EQ(c->nodes.load(), 2);
  EXPECT_FALSE(topology_is_this_system());
  // Not this machine: no binding can be read or applied; the thread is mobile.
  EXPECT_EQ(topology_thread_node(*c), -1);
  char buf[4096];
  EXPECT_FALSE(topology_bind(*c, buf, sizeof buf, 1, false));
  EXPECT_EQ(topology_load(*c), 2);  // once
}

}  // namespace
}  // namespace manyalloc::numa
