// Size classes, run geometry and division by multiplication (size_class.hpp).
#include <gtest/gtest.h>

#include "size_class.hpp"

namespace manyalloc::numa {
namespace {

TEST(SizeClass, EverySizeGetsTheSmallestFittingClass) {
  for (std::size_t s = 0; s <= max_small; ++s) {
    const unsigned c = size_to_class(s);
    ASSERT_LT(c, num_classes) << s;
    ASSERT_GE(class_size(c), s == 0 ? 1 : s) << s;
    if (c > 0) ASSERT_LT(class_size(c - 1), s) << s;
  }
}

TEST(SizeClass, ClassesIncreaseAndWasteUnderAQuarter) {
  for (unsigned c = 1; c < num_classes; ++c) {
    EXPECT_GT(class_size(c), class_size(c - 1));
    EXPECT_LE(class_size(c) - class_size(c - 1), class_size(c - 1) / 4 + 16);
    EXPECT_EQ(class_size(c) % 16, 0u);
  }
}

TEST(SizeClass, RunsHoldEnoughChunksAndFitTheBitmap) {
  for (unsigned c = 0; c < num_classes; ++c) {
    EXPECT_GE(run_chunks(c), 8u) << class_size(c);
    EXPECT_LE(run_chunks(c), max_chunks);
    EXPECT_TRUE(run_pages(c) == 1 || run_pages(c) % 2 == 0);
    EXPECT_LE(run_pages(c), pages_per_segment);
  }
}

TEST(SizeClass, DivisionByMultiplicationIsExact) {
  for (unsigned c = 0; c < num_classes; ++c) {
    const std::size_t cs = class_size(c);
    const std::uint64_t r = reciprocal(cs);
    for (std::size_t i = 0; i < run_chunks(c); ++i) {
      ASSERT_EQ(divide(i * cs, r), i);
      ASSERT_EQ(divide(i * cs + cs - 1, r), i);
      if (i * cs + 1 < run_bytes(c)) ASSERT_EQ(divide(i * cs + 1, r), i);
    }
  }
}

TEST(SizeClass, AlignedClassesAreMultiplesOfTheAlignment) {
  for (std::size_t a = 32; a <= page_bytes; a *= 2)
    for (std::size_t s : {1ul, 17ul, 100ul, 1000ul, 5000ul, 70000ul, max_small}) {
      const unsigned c = class_for_aligned(s, a);
      if (c == num_classes) {
        EXPECT_GT(s, max_small / 2);
        continue;
      }
      EXPECT_GE(class_size(c), s);
      EXPECT_EQ(class_size(c) % a, 0u) << s << " " << a;
      EXPECT_LE(class_size(c), 2 * (s > a ? s : a) + a) << s << " " << a;
    }
}

}  // namespace
}  // namespace manyalloc::numa
