// DistributionPolicies::NoOp ([Eckert2014] 4.3.4): every worker allocates alone.
#pragma once

#include <cstddef>
#include <string>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::DistributionPolicies {

struct NoOp {
  template <class Acc>
  MANYALLOC_FN explicit NoOp(const Acc&) {}

  template <class Acc>
  MANYALLOC_FN std::size_t collect(const Acc&, std::size_t bytes) const { return bytes; }
  template <class Acc>
  MANYALLOC_FN void* distribute(const Acc&, void* mem) const { return mem; }
  template <class Acc>
  MANYALLOC_FN static void* release(const Acc&, void* mem) { return mem; }

  static std::string classname() { return "NoOp"; }
};

}  // namespace manyalloc::heap::DistributionPolicies
