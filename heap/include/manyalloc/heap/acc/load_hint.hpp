// Reading a hint: the worker's load_hint where it has one (HintLoads), its
// coherent load otherwise.
#pragma once

#include <cstdint>

#include "manyalloc/common/platform.hpp"
#include "manyalloc/heap/acc/concepts.hpp"

namespace manyalloc::heap::acc {

template <class Acc>
MANYALLOC_FN std::uint32_t load_hint(const Acc& acc, const std::uint32_t* p) {
  if constexpr (HintLoads<Acc>) {
    return acc.load_hint(p);
  } else {
    return acc.load(p);
  }
}

}  // namespace manyalloc::heap::acc
