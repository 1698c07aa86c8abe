// Memory sources and large segments on a private context with injected OS
// failures (source.hpp, large.hpp).
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "large.hpp"
#include "meta_pool.hpp"
#include "source.hpp"
#include "test_os.hpp"

namespace manyalloc::numa {
namespace {

using test::Faults;
using test::make_context;

bool aligned(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & (segment_bytes - 1)) == 0; }

TEST(Source, SmallSegmentsAreAlignedRegisteredAndRecycled) {
  auto c = make_context();
  Source& s = c->common();
  SmallSegment* a = source_take_small(*c, s);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(aligned(a->base));
  EXPECT_EQ(a->bytes, segment_bytes);
  EXPECT_EQ(c->registry.lookup(a->base + 777), a);
  EXPECT_EQ(s.mapped_bytes.load(), segment_bytes);
  std::uint8_t* base = a->base;
  source_give_small(*c, a);
  EXPECT_EQ(s.cached_bytes.load(), segment_bytes);
  EXPECT_EQ(c->registry.lookup(base), a);  // cached segments stay registered
  SmallSegment* b = source_take_small(*c, s);
  EXPECT_EQ(b, a);
  EXPECT_EQ(s.reuses.load(), 1u);
  EXPECT_EQ(s.cached_bytes.load(), 0u);
  source_give_small(*c, b);
  source_release_cache(*c, s);
  EXPECT_EQ(s.mapped_bytes.load(), 0u);
  EXPECT_EQ(c->registry.lookup(base), nullptr);
}

// Lowmem returns small segments at once and, with no large block in use,
// keeps at most 4 MiB of large ones, plus the newest one whatever its size,
// until the source maps anything new (unit_giveback_test.cpp has the decay
// and the quarter of the live large bytes it may keep beyond 4 MiB).
TEST(Source, LowmemCachesLittle) {
  auto c = make_context(Profile::lowmem);
  Source& s = c->common();
  SmallSegment* a = source_take_small(*c, s);
  ASSERT_NE(a, nullptr);
  source_give_small(*c, a);
  EXPECT_EQ(s.mapped_bytes.load(), 0u);
  EXPECT_EQ(s.cached_bytes.load(), 0u);
  LargeSegment* l = source_take_large(*c, s, 5 * segment_bytes);
  LargeSegment* m = source_take_large(*c, s, 6 * segment_bytes);
  ASSERT_NE(l, nullptr);
  ASSERT_NE(m, nullptr);
  source_give_large(*c, l);
  EXPECT_EQ(s.cached_bytes.load(), 5 * segment_bytes);  // the newest, beyond the budget
  source_give_large(*c, m);
  EXPECT_EQ(s.cached_bytes.load(), 6 * segment_bytes);  // the older one made room
  EXPECT_EQ(s.mapped_bytes.load(), 6 * segment_bytes);
  a = source_take_small(*c, s);  // fresh memory: the cache goes back within 4 MiB
  EXPECT_EQ(s.cached_bytes.load(), 0u);
  EXPECT_EQ(s.mapped_bytes.load(), segment_bytes);
  LargeSegment* n = source_take_large(*c, s, segment_bytes);
  LargeSegment* o = source_take_large(*c, s, segment_bytes);
  source_give_large(*c, n);
  source_give_large(*c, o);
  EXPECT_EQ(s.cached_bytes.load(), 2 * segment_bytes);  // within the budget: both kept
  source_give_small(*c, a);
  source_release_cache(*c, s);
  EXPECT_EQ(s.mapped_bytes.load(), 0u);
}

TEST(MetaPool, ReusedDescriptorsAreZeroAgain) {
  MetaPool<SmallSegment> small;
  MetaPool<LargeSegment> large;
  SmallSegment* a = small.create(linux_os_ops);
  LargeSegment* l = large.create(linux_os_ops);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(l, nullptr);
  std::memset(static_cast<void*>(a), 0xab, sizeof *a);  // every page of the slot
  std::memset(static_cast<void*>(l), 0xcd, sizeof *l);
  small.destroy(a, linux_os_ops);
  large.destroy(l, linux_os_ops);
  SmallSegment* b = small.create(linux_os_ops);
  LargeSegment* m = large.create(linux_os_ops);
  EXPECT_EQ(b, a);  // the freed slots come back
  EXPECT_EQ(m, l);
  for (const auto* bytes : {reinterpret_cast<const std::uint8_t*>(b),
                            reinterpret_cast<const std::uint8_t*>(m)}) {
    const std::size_t n = bytes == reinterpret_cast<const std::uint8_t*>(b) ? sizeof *b : sizeof *m;
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < n; ++i) nonzero += bytes[i] != 0;
    EXPECT_EQ(nonzero, 0u);
  }
  small.destroy(b, linux_os_ops);
  large.destroy(m, linux_os_ops);
}

