// One concept per policy kind ([Eckert2014] chapter 3), so that a wrong policy is
// rejected where it is used, with the requirement it misses.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "manyalloc/heap/acc/concepts.hpp"

namespace manyalloc::heap {

// 3.3: acquires the raw pool on the host, for one back end.
template <class P>
concept ReservePoolPolicy = requires(std::size_t n, void* p) {
  typename P::backend;
  requires acc::Backend<typename P::backend>;
  { P::addressable } -> std::convertible_to<bool>;
  { P::set_mem_pool(n) } -> std::same_as<void*>;
  P::reset_mem_pool(p, n);
  { P::classname() } -> std::convertible_to<std::string>;
};

// A pool that grows (issue 15): set_mem_pool reserves address space only,
// map(pool, from, to) backs [pool + from, pool + to) with memory; `from` is
// what was mapped before, both multiples of granularity().
template <class P>
concept GrowablePool = ReservePoolPolicy<P> && requires(void* p, std::size_t n) {
  { P::granularity() } -> std::convertible_to<std::size_t>;
  P::map(p, n, n);
};

// 3.4: aligns the pool (host) and pads requests (worker).
template <class P>
concept AlignmentPolicy = requires(std::size_t n, void* p) {
  { P::align_pool(p, n) } -> std::same_as<std::pair<void*, std::size_t>>;
  { P::apply_padding(n) } -> std::same_as<std::size_t>;
  { P::classname() } -> std::convertible_to<std::string>;
};

// 3.7: decides what a failed request returns.
template <class P>
concept OOMPolicy = requires(void* p, std::size_t n) {
  { P::handle_oom(p, n) } -> std::same_as<void*>;
  { P::needs_exceptions } -> std::convertible_to<bool>;
  { P::classname() } -> std::convertible_to<std::string>;
};

// 3.5: reshapes the requests of a group of workers; constructed per request.
template <class P>
concept DistributionPolicy = requires { { P::classname() } -> std::convertible_to<std::string>; };

template <class P, class Acc>
concept DistributionPolicyFor = DistributionPolicy<P> && requires(const Acc acc, std::size_t n, void* p) {
  P(acc);
  { std::declval<P&>().collect(acc, n) } -> std::same_as<std::size_t>;
  { std::declval<P&>().distribute(acc, p) } -> std::same_as<void*>;
  // Maps a pointer a worker frees to what the creation policy must free, or
  // nullptr when nothing is to be freed yet (e.g. other parts still live).
  // A policy whose release is a warp collective declares
  // `static constexpr bool collective_release = true`: it then also receives
  // the frees of nullptr (and returns nullptr for them), so that the lanes of
  // a warp reach its collectives alike.
  { P::release(acc, p) } -> std::same_as<void*>;
};

template <class P>
inline constexpr bool collective_release = requires { requires P::collective_release; };

// 3.6: manages the heap inside the pool. The policy object is the handle
// workers receive, so it must be trivially copyable.
template <class P>
concept CreationPolicy = std::is_trivially_copyable_v<P> && requires(const void* p, std::size_t n) {
  { P::providesAvailableSlots } -> std::convertible_to<bool>;
  { P::needs_addressable_pool } -> std::convertible_to<bool>;
  { P::is_oom(p, n) } -> std::convertible_to<bool>;
  { P::classname() } -> std::convertible_to<std::string>;
};

template <class P, class Backend>
concept CreationPolicyFor =
    CreationPolicy<P> &&
    requires(const P cp, const typename Backend::acc_type acc, void* p, std::size_t n) {
      { P::template init_heap<Backend>(p, n) } -> std::same_as<P>;
      P::template finalize_heap<Backend>(cp);
      { cp.create(acc, n) } -> std::same_as<void*>;
      // destroy(acc, nullptr) frees nothing: the host class calls destroy
      // from every lane of a dealloc, nullptr where the distribution policy
      // keeps the block, so that a policy may combine a warp's frees.
      cp.destroy(acc, p);
    };

// Creation policies that can work in a pool only partly mapped: init_heap
// writes only the first metadata_bytes_for(pool, bytes) bytes, and the heap
// hands out memory below the end given to set_mapped_end alone (which may
// move up while workers run).
template <class P, class Backend>
concept GrowingCreationPolicy =
    CreationPolicyFor<P, Backend> && requires(const P cp, void* p, std::size_t n, const void* end) {
      { P::metadata_bytes_for(p, n) } -> std::same_as<std::size_t>;
      cp.template set_mapped_end<Backend>(end);
    };

// A growing creation policy whose workers can also take pages mapped while
// they run (Allocator::serve_growth, growth_service.hpp): extend_mapped_end
// only ever raises the usable end (true when the call raised it),
// known_mapped_end reads the largest end it or set_mapped_end was given
// from the heap's memory (so that waiting workers need not read the host's,
// growth_mailbox.hpp M5), growth_lock is a zeroed word of its
// metadata that the workers' requests take turns by, growth_bytes_for says
// how much beyond the mapped end a failed request of n bytes needs, and
// room_for whether the heap's free pages could hold it (then a failure may
// have been contention, and the request is tried again before a growth).
template <class P, class Acc>
concept GrowsWhileRunning = requires(const P cp, const Acc acc, const void* end, std::uint64_t n) {
  { cp.extend_mapped_end(acc, end) } -> std::same_as<bool>;
  { cp.growth_lock() } -> std::same_as<std::uint32_t*>;
  { cp.known_mapped_end(acc) } -> std::same_as<const std::byte*>;
  { P::growth_bytes_for(n) } -> std::same_as<std::uint64_t>;
  { cp.room_for(acc, n) } -> std::same_as<bool>;
};

// Creation policies that count available slots (3.6, providesAvailableSlots).
template <class P, class Backend>
concept CountsSlots = CreationPolicyFor<P, Backend> && P::providesAvailableSlots &&
    requires(const P cp, const typename Backend::acc_type acc, std::size_t n, std::uint32_t mask) {
      { cp.template getAvailableSlotsHost<Backend>(n) } -> std::same_as<std::size_t>;
      { cp.getAvailableSlotsAccelerator(acc, mask, n) } -> std::same_as<std::size_t>;
    };

}  // namespace manyalloc::heap
