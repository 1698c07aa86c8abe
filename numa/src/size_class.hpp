// Size classes of small chunks and the geometry of their runs.
//
// Classes: 16..128 bytes in steps of 16, then four classes per power of two
// (160, 192, 224, 256, 320, ...) up to max_small = 256 KiB: the internal
// waste of a chunk is below 25 % and the class of a size is computed with a
// few shifts, no table. A class of size 2^k * m is a multiple of 2^(k-2), so
// an aligned request finds a suitable class (see class_for_aligned).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace manyalloc::numa {

// Geometry (see invariants.hpp for what lives where).
inline constexpr std::size_t os_page = 4096;
inline constexpr unsigned segment_shift = 21;
inline constexpr std::size_t segment_bytes = std::size_t{1} << segment_shift;  // 2 MiB
inline constexpr unsigned page_shift = 15;
inline constexpr std::size_t page_bytes = std::size_t{1} << page_shift;         // 32 KiB run page
inline constexpr unsigned pages_per_segment = segment_bytes / page_bytes;              // 64
// One bit per page of a segment (SmallSegment::used_pages, idle_pages).
using PageMask = std::uint64_t;
inline constexpr PageMask all_pages = ~PageMask{0};
static_assert(pages_per_segment == 64, "PageMask has one bit per page");
inline constexpr std::size_t max_small = 256 * 1024;  // larger requests -> large segment
inline constexpr unsigned max_chunks = page_bytes / 16;    // 2048 chunks of 16 B in 32 KiB
inline constexpr unsigned bitmap_words = max_chunks / 64;
inline constexpr unsigned inline_words = 8;  // in the run descriptor (invariants.hpp)
inline constexpr unsigned max_nodes = 64;
inline constexpr unsigned max_sources = max_nodes + 1;  // index 0: the common source
// Allocations from runs between two checks of the remote free queue (heap.hpp).
inline constexpr std::uint8_t rfq_poll_interval = 255;


inline constexpr unsigned linear_classes = 8;  // 16 .. 128
inline constexpr unsigned num_classes = linear_classes + 4 * 11;  // up to 256 KiB

constexpr std::size_t class_size(unsigned c) {
  if (c < linear_classes) return (c + 1) * 16;
  const unsigned g = (c - linear_classes) / 4, i = (c - linear_classes) % 4;
  const std::size_t base = std::size_t{128} << g;
  return base + (i + 1) * (base / 4);
}

// Smallest class whose size is >= size; size must be <= max_small.
constexpr unsigned size_to_class(std::size_t size) {
  if (size <= 128) return size == 0 ? 0 : static_cast<unsigned>((size + 15) / 16 - 1);
  const unsigned k = static_cast<unsigned>(std::bit_width(size - 1)) - 1;  // 2^k < size <= 2^(k+1)
  const std::size_t base = std::size_t{1} << k;
  const unsigned i = static_cast<unsigned>((size - base - 1) >> (k - 2));
  return linear_classes + (k - 7) * 4 + i;
}

// Smallest class >= size whose chunks are all aligned to `align` (a power of
// two <= page_bytes; runs start on page_bytes boundaries). Returns num_classes if none.
constexpr unsigned class_for_aligned(std::size_t size, std::size_t align) {
  if (size > max_small) return num_classes;
  for (unsigned c = size_to_class(size); c < num_classes; ++c)
    if (class_size(c) % align == 0) return c;
  return num_classes;
}

// Bytes of a run: at least 8 chunks, at least one 32 KiB page, at most a
// segment. Always a power of two, so runs are placed buddy-style. Runs
// are short because a run's free tail stays resident until a purge: with
// 64 KiB pages and 16 chunks per run, each class from 896 B to 4 KiB held
// 2-3 mostly free runs per thread in t-test1 (peak RSS 1.31x glibc).
constexpr std::size_t run_bytes(unsigned c) {
  const std::size_t want = std::bit_ceil(class_size(c) * 8);
  return want < page_bytes ? page_bytes : (want > segment_bytes ? segment_bytes : want);
}
constexpr unsigned run_pages(unsigned c) { return static_cast<unsigned>(run_bytes(c) / page_bytes); }
constexpr unsigned run_chunks(unsigned c) {
  return static_cast<unsigned>(run_bytes(c) / class_size(c));
}

// Division of a byte offset inside a run (< 2 MiB) by a chunk size
// (<= 256 KiB) as a multiply and a shift: exact because offset * size < 2^40.
inline constexpr unsigned recip_shift = 40;
constexpr std::uint64_t reciprocal(std::size_t chunk_size) {
  return ((std::uint64_t{1} << recip_shift) / chunk_size) + 1;
}
constexpr std::uint32_t divide(std::size_t offset, std::uint64_t recip) {
  return static_cast<std::uint32_t>((offset * recip) >> recip_shift);
}

