// The census after each PIC step ([Eckert2014] 5.2; heap/bench/pic/step.hpp):
// counts every particle and frame and checks the lists' invariants
// (frames.hpp), so that a step is verified when no particle was lost or
// duplicated and no list is broken.
#pragma once

#include <cstddef>
#include <cstdint>

#include "frames.hpp"
#include "manyalloc/common/platform.hpp"
#include "step.hpp"

namespace manyalloc::heap::pic {

// Per (cell, species): the particles it holds (its list and its outboxes,
// where moving particles wait), and whether its lists keep their invariants
// (frames.hpp) with every particle in the list of its species.
struct Census {
  std::uint32_t particles;
  std::uint32_t frames;
  std::uint32_t broken;
};

struct Verify {
  Grid g;
  StepParams sp;
  Census* census;  // cells * species
  MANYALLOC_FN static std::uint32_t walk(const FrameList& l, std::uint32_t cap, std::uint32_t species,
                                         bool full_but_last, std::uint32_t& frames_seen, std::uint32_t& broken) {
    std::uint32_t sum = 0, frames = 0;
    const std::byte* lastf = nullptr;
    for (std::byte* f = l.first; f != nullptr; f = header(f)->next) {
      const std::uint32_t n = header(f)->count;
      if (n == 0 || n > cap) ++broken;
      if (full_but_last && header(f)->next != nullptr && n != cap) ++broken;
      if (species != ~0u) {
        for (std::uint32_t j = 0; j < n && j < cap; ++j) broken += particles(f)[j].species != species;
      }
      sum += n;
      ++frames;
      lastf = f;
      if (frames > (1u << 24)) { ++broken; break; }  // a cycle
    }
    if (sum != l.count || frames != l.frames || lastf != l.last) ++broken;
    frames_seen += frames;
    return sum;
  }
  template <class Acc>
  MANYALLOC_FN void operator()(const Acc&, std::uint32_t w) const {
    const std::uint32_t s = w % sp.species;
    const std::uint32_t cap = frame_capacity(sp.frame_bytes);
    std::uint32_t broken = 0, frames = 0;
    std::uint32_t n = walk(g.lists[w], cap, s, true, frames, broken);
    for (std::uint32_t d = 0; d < directions; ++d) {
      n += walk(g.outbox[std::size_t{w} * directions + d], cap, s, false, frames, broken);
    }
    census[w] = Census{n, frames, broken};
  }
};

}  // namespace manyalloc::heap::pic
