// Bins of the free-list ([Steinberger2012] section 4: "a partial ordering on
// the elements of the free-list ... sub-lists that contain blocks of certain
// sizes"; section 8 uses ten). Bin 0 holds segments below smallest_bin_bytes,
// bin b >= 1 those of [smallest << (b-1), smallest << b), the last bin every
// larger one. Sizes are whole segments (header included), in granules.
#pragma once

#include <cstdint>

#include "manyalloc/common/platform.hpp"
#include "manyalloc/heap/detail/lists/invariants.hpp"

namespace manyalloc::heap::detail::lists {

MANYALLOC_FN inline std::uint32_t bin_of(std::uint32_t granules, std::uint32_t smallest_bin_bytes,
                                         std::uint32_t bin_count) {
  const std::uint64_t bytes = std::uint64_t{granules} * granule_bytes;
  std::uint32_t bin = 0;
  for (std::uint64_t bound = smallest_bin_bytes; bytes >= bound && bin + 1 < bin_count; bound <<= 1) ++bin;
  return bin;
}

}  // namespace manyalloc::heap::detail::lists
