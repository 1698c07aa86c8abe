// Control messages between workers and schedulers and among schedulers
// ([Lyberis2012] section 5.2). A message is a vector of 64-bit words:
//
//   [0] op   [1] origin   [2] req   [3] status   [4..7] a0..a3   [8..] payload
//
// origin: world rank that gets the final reply (a worker, or a scheduler for
//         the internal "sub" requests of reentrant events);
// req:    the requester's sequence number, or the token of a pending event.
// Replies are routed hop by hop toward `origin` (Topology::next_hop), so
// schedulers keep no state for requests they only forward.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "transport.hpp"

namespace manyalloc::region::detail {

enum Op : std::uint64_t {
  // Worker -> scheduler requests, routed by key to the owner (S2).
  op_ralloc = 1,   // a0 parent, a1 hint (int64)            key: region a0
  op_rfree = 2,    // a0 region                             key: region a0
  op_alloc = 3,    // a0 region, a1 size, a2 count          key: region a0
  op_free = 4,     // a0 address                            key: address a0
  op_info = 5,     // a0 address -> reply a0 slot size, a1 region
  op_pack = 6,     // a0 #regions, payload region ids then object addresses
                   //   -> reply payload extents, sorted and coalesced; handled at the leaf
  op_stats = 7,    // a0 scheduler                          routed to that scheduler
  op_done = 8,     // worker / child scheduler finished (shutdown, 5.2)
  op_reply = 16,   // status, a0.., payload
  // Scheduler <-> scheduler.
  op_create_down = 20,  // a0 parent, a1 target depth, a2 hint: place a new region below
  op_created = 21,      // a0 parent, a1 new region: to the parent's owner, which replies
  op_rfree_sub = 22,    // a0 region, a1 expected parent: free for a pending event
  op_child_gone = 23,   // a0 parent, a1 child: forget a freed remote child
  op_pack_sub = 24,     // a0 region: pack for a pending event
  op_sub_done = 25,     // status, payload extents: answer to a *_sub
  op_info_sub = 29,     // a0 address: the object's extent for a pending pack
  op_mem_req = 26,      // a0 slabs wanted, a1 ids wanted (5.2 refill)
  op_mem_grant = 27,    // a0 #slab ranges, a1 #id ranges, payload (start, length) pairs
  op_load = 28,         // a0 subtree load (regions), upstream
  op_mem_return = 30,   // a0 #slab ranges, payload (start, length) pairs: whole free
                        //   pages a child gives back to its parent (flow-back, upstream)
  op_exit = 31,         // shutdown, downstream
};

inline constexpr std::size_t hdr_words = 8;
inline constexpr std::size_t w_op = 0, w_origin = 1, w_req = 2, w_status = 3, w_a0 = 4, w_a1 = 5, w_a2 = 6,
                             w_a3 = 7;

inline Message make_msg(std::uint64_t op, std::uint64_t origin, std::uint64_t req,
                        std::initializer_list<std::uint64_t> args = {}) {
  Message m(hdr_words, 0);
  m[w_op] = op;
  m[w_origin] = origin;
  m[w_req] = req;
  std::size_t i = w_a0;
  for (std::uint64_t a : args) m[i++] = a;
  return m;
}

}  // namespace manyalloc::region::detail
