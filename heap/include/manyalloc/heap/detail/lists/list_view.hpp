// One list seen by a worker that holds its lock (invariant L6): typed
// accessors to its headers and ListHead through the worker's coherent loads
// and stores. Used by free_list.hpp and segment_list.hpp.
#pragma once

#include <cstdint>

#include "manyalloc/common/platform.hpp"
#include "manyalloc/heap/detail/lists/invariants.hpp"

namespace manyalloc::heap::detail::lists {

// The words of a SegmentHeader, named for the accessors below.
enum class Field : std::uint32_t { state, check, seg_prev, seg_next, free_prev, free_next, bin, request };

template <class Acc>
class ListView {
 public:
  MANYALLOC_FN ListView(const Acc& acc, const ListLayout& layout, std::uint32_t list)
      : acc_(acc), layout_(layout), list_(list), head_(layout.heads + list) {}

  MANYALLOC_FN std::uint32_t get(std::uint32_t index, Field f) const { return acc_.load(word(index, f)); }
  MANYALLOC_FN void set(std::uint32_t index, Field f, std::uint32_t v) const { acc_.store(word(index, f), v); }

  // Granules of the segment at `index` (L2).
  MANYALLOC_FN std::uint32_t size(std::uint32_t index) const { return get(index, Field::seg_next) - index; }
  MANYALLOC_FN bool is_free(std::uint32_t index) const { return get(index, Field::state) == state_free; }

  MANYALLOC_FN std::uint32_t first_free() const { return acc_.load(&head_->first_free); }
  MANYALLOC_FN void set_first_free(std::uint32_t v) const { acc_.store(&head_->first_free, v); }
  MANYALLOC_FN std::uint32_t last_free() const { return acc_.load(&head_->last_free); }
  MANYALLOC_FN void set_last_free(std::uint32_t v) const { acc_.store(&head_->last_free, v); }
  MANYALLOC_FN std::uint32_t bin_head(std::uint32_t bin) const { return acc_.load(&head_->bin_head[bin]); }
  MANYALLOC_FN void set_bin_head(std::uint32_t bin, std::uint32_t v) const { acc_.store(&head_->bin_head[bin], v); }
  MANYALLOC_FN void count_used(int delta) const {
    acc_.store(&head_->segments_used, acc_.load(&head_->segments_used) + static_cast<std::uint32_t>(delta));
  }

  MANYALLOC_FN std::uint32_t granules() const { return layout_.list_granules; }
  MANYALLOC_FN std::uint32_t list() const { return list_; }
  MANYALLOC_FN const ListLayout& layout() const { return layout_; }

 private:
  MANYALLOC_FN std::uint32_t* word(std::uint32_t index, Field f) const {
    return reinterpret_cast<std::uint32_t*>(layout_.header(list_, index)) + static_cast<std::uint32_t>(f);
  }

  const Acc& acc_;
  const ListLayout& layout_;
  std::uint32_t list_;
  ListHead* head_;
};

}  // namespace manyalloc::heap::detail::lists
