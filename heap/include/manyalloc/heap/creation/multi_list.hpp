// CreationPolicies::MultiList: the "mp lists" allocator of [Steinberger2012]
// sections 4 and 8 (free blocks sorted into ten bins per multiprocessor, so
// that different multiprocessors allocate from different memory). It is the
// list-based allocator of creation/list_based.hpp with the pool split into
// Config::lists lists: a worker allocates from the list of its processor
// (acc.processor_id(): the SM on a GPU, the CPU on the host) and moves on to
// the following lists only when that one has nothing that fits
// (detail/lists/invariants.hpp, L7). A request larger than one list fails.
#pragma once

#include <cstdint>

#include "manyalloc/heap/creation/list_based.hpp"

namespace manyalloc::heap::CreationPolicies {

struct MultiListConfig : ListBasedConfig {
  // One list per multiprocessor: 132 on an H100 or H200 (the paper's Quadro
  // 6000 had 14). Processors beyond it share lists (processor_id % lists).
  static constexpr std::uint32_t lists = 132;
};

template <ListConfiguration Config = MultiListConfig>
  requires(Config::lists > 1)
using MultiList = ListBased<Config>;

}  // namespace manyalloc::heap::CreationPolicies
