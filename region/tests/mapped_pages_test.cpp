// Unit tests of MappedPages, the set of GAS pages a process has mapped
// (prefault.hpp): gaps are exactly the pages not yet added, intervals merge.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>
#include <vector>

#include "mapped_pages.hpp"

using namespace manyalloc::region::detail;

namespace {
std::vector<std::pair<std::uint64_t, std::uint64_t>> gaps_of(const MappedPages& m, std::uint64_t a, std::uint64_t b) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> g;
  m.gaps(a, b, [&](std::uint64_t x, std::uint64_t y) { g.emplace_back(x, y); });
  return g;
}
}  // namespace

TEST(MappedPages, GapsAndMerging) {
  MappedPages m;
  using V = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
  EXPECT_EQ(gaps_of(m, 10, 20), (V{{10, 20}}));
  m.add(12, 14);
  m.add(16, 18);
  EXPECT_EQ(gaps_of(m, 10, 20), (V{{10, 12}, {14, 16}, {18, 20}}));
  EXPECT_EQ(gaps_of(m, 13, 17), (V{{14, 16}}));
  EXPECT_EQ(gaps_of(m, 12, 14), V{});
  m.add(14, 16);  // touches both neighbours: one interval
  EXPECT_EQ(m.intervals(), 1u);
  EXPECT_EQ(m.pages(), 6u);
  m.add(5, 30);  // covers it
  EXPECT_EQ(m.intervals(), 1u);
  EXPECT_EQ(m.pages(), 25u);
  EXPECT_EQ(gaps_of(m, 0, 40), (V{{0, 5}, {30, 40}}));
}

TEST(MappedPages, MatchesAReferenceSet) {
  std::mt19937_64 rng(7);
  MappedPages m;
  std::set<std::uint64_t> ref;
  for (int step = 0; step < 2000; ++step) {
    const std::uint64_t a = rng() % 500, b = a + 1 + rng() % 40;
    if (step % 3 != 0) {
      m.add(a, b);
      for (std::uint64_t k = a; k < b; ++k) ref.insert(k);
    }
    std::set<std::uint64_t> missing;
    for (auto [x, y] : gaps_of(m, a, b)) {
      ASSERT_LT(x, y);
      for (std::uint64_t k = x; k < y; ++k) missing.insert(k);
    }
    for (std::uint64_t k = a; k < b; ++k) ASSERT_EQ(missing.count(k) == 1, ref.count(k) == 0) << k;
    ASSERT_EQ(m.pages(), ref.size());
  }
}
