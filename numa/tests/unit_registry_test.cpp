// Registry (registry.hpp) and the lock-free queue and options reader from
// common/ that the allocator builds on.
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "manyalloc/common/env_options.hpp"
#include "manyalloc/common/mpsc_queue.hpp"
#include "registry.hpp"
#include "test_os.hpp"

namespace manyalloc::numa {
namespace {

using test::Faults;
using test::faulty_os;

TEST(Registry, SetLookupClearAtSegmentGranularity) {
  Faults::reset();
  auto reg = std::make_unique<Registry>();
  Segment a{}, b{};
  auto* base = reinterpret_cast<std::uint8_t*>(std::uintptr_t{0x7f1200000000});
  EXPECT_EQ(reg->lookup(base), nullptr);
  ASSERT_TRUE(reg->reserve(faulty_os, base, 3 * segment_bytes));
  reg->set(base, 2 * segment_bytes, &a);
  reg->set(base + 2 * segment_bytes, segment_bytes, &b);
  EXPECT_EQ(reg->lookup(base), &a);
  EXPECT_EQ(reg->lookup(base + segment_bytes + 12345), &a);
  EXPECT_EQ(reg->lookup(base + 2 * segment_bytes - 1), &a);
  EXPECT_EQ(reg->lookup(base + 2 * segment_bytes), &b);
  EXPECT_EQ(reg->lookup(base + 3 * segment_bytes), nullptr);
  EXPECT_EQ(reg->lookup(base - 1), nullptr);
  reg->clear(base, 2 * segment_bytes);
  EXPECT_EQ(reg->lookup(base), nullptr);
  EXPECT_EQ(reg->lookup(base + 2 * segment_bytes), &b);
  EXPECT_EQ(reg->lookup(reinterpret_cast<void*>(std::uintptr_t{1} << 50)), nullptr);
  EXPECT_FALSE(reg->reserve(faulty_os, reinterpret_cast<void*>(std::uintptr_t{1} << 50), segment_bytes));
  EXPECT_EQ(reg->leaf_bytes(), Registry::leaf_slots * sizeof(void*));
}

TEST(Registry, RangeAcrossLeavesAndLeafMapFailure) {
  Faults::reset();
  auto reg = std::make_unique<Registry>();
  Segment a{};
  const std::uintptr_t leaf_span = std::uintptr_t{1} << (segment_shift + Registry::leaf_bits);
  auto* base = reinterpret_cast<std::uint8_t*>(3 * leaf_span - segment_bytes);
  Faults::maps_left = 1;  // the second leaf cannot be mapped
  EXPECT_FALSE(reg->reserve(faulty_os, base, 2 * segment_bytes));
  Faults::maps_left = -1;
  ASSERT_TRUE(reg->reserve(faulty_os, base, 2 * segment_bytes));
  reg->set(base, 2 * segment_bytes, &a);
  EXPECT_EQ(reg->lookup(base), &a);
  EXPECT_EQ(reg->lookup(base + segment_bytes), &a);
}

TEST(Registry, ConcurrentReadersSeeOnlyPublishedDescriptors) {
  Faults::reset();
  auto reg = std::make_unique<Registry>();
  constexpr int segment_count = 256;
  std::vector<Segment> segs(segment_count);
  for (Segment& s : segs) s.bytes = segment_bytes;  // written before any reader starts
  auto* base = reinterpret_cast<std::uint8_t*>(std::uintptr_t{0x7e0000000000});
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop.load()) {
      for (int i = 0; i < segment_count; ++i) {
        Segment* s = reg->lookup(base + i * segment_bytes + 100);
        if (s != nullptr) ASSERT_EQ(s->bytes, segment_bytes);  // fully initialised
      }
    }
  });
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < segment_count; ++i) {
      ASSERT_TRUE(reg->reserve(faulty_os, base + i * segment_bytes, segment_bytes));
      reg->set(base + i * segment_bytes, segment_bytes, &segs[i]);
    }
    for (int i = 0; i < segment_count; ++i) reg->clear(base + i * segment_bytes, segment_bytes);
  }
  stop = true;
  reader.join();
}

struct Node {
  int value;
  Node* next;
};

