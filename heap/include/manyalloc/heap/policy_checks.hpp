// Constraints between policies that are not orthogonal ([Eckert2014] 4.2,
// PolicyConstraints), checked when the host class is instantiated.
#pragma once

#include <cstdint>

namespace manyalloc::heap::detail {

template <class P>
concept HasPagesize = requires { { P::pagesize } -> std::convertible_to<std::uint32_t>; };

template <class P>
concept HasAlignment = requires { { P::alignment } -> std::convertible_to<std::uint32_t>; };

// Creation policies whose chunks start at a fixed alignment only (the list
// heaps: a 32-byte header in front of 16-byte granules).
template <class P>
concept HasChunkAlignment = requires { { P::chunk_alignment } -> std::convertible_to<std::uint32_t>; };

template <class CP, class DP, class OP, class RP, class AP>
struct PolicyChecks {
  static_assert(!CP::needs_addressable_pool || RP::addressable,
                "this CreationPolicy builds its heap inside the pool: pick a ReservePoolPolicy "
                "with an addressable pool (e.g. CudaMalloc or HostPool, not CudaSetLimits)");
  static_assert(!OP::needs_exceptions || RP::backend::has_exceptions,
                "this OOMPolicy throws, but workers of this back end cannot throw exceptions "
                "(use OOMPolicies::ReturnNull on the GPU)");

  static constexpr bool pagesizes_agree() {
    if constexpr (HasPagesize<CP> && HasPagesize<DP>) return CP::pagesize == DP::pagesize;
    return true;
  }
  static_assert(pagesizes_agree(),
                "the DistributionPolicy and the CreationPolicy must use the same page size "
                "(e.g. XMallocSIMD<pagesize> with Scatter's HeapConfig::pagesize)");

  static constexpr bool alignment_fits_pages() {
    if constexpr (HasPagesize<CP> && HasAlignment<AP>) return CP::pagesize % AP::alignment == 0;
    return true;
  }
  static_assert(alignment_fits_pages(),
                "the AlignmentPolicy's alignment must divide the CreationPolicy's page size");

  static constexpr bool alignment_fits_chunks() {
    if constexpr (HasChunkAlignment<CP> && HasAlignment<AP>) return AP::alignment <= CP::chunk_alignment;
    return true;
  }
  static_assert(alignment_fits_chunks(),
                "this CreationPolicy aligns its chunks to chunk_alignment bytes only: pick an AlignmentPolicy "
                "whose alignment is no larger (e.g. Shrink<16> for ListBased and MultiList)");
};

}  // namespace manyalloc::heap::detail
