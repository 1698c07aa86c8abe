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

namespace manyalloc::heap::acc {

// A worker (one thread of a kernel or one host thread).
//
// Preconditions: a lane-collective member (ballot, shfl, sync_lanes) taking a
// `mask` is called by exactly the lanes in `mask`, which include the caller;
// atomics take naturally aligned words that every worker of the heap can reach.
// A mask from active_mask() names lanes that are together at that call only:
// once they have taken different branches (for example into groups formed by
// match_any), a collective names the lanes of one branch. On the GPU a
// collective over the whole mask after such a split waited forever when one
// of its lanes had meanwhile left and entered the same code again (Scatter's
// free, docs/results/heap/ab/2026-11-25-scatter-free-combining).
template <class A>
concept Accelerator = requires(const A a, std::uint32_t* w, const std::uint32_t* cw,
                               std::uint32_t v, std::uint32_t mask, bool b, unsigned lane) {
  { A::warp_size } -> std::convertible_to<unsigned>;
  // Whether shfl hands a value over correctly to lanes that diverged since
  // their group formed (acc::group_hand_over). false obliges the worker to
  // provide group_broadcast64(group, root, v64) (see acc/cuda.hpp).
  { A::shuffle_after_divergence } -> std::convertible_to<bool>;
  { a.lane_id() } -> std::same_as<unsigned>;          // 0 .. warp_size-1
  { a.active_mask() } -> std::same_as<std::uint32_t>; // lanes executing this call
  { a.ballot(mask, b) } -> std::same_as<std::uint32_t>;      // lanes of mask with b true
  { a.shfl(mask, v, lane) } -> std::same_as<std::uint32_t>;  // v of `lane`
  { a.match_any(mask, v) } -> std::same_as<std::uint32_t>;   // lanes of mask whose v equals ours
  { a.reduce_or(mask, v) } -> std::same_as<std::uint32_t>;   // OR of v over the lanes of mask
  a.sync_lanes(mask);                                        // barrier of the lanes in mask
  { a.processor_id() } -> std::same_as<unsigned>;     // SM id / CPU id, for hashing
  { a.warp_id() } -> std::same_as<unsigned>;          // index of the worker's warp, for hashing
  // Coherent (relaxed) load and store, here and in MixedWidthAtomics, of a
  // word of the heap's own memory (pool, metadata), shared by the workers of
  // one device: not block-shared memory, and not the host's words
  // (SystemScopeWorker's load_system64 and store_system64 are for those).
  { a.load(cw) } -> std::same_as<std::uint32_t>;
  a.store(w, v);
  { a.atomic_add(w, v) } -> std::same_as<std::uint32_t>;  // all return the old value
  { a.atomic_sub(w, v) } -> std::same_as<std::uint32_t>;
  { a.atomic_or(w, v) } -> std::same_as<std::uint32_t>;
  { a.atomic_and(w, v) } -> std::same_as<std::uint32_t>;
  { a.atomic_exch(w, v) } -> std::same_as<std::uint32_t>;
  { a.atomic_cas(w, v, v) } -> std::same_as<std::uint32_t>;
  // Subtracts after this worker's earlier memory operations (and those it
  // saw through a barrier) are visible: a release, cheaper than fence().
  { a.atomic_sub_release(w, v) } -> std::same_as<std::uint32_t>;
  { a.atomic_and_release(w, v) } -> std::same_as<std::uint32_t>;  // the same for an AND
  a.fence();  // orders this worker's memory operations for all workers of the heap
  a.relax();  // called in a loop that waits for another worker: yield to it
};

// Optional for a worker: 16- and 64-bit words (coalescing segment headers,
// the superblock hash map of distribution/, the size-class slots of
// CreationPolicies::SizeClassSlabs). Same preconditions as above.
template <class A>
concept MixedWidthAtomics =
    Accelerator<A> && requires(const A a, std::uint16_t* h, const std::uint16_t* ch, std::uint16_t hv,
                               std::uint64_t* d, const std::uint64_t* cd, std::uint64_t dv) {
      { a.load16(ch) } -> std::same_as<std::uint16_t>;
      a.store16(h, hv);
      { a.atomic_cas16(h, hv, hv) } -> std::same_as<std::uint16_t>;  // returns the old value
      { a.load64(cd) } -> std::same_as<std::uint64_t>;
      a.store64(d, dv);
      a.store128(d, dv, dv);  // two 64-bit words at a 16-byte aligned address, in one access where the back end has one
      { a.atomic_cas64(d, dv, dv) } -> std::same_as<std::uint64_t>;
      { a.atomic_add64(d, dv) } -> std::same_as<std::uint64_t>;   // returns the old value
      { a.atomic_exch64(d, dv) } -> std::same_as<std::uint64_t>;  // returns the old value
      { a.atomic_and64(d, dv) } -> std::same_as<std::uint64_t>;   // returns the old value
      { a.atomic_and64_release(d, dv) } -> std::same_as<std::uint64_t>;  // a release, as atomic_and_release
    };

// Optional for a worker: a relaxed load of a word that only steers the
// worker (a hint, such as Scatter's active block read by a free), which may
// return an older value than the latest one another worker wrote: served from
// a cache next to the worker where the back end has one. Never for a word
// whose value decides what memory is handed out or whether an operation
// succeeded. A worker without it reads hints with load() (load_hint.hpp).
template <class A>
concept HintLoads = Accelerator<A> && requires(const A a, const std::uint32_t* cw) {
  { a.load_hint(cw) } -> std::same_as<std::uint32_t>;
};

// Optional for a worker: 64-bit words that the host reads and writes while
// workers run (a request to grow the pool, detail/growth_mailbox.hpp), and a
// clock for bounded waits. The loads acquire and the stores release at the
// scope of the whole system, host included, not only of the heap's workers.
template <class A>
concept SystemScopeWorker =
    Accelerator<A> && requires(const A a, std::uint64_t* d, const std::uint64_t* cd, std::uint64_t dv) {
      { a.load_system64(cd) } -> std::same_as<std::uint64_t>;
      a.store_system64(d, dv);
      { a.now_ns() } -> std::same_as<std::uint64_t>;  // monotonic nanoseconds
    };

// Where a worker stands in its block, among the block's workers that have not
// exited: `rank` counts those with a smaller thread index, `count` all of them.
struct BlockRank {
  unsigned rank;
  unsigned count;
};

// Optional for a worker: block-wide collectives (CUDA: shared memory and
// __syncthreads). Every member is a barrier of all workers of the caller's
// block that have not exited, and every such worker calls the same sequence
// of them (like __syncthreads: never from divergent code).
template <class A>
concept BlockAccelerator = Accelerator<A> && requires(const A a, bool b, std::uint64_t v) {
  { a.block_rank() } -> std::same_as<BlockRank>;
  { a.block_sync_or(b) } -> std::same_as<bool>;            // OR of b over the block
  { a.block_broadcast(v, b) } -> std::same_as<std::uint64_t>;  // v of the one worker passing true
};

// Host side of a back end: moving bytes between host and the memory the
// workers see, and running a function over index ranges in parallel.
// `pool_memory_resident`: a pool's memory is backed by physical memory from
// the moment it is reserved (device memory), so that a heap may write to
// every page of it when it is made at no cost in memory; false where pages
// are committed on first touch (a host mapping), which a heap then leaves
// untouched until it hands them out.
template <class B>
concept Backend = requires(void* dst, const void* src, std::size_t n) {
  typename B::acc_type;
  requires Accelerator<typename B::acc_type>;
  { B::has_exceptions } -> std::convertible_to<bool>;
  { B::pool_memory_resident } -> std::convertible_to<bool>;
  B::copy_to_device(dst, src, n);
  B::copy_to_host(dst, src, n);
  B::fill_zero(dst, n);
  { B::name() } -> std::convertible_to<std::string>;
};

// Optional for a back end: memory that the host and the workers both reach
// while workers run (alloc_shared: zeroed, 64-byte aligned, the same address
// on both sides; throws on failure), and what a host thread of the library
// must take over from the thread that made the heap before it calls the back
// end's platform (ThreadContext: the CUDA device).
template <class B>
concept SharedHostMemory = Backend<B> && requires(void* p, std::size_t n, typename B::ThreadContext ctx) {
  { B::alloc_shared(n) } -> std::same_as<void*>;
  B::free_shared(p);
  { B::capture_context() } -> std::same_as<typename B::ThreadContext>;
  B::enter_context(ctx);
};

}  // namespace manyalloc::heap::acc
