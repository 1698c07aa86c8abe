// Sizes of the test runs from environment variables (MANYALLOC_TEST_WORKERS,
// MANYALLOC_TEST_HEAP_MB, MANYALLOC_SOAK_SECONDS), shared by the back ends'
// runners.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace manyalloc::heap::testing {

// The value of `name` when it is a whole number from 1 to 2^32 - 1, else
// `fallback` (unset, empty, zero, negative, too large or not a number).
inline std::uint32_t positive_env_or(const char* name, std::uint32_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  return *end == '\0' && n > 0 && n <= 0xffffffffll ? static_cast<std::uint32_t>(n) : fallback;
}

}  // namespace manyalloc::heap::testing
