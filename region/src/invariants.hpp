// Constants of the cluster allocator and the invariants of its core data
// structures, written out in one place (Myrmics, [Lyberis2012], sections 3-5).
//
// ---------------------------------------------------------------------------
// Quantities (section 3.2)
//   slab  = 4 KiB: unit a scheduler gives to a region's slab pool.
//   slot  = request size rounded up to 64 B; one slab holds 4096/slot slots
//           when slot <= 4 KiB, else one slot spans ceil(slot/4096) slabs.
//   page  = 1 MiB = 256 slabs: unit schedulers trade among themselves (5.2).
// All trie keys for memory are slab indices relative to the global address
// space (GAS) base: key = (address - base) / 4096.
//
// ---------------------------------------------------------------------------
// SlabPool (slab_pool.hpp, section 3), one per region:
//   P1  used trie: one entry per slab with >= 1 live slot, keyed by its first
//       slab index; the slab's metadata lives in scheduler memory, never in
//       the GAS (metadata separated from data, 3.1).
//   P2  partial trie: key slot/64 -> head of a doubly linked list of the slabs
//       of that slot size with 1 <= used < nslots. A full slab is in no list.
//       Empty slabs do not exist: a slab whose last slot is freed goes back
//       to the pool's free ranges at once.
//   P3  free ranges: slabs owned by the pool and not in any slab; disjoint
//       from every used slab; coalesced.
//   P4  every slab index the pool owns is in exactly one of P1 or P3.
//   P5  bitmap bit i of a slab is set iff slot i is allocated; used ==
//       popcount(bitmap) and nslots <= 64.
//   P6  the cached packing (used_runs) equals the runs of adjacent used
//       slabs whenever its epoch equals the pool's, which changes every
//       time a slab enters or leaves the used trie.
//
// LocalRegions (local_regions.hpp, section 4), one per scheduler:
//   L1  used ids: id -> Region for each region this scheduler owns.
//   L2  used ranges: slab range -> owning local region id; the union of the
//       ranges of region R equals the slabs owned by R's pool (P4).
//   L3  free ranges: slabs owned by this scheduler and given to no region;
//       disjoint from L2 and from ranges delegated to child schedulers.
//   L1  keys are id slots; the Region holds the full id (slot and
//       generation) and find() answers only for that exact id.
//   L4  free ids: slots owned by this scheduler and used by no region:
//       never used ones (free_ids_, generation 0, the only ones traded to
//       child schedulers) and freed ones with the generation of their next
//       use (recycled_ids_); a retired slot is in neither.
//   L5  a region's parent is owned by this scheduler or by an ancestor
//       scheduler; its children by this scheduler or by descendants.
//       Region 0 (root) lives on the top scheduler and is never freed.
//
// Scheduler routing (scheduler.hpp, section 5):
//   S1  granted ranges/ids: everything the parent handed down and this
//       scheduler has not returned (M1; the top scheduler: the whole GAS and
//       all ids). granted = L2 + L3 + delegated (memory) and L1 + L4 +
//       delegated (ids).
//   S2  a key (address or region id) outside `granted` goes to the parent;
//       inside `delegated` to that child; in L1/L2 it is handled here; any
//       other key is a programmer error answered with an error code. A
//       message travels down and then up again only into a page whose
//       return it crosses (M3), at most once per return, so routing cannot
//       loop.
//   S3  memory conservation: summed over all schedulers,
//       free slabs + slabs held by pools + slabs in op_mem_grant and
//       op_mem_return messages in flight == GAS slabs.
//
// Flow-back of pages (scheduler_memory.cpp, check_return / on_mem_return): the 5.2
// watermarks read upward. Below the top, a scheduler whose free slabs (L3)
// exceed its return watermark, twice its refill watermark, gives whole free
// pages back to its parent until the refill watermark is left (refill: below
// a quarter of it, up to it; so neither one triggers the other). Region ids
// are not returned.
//   M1  ownership of a returned range: in the event that posts op_mem_return
//       the child takes the range out of L3 and out of `granted`; from then
//       on it is the parent's, still in the parent's `delegated` (naming the
//       child) and in nobody's free ranges while the message travels; the
//       parent's event that takes the message moves it from `delegated` to
//       its own L3. No range is ever free at the parent while the child
//       still owns it, nor owned by both.
//   M2  only whole 1-MiB pages that lie entirely in L3 go back: never a slab
//       of L2 (a live region's used or pool slabs). Every returned range is
//       inside `granted` at the child and, at the parent, inside one
//       `delegated` range naming the sender; a range that is not is a
//       protocol violation and stops the job (the accounting would be lost).
//   M3  races. A child returns nothing while a refill of its own is
//       outstanding or requests are parked, so no grant crosses a return of
//       the same child; a refill sent after a return reaches the parent
//       after it (order per pair of ranks, transport.hpp), which may then
//       grant the same pages again. A key the parent routed down into a
//       range already returned is outside the child's `granted` and goes
//       back up (S2) behind the return, so the parent, having taken the
//       return first, handles it as its own key: no region there (an
//       invalid pointer, as for any address of no region) or, once granted
//       again, the page's new owner. Pages that come back while requests
//       are parked at the parent serve them at once. A return is posted
//       before the reply to the free that emptied the pages, but it is
//       asynchronous: a refill that reaches an ancestor before pages still
//       travelling up to it (from another subtree, or from a child whose
//       message has not arrived yet) is answered from what that ancestor
//       holds, and an allocation may then fail with MR_ERR_NO_MEMORY
//       although the space is free. Once the returns have arrived (no slab
//       in flight, S3), the whole space is reachable again.
//   M4  memory back to the operating system: with a shared GAS (memfd), the
//       top scheduler removes the pages that come back to it from the host's
//       memory object (MADV_REMOVE) in the event that takes them, before it
//       can grant them again; they hold no live object (M2), so no correct
//       program reads them (a stale pointer reads zeros). Pages kept below
//       the top, pages freed by the top's own regions and the memory
//       objects of other hosts stay allocated. With private memory (copy
//       mode, forced remote, or a host that fell back from the memfd) the
//       worker that frees a region drops its own pages of the slabs of
//       the region's pools (in use or free; not slabs trimmed from them
//       before) once the free is answered (worker.cpp, rfree): no other
//       process sees them, and nothing of the region is live any more.
//
// Worker-to-worker transfers (transfers.cpp), deadlock-free by construction:
//   X1  no transfer call waits for another worker to make a call. A send
//       posts its header and bytes as non-blocking messages and returns
//       (mr_send) or keeps a request (mr_isend); nothing is sent blocking.
//   X2  every wait of a worker (mr_recv, mr_wait, mr_barrier as
//       MPI_Ibarrier, mr_finalize) loops on progress(), which takes in every
//       header that has arrived from any worker and posts the receives of
//       its bytes into the GAS at once. A posted send therefore completes as
//       soon as its receiver is in any library wait, so no cycle of workers
//       waiting on each other's sends can form, whatever the sizes, the
//       order of calls or the transfer mode (zero copy is the header alone).
//   X3  per sender, headers are taken in the order sent and the receives of
//       a transfer's bytes are posted before the next header from that
//       sender is taken, so data messages (one tag) match their transfer.
//   X4  an arrival whose extents overlap a send of this worker still in
//       flight completes that send first (its receiver already took the
//       bytes, it sent them back): no receive writes a buffer MPI may read.
//   X5  mr_finalize: barrier (with progress), then the workers exchange how
//       many transfers each sent to each other and progress until every
//       one is taken and every send is complete; unclaimed ones are dropped.
//   X6  MANYALLOC_REGION_FORCE_REMOTE=1: every rank is its own host (private
//       GAS, host_of[r] == r), so one machine runs the multi-host path.
//
// Failures (region.h, "Failures"; scheduler_core.cpp, peer_failed and
// bounce; a rank is failed when its PeerWatch, peer_watch.hpp W1-W3, or a
// notice says so):
//   F1  no scheduler sends to a neighbour it knows failed: a request that
//       would go there is answered toward its origin with
//       MR_ERR_PEER_FAILED (a FailedReply naming the rank; a SubDone for a
//       pending event's sub-request), anything else is dropped.
//   F2  a failed child (worker or scheduler) counts as done once, whether or
//       not its done arrived before; a failed child scheduler stands for its
//       whole subtree, and placement and load sums skip it (its late load
//       reports are ignored). A worker that said done and then exited ended
//       normally: no notice goes out for it.
//   F3  a scheduler whose parent failed answers its parked requests with
//       MR_ERR_PEER_FAILED, answers every later one that would park at
//       once, asks for no refill, and exits once its own subtree is done.
//   F4  when a scheduler hears of a failed scheduler anywhere, its pending
//       events end with MR_ERR_PEER_FAILED (their answers may have been
//       lost with it); answers that still come find no token and are dropped.
//   F5  each scheduler acts on a failure once and tells every live
//       neighbour but the one it heard it from (op_failed): every rank it
//       can reach over live schedulers hears of it once (a dead inner
//       scheduler splits the tree; each side hears from the neighbours that
//       found it). A worker notes notices from its leaf; an RPC in flight
//       when a scheduler's failure is heard of gets Runtime::rpc_grace_s for
//       its answer, and answers are matched to their call by sequence
//       number.
// ---------------------------------------------------------------------------
#pragma once

