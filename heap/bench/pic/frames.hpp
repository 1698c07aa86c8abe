// Particles in frames, the memory layout of PIConGPU's particles ([Eckert2014]
// 2.4.4, 5.2): each (cell, species) keeps its particles in a singly linked
// list of fixed-size frames taken from the heap under test. Only the worker
// that owns a list in a phase touches it, so the list needs no atomics; the
// heap is what the workers share.
#pragma once

#include <cstddef>
#include <cstdint>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::pic {

// 32 bytes, like a PIConGPU particle (position, momentum, weighting, cell).
struct Particle {
  float pos[3];
  float mom[3];
  std::uint32_t id;       // drives the particle's random decisions
  std::uint32_t species;  // the list it belongs in (checked by the verification)
};
static_assert(sizeof(Particle) == 32, "a particle is 32 bytes, so that a frame holds whole particles");

// A frame starts with this header; its particles follow.
struct FrameHeader {
  std::byte* next;
  std::uint32_t count;
  std::uint32_t pad[5];
};
static_assert(sizeof(FrameHeader) == sizeof(Particle), "the header takes one particle's place");

MANYALLOC_FN inline FrameHeader* header(std::byte* f) { return reinterpret_cast<FrameHeader*>(f); }
MANYALLOC_FN inline Particle* particles(std::byte* f) { return reinterpret_cast<Particle*>(f + sizeof(FrameHeader)); }

// Particles per frame of `frame_bytes` (8 KiB: 255).
MANYALLOC_FN constexpr std::uint32_t frame_capacity(std::uint32_t frame_bytes) {
  return (frame_bytes - static_cast<std::uint32_t>(sizeof(FrameHeader))) / static_cast<std::uint32_t>(sizeof(Particle));
}

// A list of frames. Invariant (checked by verify in step.hpp): `count` is
// the sum of the frames' counts, `frames` their number, `last` the final
// frame; every frame but the last of a cell's list is full after its owner's
// compaction (outboxes may hold partly used frames anywhere).
struct FrameList {
  std::byte* first = nullptr;
  std::byte* last = nullptr;
  std::uint32_t count = 0;
  std::uint32_t frames = 0;
};

// What one worker did in one phase (the host sums them).
struct WorkerStats {
  std::uint32_t allocs = 0;
  std::uint32_t frees = 0;
  std::uint32_t fails = 0;   // allocations that returned nullptr
  std::uint32_t births = 0;  // particles injected
};

// Appends p to `list`, taking a new frame from `mem` for `species` when the
// last one is full. false (and nothing changed) when the heap refuses.
template <class Acc, class Mem>
MANYALLOC_FN bool append(const Acc& acc, const Mem& mem, std::uint32_t species, std::uint32_t frame_bytes,
                         FrameList& list, const Particle& p, WorkerStats& st) {
  const std::uint32_t cap = frame_capacity(frame_bytes);
  if (list.last == nullptr || header(list.last)->count == cap) {
    auto* f = static_cast<std::byte*>(mem.alloc(acc, species, frame_bytes));
    if (f == nullptr) {
      ++st.fails;
      return false;
    }
    ++st.allocs;
    header(f)->next = nullptr;
    header(f)->count = 0;
    if (list.last == nullptr) {
      list.first = f;
    } else {
      header(list.last)->next = f;
    }
    list.last = f;
    ++list.frames;
  }
  FrameHeader* h = header(list.last);
  particles(list.last)[h->count] = p;
  ++h->count;
  ++list.count;
  return true;
}

// Frees the frames from `f` on.
template <class Acc, class Mem>
MANYALLOC_FN void free_chain(const Acc& acc, const Mem& mem, std::byte* f, WorkerStats& st) {
  while (f != nullptr) {
    std::byte* next = header(f)->next;
    mem.free(acc, f);
    ++st.frees;
    f = next;
  }
}

}  // namespace manyalloc::heap::pic
