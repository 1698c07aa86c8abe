// Typed worker <-> scheduler messages, one struct per operation, with fields
// named by meaning; encode()/decode() map them to the word layout of
// protocol.hpp. decode() takes a well_formed() message of the struct's op
// (the receiver dispatches on envelope().op first); payload lengths are
// clamped to what the message holds, never read past its end.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "local_regions.hpp"
#include "protocol.hpp"

namespace manyalloc::region::detail {

// Who gets the answer: the origin rank and its sequence number (or a
// pending event's token). Every request and reply carries one.
struct ReplyTo {
  std::uint64_t origin = 0;
  std::uint64_t req = 0;
};

namespace wire {
inline ReplyTo reply_to(const Message& m) { return ReplyTo{m[origin], m[req]}; }
inline void put_extents(Message& m, const std::vector<Extent>& extents) {
  for (const Extent& e : extents) {
    m.push_back(e.addr);
    m.push_back(e.bytes);
  }
}
inline std::vector<Extent> get_extents(std::span<const std::uint64_t> words) {
  std::vector<Extent> out;
  out.reserve(words.size() / 2);
  for (std::size_t i = 0; i + 1 < words.size(); i += 2) out.push_back({words[i], words[i + 1]});
  return out;
}

// A status and (address, bytes) extents, to `to`: the answer to a worker's
// pack (PackReply) and to every *_sub request of a pending event (SubDone,
// sched_messages.hpp). The op is a template argument so that each stays a
// type of its own.
template <Op O>
struct ExtentsReply {
  static constexpr Op op = O;
  ReplyTo to;
  std::uint64_t status = 0;
  std::vector<Extent> extents;
  Message encode() const {
    Message m = frame(op, to.origin, to.req, status, {}, 2 * extents.size());
    put_extents(m, extents);
    return m;
  }
  static ExtentsReply decode(const Message& m) {
    return {reply_to(m), m[wire::status], get_extents(payload(m))};
  }
};
}  // namespace wire

// Where the answer to any request goes, whatever its op (a parked request
// that is failed as a whole).
inline ReplyTo reply_to_of(const Message& m) { return wire::reply_to(m); }

// ---- requests (worker -> leaf scheduler, routed by key) -------------------

struct RallocRequest {
  static constexpr Op op = op_ralloc;
  ReplyTo to;
  std::uint64_t parent = 0;
  std::int64_t level_hint = -1;  // < 0: no hint (5.2 placement)
  Message encode() const {
    return wire::frame(op, to.origin, to.req, 0, {parent, static_cast<std::uint64_t>(level_hint)});
  }
  static RallocRequest decode(const Message& m) {
    return {wire::reply_to(m), wire::arg(m, 0), static_cast<std::int64_t>(wire::arg(m, 1))};
  }
};

struct RfreeRequest {
  static constexpr Op op = op_rfree;
  ReplyTo to;
  std::uint64_t region = 0;
  Message encode() const { return wire::frame(op, to.origin, to.req, 0, {region}); }
  static RfreeRequest decode(const Message& m) { return {wire::reply_to(m), wire::arg(m, 0)}; }
};

struct AllocRequest {
  static constexpr Op op = op_alloc;
  ReplyTo to;
  std::uint64_t region = 0;
  std::uint64_t size = 0;   // bytes per object
  std::uint64_t count = 0;  // objects (mr_balloc)
  Message encode() const { return wire::frame(op, to.origin, to.req, 0, {region, size, count}); }
  static AllocRequest decode(const Message& m) {
    return {wire::reply_to(m), wire::arg(m, 0), wire::arg(m, 1), wire::arg(m, 2)};
  }
};

struct FreeRequest {
  static constexpr Op op = op_free;
  ReplyTo to;
  std::uint64_t address = 0;
  Message encode() const { return wire::frame(op, to.origin, to.req, 0, {address}); }
  static FreeRequest decode(const Message& m) { return {wire::reply_to(m), wire::arg(m, 0)}; }
};

struct InfoRequest {
  static constexpr Op op = op_info;
  ReplyTo to;
  std::uint64_t address = 0;
  Message encode() const { return wire::frame(op, to.origin, to.req, 0, {address}); }
  static InfoRequest decode(const Message& m) { return {wire::reply_to(m), wire::arg(m, 0)}; }
};

// One per mr_send: the regions (with their sub-regions) and the objects.
// mr_rfree with private memory asks for the regions' whole pools
// (whole_pools: the free slabs of each region's pool too), whose pages the
// worker drops once the free succeeds.
struct PackRequest {
  static constexpr Op op = op_pack;
  ReplyTo to;
  std::vector<std::uint64_t> regions;
  std::vector<std::uint64_t> objects;  // addresses
  bool whole_pools = false;
  Message encode() const {
    Message m = wire::frame(op, to.origin, to.req, 0, {regions.size(), whole_pools ? 1u : 0u},
                            regions.size() + objects.size());
    m.insert(m.end(), regions.begin(), regions.end());
    m.insert(m.end(), objects.begin(), objects.end());
    return m;
  }
  static PackRequest decode(const Message& m) {
    const auto words = wire::payload(m);
    const std::size_t nr = static_cast<std::size_t>(std::min<std::uint64_t>(wire::arg(m, 0), words.size()));
    return {wire::reply_to(m), {words.begin(), words.begin() + static_cast<std::ptrdiff_t>(nr)},
            {words.begin() + static_cast<std::ptrdiff_t>(nr), words.end()}, wire::arg(m, 1) != 0};
  }
};

struct StatsRequest {
  static constexpr Op op = op_stats;
  ReplyTo to;
  std::int64_t scheduler = 0;
  Message encode() const { return wire::frame(op, to.origin, to.req, 0, {static_cast<std::uint64_t>(scheduler)}); }
  static StatsRequest decode(const Message& m) {
    return {wire::reply_to(m), static_cast<std::int64_t>(wire::arg(m, 0))};
  }
};

// A worker (at mr_finalize) or a child scheduler (its subtree is done).
struct DoneNotice {
  static constexpr Op op = op_done;
  std::uint64_t from = 0;
  Message encode() const { return wire::frame(op, from, 0, 0); }
  static DoneNotice decode(const Message& m) { return {m[wire::origin]}; }
};

// A rank has failed (region.h, "Failures"; F5 in invariants.hpp): sent by a
// scheduler to every live neighbour but the one it heard it from, so that
// every rank of the tree hears of it once.
struct FailedNotice {
  static constexpr Op op = op_failed;
  std::uint64_t failed_rank = 0;
  std::uint64_t found_by = 0;  // the rank whose watch found it
  Message encode() const { return wire::frame(op, found_by, 0, 0, {failed_rank}); }
  static FailedNotice decode(const Message& m) { return {wire::arg(m, 0), m[wire::origin]}; }
};

// ---- replies (op_reply, routed back to `to.origin`) -----------------------
// The requester knows which reply it waits for; a failed request is a
// StatusReply whatever the op (status != MR_OK, no arguments).

struct StatusReply {
  static constexpr Op op = op_reply;
  ReplyTo to;
  std::uint64_t status = 0;
  Message encode() const { return wire::frame(op, to.origin, to.req, status); }
  static StatusReply decode(const Message& m) { return {wire::reply_to(m), m[wire::status]}; }
};

// A request answered for a rank that failed on its way (SchedulerCore::
// bounce, region.h "Failures"): a StatusReply that also names the rank
// (stored plus one: 0 in any other reply reads as -1, unknown).
struct FailedReply {
  static constexpr Op op = op_reply;
  ReplyTo to;
  std::uint64_t status = 0;
  std::int64_t failed_rank = -1;
  Message encode() const {
    return wire::frame(op, to.origin, to.req, status, {static_cast<std::uint64_t>(failed_rank + 1)});
  }
  static FailedReply decode(const Message& m) {
    return {wire::reply_to(m), m[wire::status], static_cast<std::int64_t>(wire::arg(m, 0)) - 1};
  }
};

struct RallocReply {
  static constexpr Op op = op_reply;
  ReplyTo to;
  std::uint64_t status = 0;
  std::uint64_t region = 0;
  Message encode() const { return wire::frame(op, to.origin, to.req, status, {region}); }
  static RallocReply decode(const Message& m) { return {wire::reply_to(m), m[wire::status], wire::arg(m, 0)}; }
};

struct AllocReply {
  static constexpr Op op = op_reply;
  ReplyTo to;
  std::uint64_t status = 0;
  std::vector<std::uint64_t> addresses;
  Message encode() const {
    Message m = wire::frame(op, to.origin, to.req, status, {addresses.size()}, addresses.size());
    m.insert(m.end(), addresses.begin(), addresses.end());
    return m;
  }
  static AllocReply decode(const Message& m) {
    const auto words = wire::payload(m);
    return {wire::reply_to(m), m[wire::status], {words.begin(), words.end()}};
  }
};

struct InfoReply {
  static constexpr Op op = op_reply;
  ReplyTo to;
  std::uint64_t status = 0;
  std::uint64_t slot_bytes = 0;
  std::uint64_t region = 0;
  Message encode() const { return wire::frame(op, to.origin, to.req, status, {slot_bytes, region}); }
  static InfoReply decode(const Message& m) {
    return {wire::reply_to(m), m[wire::status], wire::arg(m, 0), wire::arg(m, 1)};
  }
};

// Answer to a PackRequest: (address, bytes) extents, sorted and coalesced.
using PackReply = wire::ExtentsReply<op_reply>;

// mr_sched_stats of one scheduler, field by field.
struct StatsReply {
  static constexpr Op op = op_reply;
  ReplyTo to;
  std::uint64_t status = 0;
  std::uint64_t regions = 0, free_slabs = 0, pool_slabs = 0, used_slabs = 0, live_objects = 0, live_bytes = 0,
                free_ids = 0, delegated_slabs = 0, messages = 0;
  static constexpr std::size_t words = 9;
  Message encode() const {
    Message m = wire::frame(op, to.origin, to.req, status, {}, words);
    m.insert(m.end(), {regions, free_slabs, pool_slabs, used_slabs, live_objects, live_bytes, free_ids,
                       delegated_slabs, messages});
    return m;
  }
  static StatsReply decode(const Message& m) {
    StatsReply r{wire::reply_to(m), m[wire::status]};
    const auto w = wire::payload(m);
    if (w.size() < words) return r;  // an error reply carries none
    r.regions = w[0], r.free_slabs = w[1], r.pool_slabs = w[2], r.used_slabs = w[3], r.live_objects = w[4];
    r.live_bytes = w[5], r.free_ids = w[6], r.delegated_slabs = w[7], r.messages = w[8];
    return r;
  }
};

}  // namespace manyalloc::region::detail
