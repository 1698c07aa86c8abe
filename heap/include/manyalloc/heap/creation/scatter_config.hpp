// Configuration of CreationPolicies::Scatter ([Eckert2014] 4.3.7). Defaults are
// [Eckert2014]'s; override per instantiation by deriving and shadowing a member:
//
//   struct MyHeap : manyalloc::heap::CreationPolicies::ScatterHeapConfig {
//     static constexpr std::uint32_t pagesize = 8192;
//     static constexpr bool resetfreedpages = true;
//   };
//   using Creation = manyalloc::heap::CreationPolicies::Scatter<MyHeap>;
#pragma once

#include <concepts>
#include <cstdint>

#include "manyalloc/common/math.hpp"

namespace manyalloc::heap::CreationPolicies {

struct ScatterHeapConfig {
  // Bytes per page, a multiple of 4 from 64 B and below 2 MiB (offsets in a
  // page are divided by small_quotient, common/math.hpp); every chunk lives
  // inside one page ([Steinberger2012] 5.2).
  static constexpr std::uint32_t pagesize = 4096;
  // Number of access blocks (super blocks, [Steinberger2012] 5.1) the pool is split into.
  static constexpr std::uint32_t accessblocks = 8;
  // Pages per region; regions keep a full-page record for the 90% rule (5.4).
  static constexpr std::uint32_t regionsize = 16;
  // A request of s bytes may use a page split into chunks of up to s*wastefactor (6.1, max_frag).
  static constexpr std::uint32_t wastefactor = 2;
  // Reset a page's chunk size when its last chunk is freed ([Eckert2014] 5.4).
  static constexpr bool resetfreedpages = false;
  // true: a free publishes what its lanes wrote to their chunks before
  // another worker can take the chunks (the clear of their bits, on a page
  // of one chunk the return of its reservation, is a GPU-scope release: one
  // memory barrier per warp's group of frees).
  // false: frees skip that memory barrier, as upstream mallocMC's do (the
  // lanes of a warp whose frees are combined still meet at a warp barrier
  // before one of them clears their bits, page_ops.hpp); then a worker
  // that writes a chunk and frees it in the same kernel must order its
  // writes before the free itself (__threadfence()) when another worker may
  // reuse the chunk in that kernel. Writes made in an earlier kernel are
  // ordered by the kernel boundary either way. (SizeClassSlabsConfig has the
  // same switch.)
  static constexpr bool ordered_frees = true;
};

// Frees without the memory barrier (ordered_frees above).
struct ScatterRelaxedFreesConfig : ScatterHeapConfig {
  static constexpr bool ordered_frees = false;
};

struct ScatterHashConfig {
  // p = (S_req * k_S + mp * k_mp) mod pages ([Steinberger2012] 5.3, equation 3).
  // The multiprocessor term mp * k_mp is used where workers have no warps to
  // tell them apart (host threads); on a GPU the warp term below places
  // every warp, since the hardware moves a launch's blocks to other
  // multiprocessors in every launch (detail/scatter/search.hpp).
  static constexpr std::uint32_t hashingK = 38183;
  static constexpr std::uint32_t hashingDistMP = 17497;
  // Extension of equation 3 for launches of far more threads than the
  // 15,000 of [Steinberger2012]: with c chunks of S_req bytes on a page and n
  // lanes of warp w asking for S_req bytes together, the warp starts
  //   w * (hashingDistWP + hashingDistWPRel * (n / c))
  // pages further, i.e. past the pages its n requests fill, and the lane of
  // rank r among the n r / c pages further (hashingDistWPRel != 0), so that
  // warps and lanes tile the pages instead of all probing the same chain
  // from one page. Requests that fill a page (c = 1) count n = 32 and r =
  // the lane index, however many lanes ask. Set both to 0 for the hash of
  // [Steinberger2012].
  static constexpr std::uint32_t hashingDistWP = 1;
  static constexpr std::uint32_t hashingDistWPRel = 1;
};

template <class C>
concept ScatterHeapConfiguration = requires {
  { C::pagesize } -> std::convertible_to<std::uint32_t>;
  { C::accessblocks } -> std::convertible_to<std::uint32_t>;
  { C::regionsize } -> std::convertible_to<std::uint32_t>;
  { C::wastefactor } -> std::convertible_to<std::uint32_t>;
  { C::resetfreedpages } -> std::convertible_to<bool>;
  { C::ordered_frees } -> std::convertible_to<bool>;
} && (C::pagesize >= 64) && (C::pagesize % 4 == 0) && (C::pagesize < small_quotient_limit) && (C::accessblocks >= 1) &&
    (C::regionsize >= 1) && (C::regionsize <= 32) && (C::wastefactor >= 1);

template <class C>
concept ScatterHashConfiguration = requires {
  { C::hashingK } -> std::convertible_to<std::uint32_t>;
  { C::hashingDistMP } -> std::convertible_to<std::uint32_t>;
  { C::hashingDistWP } -> std::convertible_to<std::uint32_t>;
  { C::hashingDistWPRel } -> std::convertible_to<std::uint32_t>;
};

}  // namespace manyalloc::heap::CreationPolicies
