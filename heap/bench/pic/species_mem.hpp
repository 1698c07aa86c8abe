// How the PIC workers reach the heap under test: alloc(acc, species, bytes)
// and free(acc, p). A heap whose creation policy splits the pool by species
// (HeapBuffer, [Eckert2014] 2.4.4) gets one handle bound to each species; any
// other heap serves every species from one handle (5.2.2: memory is
// distributed freely at run time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::pic {

inline constexpr std::uint32_t max_species = 16;

template <class Heap>
concept SplitBySpecies = requires(const Heap& h) {
  { h.creation().for_species(0u) };
  { Heap::CreationPolicy::species } -> std::convertible_to<std::uint32_t>;
};

template <class Heap>
class SpeciesMem {
 public:
  using Handle = typename Heap::Handle;
  static constexpr bool split = SplitBySpecies<Heap>;

  // Throws std::invalid_argument when a split heap has fewer parts than species.
  SpeciesMem(const Heap& heap, std::uint32_t species) {
    if constexpr (split) {
      if (species != Heap::CreationPolicy::species)
        throw std::invalid_argument("a heap split for " + std::to_string(Heap::CreationPolicy::species) +
                                    " species cannot serve " + std::to_string(species));
      for (std::uint32_t s = 0; s < species; ++s) h_[s] = Handle(heap.creation().for_species(s));
    } else {
      h_[0] = heap.handle();
    }
  }

  template <class Acc>
  MANYALLOC_FN void* alloc(const Acc& acc, std::uint32_t species, std::size_t bytes) const {
    return h_[split ? species : 0u].alloc(acc, bytes);
  }
  // Frames go back to the part they came from whatever handle frees them.
  template <class Acc>
  MANYALLOC_FN void free(const Acc& acc, void* p) const {
    h_[0].dealloc(acc, p);
  }

 private:
  Handle h_[split ? max_species : 1];
};

}  // namespace manyalloc::heap::pic
