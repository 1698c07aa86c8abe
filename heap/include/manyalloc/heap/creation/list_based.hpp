// CreationPolicies::ListBased: the parallel list-based allocator that
// [Steinberger2012] section 4 builds as the baseline for ScatterAlloc (the
// "size list" allocator of its section 8), reimplemented from that
// description; keys in docs/REFERENCES.md.
//
//  - Memory is a segment-list of consecutive segments, each with a header
//    right before its payload; a free-list of the free segments, partially
//    ordered into bins by size (ten by default, as in section 8), lets a
//    request start at its bin and run over into larger ones (first fit).
//  - A fitting segment larger than the request is split; a freed segment is
//    merged with free neighbours.
//  - One lock per list synchronises the list pointers (section 4), so a
//    list serves one request at a time.
//
// With Config::lists > 1 the pool is split into that many lists and a worker
// starts at the list of its processor: that is CreationPolicies::MultiList
// (creation/multi_list.hpp), the paper's "mp lists".
//
// Data structures and invariants: detail/lists/invariants.hpp.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/platform.hpp"
#include "manyalloc/common/report.hpp"
#include "manyalloc/heap/acc/collectives.hpp"
#include "manyalloc/heap/detail/lists/bins.hpp"
#include "manyalloc/heap/detail/lists/invariants.hpp"
#include "manyalloc/heap/detail/lists/list_lock.hpp"
#include "manyalloc/heap/detail/lists/list_view.hpp"
#include "manyalloc/heap/detail/lists/segment_list.hpp"

namespace manyalloc::heap::CreationPolicies {

// Configuration of ListBased. Override per instantiation by deriving and
// shadowing a member.
struct ListBasedConfig {
  // Lists the pool is split into; a worker starts at list processor_id % lists.
  static constexpr std::uint32_t lists = 1;
  // Bins of each list's free-list ([Steinberger2012] section 8: ten).
  static constexpr std::uint32_t bin_count = 10;
  // Upper bound (bytes, header included) of the segments of bin 0; each
  // further bin doubles it (detail/lists/bins.hpp).
  static constexpr std::uint32_t smallest_bin_bytes = 64;
};

template <class C>
concept ListConfiguration = requires {
  { C::lists } -> std::convertible_to<std::uint32_t>;
  { C::bin_count } -> std::convertible_to<std::uint32_t>;
  { C::smallest_bin_bytes } -> std::convertible_to<std::uint32_t>;
} && (C::lists >= 1) && (C::lists <= 65536) && (C::bin_count >= 1) &&
    (C::bin_count <= heap::detail::lists::max_bins) &&
    (C::smallest_bin_bytes >= heap::detail::lists::granule_bytes);

// Counters of a list heap (read on the host).
struct ListStatistics {
  std::uint32_t misuse_reports = 0;  // bad or double frees seen by destroy()
  Misuse last_misuse = Misuse::none;
  std::uint64_t segments_in_use = 0;  // used segments over all lists
  std::uint32_t lists = 0;
};

namespace list_detail {
// getAvailableSlotsHost's pass over lists [begin, end), run by the back end.
template <class Backend>
struct CountSlots {
  heap::detail::lists::ListLayout layout;
  std::uint32_t need;
  template <class Int>
  MANYALLOC_FN std::uint64_t operator()(Int begin, Int end) const {
    const typename Backend::acc_type acc{};
    std::uint64_t n = 0;
    for (Int i = begin; i < end; ++i) {
      const auto list = static_cast<std::uint32_t>(i);
      heap::detail::lists::ListGuard<typename Backend::acc_type> guard(acc, &layout.heads[list].lock);
      n += heap::detail::lists::count_slots(heap::detail::lists::ListView(acc, layout, list), need);
    }
    return n;
  }
};
}  // namespace list_detail

template <ListConfiguration Config = ListBasedConfig>
class ListBased {
  using Layout = heap::detail::lists::ListLayout;

 public:
  using Properties = Config;
  static constexpr bool providesAvailableSlots = true;
  static constexpr bool needs_addressable_pool = true;
  // Payloads start one header after a granule boundary (policy_checks.hpp).
  static constexpr std::uint32_t chunk_alignment = heap::detail::lists::granule_bytes;

