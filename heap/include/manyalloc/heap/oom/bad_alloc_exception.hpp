// OOMPolicies::BadAllocException: a failed request throws std::bad_alloc.
// Only for back ends whose workers can throw (host threads); the host class
// rejects other combinations at compile time.
#pragma once

#include <cstddef>
#include <new>
#include <string>

namespace manyalloc::heap::OOMPolicies {

struct BadAllocException {
  static constexpr bool needs_exceptions = true;
  [[noreturn]] static void* handle_oom(void*, std::size_t) { throw std::bad_alloc(); }
  static std::string classname() { return "BadAllocException"; }
};

}  // namespace manyalloc::heap::OOMPolicies
