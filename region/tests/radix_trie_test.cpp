// Unit tests of the radix trie and range map (common/) against std::map.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "manyalloc/common/radix_trie.hpp"
#include "manyalloc/common/range_map.hpp"

using manyalloc::RadixTrie;
using manyalloc::RangeSet;

TEST(RadixTrie, MatchesStdMapUnderRandomOps) {
  RadixTrie<std::uint64_t, 30> trie;
  std::map<std::uint64_t, std::uint64_t> ref;
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t k = rng() % (i % 3 == 0 ? 5000 : (1u << 30));
    switch (rng() % 4) {
      case 0:
      case 1: EXPECT_EQ(trie.insert(k, k * 3), ref.emplace(k, k * 3).second); break;
      case 2: EXPECT_EQ(trie.erase(k), ref.erase(k) == 1); break;
      case 3: {
        auto f = trie.floor(k);
        auto it = ref.upper_bound(k);
        if (it == ref.begin()) {
          EXPECT_FALSE(f);
        } else {
          --it;
          ASSERT_TRUE(f);
          EXPECT_EQ(f.key, it->first);
          EXPECT_EQ(*f.value, it->second);
        }
        auto c = trie.ceil(k);
        auto jt = ref.lower_bound(k);
        if (jt == ref.end()) {
          EXPECT_FALSE(c);
        } else {
          ASSERT_TRUE(c);
          EXPECT_EQ(c.key, jt->first);
        }
        break;
      }
    }
    ASSERT_EQ(trie.size(), ref.size());
  }
  // Ordered walk.
  auto it = ref.begin();
  trie.for_each([&](std::uint64_t k, std::uint64_t v) {
    ASSERT_NE(it, ref.end());
    EXPECT_EQ(k, it->first);
    EXPECT_EQ(v, it->second);
    ++it;
  });
  EXPECT_EQ(it, ref.end());
  // Erasing everything frees every node.
  for (auto& [k, v] : ref) EXPECT_TRUE(trie.erase(k));
  EXPECT_EQ(trie.node_count(), 0u);
}

TEST(RadixTrie, Extremes) {
  RadixTrie<int, 64> t;
  EXPECT_TRUE(t.insert(0, 1));
  EXPECT_TRUE(t.insert(~std::uint64_t{0}, 2));
  EXPECT_FALSE(t.insert(0, 3));
  EXPECT_EQ(t.first().key, 0u);
  EXPECT_EQ(t.last().key, ~std::uint64_t{0});
  EXPECT_EQ(t.next(0).key, ~std::uint64_t{0});
  EXPECT_FALSE(t.next(~std::uint64_t{0}));
  RadixTrie<int, 10> small;
  EXPECT_FALSE(small.insert(1024, 1));  // beyond max_key
}

TEST(RangeSet, CoalescesAndCarves) {
  RangeSet<36> s;
  EXPECT_TRUE(s.insert(10, 5, {}));
  EXPECT_TRUE(s.insert(20, 5, {}));
  EXPECT_FALSE(s.insert(12, 2, {}));  // overlap
  EXPECT_FALSE(s.insert(8, 3, {}));   // overlap at the front
  EXPECT_TRUE(s.insert(15, 5, {}));   // bridges both
  EXPECT_EQ(s.count(), 1u);
  EXPECT_EQ(s.total(), 15u);
  auto f = s.find(17);
  ASSERT_TRUE(f);
  EXPECT_EQ(f.start, 10u);
  EXPECT_EQ(f.length, 15u);
  EXPECT_TRUE(s.erase(12, 3));  // split in two
  EXPECT_EQ(s.count(), 2u);
  EXPECT_FALSE(s.find(13));
  EXPECT_EQ(s.take(2, 0), 10u);        // first fit
  EXPECT_EQ(s.take(4, 16), 16u);       // from the hint inside a range
  EXPECT_EQ(s.take(100, 0), s.npos);   // too large
  EXPECT_EQ(s.total(), 15u - 3 - 2 - 4);
}
