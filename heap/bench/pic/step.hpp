// One time step of the particle-in-cell benchmark ([Eckert2014] 5.2), as two
// phases that each run as one launch, plus the initialisation and the
// teardown (the census is in census.hpp). Cells form a periodic line; a step moves a
// fraction of the particles to the neighbouring cells and may convert
// particles of other species into the growing one (the shifting populations
// of 5.2.2), so frames are allocated and freed by whichever workers' lists
// fill up or run empty: a varying set of threads.
//
//   emit   (worker per cell and species): walks its list once, moves each
//          leaving particle into one of its three outboxes (left, right,
//          convert; frames allocated as they fill), compacts the staying
//          particles to the front and frees the frames left empty.
//   gather (worker per cell): drains the outboxes aimed at its cell into its
//          lists (frames allocated as they fill, outbox frames freed), then
//          injects new particles of the growing species. If the heap refuses
//          a frame the rest stays in the outbox for the next step, so no
//          particle is ever lost.
//
// Each outbox is drained by exactly one cell (needs cells >= 3), so a list
// is touched by one worker per phase and needs no atomics.
#pragma once

#include <cstdint>

#include "frames.hpp"
#include "manyalloc/common/platform.hpp"
#include "manyalloc_support/workers.hpp"

namespace manyalloc::heap::pic {

enum Direction : std::uint32_t { to_left = 0, to_right = 1, to_convert = 2, stay = 3 };
inline constexpr std::uint32_t directions = 3;

struct StepParams {
  std::uint32_t cells = 0;
  std::uint32_t species = 0;
  std::uint32_t frame_bytes = 0;
  std::uint32_t step = 0;
  float move = 0;          // share of particles leaving their cell per step (half each way)
  float convert = 0;       // chance per step that a particle of another species becomes `growing`
  std::uint32_t growing = 0;
  std::uint32_t inject = 0;   // new particles of `growing` per cell per step
  std::uint32_t id_base = 0;  // seeds the injected particles' ids
};

// The lists of the grid: cell-major, species-minor; outboxes have three per list.
struct Grid {
  FrameList* lists = nullptr;    // cells * species
  FrameList* outbox = nullptr;   // cells * species * directions
  WorkerStats* stats = nullptr;  // one per worker of the phase
};

// Uniform in [0, 1) from a particle id and a step.
MANYALLOC_FN inline float unit(std::uint32_t id, std::uint32_t step, std::uint32_t salt) {
  return static_cast<float>(testing::checksum(id, step, salt) >> 8) * (1.0f / 16777216.0f);
}

MANYALLOC_FN inline Direction decide(const Particle& p, std::uint32_t s, const StepParams& sp) {
  const float u = unit(p.id, sp.step, 1u);
  if (u < sp.move * 0.5f) return to_left;
  if (u < sp.move) return to_right;
  if (s != sp.growing && sp.convert > 0.0f && unit(p.id, sp.step, 2u) < sp.convert) return to_convert;
  return stay;
}

MANYALLOC_FN inline Particle make_particle(std::uint32_t id, std::uint32_t species) {
  Particle p{};
  for (int k = 0; k < 3; ++k) {
    p.pos[k] = unit(id, 0u, 10u + k);
    p.mom[k] = unit(id, 0u, 20u + k) - 0.5f;
  }
  p.id = id;
  p.species = species;
  return p;
}

// Fills each (cell, species) list with `per_list` particles.
template <class Mem>
struct Init {
  Mem mem;
  Grid g;
  StepParams sp;
  std::uint32_t per_list;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    WorkerStats st{};
    const std::uint32_t s = w % sp.species;
    for (std::uint32_t i = 0; i < per_list; ++i) {
      if (!append(acc, mem, s, sp.frame_bytes, g.lists[w], make_particle(w * per_list + i, s), st)) break;
    }
    g.stats[w] = st;
  }
};

