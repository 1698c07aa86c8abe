// OOMPolicies::ReturnNull ([Eckert2014] 4.3.6): a failed request yields nullptr.
#pragma once

#include <cstddef>
#include <string>

#include "manyalloc/common/platform.hpp"

namespace manyalloc::heap::OOMPolicies {

struct ReturnNull {
  static constexpr bool needs_exceptions = false;
  MANYALLOC_FN static void* handle_oom(void*, std::size_t) { return nullptr; }
  static std::string classname() { return "ReturnNull"; }
};

}  // namespace manyalloc::heap::OOMPolicies
