// Segment headers of dynamic coalescing ([Blach2022] 3.2), shared by
// DistributionPolicies::DynamicWarp and XMallocSIMD.
//
// A superblock is one chunk of the creation policy, 16-byte aligned, holding
// the segments of the lanes that allocated together, in lane order. Each
// segment is a header directly in front of its payload:
//
//   header value = (offset << 3) | is_last << 2 | is_superblock << 1 | is_free
//
//   offset: bytes from the payload of the previous segment to this payload;
//           for the first segment (is_superblock) bytes from the superblock
//           start, so the last free can find what to give back.
//
// Header size is chosen per segment from the payload's natural alignment
// A = min(16, largest power of two dividing the size) -- every object whose
// array fills the request exactly needs no more (sizeof is a multiple of
// alignof) -- and from the offset it must hold:
//   8 bytes: payload address = 0 mod max(8, A), offset < 2^61
//   4 bytes: payload address = 4 mod 8 (A <= 4),  offset < 2^29
//   2 bytes: payload address = 2 mod 4 (A <= 2),  offset < 2^13
// so free() recognises the header size from the payload address alone.
// The flag bits live in the lowest-addressed 16/32-bit word of the header
// (little endian), which is the word compare-and-swapped; the upper half of an
// 8-byte header (offset >> 29) never changes after initialisation.
//
// Invariants: exactly one not-yet-freed-or-walking segment of a superblock
// carries is_last (the highest live one); is_free is set once per segment;
// the superblock is returned by the one free that finds every segment below
// it free after taking is_last.
#pragma once

#include <cstddef>
#include <cstdint>

#include "manyalloc/common/platform.hpp"
#include "manyalloc/common/report.hpp"

namespace manyalloc::heap::distribution::detail {

inline constexpr std::uint32_t seg_free = 1u;
inline constexpr std::uint32_t seg_superblock = 2u;
inline constexpr std::uint32_t seg_last = 4u;
inline constexpr std::uint32_t seg_flags = 7u;

// Largest power of two dividing `bytes`, at most 16 (bytes > 0).
MANYALLOC_FN constexpr std::uint64_t natural_alignment(std::uint64_t bytes) {
  const std::uint64_t low = bytes & (~bytes + 1u);
  return low > 16u ? 16u : low;
}

MANYALLOC_FN constexpr std::uint64_t round_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1u) / a * a; }

// Header bytes a payload at `p` has (0: not a payload address of a segment).
MANYALLOC_FN constexpr unsigned header_bytes_at(std::uintptr_t p) {
  if (p % 8u == 0u) return 8u;
  if (p % 8u == 4u) return 4u;
  if (p % 4u == 2u) return 2u;
  return 0u;
}

struct Placement {
  std::uint64_t payload;  // offset of the payload from the superblock start
  unsigned header;        // header bytes
};

// Places a segment of `bytes` (> 0) at or after `cursor` (first free byte,
// relative to a 16-aligned superblock start); `prev` is the previous payload
// offset (0 for the first segment, whose offset is measured from the start).
MANYALLOC_FN constexpr Placement place_segment(std::uint64_t cursor, std::uint64_t prev, std::uint64_t bytes) {
  const std::uint64_t a = natural_alignment(bytes);
  unsigned h = a >= 8u ? 8u : (a == 4u ? 4u : 2u);
  for (;;) {
    std::uint64_t p = 0;
    if (h == 8u) {
      p = round_up(cursor + 8u, a > 8u ? a : 8u);
    } else if (h == 4u) {
      p = round_up(cursor, 8u) + 4u;  // = 4 mod 8, at least cursor + 4
    } else {
      p = round_up(cursor, 4u) + 2u;  // = 2 mod 4, at least cursor + 2
    }
    const std::uint64_t off = p - prev;
    if (h == 2u && off >= (std::uint64_t{1} << 13)) { h = 4u; continue; }
    if (h == 4u && off >= (std::uint64_t{1} << 29)) { h = 8u; continue; }
    return {p, h};
  }
}

// The word holding a segment's flags: 16 bits for 2-byte headers, else 32.
template <class Acc>
MANYALLOC_FN std::uint32_t load_flags_word(const Acc& acc, std::byte* payload, unsigned h) {
  if (h == 2u) return acc.load16(reinterpret_cast<const std::uint16_t*>(payload - 2));
  return acc.load(reinterpret_cast<const std::uint32_t*>(payload - h));
}

