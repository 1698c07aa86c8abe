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

// The device form is checked against division by the GPU tests
// (heap/tests/small_quotient_gpu_test.cu); here the host form and constant
// evaluation, which the heaps' constexpr page geometry uses.
static_assert(small_quotient(4096u, 48u) == 85u && small_remainder(4096u, 48u) == 16u);
static_assert(small_quotient(small_quotient_limit - 1u, 1u) == small_quotient_limit - 1u);

TEST(Math, SmallQuotientDividesOnTheHost) {
  for (std::uint32_t d : {1u, 3u, 7u, 48u, 1000u, 4095u, small_quotient_limit - 1u}) {
    for (std::uint32_t y : {0u, 1u, d - 1u, d, d + 1u, 65535u, small_quotient_limit - 1u}) {
      if (y >= small_quotient_limit) continue;
      EXPECT_EQ(small_quotient(y, d), y / d) << y << " / " << d;
      EXPECT_EQ(small_remainder(y, d), y % d) << y << " % " << d;
    }
  }
}
