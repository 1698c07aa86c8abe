// The binned free-list of one list (invariants F1, F2 in
// detail/lists/invariants.hpp; [Steinberger2012] section 4). Callers hold the
// list's lock.
#pragma once

#include <cstdint>

#include "manyalloc/common/platform.hpp"
#include "manyalloc/heap/detail/lists/invariants.hpp"
#include "manyalloc/heap/detail/lists/list_view.hpp"

namespace manyalloc::heap::detail::lists {

// First segment of bin `bin` or of the next non-empty bin after it; `none`
// when all those bins are empty.
template <class Acc>
MANYALLOC_FN std::uint32_t first_from_bin(const ListView<Acc>& v, std::uint32_t bin, std::uint32_t bin_count) {
  for (std::uint32_t b = bin; b < bin_count; ++b) {
    const std::uint32_t s = v.bin_head(b);
    if (s != none) return s;
  }
  return none;
}

// Inserts the free segment `s` at the front of bin `bin` (F1 keeps holding:
// it goes right before the first segment of the next non-empty bin).
template <class Acc>
MANYALLOC_FN void insert_free(const ListView<Acc>& v, std::uint32_t s, std::uint32_t bin, std::uint32_t bin_count) {
  v.set(s, Field::bin, bin);
  const std::uint32_t next = first_from_bin(v, bin, bin_count);
  const std::uint32_t prev = next != none ? v.get(next, Field::free_prev) : v.last_free();
  v.set(s, Field::free_prev, prev);
  v.set(s, Field::free_next, next);
  if (prev != none) v.set(prev, Field::free_next, s);
  else v.set_first_free(s);
  if (next != none) v.set(next, Field::free_prev, s);
  else v.set_last_free(s);
  v.set_bin_head(bin, s);
}

// Unlinks the free segment `s`; its bin's entry point moves to its successor
// when that is of the same bin.
template <class Acc>
MANYALLOC_FN void remove_free(const ListView<Acc>& v, std::uint32_t s) {
  const std::uint32_t prev = v.get(s, Field::free_prev), next = v.get(s, Field::free_next);
  const std::uint32_t bin = v.get(s, Field::bin);
  if (prev != none) v.set(prev, Field::free_next, next);
  else v.set_first_free(next);
  if (next != none) v.set(next, Field::free_prev, prev);
  else v.set_last_free(prev);
  if (v.bin_head(bin) == s) v.set_bin_head(bin, next != none && v.get(next, Field::bin) == bin ? next : none);
}

}  // namespace manyalloc::heap::detail::lists