TEST(MpscQueue, ManyProducersOneConsumerLoseNothing) {
  MpscQueue<Node, &Node::next> q;
  constexpr int producers = 4, per_round = 5000;
  std::vector<Node> nodes(producers * per_round);
  std::vector<std::thread> threads;
  for (int t = 0; t < producers; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < per_round; ++i) {
        nodes[t * per_round + i].value = t * per_round + i;
        q.push(&nodes[t * per_round + i]);
      }
    });
  std::vector<int> seen(nodes.size(), 0);
  std::size_t got = 0;
  while (got < nodes.size()) {
    for (Node* n = q.take_all(); n != nullptr; n = n->next) {
      ++seen[n->value];
      ++got;
    }
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(q.maybe_empty());
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(EnvOptions, ParsesFlagsSizesChoices) {
  long long v = 0;
  EXPECT_TRUE(env::parse_size("16M", &v));
  EXPECT_EQ(v, 16ll << 20);
  EXPECT_TRUE(env::parse_size("3GiB", &v));
  EXPECT_EQ(v, 3ll << 30);
  EXPECT_TRUE(env::parse_size("0", &v));
  EXPECT_EQ(v, 0);
  EXPECT_FALSE(env::parse_size("12Q", &v));
  EXPECT_FALSE(env::parse_size("-1", &v));
  EXPECT_FALSE(env::parse_size("99999999999999999999", &v));
  EXPECT_TRUE(env::parse_flag("Yes", &v));
  EXPECT_EQ(v, 1);
  EXPECT_TRUE(env::parse_flag("off", &v));
  EXPECT_EQ(v, 0);
  EXPECT_FALSE(env::parse_flag("maybe", &v));
  const char* const choices[] = {"auto", "lowmem", "uma", nullptr};
  EXPECT_TRUE(env::parse_choice("UMA", choices, &v));
  EXPECT_EQ(v, 2);
  EXPECT_FALSE(env::parse_choice("numa", choices, &v));
}

TEST(EnvOptions, ReadsTheOptionsTableFromTheEnvironment) {
  ::setenv("MANYALLOC_NUMA_PROFILE", "lowmem", 1);
  ::setenv("MANYALLOC_NUMA_CACHE_MAX", "64M", 1);
  ::setenv("MANYALLOC_NUMA_HUGE_PAGES", "1", 1);
  ::setenv("MANYALLOC_NUMA_COLOUR", "bogus", 1);
  Options o = load_options(1);
  EXPECT_EQ(o.profile, Profile::lowmem);
  EXPECT_EQ(o.cache_max, 64u << 20);  // set: honoured in lowmem too
  EXPECT_EQ(o.decay_ms, decay_ms_lowmem);
  EXPECT_EQ(o.large_decay_ms, large_decay_ms_lowmem);
  EXPECT_EQ(o.purge_ms, default_purge_ms);
  EXPECT_EQ(o.shared_idle, 0u);  // lowmem: no shared allowance unless set
  EXPECT_EQ(o.shared_idle_peak, 0u);
  EXPECT_TRUE(o.huge_pages);
  EXPECT_TRUE(o.colour);  // bad value keeps the default
  ::unsetenv("MANYALLOC_NUMA_CACHE_MAX");
  ::setenv("MANYALLOC_NUMA_DECAY_MS", "250", 1);
  ::setenv("MANYALLOC_NUMA_PURGE_MS", "0", 1);
  o = load_options(1);
  EXPECT_EQ(o.cache_max, lowmem_cache_max);  // lowmem's small cache of large blocks
  EXPECT_EQ(o.decay_ms, 250u);
  EXPECT_EQ(o.large_decay_ms, 250u);  // set: for every segment
  EXPECT_EQ(o.purge_ms, 0u);
  ::unsetenv("MANYALLOC_NUMA_PURGE_MS");
  ::setenv("MANYALLOC_NUMA_CACHE_MAX", "64M", 1);
  ::unsetenv("MANYALLOC_NUMA_DECAY_MS");
  ::setenv("MANYALLOC_NUMA_PROFILE", "auto", 1);
  o = load_options(4);
  EXPECT_EQ(o.profile, Profile::numa);
  EXPECT_EQ(o.cache_max, 64u << 20);
  EXPECT_EQ(o.decay_ms, default_decay_ms);
  EXPECT_EQ(o.large_decay_ms, default_decay_ms);
  o = load_options(1);
  EXPECT_EQ(o.profile, Profile::uma);
  EXPECT_EQ(o.shared_idle, default_shared_idle);
  EXPECT_EQ(o.shared_idle_peak, default_shared_idle_peak_percent);
  ::setenv("MANYALLOC_NUMA_SHARED_IDLE_PEAK", "250", 1);
  EXPECT_EQ(load_options(1).shared_idle_peak, 100u) << "at most 100 percent";
  ::setenv("MANYALLOC_NUMA_SHARED_IDLE_PEAK", "50", 1);
  EXPECT_EQ(load_options(1).shared_idle_peak, 50u);
  ::setenv("MANYALLOC_NUMA_SHARED_IDLE_PEAK", "0", 1);
  EXPECT_EQ(load_options(1).shared_idle_peak, 0u);
  ::setenv("MANYALLOC_NUMA_SHARED_IDLE_PEAK", "30", 1);
  ::setenv("MANYALLOC_NUMA_PROFILE", "lowmem", 1);
  EXPECT_EQ(load_options(1).shared_idle_peak, 30u) << "lowmem: honoured when set";
  ::unsetenv("MANYALLOC_NUMA_PROFILE");
  ::unsetenv("MANYALLOC_NUMA_SHARED_IDLE_PEAK");
  for (const char* n : {"MANYALLOC_NUMA_PROFILE", "MANYALLOC_NUMA_CACHE_MAX",
                        "MANYALLOC_NUMA_HUGE_PAGES", "MANYALLOC_NUMA_COLOUR"})
    ::unsetenv(n);
  EXPECT_GE(sysfs_numa_nodes(), 1);
}

}  // namespace
}  // namespace manyalloc::numa
