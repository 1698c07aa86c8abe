// Size classes of small chunks and the geometry of their runs.
//
// Classes: 16..128 bytes in steps of 16, then four classes per power of two
// (160, 192, 224, 256, 320, ...) up to kMaxSmall = 256 KiB: the internal
// waste of a chunk is below 25 % and the class of a size is computed with a
// few shifts, no table. A class of size 2^k * m is a multiple of 2^(k-2), so
// an aligned request finds a suitable class (see class_for_aligned).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace manyalloc::numa {

// Geometry (see invariants.hpp for what lives where).
inline constexpr std::size_t kOsPage = 4096;
inline constexpr unsigned kSegmentShift = 21;
inline constexpr std::size_t kSegment = std::size_t{1} << kSegmentShift;  // 2 MiB
inline constexpr unsigned kPageShift = 15;
inline constexpr std::size_t kPage = std::size_t{1} << kPageShift;         // 32 KiB run page
inline constexpr unsigned kPagesPerSegment = kSegment / kPage;              // 64
// One bit per page of a segment (SmallSegment::used_pages, idle_pages).
using PageMask = std::uint64_t;
inline constexpr PageMask kAllPages = ~PageMask{0};
static_assert(kPagesPerSegment == 64, "PageMask has one bit per page");
inline constexpr std::size_t kMaxSmall = 256 * 1024;  // larger requests -> large segment
inline constexpr unsigned kMaxChunks = kPage / 16;    // 2048 chunks of 16 B in 32 KiB
inline constexpr unsigned kBitmapWords = kMaxChunks / 64;
inline constexpr unsigned kInlineWords = 8;  // in the run descriptor (invariants.hpp)
inline constexpr unsigned kMaxNodes = 64;
inline constexpr unsigned kMaxSources = kMaxNodes + 1;  // index 0: the common source
// Allocations from runs between two checks of the remote free queue (heap.hpp).
inline constexpr std::uint8_t kRfqPollEvery = 255;


inline constexpr unsigned kLinearClasses = 8;  // 16 .. 128
inline constexpr unsigned kNumClasses = kLinearClasses + 4 * 11;  // up to 256 KiB

constexpr std::size_t class_size(unsigned c) {
  if (c < kLinearClasses) return (c + 1) * 16;
  const unsigned g = (c - kLinearClasses) / 4, i = (c - kLinearClasses) % 4;
  const std::size_t base = std::size_t{128} << g;
  return base + (i + 1) * (base / 4);
}

// Smallest class whose size is >= size; size must be <= kMaxSmall.
constexpr unsigned size_to_class(std::size_t size) {
  if (size <= 128) return size == 0 ? 0 : static_cast<unsigned>((size + 15) / 16 - 1);
  const unsigned k = static_cast<unsigned>(std::bit_width(size - 1)) - 1;  // 2^k < size <= 2^(k+1)
  const std::size_t base = std::size_t{1} << k;
  const unsigned i = static_cast<unsigned>((size - base - 1) >> (k - 2));
  return kLinearClasses + (k - 7) * 4 + i;
}

// Smallest class >= size whose chunks are all aligned to `align` (a power of
// two <= kPage; runs start on kPage boundaries). Returns kNumClasses if none.
constexpr unsigned class_for_aligned(std::size_t size, std::size_t align) {
  if (size > kMaxSmall) return kNumClasses;
  for (unsigned c = size_to_class(size); c < kNumClasses; ++c)
    if (class_size(c) % align == 0) return c;
  return kNumClasses;
}

// Bytes of a run: at least 8 chunks, at least one 32 KiB page, at most a
// segment. Always a power of two, so runs are placed buddy-style. Runs
// are short because a run's free tail stays resident until a purge: with
// 64 KiB pages and 16 chunks per run, each class from 896 B to 4 KiB held
// 2-3 mostly free runs per thread in t-test1 (peak RSS 1.31x glibc).
constexpr std::size_t run_bytes(unsigned c) {
  const std::size_t want = std::bit_ceil(class_size(c) * 8);
  return want < kPage ? kPage : (want > kSegment ? kSegment : want);
}
constexpr unsigned run_pages(unsigned c) { return static_cast<unsigned>(run_bytes(c) / kPage); }
constexpr unsigned run_chunks(unsigned c) {
  return static_cast<unsigned>(run_bytes(c) / class_size(c));
}

