// DistributionPolicies::DynamicWarp: dynamic warp-level coalescing with
// segment headers ([Blach2022] 3.2). Works on top of any creation
// policy and with any subset of active lanes and any mix of sizes.
//
// The active lanes elect the lowest as leader, share their sizes by
// shuffles, and the leader allocates one superblock holding every lane's
// segment (a 2-, 4- or 8-byte header in front of each payload, chosen from the
// payload's natural alignment; layout and free protocol in
// detail/segments.hpp). Requests of 2 GiB or more are allocated alone.
//
// Payload alignment: a request of n bytes is aligned to the largest power of
// two dividing n, at most 16 (enough for any array of objects filling it).
// Pad requests with an AlignmentPolicy if more is needed; pair this policy
// with AlignmentPolicies::NoOp to keep small parts compact.
//
// Blowup: a superblock goes back to the creation policy only when every part
// of it is freed; one long-lived part keeps its neighbours' memory (up to 31
// parts plus headers) allocated. See docs/results/coalescing/README.md.
//
// On CUDA the leader's pointer reaches the lanes through a static 8 KiB
// shared-memory box per block (acc::CudaThread::group_broadcast64).
//
// Needs MixedWidthAtomics (16-bit CAS for 2-byte headers) from the worker.
// Use with OOMPolicies::ReturnNull: a throwing OOM policy would leave the
// other lanes of the group waiting in distribute().
#pragma once

#include <string>

#include "manyalloc/heap/distribution/detail/segment_coalescing.hpp"

namespace manyalloc::heap::DistributionPolicies {

struct DynamicWarp : distribution::detail::SegmentCoalescing<~std::uint64_t{0}, ~std::uint64_t{0}> {
  using Base = distribution::detail::SegmentCoalescing<~std::uint64_t{0}, ~std::uint64_t{0}>;
  using Base::Base;
  static std::string classname() { return "DynamicWarp"; }
};

}  // namespace manyalloc::heap::DistributionPolicies
