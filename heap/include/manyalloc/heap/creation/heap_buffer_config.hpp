// Configuration of CreationPolicies::HeapBuffer ([Eckert2014] 2.4.4). Override
// per instantiation by deriving and shadowing a member:
//
//   struct SixteenSpecies : manyalloc::heap::CreationPolicies::HeapBufferConfig {
//     static constexpr std::uint32_t species = 16;
//   };
//   using Creation = manyalloc::heap::CreationPolicies::HeapBuffer<SixteenSpecies>;
#pragma once

#include <concepts>
#include <cstdint>

namespace manyalloc::heap::CreationPolicies {

struct HeapBufferConfig {
  // Bytes per frame: PIConGPU's particle frames are 8 KiB ([Eckert2014] 5.2.1).
  static constexpr std::uint32_t frame_bytes = 8192;
  // Species, i.e. rings: the pool is split into this many equal parts when
  // the heap is built, one per species, and never rebalanced (2.4.4).
  static constexpr std::uint32_t species = 2;
};

template <class C>
concept HeapBufferConfiguration = requires {
  { C::frame_bytes } -> std::convertible_to<std::uint32_t>;
  { C::species } -> std::convertible_to<std::uint32_t>;
} && (C::frame_bytes >= 64) && (C::frame_bytes % 16 == 0) && (C::species >= 1) && (C::species <= 1024);

}  // namespace manyalloc::heap::CreationPolicies