#include <cstdint>

namespace manyalloc::region::detail {

inline constexpr std::uint64_t slab_bytes = 4096;
inline constexpr std::uint64_t slab_shift = 12;
inline constexpr std::uint64_t slot_align = 64;
inline constexpr std::uint64_t page_bytes = std::uint64_t{1} << 20;
inline constexpr std::uint64_t slabs_per_page = page_bytes / slab_bytes;
// Slab indices: up to 2^36 slabs = 256 TiB of GAS.
inline constexpr unsigned slab_key_bits = 36;
// Region ids (mr_rid_t, 64 bits) = generation << 40 | slot. The slot (40
// bits) is what schedulers own, trade and route by (L1, L4, S1, S2); the
// generation (24 bits) counts how often the slot was freed, so an id of a
// freed region never names a later region of the same slot (a stale id is
// MR_ERR_NO_REGION forever). A slot whose generation would wrap is retired:
// never handed out again. Region 0 is slot 0, generation 0.
inline constexpr unsigned id_key_bits = 40;
inline constexpr std::uint64_t max_region_id = (std::uint64_t{1} << id_key_bits) - 1;
inline constexpr unsigned id_generation_bits = 64 - id_key_bits;
inline constexpr std::uint64_t max_id_generation = (std::uint64_t{1} << id_generation_bits) - 1;
inline constexpr std::uint64_t id_slot(std::uint64_t id) { return id & max_region_id; }
inline constexpr std::uint64_t id_generation(std::uint64_t id) { return id >> id_key_bits; }
inline constexpr std::uint64_t make_region_id(std::uint64_t slot, std::uint64_t generation) {
  return generation << id_key_bits | slot;
}
// Largest single object: 1 GiB.
inline constexpr std::uint64_t max_object_bytes = std::uint64_t{1} << 30;

}  // namespace manyalloc::region::detail
