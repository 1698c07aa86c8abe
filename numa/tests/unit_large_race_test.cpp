// Registry updates around the address ranges a large segment gives back to
// the kernel (source_resize_large): once munmap or a moving mremap returns,
// another thread may get those addresses from mmap for a segment of its own
// and register it. The resizing thread must not clear the registry after
// that point, or the other segment's pointers look foreign (realloc fails
// with EINVAL, free ignores them: seen as `fails` in the hera benchmark).
//
// Deterministic: an OS back end that, right after the kernel released a
// range, plays the other thread (takes a large segment whose mmap lands on
// exactly the released addresses), on a private lowmem context.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cstdint>
#include <cstring>

#include "large.hpp"
#include "source.hpp"
#include "test_os.hpp"

namespace manyalloc::numa {
namespace {

struct Intruder {
  static inline Context* ctx = nullptr;
  static inline std::uint8_t* next_hint = nullptr;  // where the next map goes (once)
  static inline LargeSegment* seg = nullptr;        // what "the other thread" took
  static inline bool armed = false;
  static inline bool refuse_in_place = false;
  static inline bool fail_move = false;
  static void reset(Context* c) {
    ctx = c;
    next_hint = nullptr;
    seg = nullptr;
    armed = false;
    refuse_in_place = false;
    fail_move = false;
  }
  // Plays the other thread: a fresh 2 MiB large segment at `freed`.
  static void strike(void* freed) {
    if (!armed) return;
    armed = false;
    next_hint = static_cast<std::uint8_t*>(freed);
    seg = source_take_large(*ctx, ctx->common(), segment_bytes);
    next_hint = nullptr;
  }
};

// The calls it does not override are LinuxOs's.
struct IntruderOs : LinuxOs {
  static void* map(void* hint, std::size_t n) {
    if (hint == nullptr && Intruder::next_hint != nullptr) {
      void* at = Intruder::next_hint;
      Intruder::next_hint = nullptr;
      void* p = ::mmap(at, n, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
      return p == MAP_FAILED ? nullptr : p;
    }
    return LinuxOs::map(hint, n);
  }
  static int unmap(void* p, std::size_t n) {
    const int r = LinuxOs::unmap(p, n);
    if (r == 0) Intruder::strike(p);
    return r;
  }
  static void* remap(void* p, std::size_t o, std::size_t n, void* target) {
    if (target == nullptr && Intruder::refuse_in_place) return nullptr;
    if (target != nullptr && Intruder::fail_move) return nullptr;
    void* q = LinuxOs::remap(p, o, n, target);
    if (q != nullptr && q != p) Intruder::strike(p);  // moved: [p, p + o) is free
    return q;
  }
};
static_assert(OsBackend<IntruderOs>);
constexpr OsOps intruder_os = make_os_ops<IntruderOs>();

// Each test: a lowmem context without a cache of free segments (every
// shrink and free gives its range back at once), whose OS calls the
// intruder watches, and one large block of it (p) with its segment.
class LargeRace : public ::testing::Test {
 protected:
  LargeRace() : c(test::make_context(Profile::lowmem, 0, intruder_os)) { Intruder::reset(c.get()); }

  // Takes the block: `bytes` from the common source.
  void alloc_block(std::size_t bytes) {
    p = large_alloc(*c, c->common(), bytes, 16, false);
    ASSERT_NE(p, nullptr);
    seg = static_cast<LargeSegment*>(c->registry.lookup(p));
    ASSERT_NE(seg, nullptr);
  }

