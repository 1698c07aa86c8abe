// Control messages between workers and schedulers and among schedulers
// ([Lyberis2012] section 5.2): the operations and the wire format. Code
// outside the codec never indexes a message: it builds and reads the typed
// per-operation structs of messages.hpp (worker <-> scheduler) and
// sched_messages.hpp (scheduler <-> scheduler), whose encode()/decode() are
// the only users of the layout below.
//
// Wire format: a vector of 64-bit words,
//
//   [0] op   [1] origin   [2] req   [3] status   [4..7] four arguments   [8..] payload
//
// origin: world rank that gets the final reply (a worker, or a scheduler for
//         the internal "sub" requests of reentrant events);
// req:    the requester's sequence number, or the token of a pending event.
// Replies are routed hop by hop toward `origin` (Topology::next_hop), so
// schedulers keep no state for requests they only forward.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>

#include "transport.hpp"

namespace manyalloc::region::detail {

enum Op : std::uint64_t {
  // Worker -> scheduler requests, routed by key to the owner (S2).
  op_ralloc = 1,   // key: the parent region
  op_rfree = 2,    // key: the region
  op_alloc = 3,    // key: the region
  op_free = 4,     // key: the address
  op_info = 5,     // key: the address; answers slot size and region
  op_pack = 6,     // regions and objects -> extents, sorted and coalesced; handled at the leaf
  op_stats = 7,    // routed to the named scheduler
  op_done = 8,     // worker / child scheduler finished (shutdown, 5.2)
  op_failed = 9,   // a rank has failed: spread along the tree to every rank (F5)
  op_reply = 16,   // status, arguments, payload
  // Scheduler <-> scheduler.
  op_create_down = 20,  // place a new region below (ralloc on its way down)
  op_created = 21,      // to the parent region's owner, which records the child and replies
  op_rfree_sub = 22,    // free for a pending event
  op_child_gone = 23,   // forget a freed remote child
  op_pack_sub = 24,     // pack for a pending event
  op_sub_done = 25,     // answer to a *_sub: status, extents
  op_mem_req = 26,      // 5.2 refill: slabs and ids wanted
  op_mem_grant = 27,    // ranges of slabs and ids handed down
  op_load = 28,         // subtree load (regions), upstream
  op_info_sub = 29,     // the object's extent for a pending pack
  op_mem_return = 30,   // whole free pages a child gives back (flow-back, upstream)
  op_exit = 31,         // shutdown, downstream
};
// Ops are below this bound (per-op counters are arrays of it).
inline constexpr std::size_t op_limit = 32;

// Messages a scheduler received, by op (what it served or forwarded).
struct MessageCounts {
  std::uint64_t total = 0;
  std::array<std::uint64_t, op_limit> by_op{};
};

// Short name of an op ("ralloc", "mem_req"...), "?" for none (reports).
constexpr const char* op_name(std::uint64_t op) {
  switch (op) {
    case op_ralloc: return "ralloc";
    case op_rfree: return "rfree";
    case op_alloc: return "alloc";
    case op_free: return "free";
    case op_info: return "info";
    case op_pack: return "pack";
    case op_stats: return "stats";
    case op_done: return "done";
    case op_failed: return "failed";
    case op_reply: return "reply";
    case op_create_down: return "create_down";
    case op_created: return "created";
    case op_rfree_sub: return "rfree_sub";
    case op_child_gone: return "child_gone";
    case op_pack_sub: return "pack_sub";
    case op_sub_done: return "sub_done";
    case op_mem_req: return "mem_req";
    case op_mem_grant: return "mem_grant";
    case op_load: return "load";
    case op_info_sub: return "info_sub";
    case op_mem_return: return "mem_return";
    case op_exit: return "exit";
    default: return "?";
  }
}

// The words every message starts with, read without knowing the op.
struct Envelope {
  std::uint64_t op = 0;
  std::uint64_t origin = 0;
  std::uint64_t req = 0;
  std::uint64_t status = 0;
};

namespace wire {
// The layout; only the codec (this file, messages.hpp, sched_messages.hpp)
// uses these.
inline constexpr std::size_t op = 0, origin = 1, req = 2, status = 3, arg0 = 4, header_words = 8;
inline constexpr std::size_t max_args = header_words - arg0;

// A message of `op` with its header and up to four arguments; the payload
// is appended by the caller.
inline Message frame(std::uint64_t op_code, std::uint64_t origin_rank, std::uint64_t req_id, std::uint64_t status_code,
                     std::initializer_list<std::uint64_t> args = {}, std::size_t payload_words = 0) {
  Message m;
  m.reserve(header_words + payload_words);
  m.assign(header_words, 0);
  m[op] = op_code;
  m[origin] = origin_rank;
  m[req] = req_id;
  m[status] = status_code;
  std::size_t i = arg0;
  for (std::uint64_t a : args) m[i++] = a;
  return m;
}
inline std::uint64_t arg(const Message& m, std::size_t i) { return m[arg0 + i]; }
inline std::span<const std::uint64_t> payload(const Message& m) {
  return std::span<const std::uint64_t>(m).subspan(header_words);
}
}  // namespace wire

// Every message has at least the header; anything shorter is dropped by its
// receiver (no rank of the library sends one).
inline bool well_formed(const Message& m) { return m.size() >= wire::header_words && m[wire::op] < op_limit; }
inline Envelope envelope(const Message& m) {
  return Envelope{m[wire::op], m[wire::origin], m[wire::req], m[wire::status]};
}
// Forwarding a message unchanged except for its origin (a parked refill
// remembers the child that asked).
inline void set_origin(Message& m, std::uint64_t origin) { m[wire::origin] = origin; }

}  // namespace manyalloc::region::detail
