// Large allocations (> max_small): one large segment each, recycled through
// the memory sources and resized with mremap ([Valat2014]: "Large allocations",
// "No fragmentation for large segments").
//
// Colour offsets. mmap returns 4 KiB-aligned addresses, so arrays obtained
// from it all share the same address modulo 4 KiB; [Valat2014] shows that a
// loop such as `a[i] = b[i-1]` then suffers from 4K aliasing (the CPU
// compares only the 12 low address bits of loads and stores: 16.8 vs 8.5
// cycles per iteration), and that regular alignments also hurt L1 and
// page-coloured caches ("avoid segment alignments on cache way size", "do
// not use regular patterns"). The k-th large allocation therefore starts at
//
//     offset(k) = 64 * ((37 k) mod 64) + 4096 * ((5 k) mod 8)
//
// bytes after its segment base: 37 is odd, so 64 consecutive allocations get
// 64 different cache-line offsets modulo 4 KiB (consecutive ones differ by
// 2368 bytes), and the page part varies the offset modulo 32 KiB, which
// matters with huge pages where virtual and physical colours coincide. The
// offset is a multiple of 64 bytes (SIMD and cache-line friendly) and wastes
// at most 33 KiB of address space, never touched (no memory). Requests with
// an alignment above 64 bytes round the offset up to that alignment.
#pragma once

#include <cstddef>
#include <cstdint>

#include "context.hpp"

namespace manyalloc::numa {

constexpr std::size_t colour_offset(std::uint32_t k) {
  return 64 * ((37u * k) % 64) + 4096 * ((5u * k) % 8);
}

// size >= 1, align a power of two. `zero`: the result must read as zero.
// `node` >= 0 forces binding of the pages to that node. nullptr on failure.
void* large_alloc(Context& c, Source& s, std::size_t size, std::size_t align, bool zero,
                  int node = -1);

// p must be seg->base + seg->offset of an in-use segment (else reported).
void large_free(Context& c, LargeSegment& seg, void* p);

// Resizes in place or by mremap; nullptr when the OS refused (p intact).
void* large_realloc(Context& c, LargeSegment& seg, std::size_t new_size);

// True when p is the start of the in-use allocation of seg.
inline bool large_is_start(const LargeSegment& seg, const void* p) {
  return seg.in_use.load(std::memory_order_relaxed) != 0 && p == seg.base + seg.offset;
}

}  // namespace manyalloc::numa
