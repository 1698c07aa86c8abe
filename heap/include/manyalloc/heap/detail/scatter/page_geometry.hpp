// How a page of `pagesize` bytes is split into chunks of one size
// ([Steinberger2012] 5.2; [Eckert2014] 4.3.5, figures 2.4 and 2.5).
//
// Flat page (chunk_size > hierarchy_threshold): up to 32 chunks from the page
// start, tracked by the 32-bit mask of the page usage table.
//
// Hierarchical page (chunk_size <= hierarchy_threshold): "segments" of 32
// chunks, each tracked by a 32-bit word stored inside the page, at its end
// (word k of segment k sits at page_end - 4*(k+1)). Chunks that do not fill a
// whole segment ("additional" chunks, [Eckert2014] 4.3.5) form one more, partial
// segment with its own word. The table's mask then holds one bit per segment,
// set when the segment is (believed) full. At most 32 segments exist, so a
// page holds at most 1024 chunks.
#pragma once

#include <cstdint>

#include "manyalloc/common/math.hpp"
#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::detail {

struct PageGeometry {
  std::uint32_t chunks = 0;         // chunks on the page
  std::uint32_t full_segments = 0;  // hierarchical: segments of exactly 32 chunks
  std::uint32_t additional = 0;     // hierarchical: chunks of the partial segment (< 32)
  bool hierarchical = false;

  // Segments, i.e. in-page bit-field words (0 for a flat page).
  MANYALLOC_FN constexpr std::uint32_t segments() const {
    return full_segments + (additional > 0 ? 1u : 0u);
  }
  MANYALLOC_FN constexpr std::uint32_t chunks_in_segment(std::uint32_t segment) const {
    return segment < full_segments ? 32u : additional;
  }
  // Whether taken chunks have their bit set. A page of one chunk (chunk
  // size above half the page) keeps none: its reservation, CAS(fill, 0, 1),
  // is the chunk, and its free is the return alone (scatter/invariants.hpp
  // I2).
  MANYALLOC_FN constexpr bool keeps_bits() const { return chunks > 1u; }
};

// Chunk sizes at or below this split the page hierarchically: above it at
// most 32 chunks fit anyway once the bit-field words are accounted for.
MANYALLOC_FN constexpr std::uint32_t hierarchy_threshold(std::uint32_t pagesize) {
  return (pagesize - 2u * static_cast<std::uint32_t>(sizeof(std::uint32_t))) / 33u;
}

// The chunks of a flat page (chunk_size > hierarchy_threshold): as many as
// fit, at most the table mask's 32. Precondition as page_geometry's.
MANYALLOC_FN constexpr std::uint32_t flat_chunks(std::uint32_t pagesize, std::uint32_t chunk_size) {
  const std::uint32_t fit = small_quotient(pagesize, chunk_size);
  return fit < 32u ? fit : 32u;
}

// Precondition: 1 <= chunk_size <= pagesize < small_quotient_limit (a
// free and a claim compute it for the chunk size they read: divisions by a
// value known only at run time, small_quotient's).
MANYALLOC_FN constexpr PageGeometry page_geometry(std::uint32_t pagesize, std::uint32_t chunk_size) {
  PageGeometry g;
  if (chunk_size > hierarchy_threshold(pagesize)) {
    g.chunks = flat_chunks(pagesize, chunk_size);
    return g;
  }
  g.hierarchical = true;
  const std::uint32_t word = sizeof(std::uint32_t);
  const std::uint32_t segment_bytes = chunk_size * 32u + word;
  std::uint32_t full = small_quotient(pagesize, segment_bytes);
  if (full >= 32u) {
    g.full_segments = 32u;  // the table's mask has no bit for a 33rd segment
  } else {
    g.full_segments = full;
    const std::uint32_t used = full * segment_bytes + word;
    g.additional = used < pagesize ? small_quotient(pagesize - used, chunk_size) : 0u;
  }
  g.chunks = g.full_segments * 32u + g.additional;
  return g;
}

// The most in-page bit-field words a split of a page can use: those of
// the smallest chunks.
MANYALLOC_FN constexpr std::uint32_t max_segments(std::uint32_t pagesize) { return page_geometry(pagesize, 1u).segments(); }

}  // namespace manyalloc::heap::detail