  ListBased() = default;

  // ---- host side -------------------------------------------------------------
  // Lays the lists out in [pool, pool + bytes): each list one free segment.
  // Throws std::invalid_argument when a list cannot hold one segment or would
  // exceed 64 GiB (granule indices are 32 bits).
  template <class Backend>
  static ListBased init_heap(void* pool, std::size_t bytes) {
    using namespace heap::detail::lists;
    ListBased s;
    s.layout_ = plan(pool, bytes);
    const Layout& l = s.layout_;
    Backend::fill_zero(pool, l.metadata_bytes);
    std::vector<ListHead> heads(l.lists);
    const std::uint32_t bin = shape().of(l.list_granules);
    for (auto& h : heads) {
      h = ListHead{};
      for (auto& b : h.bin_head) b = none;
      h.first_free = h.last_free = h.bin_head[bin] = 0;
    }
    Backend::copy_to_device(l.heads, heads.data(), heads.size() * sizeof(ListHead));
    const SegmentHeader whole{state_free, check_of(0), none, l.list_granules, none, none, bin, 0u};
    for (std::uint32_t i = 0; i < l.lists; ++i) Backend::copy_to_device(l.header(i, 0), &whole, sizeof whole);
    return s;
  }

  template <class Backend>
  static void finalize_heap(const ListBased& s) {
    if (s.layout_.data != nullptr) Backend::fill_zero(s.layout_.shared, s.layout_.metadata_bytes);
  }

  // Requests of `slot` bytes the heap can serve one after the other now
  // (each list's free-list walked under its lock).
  template <class Backend>
  std::size_t getAvailableSlotsHost(std::size_t slot) const {
    const std::uint32_t need = heap::detail::lists::segment_granules_for(slot, layout_.list_granules);
    if (need == 0) return 0;
    std::uint64_t n = 0;
    for (auto part : Backend::map_ranges(list_detail::CountSlots<Backend>{layout_, need}, layout_.lists)) n += part;
    return n;
  }

  template <class Backend>
  ListStatistics statistics() const {
    heap::detail::lists::ListShared shared{};
    Backend::copy_to_host(&shared, layout_.shared, sizeof shared);
    std::vector<heap::detail::lists::ListHead> heads(layout_.lists);
    Backend::copy_to_host(heads.data(), layout_.heads, heads.size() * sizeof(heads[0]));
    ListStatistics st;
    st.misuse_reports = shared.misuse;
    st.last_misuse = static_cast<Misuse>(shared.last_misuse);
    st.lists = layout_.lists;
    for (const auto& h : heads) st.segments_in_use += h.segments_used;
    return st;
  }

  const Layout& layout() const { return layout_; }

  static std::string classname() {
    const std::string bins = "bins=" + std::to_string(Config::bin_count) + ",smallest_bin=" +
                             std::to_string(Config::smallest_bin_bytes);
    if (Config::lists == 1) return "ListBased[" + bins + "]";
    return "MultiList[lists=" + std::to_string(Config::lists) + "," + bins + "]";
  }

  // ---- worker side -----------------------------------------------------------
  // First fit in the worker's list, then in the following ones (L7).
  template <class Acc>
  MANYALLOC_FN void* create(const Acc& acc, std::size_t bytes) const {
    using namespace heap::detail::lists;
    const Layout& l = layout_;
    const std::uint32_t need = segment_granules_for(bytes, l.list_granules);
    if (need == 0) return nullptr;
    const std::uint32_t home = Config::lists == 1 ? 0u : acc.processor_id() % l.lists;
    for (std::uint32_t k = 0; k < l.lists; ++k) {
      const std::uint32_t list = home + k < l.lists ? home + k : home + k - l.lists;
      std::uint32_t got = none;
      {
        ListGuard<Acc> guard(acc, &l.heads[list].lock);
        got = take_first_fit(ListView(acc, l, list), need, bytes, shape());
      }
      if (got != none) return l.payload(list, got);
    }
    return nullptr;
  }

