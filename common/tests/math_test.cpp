#include "manyalloc/common/math.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>

using namespace manyalloc;

TEST(Math, PowerOfTwo) {
  EXPECT_FALSE(is_power_of_two(0u));
  EXPECT_TRUE(is_power_of_two(1u));
  EXPECT_TRUE(is_power_of_two(4096u));
  EXPECT_FALSE(is_power_of_two(48u));
}

TEST(Math, RoundUpSaturatesToZeroOnOverflow) {
  EXPECT_EQ(round_up_or_zero<std::size_t>(0, 16), 0u);
  EXPECT_EQ(round_up_or_zero<std::size_t>(1, 16), 16u);
  EXPECT_EQ(round_up_or_zero<std::size_t>(16, 16), 16u);
  EXPECT_EQ(round_up_or_zero<std::size_t>(200, 128), 256u);  // [Eckert2014] 4.3.2 example
  EXPECT_EQ(round_up_or_zero<std::size_t>(std::numeric_limits<std::size_t>::max() - 3, 16), 0u);
  EXPECT_EQ(ceil_div<std::uint64_t>(10, 4), 3u);
}
