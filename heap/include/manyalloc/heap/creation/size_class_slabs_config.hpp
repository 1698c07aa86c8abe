// Configuration of CreationPolicies::SizeClassSlabs. Override per
// instantiation by deriving and shadowing a member:
//
//   struct BigSlabs : manyalloc::heap::CreationPolicies::SizeClassSlabsConfig {
//     static constexpr std::uint32_t slab_bytes = 1u << 18;
//   };
//   using Creation = manyalloc::heap::CreationPolicies::SizeClassSlabs<BigSlabs>;
#pragma once

#include <concepts>
#include <cstdint>

#include "manyalloc/common/math.hpp"

namespace manyalloc::heap::CreationPolicies {

struct SizeClassSlabsConfig {
  // Bytes per page, a power of two from 4 KiB to 1 MiB: offsets in a page
  // and chunk indices in a segment (at most 32 pages of 16-byte chunks, two
  // chunks per byte of a page) are divided by small_quotient
  // (common/math.hpp), whose arguments stay below 2^21. A slab is one page
  // of one size class; a request larger than the largest class that fits
  // twice into a page takes whole pages.
  static constexpr std::uint32_t slab_bytes = 65536;
  // Most shards (slots) per size class; a heap uses fewer when it has few
  // pages, so that partly used segments stay a small share of the pool.
  static constexpr std::uint32_t max_shards = 128;
  // A segment (the pages a slot hands chunks from) aims at this many chunks,
  // so that one refill serves many warps (at most 32 pages; shorter while
  // open segments hold an eighth of the pool, slabs/invariants.hpp C4).
  static constexpr std::uint32_t segment_chunks = 2048;
  // false: every refill opens a full segment (segment_chunks), so a class in
  // steady demand refills rarely, and its open segments carry over from one
  // launch to the next. true: a refill opens only as many pages as the
  // requests waiting on its slot need, at least twice the segment it
  // replaces and one page where the slot had none (slabs/invariants.hpp C4):
  // for configurations with many classes, each of which sees a small share
  // of the requests, so that a first launch does not open a full segment
  // for every class and shard it touches.
  static constexpr bool demand_sized_segments = false;
  // Size classes per doubling of sizes (detail/slabs/size_classes.hpp), a
  // power of two from 2 to 32. A request's padding is less than
  // 1/classes_per_doubling of its size, so more classes leave more of the
  // pool for requested bytes when requests come in many sizes; but a warp's
  // mixed requests then fall into more classes and onto more pages, so
  // mixed-size allocs and frees take more atomics (FineSizeClassesConfig
  // below; heap/README.md has the trade-off measured).
  static constexpr std::uint32_t classes_per_doubling = 2;
  // true: a warp's free publishes what its lanes wrote to their chunks before
  // the chunks' slab can be retired and reused by other workers (a free's
  // count update, or its bit clear where the bits are the count, is a
  // GPU-scope release: one memory barrier per group of lanes freeing
  // chunks of one bitmap word).
  // false: frees skip the barrier, as Gallatin's, Ouroboros' and mallocMC's
  // do; then a worker that writes a chunk and frees it in the same kernel
  // must order its writes before the free itself (__threadfence()) when
  // another worker may reuse the chunk in that kernel. Writes made in an
  // earlier kernel are ordered by the kernel boundary either way.
  static constexpr bool ordered_frees = true;
  // Size classes of chunks of at least this many bytes reuse freed chunks:
  // once the pool has no free page, a request of such a class takes a freed
  // chunk of a partly used slab of its class (slabs/invariants.hpp C6), so a
  // heap that runs full with chunks of mixed lifetimes (a particle-in-cell
  // code's frames) keeps using the chunks freed beside long-lived ones.
  // Smaller classes reuse a freed chunk once all chunks of its page are free.
  // The price of C6 for a class: a refill of its slots writes the chunk bits
  // of its whole segment (S3), which the waiters of its slot wait for. From
  // 4 KiB on that is one store per page of few chunks, and a full warp takes
  // whole pages without a refill; below, the refills of small classes are on
  // the path of every alloc, and a long-lived chunk strands a smaller share
  // of its page (heap/README.md has the figures).
  // 0: every class; never_reuse: no class.
  static constexpr std::uint32_t reuse_freed_chunks_from_bytes = 4096;
  static constexpr std::uint32_t never_reuse = 0xffffffffu;
  // Eighths of the pool (0 to 7) kept at its top for large requests: slot
  // segments, warps' private slabs and requests of at most 32 pages start
  // their search below this zone (slabs/invariants.hpp P4), so that however
  // their chunks spread, a request of up to the zone's size finds a run of
  // free pages there while it is free. Small runs still go into the zone
  // when the rest of the pool is full, and large runs extend below it. The
  // zone is the top of the reserved pool: a pool that grows has it once it
  // maps the zone's pages. 0: small runs are spread over the whole pool (a
  // large request may then fail beside small chunks that hold a small share
  // of the pool).
  static constexpr std::uint32_t large_zone_eighths = 2;
};

// 32 classes per doubling: for heaps that must hold as many requested bytes
// as possible when request sizes vary widely.
struct FineSizeClassesConfig : SizeClassSlabsConfig {
  static constexpr std::uint32_t classes_per_doubling = 32;
  // Each of about ten times as many classes as the default's (224 against
  // 22) sees a small share of the requests.
  static constexpr bool demand_sized_segments = true;
};

// Reuse of the freed chunks of partly used slabs of every class when the
// pool runs full (reuse_freed_chunks_from_bytes above): for long runs at full
// occupancy with small chunks of mixed lifetimes.
struct ReuseFreedChunksConfig : SizeClassSlabsConfig {
  static constexpr std::uint32_t reuse_freed_chunks_from_bytes = 0;
};

// Frees without the memory barrier (ordered_frees above): for programs that
// free chunks in a later kernel than the one that wrote them, or that order
// their writes themselves.
struct RelaxedFreesConfig : SizeClassSlabsConfig {
  static constexpr bool ordered_frees = false;
};

template <class C>
concept SizeClassSlabsConfiguration = requires {
  { C::slab_bytes } -> std::convertible_to<std::uint32_t>;
  { C::max_shards } -> std::convertible_to<std::uint32_t>;
  { C::segment_chunks } -> std::convertible_to<std::uint32_t>;
  { C::demand_sized_segments } -> std::convertible_to<bool>;
  { C::classes_per_doubling } -> std::convertible_to<std::uint32_t>;
  { C::ordered_frees } -> std::convertible_to<bool>;
  { C::reuse_freed_chunks_from_bytes } -> std::convertible_to<std::uint32_t>;
  { C::large_zone_eighths } -> std::convertible_to<std::uint32_t>;
} && is_power_of_two(C::slab_bytes) && (C::slab_bytes >= 4096) && (C::slab_bytes <= small_quotient_limit / 2) &&
    is_power_of_two(C::max_shards) && (C::max_shards >= 1) && (C::max_shards <= 1024) &&
    (C::segment_chunks >= 1) && is_power_of_two(C::classes_per_doubling) && (C::classes_per_doubling >= 2) &&
    (C::classes_per_doubling <= 32) && (C::large_zone_eighths <= 7);

}  // namespace manyalloc::heap::CreationPolicies