// Class of the sizes up to table_max by one table lookup (malloc's fast path).
inline constexpr std::size_t table_max = 1024;
struct SmallClassTable {
  std::uint8_t cls[table_max / 16 + 1];
  constexpr SmallClassTable() : cls{} {
    for (std::size_t i = 0; i <= table_max / 16; ++i)
      cls[i] = static_cast<std::uint8_t>(size_to_class(i * 16));
  }
};
inline constexpr SmallClassTable small_classes{};
constexpr unsigned class_of(std::size_t size) {
  return size <= table_max ? small_classes.cls[(size + 15) >> 4] : size_to_class(size);
}

// Per-class tables for the free fast path (no run descriptor is read there).
struct ClassInfo {
  std::uint32_t size;
  std::uint32_t chunks;
  std::uint64_t recip;
};
// Free cache capacity (heap.hpp): for the classes of at most
// tiny_class_max_bytes, tiny_cache_chunks (at most 128 KiB per class);
// otherwise up to 512 chunks but about 16 KiB per class (at least 4
// chunks), none above 8 KiB. Cached chunks were written by the program and
// stay resident, so their bytes per class are bounded (a count alone would
// let the larger classes hold much more: numa/DESIGN.md, "Figures moved out
// of the code"). The count is bounded too (a stack slot per chunk); a few
// hundred lets a thread keep that many small chunks of a class live and
// free them again without every chunk passing through its run's bitmap
// (numa/DESIGN.md, "Fast paths", 2026-11-29). The tiny classes hold a
// batch of up to 2,048 chunks that way, for few bytes (numa/DESIGN.md,
// "Fast paths", 2026-12-01).
inline constexpr unsigned cache_max = 512;
inline constexpr std::size_t tiny_class_max_bytes = 64;
inline constexpr unsigned tiny_cache_chunks = 2048;
constexpr std::uint32_t cache_capacity(unsigned c) {
  const std::size_t s = class_size(c);
  if (s > 8192) return 0;
  if (s <= tiny_class_max_bytes) return tiny_cache_chunks;
  const std::size_t n = 16384 / s;
  return n >= cache_max ? cache_max : n < 4 ? 4 : static_cast<std::uint32_t>(n);
}
// Lowmem keeps half of that: cached chunks are free memory that stays
// resident until a purge writes the caches back. 16 threads, 2-core VM,
// peak RSS relative to glibc's: t-test1 0.990 -> 0.978 (with purges after
// 512 KiB instead of 256 KiB merged, heap_purge.cpp, so that the smaller caches,
// which send more frees to the bitmaps, do not purge more often: page
// faults stayed at 370 000; a quarter with 256 KiB gave 0.953 with twice
// the faults and twice the time), larson 0.894 -> 0.870.
constexpr std::uint32_t lowmem_cache_capacity(unsigned c) { return (cache_capacity(c) + 1) / 2; }

// Both capacities of every class, computed at compile time: heap_set_cache
// sizes all caches of every heap a thread takes (a new thread, or one that
// adopts an orphaned heap), and the capacity functions divide.
struct CacheCapacities {
  std::uint32_t normal[num_classes];
  std::uint32_t lowmem[num_classes];
  constexpr CacheCapacities() : normal{}, lowmem{} {
    for (unsigned c = 0; c < num_classes; ++c) {
      normal[c] = cache_capacity(c);
      lowmem[c] = lowmem_cache_capacity(c);
    }
  }
};
inline constexpr CacheCapacities cache_capacities{};

// The classes' stacks are packed in one array of cache_slot_count pointers
// (Heap::cache_slots), class c's from cache_layout.first[c]: rows of the
// largest capacity for every class would leave most of each row unused, and
// each class a thread used would make its row's page resident.
struct CacheLayout {
  std::uint16_t first[num_classes];
  std::uint32_t total;
  constexpr CacheLayout() : first{}, total(0) {
    for (unsigned c = 0; c < num_classes; ++c) {
      first[c] = static_cast<std::uint16_t>(total);
      total += cache_capacity(c);
    }
  }
};
inline constexpr CacheLayout cache_layout{};
inline constexpr std::size_t cache_slot_count = cache_layout.total;
static_assert(cache_slot_count <= 0xffff, "CacheLayout::first is 16 bits");

struct ClassTable {
  ClassInfo info[num_classes];
  constexpr ClassTable() : info{} {
    for (unsigned c = 0; c < num_classes; ++c)
      info[c] = ClassInfo{static_cast<std::uint32_t>(class_size(c)), run_chunks(c),
                          reciprocal(class_size(c))};
  }
};
inline constexpr ClassTable class_table{};

static_assert(class_size(num_classes - 1) == max_small);
static_assert(run_chunks(0) == max_chunks);
static_assert(size_to_class(max_small) == num_classes - 1);
static_assert(class_of(0) == 0 && class_of(table_max) == size_to_class(table_max));

}  // namespace manyalloc::numa