template <class Acc>
MANYALLOC_FN bool cas_flags_word(const Acc& acc, std::byte* payload, unsigned h, std::uint32_t old,
                                 std::uint32_t desired) {
  if (h == 2u) {
    return acc.atomic_cas16(reinterpret_cast<std::uint16_t*>(payload - 2), static_cast<std::uint16_t>(old),
                            static_cast<std::uint16_t>(desired)) == static_cast<std::uint16_t>(old);
  }
  return acc.atomic_cas(reinterpret_cast<std::uint32_t*>(payload - h), old, desired) == old;
}

// Offset field of the header in front of `payload`.
template <class Acc>
MANYALLOC_FN std::uint64_t load_offset(const Acc& acc, std::byte* payload, unsigned h, std::uint32_t word) {
  std::uint64_t off = word >> 3;
  if (h == 8u) {
    off |= static_cast<std::uint64_t>(acc.load(reinterpret_cast<const std::uint32_t*>(payload - 4))) << 29;
  }
  return off;
}

// Writes the header of a fresh segment.
template <class Acc>
MANYALLOC_FN void write_header(const Acc& acc, std::byte* payload, unsigned h, std::uint64_t offset,
                               std::uint32_t flags) {
  if (h == 2u) {
    acc.store16(reinterpret_cast<std::uint16_t*>(payload - 2), static_cast<std::uint16_t>((offset << 3) | flags));
  } else if (h == 4u) {
    acc.store(reinterpret_cast<std::uint32_t*>(payload - 4), static_cast<std::uint32_t>((offset << 3) | flags));
  } else {
    acc.store(reinterpret_cast<std::uint32_t*>(payload - 4), static_cast<std::uint32_t>(offset >> 29));
    acc.store(reinterpret_cast<std::uint32_t*>(payload - 8),
              static_cast<std::uint32_t>(((offset & ((std::uint64_t{1} << 29) - 1u)) << 3) | flags));
  }
}

// Frees the segment at `payload`: wait-free unless it holds is_last, in
// which case it walks down the chain and either hands is_last to the highest
// live segment below (compare-and-swap) or, when all are free, returns the
// superblock start for the creation policy to free. Returns nullptr when
// nothing is to be freed yet (or on a detected double free).
template <class Acc>
MANYALLOC_FN void* free_segment(const Acc& acc, void* ptr, const char* who) {
  auto* p = static_cast<std::byte*>(ptr);
  const unsigned h = header_bytes_at(reinterpret_cast<std::uintptr_t>(p));
  if (h == 0u) {
    report_misuse(who, Misuse::not_a_chunk_start, ptr);
    return nullptr;
  }
  acc.fence();  // the caller's accesses to its payload before the part is given up
  std::uint32_t old = load_flags_word(acc, p, h);
  for (;;) {
    if ((old & seg_free) != 0u) {
      report_misuse(who, Misuse::double_free, ptr);
      return nullptr;
    }
    if (cas_flags_word(acc, p, h, old, old | seg_free)) break;
    old = load_flags_word(acc, p, h);  // is_last arrived meanwhile
  }
  if ((old & seg_last) == 0u) return nullptr;
  // This segment was the last live one: walk down.
  std::byte* q = p;
  unsigned hq = h;
  std::uint32_t wq = old;
  for (;;) {
    const std::uint64_t off = load_offset(acc, q, hq, wq);
    if ((wq & seg_superblock) != 0u) {
      acc.fence();
      return q - off;
    }
    std::byte* prev = q - off;
    const unsigned hp = header_bytes_at(reinterpret_cast<std::uintptr_t>(prev));
    std::uint32_t wp = load_flags_word(acc, prev, hp);
    for (;;) {
      if ((wp & seg_free) != 0u) break;                                  // freed: keep walking
      if (cas_flags_word(acc, prev, hp, wp, wp | seg_last)) return nullptr;  // handed over
      wp = load_flags_word(acc, prev, hp);                               // freed meanwhile
    }
    q = prev;
    hq = hp;
    wq = wp;
  }
}

}  // namespace manyalloc::heap::distribution::detail
