// AlignmentPolicies::NoOp: pool and requests are used as given.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::AlignmentPolicies {

struct NoOp {
  static constexpr std::uint32_t alignment = 1;
  static std::pair<void*, std::size_t> align_pool(void* pool, std::size_t bytes) { return {pool, bytes}; }
  MANYALLOC_FN static std::size_t apply_padding(std::size_t bytes) { return bytes; }
  static std::string classname() { return "NoOp"; }
};

}  // namespace manyalloc::heap::AlignmentPolicies
