// Typed scheduler <-> scheduler messages ([Lyberis2012] section 5.2-5.3), one
// struct per operation; the same conventions as messages.hpp.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "messages.hpp"

namespace manyalloc::region::detail {

// (first, count) ranges of slab indices or region id slots.
using Ranges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

namespace wire {
inline void put_ranges(Message& m, const Ranges& r) {
  for (auto [first, n] : r) {
    m.push_back(first);
    m.push_back(n);
  }
}
// `count` ranges from words[at...]; fewer when the message is shorter.
inline Ranges get_ranges(std::span<const std::uint64_t> words, std::size_t at, std::uint64_t count) {
  Ranges out;
  for (std::uint64_t k = 0; k < count && at + 1 < words.size(); ++k, at += 2) out.emplace_back(words[at], words[at + 1]);
  return out;
}
}  // namespace wire

// A region placed below (ralloc on its way down to the target depth).
struct CreateDown {
  static constexpr Op op = op_create_down;
  ReplyTo to;
  std::uint64_t parent = 0;
  int target_depth = 0;
  std::int64_t level_hint = -1;
  Message encode() const {
    return wire::frame(op, to.origin, to.req, 0,
                       {parent, static_cast<std::uint64_t>(target_depth), static_cast<std::uint64_t>(level_hint)});
  }
  static CreateDown decode(const Message& m) {
    return {wire::reply_to(m), wire::arg(m, 0), static_cast<int>(wire::arg(m, 1)),
            static_cast<std::int64_t>(wire::arg(m, 2))};
  }
};

// A region created below its parent's owner: the owner records the child
// and answers the worker (5.3, boundary regions).
struct Created {
  static constexpr Op op = op_created;
  ReplyTo to;
  std::uint64_t parent = 0;
  std::uint64_t region = 0;
  Message encode() const { return wire::frame(op, to.origin, to.req, 0, {parent, region}); }
  static Created decode(const Message& m) { return {wire::reply_to(m), wire::arg(m, 0), wire::arg(m, 1)}; }
};

// Free of a remote child for a pending event (to.req: its token; 0 for an
// orphan nobody waits on). expected_parent guards against a reused id.
struct RfreeSub {
  static constexpr Op op = op_rfree_sub;
  ReplyTo to;
  std::uint64_t region = 0;
  std::uint64_t expected_parent = 0;
  Message encode() const { return wire::frame(op, to.origin, to.req, 0, {region, expected_parent}); }
  static RfreeSub decode(const Message& m) { return {wire::reply_to(m), wire::arg(m, 0), wire::arg(m, 1)}; }
};

struct ChildGone {
  static constexpr Op op = op_child_gone;
  std::uint64_t parent = 0;
  std::uint64_t child = 0;
  Message encode() const { return wire::frame(op, 0, 0, 0, {parent, child}); }
  static ChildGone decode(const Message& m) { return {wire::arg(m, 0), wire::arg(m, 1)}; }
};

struct PackSub {
  static constexpr Op op = op_pack_sub;
  ReplyTo to;
  std::uint64_t region = 0;
  bool whole_pools = false;  // as PackRequest::whole_pools
  Message encode() const { return wire::frame(op, to.origin, to.req, 0, {region, whole_pools ? 1u : 0u}); }
  static PackSub decode(const Message& m) { return {wire::reply_to(m), wire::arg(m, 0), wire::arg(m, 1) != 0}; }
};

// The extent of one object, for a pending pack.
struct InfoSub {
  static constexpr Op op = op_info_sub;
  ReplyTo to;
  std::uint64_t address = 0;
  Message encode() const { return wire::frame(op, to.origin, to.req, 0, {address}); }
  static InfoSub decode(const Message& m) { return {wire::reply_to(m), wire::arg(m, 0)}; }
};

// Answer to RfreeSub / PackSub / InfoSub, to the pending event's token.
using SubDone = wire::ExtentsReply<op_sub_done>;

// 5.2 refill: slabs and ids a child wants (from: the child's rank).
struct MemReq {
  static constexpr Op op = op_mem_req;
  std::uint64_t from = 0;
  std::uint64_t slabs = 0;
  std::uint64_t ids = 0;
  Message encode() const { return wire::frame(op, from, 0, 0, {slabs, ids}); }
  static MemReq decode(const Message& m) { return {m[wire::origin], wire::arg(m, 0), wire::arg(m, 1)}; }
};

// Answer to MemReq: slab ranges and id ranges now the child's (both empty:
// nothing to give, the child fails what waits on it).
struct MemGrant {
  static constexpr Op op = op_mem_grant;
  Ranges slabs;
  Ranges ids;
  Message encode() const {
    Message m = wire::frame(op, 0, 0, 0, {slabs.size(), ids.size()}, 2 * (slabs.size() + ids.size()));
    wire::put_ranges(m, slabs);
    wire::put_ranges(m, ids);
    return m;
  }
  static MemGrant decode(const Message& m) {
    const auto w = wire::payload(m);
    const std::uint64_t ns = wire::arg(m, 0);
    MemGrant g{wire::get_ranges(w, 0, ns), {}};
    g.ids = wire::get_ranges(w, 2 * g.slabs.size(), wire::arg(m, 1));
    return g;
  }
};

// Flow-back: whole free pages a child gives back (M1-M3, invariants.hpp).
// `complete` is false when the message holds fewer ranges than it names (a
// protocol violation the receiver reports).
struct MemReturn {
  static constexpr Op op = op_mem_return;
  std::uint64_t from = 0;
  Ranges slabs;
  bool complete = true;
  Message encode() const {
    Message m = wire::frame(op, from, 0, 0, {slabs.size()}, 2 * slabs.size());
    wire::put_ranges(m, slabs);
    return m;
  }
  static MemReturn decode(const Message& m) {
    const auto w = wire::payload(m);
    const std::uint64_t n = wire::arg(m, 0);
    MemReturn r{m[wire::origin], wire::get_ranges(w, 0, n), true};
    r.complete = w.size() == 2 * n;
    return r;
  }
};

// Subtree load (regions), upstream.
struct LoadReport {
  static constexpr Op op = op_load;
  std::uint64_t load = 0;
  Message encode() const { return wire::frame(op, 0, 0, 0, {load}); }
  static LoadReport decode(const Message& m) { return {wire::arg(m, 0)}; }
};

// Shutdown, downstream.
struct ExitNotice {
  static constexpr Op op = op_exit;
  Message encode() const { return wire::frame(op, 0, 0, 0); }
};

}  // namespace manyalloc::region::detail
