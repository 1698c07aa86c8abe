// What the numa profile maps into a process (MANYALLOC_NUMA_PROFILE=numa, set
// by ctest): on a machine whose sysfs shows one NUMA node, no topology is
// needed, and hwloc (with libudev and libm) must not be loaded
// (topology.cpp, single_node; numa/DESIGN.md, "Footprint of the numa
// profile"). Deterministic: it looks at the loaded libraries, not at sizes.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "api_test_util.hpp"

namespace manyalloc::numa::test {
namespace {

// The text of /sys/devices/system/node/online, or "" when it cannot be read.
std::string online_nodes() {
  std::FILE* f = std::fopen("/sys/devices/system/node/online", "r");
  if (f == nullptr) return "";
  char buf[256] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string s(buf, n);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

TEST(NumaProfileFootprint, OneNodeMachineLoadsNoTopology) {
  const char* profile = std::getenv("MANYALLOC_NUMA_PROFILE");
  ASSERT_NE(profile, nullptr);
  ASSERT_STREQ(profile, "numa");
  const std::string nodes = online_nodes();
  if (nodes != "0") GTEST_SKIP() << "sysfs shows NUMA nodes '" << nodes << "', not one";
  // A new thread makes its heap, which in the numa profile chooses the
  // source of the thread's node.
  int node = -2;
  std::thread t([&] {
    void* p = manyalloc_numa_malloc(100);
    manyalloc_numa_free(p);
    node = manyalloc_numa_thread_node();
  });
  t.join();
  EXPECT_STREQ(stats().profile, "numa");
  EXPECT_EQ(node, 0);
  EXPECT_EQ(dlopen("libhwloc.so.15", RTLD_NOW | RTLD_NOLOAD), nullptr)
      << "the numa profile loaded hwloc on a machine of one node";
}

}  // namespace
}  // namespace manyalloc::numa::test