  std::unique_ptr<Context> c;
  void* p = nullptr;
  LargeSegment* seg = nullptr;
};

// Frees the intruder's segment and the block (now at q); nothing may be left.
void free_both(Context& c, LargeSegment& seg, void* q) {
  source_give_large(c, Intruder::seg);
  large_free(c, seg, q);
  EXPECT_EQ(c.common().mapped_bytes.load(), 0u);
  EXPECT_EQ(c.misuses.load(), 0u);
}

// The intruder mapped its segment on `released`, the range the realloc
// under test gave back, and the registry maps that range to the intruder.
void expect_intruder_at(const Context& c, const std::uint8_t* released) {
  ASSERT_NE(Intruder::seg, nullptr) << "the intruder's mapping did not happen";
  ASSERT_EQ(Intruder::seg->base, released) << "mmap did not reuse the released range";
  EXPECT_EQ(c.registry.lookup(released), Intruder::seg);
  EXPECT_EQ(c.registry.lookup(released + segment_bytes - 1), Intruder::seg);
}

TEST_F(LargeRace, ShrinkDoesNotForgetASegmentMappedOnTheReleasedTail) {
  ASSERT_NO_FATAL_FAILURE(alloc_block(8 * segment_bytes));
  std::memset(p, 0x5A, 1000);
  Intruder::armed = true;
  // lowmem: any shrink gives the tail back at once.
  void* q = large_realloc(*c, *seg, 3 * segment_bytes);
  ASSERT_EQ(q, p);
  std::uint8_t* tail = seg->base + seg->bytes;  // the first byte given back
  ASSERT_LT(seg->bytes, 8 * segment_bytes);
  ASSERT_NO_FATAL_FAILURE(expect_intruder_at(*c, tail));
  EXPECT_EQ(c->registry.lookup(p), seg);
  EXPECT_EQ(c->registry.lookup(tail - 1), seg);
  EXPECT_EQ(static_cast<std::uint8_t*>(q)[999], 0x5A);
  free_both(*c, *seg, q);
}

TEST_F(LargeRace, MoveDoesNotForgetASegmentMappedOnTheOldRange) {
  ASSERT_NO_FATAL_FAILURE(alloc_block(3 * segment_bytes));
  std::uint8_t* old_base = seg->base;
  const std::size_t off = static_cast<std::size_t>(static_cast<std::uint8_t*>(p) - old_base);
  std::memset(p, 0xC3, 3 * segment_bytes - off);
  Intruder::armed = true;
  Intruder::refuse_in_place = true;  // growth must move the pages
  void* q = large_realloc(*c, *seg, 6 * segment_bytes);
  Intruder::refuse_in_place = false;
  ASSERT_NE(q, nullptr);
  ASSERT_NE(seg->base, old_base);
  ASSERT_NO_FATAL_FAILURE(expect_intruder_at(*c, old_base));
  EXPECT_EQ(c->registry.lookup(q), seg);
  EXPECT_EQ(c->registry.lookup(seg->base + 5 * segment_bytes), seg);
  EXPECT_EQ(static_cast<std::uint8_t*>(q)[0], 0xC3);
  EXPECT_EQ(static_cast<std::uint8_t*>(q)[3 * segment_bytes - off - 1], 0xC3);
  EXPECT_TRUE(large_is_start(*seg, q));
  free_both(*c, *seg, q);
}

// A failed move leaves the segment registered where it is.
TEST_F(LargeRace, FailedMoveKeepsTheSegmentRegistered) {
  ASSERT_NO_FATAL_FAILURE(alloc_block(2 * segment_bytes));
  std::uint8_t* base = seg->base;
  Intruder::refuse_in_place = true;
  Intruder::fail_move = true;
  errno = 0;
  EXPECT_EQ(large_realloc(*c, *seg, 5 * segment_bytes), nullptr);
  EXPECT_EQ(errno, 0);
  Intruder::refuse_in_place = false;
  Intruder::fail_move = false;
  EXPECT_EQ(seg->base, base);
  EXPECT_EQ(seg->bytes, 2 * segment_bytes);
  EXPECT_EQ(c->registry.lookup(p), seg);
  EXPECT_EQ(c->registry.lookup(base + 2 * segment_bytes - 1), seg);
  EXPECT_EQ(c->common().mapped_bytes.load(), 2 * segment_bytes);  // the target was given back
  large_free(*c, *seg, p);
  EXPECT_EQ(c->common().mapped_bytes.load(), 0u);
}

}  // namespace
}  // namespace manyalloc::numa