TEST(Source, MapFailureGivesNullAndLeavesNothingBehind) {
  auto c = make_context();
  Source& s = c->common();
  Faults::maps_left = 0;
  errno = 0;
  EXPECT_EQ(source_take_small(*c, s), nullptr);
  EXPECT_EQ(source_take_large(*c, s, 3 * segment_bytes), nullptr);
  EXPECT_EQ(errno, 0);  // the source keeps errno; the API sets ENOMEM
  EXPECT_EQ(s.mapped_bytes.load(), 0u);
  Faults::maps_left = -1;
  EXPECT_NE(source_take_small(*c, s), nullptr);
}

TEST(Source, LargeCacheBestFitSplitAndGrow) {
  auto c = make_context();
  Source& s = c->common();
  LargeSegment* a = source_take_large(*c, s, 4 * segment_bytes);
  LargeSegment* b = source_take_large(*c, s, 10 * segment_bytes);
  ASSERT_TRUE(a && b);
  a->touched = a->bytes;
  b->touched = b->bytes;
  source_give_large(*c, a);
  source_give_large(*c, b);
  // Best fit: the 4-segment one for 3 segments.
  LargeSegment* x = source_take_large(*c, s, 3 * segment_bytes + 1);
  EXPECT_EQ(x, a);
  EXPECT_EQ(x->bytes, 4 * segment_bytes);
  EXPECT_EQ(s.faults_avoided.load(), 4 * segment_bytes / os_page);
  // Much larger than needed: split, the tail cached with its touched pages.
  LargeSegment* y = source_take_large(*c, s, 2 * segment_bytes);
  EXPECT_EQ(y, b);
  EXPECT_EQ(y->bytes, 2 * segment_bytes);
  auto* tail = static_cast<LargeSegment*>(c->registry.lookup(y->base + 2 * segment_bytes));
  ASSERT_NE(tail, nullptr);
  ASSERT_NE(tail, y);
  EXPECT_EQ(tail->base, y->base + 2 * segment_bytes);
  EXPECT_EQ(tail->bytes, 8 * segment_bytes);
  EXPECT_EQ(tail->touched, 8 * segment_bytes);
  EXPECT_EQ(c->registry.lookup(y->base + 10 * segment_bytes - 1), tail);
  EXPECT_EQ(s.cached_bytes.load(), 8 * segment_bytes);
  EXPECT_EQ(s.mapped_bytes.load(), 14 * segment_bytes);  // nothing unmapped
  // Best fit again: the tail serves the next block.
  LargeSegment* t = source_take_large(*c, s, 7 * segment_bytes);
  EXPECT_EQ(t, tail);
  // Smaller than needed: grown (touched pages kept).
  source_give_large(*c, y);
  LargeSegment* z = source_take_large(*c, s, 6 * segment_bytes);
  EXPECT_EQ(z, b);
  EXPECT_EQ(z->bytes, 6 * segment_bytes);
  EXPECT_EQ(c->registry.lookup(z->base + 5 * segment_bytes), z);
  source_give_large(*c, x);
  source_give_large(*c, z);
  source_give_large(*c, t);
  source_release_cache(*c, s);
  EXPECT_EQ(s.mapped_bytes.load(), 0u);
  EXPECT_EQ(c->misuses.load(), 0u);
}

