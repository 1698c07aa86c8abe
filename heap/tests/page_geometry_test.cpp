// Unit tests of the page split (page_geometry.hpp) against [Eckert2014].
#include <gtest/gtest.h>

#include "generic/test_heaps.hpp"
#include "manyalloc/heap/detail/scatter/page_geometry.hpp"

using manyalloc::heap::detail::hierarchy_threshold;
using manyalloc::heap::detail::max_segments;
using manyalloc::heap::detail::page_geometry;

TEST(PageGeometry, ThresholdOfTheThesis) {
  EXPECT_EQ(hierarchy_threshold(4096), 123u);  // [Eckert2014] 5.1.2: hierarchical below 122-123 bytes
}

TEST(PageGeometry, FlatPagesHoldAtMost32Chunks) {
  EXPECT_EQ(page_geometry(4096, 4096).chunks, 1u);
  EXPECT_EQ(page_geometry(4096, 512).chunks, 8u);   // [Eckert2014] figure 2.4
  EXPECT_EQ(page_geometry(4096, 128).chunks, 32u);
  EXPECT_EQ(page_geometry(4096, 124).chunks, 32u);  // 33 would fit, the mask has 32 bits
  EXPECT_FALSE(page_geometry(4096, 124).hierarchical);
}

TEST(PageGeometry, HierarchicalPagesUseSegmentsAndAdditionalChunks) {
  const auto g16 = page_geometry(4096, 16);
  EXPECT_TRUE(g16.hierarchical);
  EXPECT_EQ(g16.full_segments, 7u);   // 7 * (32*16 + 4) = 3612 bytes
  EXPECT_EQ(g16.additional, 30u);     // (4096 - 3612 - 4) / 16
  EXPECT_EQ(g16.chunks, 254u);
  EXPECT_EQ(g16.segments(), 8u);
  EXPECT_EQ(g16.chunks_in_segment(7), 30u);
  const auto g32 = page_geometry(4096, 32);  // [Eckert2014] figure 2.5: 1/128 of the page
  EXPECT_EQ(g32.full_segments, 3u);
  EXPECT_EQ(g32.chunks, 3u * 32u + (4096u - 3u * 1028u - 4u) / 32u);
}

TEST(PageGeometry, AtMost32SegmentsAnd1024Chunks) {
  const auto g = page_geometry(4096, 1);
  EXPECT_EQ(g.full_segments, 32u);
  EXPECT_EQ(g.additional, 0u);
  EXPECT_EQ(g.chunks, 1024u);
  EXPECT_EQ(page_geometry(4096, 4).chunks, 992u);
}

// Chunks plus in-page bit-field words always fit in the page, and the
// count equals [Eckert2014]'s formula wherever that formula applies.
TEST(PageGeometry, EverySizeFitsAndMatchesTheThesis) {
  for (std::uint32_t pagesize : {1024u, 4096u, 8192u, 65536u}) {
    for (std::uint32_t s = 1; s <= pagesize; ++s) {
      const auto g = page_geometry(pagesize, s);
      const std::uint64_t bytes = std::uint64_t{g.chunks} * s + 4ull * g.segments();
      ASSERT_LE(bytes, pagesize) << "pagesize " << pagesize << " chunk " << s;
      ASSERT_GE(g.chunks, 1u);
      ASSERT_LE(g.additional, 31u);
      if (g.full_segments < 32)
        ASSERT_EQ(g.chunks, manyalloc::heap::testing::thesis_chunks_in_page(pagesize, s)) << pagesize << " " << s;
    }
  }
}

// A heap zeroes max_segments words of every page when it marks the page
// clean (I1c): no split may use more.
TEST(PageGeometry, NoSplitUsesMoreThanMaxSegmentsWords) {
  EXPECT_EQ(max_segments(4096), 32u);
  for (std::uint32_t pagesize : {64u, 256u, 1000u, 4096u, 65536u}) {
    for (std::uint32_t chunk = 1; chunk <= pagesize; ++chunk)
      ASSERT_LE(page_geometry(pagesize, chunk).segments(), max_segments(pagesize)) << pagesize << " " << chunk;
  }
}