// Division of a byte offset inside a run (< 2 MiB) by a chunk size
// (<= 256 KiB) as a multiply and a shift: exact because offset * size < 2^40.
inline constexpr unsigned kRecipShift = 40;
constexpr std::uint64_t reciprocal(std::size_t chunk_size) {
  return ((std::uint64_t{1} << kRecipShift) / chunk_size) + 1;
}
constexpr std::uint32_t divide(std::size_t offset, std::uint64_t recip) {
  return static_cast<std::uint32_t>((offset * recip) >> kRecipShift);
}

// Class of the sizes up to kTableMax by one table lookup (malloc's fast path).
inline constexpr std::size_t kTableMax = 1024;
struct SmallClassTable {
  std::uint8_t cls[kTableMax / 16 + 1];
  constexpr SmallClassTable() : cls{} {
    for (std::size_t i = 0; i <= kTableMax / 16; ++i)
      cls[i] = static_cast<std::uint8_t>(size_to_class(i * 16));
  }
};
inline constexpr SmallClassTable kSmallClasses{};
constexpr unsigned class_of(std::size_t size) {
  return size <= kTableMax ? kSmallClasses.cls[(size + 15) >> 4] : size_to_class(size);
}

// Per-class tables for the free fast path (no run descriptor is read there).
struct ClassInfo {
  std::uint32_t size;
  std::uint32_t chunks;
  std::uint64_t recip;
};
// Free cache capacity (heap.hpp): up to 64 chunks but about 16 KiB per
// class (at least 4 chunks), none above 8 KiB. Cached chunks were written
// by the program and stay resident; 64 chunks of every class up to 16 KiB
// could hold 1.8 MiB per thread, which showed in the peak RSS of t-test1.
inline constexpr unsigned kCacheMax = 64;
constexpr std::uint32_t cache_capacity(unsigned c) {
  const std::size_t s = class_size(c);
  if (s > 8192) return 0;
  const std::size_t n = 16384 / s;
  return n >= kCacheMax ? kCacheMax : n < 4 ? 4 : static_cast<std::uint32_t>(n);
}
// Lowmem keeps half of that: cached chunks are free memory that stays
// resident until a purge writes the caches back. 16 threads, 2-core VM,
// peak RSS relative to glibc's: t-test1 0.990 -> 0.978 (with purges after
// 512 KiB instead of 256 KiB merged, heap.cpp, so that the smaller caches,
// which send more frees to the bitmaps, do not purge more often: page
// faults stayed at 370 000; a quarter with 256 KiB gave 0.953 with twice
// the faults and twice the time), larson 0.894 -> 0.870.
constexpr std::uint32_t lowmem_cache_capacity(unsigned c) { return (cache_capacity(c) + 1) / 2; }

// The classes' stacks are packed in one array of kCacheSlots pointers
// (Heap::cache_slots), class c's from kCacheLayout.first[c]: rows of
// kCacheMax pointers for every class took 26 KiB per heap, and each class
// a thread used made its row's page resident.
struct CacheLayout {
  std::uint16_t first[kNumClasses];
  std::uint32_t total;
  constexpr CacheLayout() : first{}, total(0) {
    for (unsigned c = 0; c < kNumClasses; ++c) {
      first[c] = static_cast<std::uint16_t>(total);
      total += cache_capacity(c);
    }
  }
};
inline constexpr CacheLayout kCacheLayout{};
inline constexpr std::size_t kCacheSlots = kCacheLayout.total;
static_assert(kCacheSlots <= 0xffff, "CacheLayout::first is 16 bits");

struct ClassTable {
  ClassInfo info[kNumClasses];
  constexpr ClassTable() : info{} {
    for (unsigned c = 0; c < kNumClasses; ++c)
      info[c] = ClassInfo{static_cast<std::uint32_t>(class_size(c)), run_chunks(c),
                          reciprocal(class_size(c))};
  }
};
inline constexpr ClassTable kClasses{};

static_assert(class_size(kNumClasses - 1) == kMaxSmall);
static_assert(run_chunks(0) == kMaxChunks);
static_assert(size_to_class(kMaxSmall) == kNumClasses - 1);
static_assert(class_of(0) == 0 && class_of(kTableMax) == size_to_class(kTableMax));

}  // namespace manyalloc::numa
