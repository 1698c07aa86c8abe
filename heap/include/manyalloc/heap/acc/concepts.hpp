// The accelerator abstraction: what policy code may ask of the worker that
// runs it (a CUDA thread, a host thread, ...) and of the host-side back end.
//
// Policy code is written once against these concepts. A new back end (HIP,
// SYCL) is one new pair of classes modelled on acc/cuda.hpp; nothing in the
// policies changes.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>

namespace manyalloc::acc {

// A worker (one thread of a kernel or one host thread).
//
// Preconditions: a lane-collective member (ballot, shfl, sync_lanes) taking a
// `mask` is called by exactly the lanes in `mask`, which include the caller;
// atomics take naturally aligned words that every worker of the heap can reach.
template <class A>
concept Accelerator = requires(const A a, std::uint32_t* w, const std::uint32_t* cw,
                               std::uint32_t v, std::uint32_t mask, bool b, unsigned lane) {
  { A::warp_size } -> std::convertible_to<unsigned>;
  { a.lane_id() } -> std::same_as<unsigned>;          // 0 .. warp_size-1
  { a.active_mask() } -> std::same_as<std::uint32_t>; // lanes executing this call
  { a.ballot(mask, b) } -> std::same_as<std::uint32_t>;      // lanes of mask with b true
  { a.shfl(mask, v, lane) } -> std::same_as<std::uint32_t>;  // v of `lane`
  a.sync_lanes(mask);                                        // barrier of the lanes in mask
  { a.processor_id() } -> std::same_as<unsigned>;     // SM id / CPU id, for hashing
  { a.warp_id() } -> std::same_as<unsigned>;          // index of the worker's warp, for hashing
  { a.load(cw) } -> std::same_as<std::uint32_t>;      // coherent (relaxed) load
  a.store(w, v);                                      // coherent (relaxed) store
  { a.atomic_add(w, v) } -> std::same_as<std::uint32_t>;  // all return the old value
  { a.atomic_sub(w, v) } -> std::same_as<std::uint32_t>;
  { a.atomic_or(w, v) } -> std::same_as<std::uint32_t>;
  { a.atomic_and(w, v) } -> std::same_as<std::uint32_t>;
  { a.atomic_exch(w, v) } -> std::same_as<std::uint32_t>;
  { a.atomic_cas(w, v, v) } -> std::same_as<std::uint32_t>;
  a.fence();  // orders this worker's memory operations for all workers of the heap
};

// Host side of a back end: moving bytes between host and the memory the
// workers see, and running a function over index ranges in parallel.
template <class B>
concept Backend = requires(void* dst, const void* src, std::size_t n) {
  typename B::acc_type;
  requires Accelerator<typename B::acc_type>;
  { B::has_exceptions } -> std::convertible_to<bool>;
  B::copy_to_device(dst, src, n);
  B::copy_to_host(dst, src, n);
  B::fill_zero(dst, n);
  { B::name() } -> std::convertible_to<std::string>;
};

}  // namespace manyalloc::acc
