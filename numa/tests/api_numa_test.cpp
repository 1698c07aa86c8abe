// The NUMA calls against a synthetic two-node topology
// (MANYALLOC_NUMA_TOPOLOGY="synthetic:pack:2 numa:1 core:2 pu:1", set by ctest):
// per-node sources, allocation on a node, heap migration, rebind.
#include <cstring>
#include <thread>
#include <vector>

#include "api_test_util.hpp"

namespace manyalloc::numa::test {
namespace {

TEST(NumaTopology, TwoNodesGiveTwoSourcesPlusTheCommonOne) {
  ASSERT_NE(std::getenv("MANYALLOC_NUMA_TOPOLOGY"), nullptr);
  EXPECT_EQ(manyalloc_numa_node_count(), 2);
  EXPECT_STREQ(stats().profile, "numa");  // a topology option selects the numa profile
  EXPECT_EQ(stats().nsources, 3u);
}

TEST(NumaTopology, AllocationOnANodeComesFromThatNodesSource) {
  const auto a = stats();
  void* p0 = manyalloc_numa_malloc_onnode(3 << 20, 0);
  void* p1 = manyalloc_numa_malloc_onnode(5 << 20, 1);
  ASSERT_TRUE(p0 && p1);
  std::memset(p1, 1, 5 << 20);
  const auto b = stats();
  EXPECT_GE(b.sources[1].large_in_use_bytes - a.sources[1].large_in_use_bytes, 3u << 20);
  EXPECT_GE(b.sources[2].large_in_use_bytes - a.sources[2].large_in_use_bytes, 5u << 20);
  EXPECT_EQ(b.sources[0].large_in_use_bytes, a.sources[0].large_in_use_bytes);
  manyalloc_numa_free(p0);
  manyalloc_numa_free(p1);
  // Freed memory stays in its node's source: no exchange between sources.
  const auto c = stats();
  EXPECT_GE(c.sources[2].cached_bytes, 5u << 20);
  void* again = manyalloc_numa_malloc_onnode(5 << 20, 1);
  EXPECT_GT(stats().sources[2].reuses, c.sources[2].reuses);
  manyalloc_numa_free(again);
  errno = 0;
  EXPECT_EQ(manyalloc_numa_malloc_onnode(10, 2), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST(NumaTopology, MobileThreadsUseTheCommonSourceAndMigrationMovesTheHeap) {
  std::thread t([] {
    // A synthetic topology is not this machine: the thread counts as mobile.
    EXPECT_EQ(manyalloc_numa_thread_node(), -1);
    std::vector<void*> v;
    for (int i = 0; i < 100; ++i) v.push_back(manyalloc_numa_malloc(1000));
    const auto a = stats();
    EXPECT_EQ(manyalloc_numa_thread_migrate(1), 0);
    EXPECT_EQ(manyalloc_numa_thread_node(), 1);
    const auto b = stats();
    // The heap's segment moved to node 1's source.
    EXPECT_GE(b.sources[2].mapped_bytes, a.sources[2].mapped_bytes + (2u << 20));
    for (int i = 0; i < 4000; ++i) v.push_back(manyalloc_numa_malloc(1000));  // new segments
    const auto c = stats();
    EXPECT_GT(c.sources[2].os_maps, b.sources[2].os_maps);
    EXPECT_EQ(c.sources[0].os_maps, b.sources[0].os_maps);
    void* big = manyalloc_numa_malloc(4 << 20);  // large ones follow the heap's source
    EXPECT_GE(stats().sources[2].large_in_use_bytes, 4u << 20);
    manyalloc_numa_free(big);
    for (void* p : v) manyalloc_numa_free(p);
    EXPECT_EQ(manyalloc_numa_thread_rebind(), -1);  // binding unknown: common source
    EXPECT_EQ(manyalloc_numa_thread_node(), -1);
    EXPECT_EQ(manyalloc_numa_thread_migrate(2), -1);
  });
  t.join();
  EXPECT_EQ(stats().misuses, 0u);
}

}  // namespace
}  // namespace manyalloc::numa::test
