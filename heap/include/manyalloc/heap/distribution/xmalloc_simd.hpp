// DistributionPolicies::XMallocSIMD<pagesize> ([Eckert2014] 4.3.3, after
// XMalloc, [Huang2010]): the requests of the active lanes of a warp that are at most
// pagesize/32 bytes are combined into one chunk allocated by one elected lane
// (the lowest such lane); larger requests are allocated alone. The combined
// chunk never exceeds one page (lanes that would push it over allocate
// alone), so with CreationPolicies::Scatter it is always a single-page chunk.
// `pagesize` must equal the creation policy's (checked by the host class,
// policy_checks.hpp).
//
// Freeing parts: each part carries a segment header ([Blach2022]
// 3.2 scheme, detail/segments.hpp), so every part may be freed on its own, in
// any order and concurrently; the combined chunk goes back to the creation
// policy when its last part is freed. This is the blowup [Eckert2014] warns of:
// a chunk is reusable only after *every* worker freed its part, so one
// long-lived part pins up to a page. DistributionPolicies::NoOp avoids it.
// Headers also cost space: 2-8 bytes per part plus alignment padding (for
// 16-byte requests with 16-byte alignment a part takes 32 bytes).
#pragma once

#include <cstdint>
#include <string>

#include "manyalloc/heap/distribution/detail/segment_coalescing.hpp"

namespace manyalloc::heap::DistributionPolicies {

template <std::uint32_t PageSize = 4096>
struct XMallocSIMD : distribution::detail::SegmentCoalescing<PageSize / 32u, PageSize> {
  static_assert(PageSize >= 512 && PageSize % 16 == 0, "XMallocSIMD: page size too small");
  using Base = distribution::detail::SegmentCoalescing<PageSize / 32u, PageSize>;
  using Base::Base;
  static constexpr std::uint32_t pagesize = PageSize;
  static std::string classname() { return "XMallocSIMD[pagesize=" + std::to_string(PageSize) + "]"; }
};

}  // namespace manyalloc::heap::DistributionPolicies