template <class Mem>
struct Emit {
  Mem mem;
  Grid g;
  StepParams sp;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    const std::uint32_t s = w % sp.species;
    const std::uint32_t cap = frame_capacity(sp.frame_bytes);
    FrameList& list = g.lists[w];
    FrameList* out = g.outbox + std::size_t{w} * directions;
    WorkerStats st{};
    std::byte* read = list.first;
    std::byte* write = list.first;  // compaction cursor: never ahead of `read`
    std::byte* before_write = nullptr;
    std::uint32_t at = 0, kept = 0;
    while (read != nullptr) {
      std::byte* next = header(read)->next;
      const std::uint32_t n = header(read)->count;
      for (std::uint32_t j = 0; j < n; ++j) {
        Particle p = particles(read)[j];
        const Direction d = decide(p, s, sp);
        // A particle whose outbox cannot get a frame stays where it is.
        if (d != stay && append(acc, mem, s, sp.frame_bytes, out[d], p, st)) continue;
        for (int k = 0; k < 3; ++k) p.pos[k] += 0.01f * p.mom[k];  // the particle push
        particles(write)[at++] = p;
        ++kept;
        if (at == cap) {
          header(write)->count = cap;
          before_write = write;
          write = header(write)->next;
          at = 0;
        }
      }
      read = next;
    }
    if (list.first != nullptr) {
      if (at > 0) {
        header(write)->count = at;
        free_chain(acc, mem, header(write)->next, st);
        header(write)->next = nullptr;
        list.last = write;
      } else {
        free_chain(acc, mem, write, st);
        if (before_write != nullptr) {
          header(before_write)->next = nullptr;
          list.last = before_write;
        } else {
          list.first = list.last = nullptr;
        }
      }
    }
    list.count = kept;
    list.frames = (kept + cap - 1) / cap;
    g.stats[w] = st;
  }
};

template <class Mem>
struct Gather {
  Mem mem;
  Grid g;
  StepParams sp;

  // Moves the particles of `box` into the cell's lists; false when the heap
  // refused a frame (the rest stays in `box`, its first frame compacted).
  template <class Acc>
  MANYALLOC_FN bool drain(const Acc& acc, std::uint32_t cell, FrameList& box, bool convert,
                          WorkerStats& st) const {
    std::byte* f = box.first;
    while (f != nullptr) {
      std::byte* next = header(f)->next;
      const std::uint32_t n = header(f)->count;
      for (std::uint32_t j = 0; j < n; ++j) {
        Particle p = particles(f)[j];
        if (convert) p.species = sp.growing;
        if (!append(acc, mem, p.species, sp.frame_bytes, g.lists[std::size_t{cell} * sp.species + p.species], p, st)) {
          for (std::uint32_t k = j; k < n; ++k) particles(f)[k - j] = particles(f)[k];
          header(f)->count = n - j;
          box.first = f;
          box.count -= j;
          return false;
        }
      }
      box.count -= n;
      --box.frames;
      mem.free(acc, f);
      ++st.frees;
      f = next;
    }
    box = FrameList{};
    return true;
  }

  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t c) const {
    WorkerStats st{};
    const std::uint32_t left = (c + sp.cells - 1) % sp.cells, right = (c + 1) % sp.cells;
    bool ok = true;
    for (std::uint32_t s = 0; s < sp.species && ok; ++s) {
      ok = drain(acc, c, g.outbox[(std::size_t{left} * sp.species + s) * directions + to_right], false, st) &&
           drain(acc, c, g.outbox[(std::size_t{right} * sp.species + s) * directions + to_left], false, st) &&
           drain(acc, c, g.outbox[(std::size_t{c} * sp.species + s) * directions + to_convert], true, st);
    }
    FrameList& grow = g.lists[std::size_t{c} * sp.species + sp.growing];
    for (std::uint32_t i = 0; i < sp.inject && ok; ++i) {
      ok = append(acc, mem, sp.growing, sp.frame_bytes, grow, make_particle(sp.id_base + c * sp.inject + i, sp.growing), st);
      if (ok) ++st.births;
    }
    g.stats[c] = st;
  }
};

// Frees every frame (the heap is empty afterwards).
template <class Mem>
struct Teardown {
  Mem mem;
  Grid g;
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc& acc, std::uint32_t w) const {
    WorkerStats st{};
    free_chain(acc, mem, g.lists[w].first, st);
    g.lists[w] = FrameList{};
    for (std::uint32_t d = 0; d < directions; ++d) {
      free_chain(acc, mem, g.outbox[std::size_t{w} * directions + d].first, st);
      g.outbox[std::size_t{w} * directions + d] = FrameList{};
    }
    g.stats[w] = st;
  }
};

}  // namespace manyalloc::heap::pic
