// The ring of free frame indices of one species in CreationPolicies::HeapBuffer
// ([Eckert2014] 2.4.4, Figure 2.2).
//
// The thesis's ring moves `pop` (allocation) and `push` (free) with one atomic
// each and checks the bounds afterwards, so a ring that has run empty is seen
// late: only by the next worker, while a worker past the end may read a cell
// that still holds the index of a frame in use and hand that frame out a
// second time. This ring keeps the one atomic ticket per operation and adds
// what makes the state exact:
//
//   R1  `available` counts the frames written into the ring and not yet
//       reserved. An allocation first takes one from it; when there was none
//       the ring is empty (every frame of the species is in use): the
//       allocation gives it back and fails at once, and is counted. So every
//       worker that meets the empty ring sees it, not only the next one.
//   R2  Each cell holds, in one 64-bit word, a frame index and the ticket it
//       is valid for (ticket in the high half): the frame for the allocation
//       with ticket t is there exactly when the tag is t + 1; the cell is
//       ready for the free with ticket t exactly when the tag is t. A worker
//       takes a ticket with one atomic add and then reads or writes only its
//       own cell.
//   R3  After a successful R1 reservation the frame for the worker's ticket
//       exists or is being written by a free that has its ticket (frees may
//       finish out of ticket order); the worker waits for that write (counted
//       as `late`: the state was seen before it was written). A free likewise
//       waits for the allocation one lap earlier to empty its cell. Each wait
//       is for a worker that already holds its ticket and needs nothing else,
//       so it ends (on the GPU under independent thread scheduling).
//
// Tickets are 64-bit; tags keep their low 32 bits, compared as signed
// differences, exact while fewer than 2^31 tickets are in flight.
#pragma once

#include <cstdint>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::detail::heap_buffer {

// The counters of one species, alone on a 128-byte line so that species do
// not slow each other down.
struct alignas(128) RingCounters {
  std::uint64_t pop = 0;        // next allocation ticket
  std::uint64_t push = 0;       // next free ticket
  std::uint32_t available = 0;  // R1 (read as signed: reservations may dip below zero)
};

// Counts the host reads (HeapBufferReports).
struct alignas(128) Shared {
  std::uint32_t empty = 0;          // allocations that found their ring empty (R1)
  std::uint32_t late = 0;           // allocations that waited for a free being written (R3)
  std::uint32_t oversize = 0;       // requests larger than a frame
  std::uint32_t live_refused = 0;   // a frame the ring offered was marked live (never expected)
  std::uint32_t misuse = 0;         // bad frees (foreign pointer, not a frame start, double free)
  std::uint32_t last_misuse = 0;
};

MANYALLOC_FN inline std::uint64_t pack(std::uint64_t ticket, std::uint32_t frame) {
  return (ticket << 32) | frame;
}
MANYALLOC_FN inline std::int32_t tag_minus(std::uint64_t cell, std::uint64_t ticket) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(cell >> 32) - static_cast<std::uint32_t>(ticket));
}

inline constexpr std::uint32_t no_frame = 0xffffffffu;

// Takes a free frame of the ring, or no_frame when the ring is empty.
template <class Acc>
MANYALLOC_FN std::uint32_t pop(const Acc& acc, RingCounters* c, std::uint64_t* cells, std::uint32_t frames,
                               Shared* shared) {
  const auto before = static_cast<std::int32_t>(acc.atomic_sub(&c->available, 1u));
  if (before <= 0) {
    acc.atomic_add(&c->available, 1u);
    acc.atomic_add(&shared->empty, 1u);
    return no_frame;
  }
  const std::uint64_t t = acc.atomic_add64(&c->pop, 1u);
  std::uint64_t* cell = &cells[t % frames];
  std::uint64_t v = acc.load64(cell);
  if (tag_minus(v, t + 1) != 0) {
    acc.atomic_add(&shared->late, 1u);
    do {
      acc.relax();
      v = acc.load64(cell);
    } while (tag_minus(v, t + 1) != 0);
  }
  acc.store64(cell, pack(t + frames, 0));  // R2: ready for the free one lap on
  return static_cast<std::uint32_t>(v);
}

// Returns frame `frame` to the ring. The caller has checked that the frame
// was live, so at most `frames` frames are ever in the ring.
template <class Acc>
MANYALLOC_FN void push(const Acc& acc, RingCounters* c, std::uint64_t* cells, std::uint32_t frames,
                       std::uint32_t frame) {
  const std::uint64_t t = acc.atomic_add64(&c->push, 1u);
  std::uint64_t* cell = &cells[t % frames];
  while (tag_minus(acc.load64(cell), t) != 0) acc.relax();
  acc.store64(cell, pack(t + 1, frame));
  // R1: the frame is counted only once its cell is written (an allocation
  // that reserves it may still meet another, slower free's cell: R3).
  acc.fence();
  acc.atomic_add(&c->available, 1u);
}

}  // namespace manyalloc::heap::detail::heap_buffer