// Many large blocks freed together (a thread's arrays at its exit) stay
// cached while the cache budget has room, however many they are, and the
// next blocks of those sizes reuse them: no unmap, no fresh mapping. With a
// bound of 64 cached blocks the 65th and later were unmapped (mstress:
// numa/DESIGN.md, "Large cache"). Beyond the budget the cache holds the
// budget. The clock stands still, so that the decay unmaps nothing between
// the gives and the takes.
TEST(Source, LargeCacheKeepsWhatItsBudgetHolds) {
  auto c = make_context();  // uma: a 1 GiB budget
  Faults::clock_ns = 1'000'000'000'000;
  Source& s = c->common();
  auto take_and_give = [&](int blocks) {
    std::vector<LargeSegment*> v;
    for (int i = 0; i < blocks; ++i) v.push_back(source_take_large(*c, s, segment_bytes));
    for (LargeSegment* l : v) EXPECT_NE(l, nullptr);
    for (LargeSegment* l : v)
      if (l != nullptr) source_give_large(*c, l);
  };
  constexpr int blocks = 200;  // 400 MiB of 2 MiB segments, never touched
  take_and_give(blocks);
  EXPECT_EQ(s.cached_bytes.load(), blocks * segment_bytes);
  EXPECT_EQ(c->os_calls.unmap_bytes.load(), 0u);
  const std::uint64_t maps = s.os_maps.load();
  take_and_give(blocks);
  EXPECT_EQ(s.os_maps.load(), maps);
  EXPECT_EQ(s.reuses.load(), static_cast<std::uint64_t>(blocks));
  take_and_give(600);  // 1.2 GiB: the cache keeps its 1 GiB
  EXPECT_EQ(s.cached_bytes.load(), std::size_t{1} << 30);
  source_release_cache(*c, s);
  EXPECT_EQ(s.mapped_bytes.load(), 0u);
}

// Where the count of cached blocks binds before their bytes (a budget of
// more than 8 GiB of 2 MiB blocks), the block freed last is still cached and
// the oldest makes room, as the budget in bytes does (source.hpp).
TEST(Source, LargeCacheAtItsCountKeepsTheNewestBlock) {
  auto c = make_context(Profile::uma, std::size_t{16} << 30);
  Faults::clock_ns = 1'000'000'000'000;
  Source& s = c->common();
  std::vector<LargeSegment*> v;
  for (int i = 0; i < 4100; ++i) v.push_back(source_take_large(*c, s, segment_bytes));
  for (LargeSegment* l : v) ASSERT_NE(l, nullptr);
  for (LargeSegment* l : v) source_give_large(*c, l);
  EXPECT_EQ(s.large_count, 4096u);
  EXPECT_EQ(s.cached_bytes.load(), 4096 * segment_bytes);
  EXPECT_EQ(source_take_large(*c, s, segment_bytes), v.back());  // the newest, an exact fit
  source_give_large(*c, v.back());
  source_release_cache(*c, s);
  EXPECT_EQ(s.mapped_bytes.load(), 0u);
}

TEST(Large, ColourOffsetsDifferModulo4KiB) {
  std::set<std::size_t> low;
  for (std::uint32_t k = 0; k < 64; ++k) {
    EXPECT_EQ(colour_offset(k) % 64, 0u);
    EXPECT_NE(colour_offset(k) % 4096, colour_offset(k + 1) % 4096);
    low.insert(colour_offset(k) % 4096);
  }
  EXPECT_EQ(low.size(), 64u);
}

