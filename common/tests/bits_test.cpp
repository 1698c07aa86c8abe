#include "manyalloc/common/bits.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace mb = manyalloc::bits;

TEST(Bits, LowMask) {
  EXPECT_EQ(mb::low_mask(0), 0u);
  EXPECT_EQ(mb::low_mask(1), 1u);
  EXPECT_EQ(mb::low_mask(31), 0x7fffffffu);
  EXPECT_EQ(mb::low_mask(32), 0xffffffffu);
}

TEST(Bits, FindFirstSetAndPopcount) {
  EXPECT_EQ(mb::find_first_set(0), 0u);
  EXPECT_EQ(mb::find_first_set(1), 1u);
  EXPECT_EQ(mb::find_first_set(0x80000000u), 32u);
  EXPECT_EQ(mb::popcount(0xf0f0u), 8u);
}

// next_free_spot must return the first free bit after `spot`, wrapping, for
// every word and position: checked against a plain loop.
TEST(Bits, NextFreeSpotMatchesLinearSearch) {
  for (unsigned spots : {1u, 2u, 5u, 8u, 31u, 32u}) {
    std::uint32_t word = 0x9e3779b9u;
    for (int round = 0; round < 2000; ++round) {
      word = word * 1664525u + 1013904223u;
      const std::uint32_t used = word & mb::low_mask(spots);
      for (unsigned spot = 0; spot < spots; ++spot) {
        unsigned expected = spots;
        for (unsigned k = 1; k <= spots; ++k) {
          const unsigned candidate = (spot + k) % spots;
          if (((used >> candidate) & 1u) == 0u) {
            expected = candidate;
            break;
          }
        }
        ASSERT_EQ(mb::next_free_spot(used, spot, spots), expected)
            << "used=" << used << " spot=" << spot << " spots=" << spots;
      }
    }
  }
}
