// Deterministic per-thread random numbers (xorshift), shared by the
// benchmark workloads (bench/) and the stress tests (tests/).
#pragma once

#include <cstddef>
#include <cstdint>

namespace manyalloc::numa {

struct Rng {
  std::uint64_t s;
  explicit Rng(std::uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  std::uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
};

}  // namespace manyalloc::numa