  template <class Acc>
  MANYALLOC_FN void destroy(const Acc& acc, void* ptr) const {
    using namespace heap::detail::lists;
    if (ptr == nullptr) return;
    const Layout& l = layout_;
    const auto* p = static_cast<const std::byte*>(ptr);
    if (p < l.data || p >= l.data + l.data_bytes()) return note_misuse(acc, Misuse::foreign_pointer, ptr);
    const auto offset = static_cast<std::size_t>(p - l.data);
    const auto list = static_cast<std::uint32_t>(offset / l.list_bytes);
    const std::size_t in_list = offset % l.list_bytes;
    if (in_list % granule_bytes != 0 || in_list < header_bytes)
      return note_misuse(acc, Misuse::not_a_chunk_start, ptr);
    const auto index = static_cast<std::uint32_t>((in_list - header_bytes) / granule_bytes);
    Misuse m = Misuse::none;
    {
      ListGuard<Acc> guard(acc, &l.heads[list].lock);
      m = give_back(ListView(acc, l, list), index, shape());
    }
    if (m != Misuse::none) note_misuse(acc, m, ptr);
  }

  MANYALLOC_FN static bool is_oom(const void* ptr, std::size_t bytes) { return bytes != 0 && ptr == nullptr; }

  // Called by the lanes in `mask` together; every calling lane gets the same
  // result. The lanes split the lists among themselves.
  template <class Acc>
  MANYALLOC_FN std::size_t getAvailableSlotsAccelerator(const Acc& acc, std::uint32_t mask, std::size_t slot) const {
    using namespace heap::detail::lists;
    const Layout& l = layout_;
    const std::uint32_t need = segment_granules_for(slot, l.list_granules);
    if (need == 0) return 0;
    const unsigned lanes = bits::popcount(mask);
    const unsigned rank = bits::popcount(mask & bits::low_mask(acc.lane_id()));
    std::uint64_t mine = 0;
    for (std::uint32_t list = rank; list < l.lists; list += lanes) {
      ListGuard<Acc> guard(acc, &l.heads[list].lock);
      mine += count_slots(ListView(acc, l, list), need);
    }
    std::uint64_t all = 0;
    for (unsigned lane = 0; lane < Acc::warp_size; ++lane)
      if (((mask >> lane) & 1u) != 0u) all += acc::shfl64(acc, mask, mine, lane);
    return all;
  }

 private:
  MANYALLOC_FN static heap::detail::lists::BinShape shape() {
    return {Config::smallest_bin_bytes, Config::bin_count};
  }

  template <class Acc>
  MANYALLOC_FN void note_misuse(const Acc& acc, Misuse m, const void* ptr) const {
    acc.atomic_add(&layout_.shared->misuse, 1u);
    acc.store(&layout_.shared->last_misuse, static_cast<std::uint32_t>(m));
    report_misuse("ListBased::destroy", m, ptr);
  }

  // Metadata first, then the lists from a 256-byte aligned address.
  static Layout plan(void* pool, std::size_t bytes) {
    using namespace heap::detail::lists;
    const auto base = reinterpret_cast<std::uintptr_t>(pool);
    auto align = [](std::uintptr_t x, std::uintptr_t a) { return (x + a - 1) / a * a; };
    Layout l;
    l.lists = Config::lists;
    l.shared = reinterpret_cast<ListShared*>(align(base, alignof(ListHead)));
    l.heads = reinterpret_cast<ListHead*>(align(reinterpret_cast<std::uintptr_t>(l.shared) + sizeof(ListShared),
                                                alignof(ListHead)));
    const std::uintptr_t data = align(reinterpret_cast<std::uintptr_t>(l.heads + l.lists), 256);
    l.metadata_bytes = data - base;
    const std::size_t room = data < base + bytes ? base + bytes - data : 0;
    const std::size_t granules = room / l.lists / granule_bytes;
    if (granules < min_segment_granules)
      throw std::invalid_argument("ListBased: pool too small for " + std::to_string(l.lists) + " lists");
    if (granules > max_list_granules)
      throw std::invalid_argument("ListBased: a list would exceed 64 GiB; use more lists");
    l.list_granules = static_cast<std::uint32_t>(granules);
    l.list_bytes = granules * granule_bytes;
    l.data = reinterpret_cast<std::byte*>(data);
    return l;
  }

  Layout layout_{};
};

}  // namespace manyalloc::heap::CreationPolicies
