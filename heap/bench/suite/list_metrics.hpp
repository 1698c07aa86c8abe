// Memory-efficiency measures of a list-based heap (CreationPolicies::ListBased
// and MultiList), computed on the host from a copy of its lists, by the
// definitions of [Steinberger2012] section 3:
//   internal fragmentation (1): mean over used segments r of
//       (size(r) - alloc(r)) / size(r), size(r) the segment's payload and
//       alloc(r) the request its header records;
//   external fragmentation (2): 1 - largest free payload / all free payload,
//       over all lists (a request must fit into one segment);
//   overhead: the metadata in front of the lists plus every header.
// The walk also checks the segment-list invariants of
// detail/lists/invariants.hpp (L1-L4): a record whose walk fails is not
// verified.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "manyalloc/heap/heap.hpp"

namespace manyalloc::heap::bench {

template <class Heap>
concept HasSegmentLists = requires(const Heap& h) { h.creation().layout().list_granules; };

struct ListStats {
  double free_bytes = 0;
  double largest_free = 0;
  double external = 0;
  double internal = 0;
  double overhead_bytes = 0;
  double used_segments = 0;
  double free_segments = 0;
  bool consistent = true;  // L1-L4 hold in every list
};

template <class Heap>
ListStats list_stats(const Heap& heap) {
  namespace lists = heap::detail::lists;
  const auto& l = heap.creation().layout();
  std::vector<std::byte> data(l.data_bytes());
  Heap::backend::copy_to_host(data.data(), l.data, data.size());
  ListStats s;
  double internal_sum = 0;
  std::uint64_t headers = 0;
  for (std::uint32_t list = 0; list < l.lists && s.consistent; ++list) {
    const std::byte* base = data.data() + l.list_bytes * list;
    std::uint32_t index = 0, prev = lists::none;
    bool prev_free = false;
    while (index != l.list_granules) {
      lists::SegmentHeader h;
      std::memcpy(&h, base + std::size_t{index} * lists::granule_bytes, sizeof h);
      const bool free = h.state == lists::state_free;
      if (h.check != lists::check_of(index) || h.seg_prev != prev || (!free && h.state != lists::state_used) ||
          h.seg_next <= index || h.seg_next > l.list_granules ||
          h.seg_next - index < lists::min_segment_granules || (free && prev_free)) {
        s.consistent = false;
        break;
      }
      ++headers;
      const double payload = static_cast<double>(h.seg_next - index - lists::header_granules) * lists::granule_bytes;
      if (free) {
        s.free_bytes += payload;
        s.largest_free = std::max(s.largest_free, payload);
        ++s.free_segments;
      } else {
        internal_sum += (payload - std::min<double>(payload, h.request)) / payload;
        ++s.used_segments;
      }
      prev = index;
      prev_free = free;
      index = h.seg_next;
    }
  }
  s.internal = s.used_segments > 0 ? internal_sum / s.used_segments : 0.0;
  s.external = s.free_bytes > 0 ? 1.0 - s.largest_free / s.free_bytes : 0.0;
  s.overhead_bytes = static_cast<double>(l.metadata_bytes + headers * lists::header_bytes);
  return s;
}

}  // namespace manyalloc::heap::bench