TEST(Large, ConsecutiveArraysAreNotAliasedAndAligned) {
  auto c = make_context();
  Source& s = c->common();
  void* a = large_alloc(*c, s, 1 << 20, 16, false);
  void* b = large_alloc(*c, s, 1 << 20, 16, false);
  ASSERT_TRUE(a && b);
  EXPECT_NE(reinterpret_cast<std::uintptr_t>(a) % 4096, reinterpret_cast<std::uintptr_t>(b) % 4096);
  void* d = large_alloc(*c, s, 1 << 20, 1 << 23, false);  // 8 MiB alignment
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(d) % (1 << 23), 0u);
  for (void* p : {a, b, d})
    large_free(*c, *static_cast<LargeSegment*>(c->registry.lookup(p)), p);
}

TEST(Large, CallocOfARecycledSegmentIsZero) {
  auto c = make_context();
  Source& s = c->common();
  const std::size_t n = 3 << 20;
  auto* p = static_cast<unsigned char*>(large_alloc(*c, s, n, 16, false));
  ASSERT_NE(p, nullptr);
  std::memset(p, 0xAB, n);
  large_free(*c, *static_cast<LargeSegment*>(c->registry.lookup(p)), p);
  auto* q = static_cast<unsigned char*>(large_alloc(*c, s, n, 16, true));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(s.reuses.load(), 1u);
  for (std::size_t i = 0; i < n; i += 61) ASSERT_EQ(q[i], 0) << i;
  EXPECT_EQ(q[n - 1], 0);
  large_free(*c, *static_cast<LargeSegment*>(c->registry.lookup(q)), q);
}

TEST(Large, ReallocGrowsByRemapKeepingContents) {
  auto c = make_context();
  Source& s = c->common();
  std::size_t n = 1 << 20;
  auto* p = static_cast<std::uint32_t*>(large_alloc(*c, s, n, 16, false));
  ASSERT_NE(p, nullptr);
  for (std::size_t i = 0; i < n / 4; ++i) p[i] = static_cast<std::uint32_t>(i * 2654435761u);
  auto* seg = static_cast<LargeSegment*>(c->registry.lookup(p));
  for (bool move : {false, true}) {
    Faults::refuse_in_place = move;
    const std::size_t m = n * 5;
    auto* q = static_cast<std::uint32_t*>(large_realloc(*c, *seg, m));
    ASSERT_NE(q, nullptr);
    for (std::size_t i = 0; i < n / 4; ++i) ASSERT_EQ(q[i], static_cast<std::uint32_t>(i * 2654435761u));
    EXPECT_EQ(c->registry.lookup(q + m / 4 - 1), seg);
    for (std::size_t i = n / 4; i < m / 4; ++i) q[i] = static_cast<std::uint32_t>(i * 2654435761u);
    n = m;
    p = q;
  }
  EXPECT_GE(s.remaps.load(), 2u);
  // mremap failing: realloc reports failure, the block stays intact.
  Faults::fail_remap = true;
  Faults::refuse_in_place = false;
  EXPECT_EQ(large_realloc(*c, *seg, n * 4), nullptr);
  EXPECT_EQ(p[n / 4 - 1], static_cast<std::uint32_t>((n / 4 - 1) * 2654435761u));
  // ... and the map of the move target failing too.
  Faults::fail_remap = false;
  Faults::refuse_in_place = true;
  Faults::maps_left = 0;
  EXPECT_EQ(large_realloc(*c, *seg, n * 4), nullptr);
  Faults::maps_left = -1;
  // Shrinking a lot gives the tail back.
  const std::size_t before = s.mapped_bytes.load();
  ASSERT_EQ(large_realloc(*c, *seg, 300 * 1024), p);
  EXPECT_LT(s.mapped_bytes.load(), before);
  EXPECT_EQ(p[1], 2654435761u);
  large_free(*c, *seg, p);
  EXPECT_EQ(c->misuses.load(), 0u);
  large_free(*c, *seg, p);  // double free: reported, ignored
  EXPECT_EQ(c->misuses.load(), 1u);
}

}  // namespace
}  // namespace manyalloc::numa
