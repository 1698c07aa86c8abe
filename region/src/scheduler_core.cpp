// The scheduler event server ([Lyberis2012] section 5.2 / 5.3): routing, region
// placement, objects, statistics, shutdown. Frees and packs that span
// schedulers (reentrant events) are in scheduler_events.cpp; memory and id
// traffic between schedulers (refill, flow-back, load) in
// scheduler_memory.cpp. No transport here: everything sent goes to the
// outbox (scheduler.hpp).
#include <algorithm>
#include <cstdio>

#include "manyalloc/common/build_config.hpp"
#include "manyalloc/common/math.hpp"
#include "manyalloc/region/region.h"
#include "scheduler.hpp"

namespace manyalloc::region::detail {

namespace {
std::uint64_t to_status(LocalStatus s) {
  switch (s) {
    case LocalStatus::ok: return MR_OK;
    case LocalStatus::no_region: return MR_ERR_NO_REGION;
    case LocalStatus::bad_argument: return MR_ERR_BAD_ARGUMENT;
    default: return MR_ERR_NO_MEMORY;
  }
}
}  // namespace

SchedulerCore::SchedulerCore(int self, const Topology& topo, const GasMapping& gas, const SchedulerTuning& tuning)
    : topo_(topo), self_(self), depth_(topo.depth(self)), gas_(gas), tuning_(tuning), regions_(gas.base, tuning.regions) {
  const std::uint64_t scale = static_cast<std::uint64_t>(topo_.descendants(self_)) + 1;
  slabs_hi_ = tuning_.leaf_pages_hi * slabs_per_page * scale;
  slabs_lo_ = slabs_hi_ / 4;
  slabs_return_ = 2 * slabs_hi_;  // flow-back watermark (M1-M3 in invariants.hpp)
  ids_hi_ = tuning_.leaf_ids_hi * scale;
  ids_lo_ = ids_hi_ / 4;
  if (!topo_.is_leaf(self_)) child_load_.assign(static_cast<std::size_t>(topo_.fanout), 0);
  done_.assign(static_cast<std::size_t>(topo_.world), 0);
  dead_.assign(static_cast<std::size_t>(topo_.world), 0);
  known_.assign(static_cast<std::size_t>(topo_.world), 0);
  if (topo_.is_top(self_)) {
    // 5.2: the top-level scheduler initially owns all memory and all ids.
    const std::uint64_t slabs = gas.bytes >> slab_shift;
    regions_.add_free_slabs(0, slabs);
    granted_slabs_.insert(0, slabs, {});
    regions_.add_free_ids(1, max_region_id - 1);
    granted_ids_.insert(0, max_region_id, {});
    regions_.create_root();
  }
  // Checked builds: freed regions' memory is poisoned and checked before
  // reuse, where this scheduler sees the workers' bytes (shared GAS).
  if constexpr (build::checked_build)
    if (gas.shared) regions_.enable_poison(self_);
}

void SchedulerCore::start() {
  on_done();  // a leaf without workers is done at once
  check_refill();
}

void SchedulerCore::handle(Message& m, int src) {
  if (!well_formed(m)) {
    if constexpr (build::checked_build)
      std::fprintf(stderr, "manyalloc region: scheduler %d: malformed message from rank %d dropped\n", self_, src);
    return;
  }
  ++received_.total;
  ++received_.by_op[envelope(m).op];
  dispatch(m, src);
  // Return first: after the answer to a refill, surplus pages go up
  // before a refill of ids alone could hold them back again (M3).
  check_return();
  check_refill();
}

// S2: local, down to the child named in the delegation tables, up when the
// key was never granted here, else a programmer error.
SchedulerCore::Route SchedulerCore::route_region(std::uint64_t id, int* hop) const {
  // S2 by the id's slot; a slot owned here under another generation (a
  // stale id) is an error, answered with MR_ERR_NO_REGION.
  if (regions_.owns_region(id)) return Route::local;
  const std::uint64_t slot = id_slot(id);
  if (!granted_ids_.find(slot)) {
    if (topo_.is_top(self_)) return Route::error;
    *hop = topo_.parent(self_);
    return Route::forward;
  }
  if (auto d = delegated_ids_.find(slot)) {
    *hop = static_cast<int>(*d.value);
    return Route::forward;
  }
  return Route::error;
}

// As route_region; an address in a page this scheduler gave back to its
// parent is no longer granted here and goes up again (M3).
SchedulerCore::Route SchedulerCore::route_addr(std::uint64_t addr, int* hop) const {
  const bool in_gas = addr >= gas_.base && addr - gas_.base < gas_.bytes;
  const std::uint64_t slab = in_gas ? (addr - gas_.base) >> slab_shift : 0;
  if (in_gas && regions_.region_of(addr) != nullptr) return Route::local;
  if (!in_gas || !granted_slabs_.find(slab)) {
    if (topo_.is_top(self_)) return Route::error;
    *hop = topo_.parent(self_);
    return Route::forward;
  }
  if (auto d = delegated_slabs_.find(slab)) {
    *hop = static_cast<int>(*d.value);
    return Route::forward;
  }
  return Route::error;
}

void SchedulerCore::send_toward(std::uint64_t dest, Message m) {
  if (dest == static_cast<std::uint64_t>(self_)) {
    dispatch(m, self_);
    return;
  }
  if (dest >= static_cast<std::uint64_t>(topo_.world)) return;  // not a rank of this layout
  const int hop = topo_.next_hop(self_, static_cast<int>(dest));
  if (hop < 0) return;  // unreachable: dest is not a rank of this layout
  post(hop, std::move(m));
}

void SchedulerCore::dispatch(Message& m, int src) {
  const Envelope e = envelope(m);
  switch (e.op) {
    case op_ralloc:
    case op_alloc:
    case op_rfree:
    case op_free:
    case op_info:
    case op_rfree_sub:
    case op_pack_sub:
    case op_info_sub:
    case op_child_gone:
    case op_created: return route_request(m, e.op);
    case op_pack: {
      PackRequest p = PackRequest::decode(m);
      return start_pack(p.to, p.regions, p.objects, false, p.whole_pools);
    }
    case op_stats: return reply_stats(StatsRequest::decode(m), m);
    case op_done: {
      // Once per child (F2: a child that failed may still have said done).
      const std::uint64_t who = DoneNotice::decode(m).from;
      if (who < done_.size() && done_[who] == 0) {
        done_[who] = 1;
        ++done_count_;
      } else if (who >= done_.size()) {
        ++done_count_;
      }
      return on_done();
    }
    case op_reply: return send_toward(e.origin, std::move(m));
    case op_create_down: return place_region(CreateDown::decode(m), std::move(m));
    case op_sub_done:
      if (e.origin != static_cast<std::uint64_t>(self_)) return send_toward(e.origin, std::move(m));
      return on_sub_done(SubDone::decode(m));
    case op_mem_req: return on_mem_req(MemReq::decode(m), m);
    case op_mem_grant: return on_mem_grant(MemGrant::decode(m));
    case op_mem_return: return on_mem_return(MemReturn::decode(m), src);
    case op_load: {
      const int child = src - topo_.first_child(self_);
      if (child < 0 || child >= static_cast<int>(child_load_.size()) || dead_[static_cast<std::size_t>(src)] != 0)
        return;  // not a (live) child: ignored
      child_load_[static_cast<std::size_t>(child)] = LoadReport::decode(m).load;
      return report_load();
    }
    case op_exit: return on_exit();
    case op_failed: {
      const FailedNotice f = FailedNotice::decode(m);
      if (f.failed_rank < static_cast<std::uint64_t>(topo_.world))
        peer_failed(static_cast<int>(f.failed_rank), src, f.found_by);
      return;
    }
    default:
      if constexpr (build::checked_build)
        std::fprintf(stderr, "manyalloc region: scheduler %d: unknown op %llu\n", self_,
                     static_cast<unsigned long long>(e.op));
      return;
  }
}

// The requests routed by a key (S2): forwarded unchanged toward the key's
// owner, served here when local, answered with an error when nobody owns it.
void SchedulerCore::route_request(Message& m, std::uint64_t op) {
  int hop = -1;
  switch (op) {
    case op_ralloc: {
      const RallocRequest r = RallocRequest::decode(m);
      const Route route = route_region(r.parent, &hop);
      if (route == Route::forward) return post(hop, std::move(m));
      if (route == Route::error) return reply(r.to, MR_ERR_NO_REGION);
      // Vertical placement (5.2): the level hint sets the depth, never above here.
      const int target = r.level_hint < 0 ? topo_.levels - 1
                                          : static_cast<int>(std::min<std::int64_t>(r.level_hint, topo_.levels - 1));
      const CreateDown c{r.to, r.parent, std::max(target, depth_), r.level_hint};
      return place_region(c, c.encode());
    }
    case op_alloc: {
      const AllocRequest a = AllocRequest::decode(m);
      const Route route = route_region(a.region, &hop);
      if (route == Route::forward) return post(hop, std::move(m));
      if (route == Route::error) return reply(a.to, MR_ERR_NO_REGION);
      return do_alloc(a, m);
    }
    case op_rfree: {
      const RfreeRequest r = RfreeRequest::decode(m);
      const Route route = route_region(r.region, &hop);
      if (route == Route::forward) return post(hop, std::move(m));
      if (route == Route::error) return reply(r.to, MR_ERR_NO_REGION);
      return do_rfree(r, nullptr);
    }
    case op_free: {
      const FreeRequest f = FreeRequest::decode(m);
      const Route route = route_addr(f.address, &hop);
      if (route == Route::forward) return post(hop, std::move(m));
      if (route == Route::error) return reply(f.to, MR_ERR_INVALID_POINTER);
      return reply(f.to, regions_.free(f.address) == FreeStatus::ok ? MR_OK : MR_ERR_INVALID_POINTER);
    }
    case op_info: {
      const InfoRequest q = InfoRequest::decode(m);
      const Route route = route_addr(q.address, &hop);
      if (route == Route::forward) return post(hop, std::move(m));
      if (route == Route::error) return reply(q.to, MR_ERR_INVALID_POINTER);
      Region* reg = regions_.region_of(q.address);
      const std::uint64_t size = reg->pool.object_size(q.address);
      if (size == 0) return reply(q.to, MR_ERR_INVALID_POINTER);
      return send_toward(q.to.origin, InfoReply{q.to, MR_OK, size, reg->id}.encode());
    }
    case op_rfree_sub: {
      const RfreeSub s = RfreeSub::decode(m);
      const Route route = route_region(s.region, &hop);
      if (route == Route::forward) return post(hop, std::move(m));
      if (route == Route::local) return do_rfree(RfreeRequest{s.to, s.region}, &s);
      // Already gone.
      return send_toward(s.to.origin, SubDone{s.to, MR_OK, {}}.encode());
    }
    case op_pack_sub: {
      const PackSub s = PackSub::decode(m);
      const Route route = route_region(s.region, &hop);
      if (route == Route::forward) return post(hop, std::move(m));
      if (route == Route::local) return start_pack(s.to, {s.region}, {}, true, s.whole_pools);
      // Never existed.
      return send_toward(s.to.origin, SubDone{s.to, MR_ERR_NO_REGION, {}}.encode());
    }
    case op_info_sub: {
      const InfoSub s = InfoSub::decode(m);
      const Route route = route_addr(s.address, &hop);
      if (route == Route::forward) return post(hop, std::move(m));
      if (route == Route::local) return info_sub(s);
      return send_toward(s.to.origin, SubDone{s.to, MR_ERR_INVALID_POINTER, {}}.encode());
    }
    case op_child_gone: {
      const ChildGone g = ChildGone::decode(m);
      const Route route = route_region(g.parent, &hop);
      if (route == Route::forward) return post(hop, std::move(m));
      if (route == Route::local) child_gone(g);
      return;
    }
    case op_created: {
      const Created c = Created::decode(m);
      if (route_region(c.parent, &hop) == Route::forward) return post(hop, std::move(m));
      return on_created(c);
    }
    default: return;
  }
}

// 5.2: the level hint sets the scheduler depth ("vertical" placement), the
// subtree loads pick the child ("horizontal" placement). Without a hint the
// region goes to the leaf serving the requesting worker when the parent
// region's scheduler is above it (locality), else to the least-loaded child.
// raw: c encoded (forwarded as it is).
void SchedulerCore::place_region(const CreateDown& c, Message&& raw) {
  if (depth_ < c.target_depth) {
    const int origin = static_cast<int>(c.to.origin);
    int child = -1;
    if (c.level_hint < 0 && !topo_.is_scheduler(origin) && topo_.in_subtree(self_, topo_.leaf_of(origin)))
      child = topo_.next_hop(self_, origin);
    if (child < 0) {
      // The least-loaded live child (F2: a failed one takes nothing).
      for (std::size_t k = 0; k < child_load_.size(); ++k)
        if (dead_[static_cast<std::size_t>(topo_.first_child(self_)) + k] == 0 &&
            (child < 0 || child_load_[k] < child_load_[static_cast<std::size_t>(child - topo_.first_child(self_))]))
          child = topo_.first_child(self_) + static_cast<int>(k);
      if (child < 0) return reply(c.to, MR_ERR_PEER_FAILED);  // every child failed
    }
    ++child_load_[static_cast<std::size_t>(child - topo_.first_child(self_))];  // until the next report
    return post(child, std::move(raw));
  }
  std::uint64_t id = 0;
  const LocalStatus st = regions_.create(c.parent, &id);
  if (st == LocalStatus::no_ids || st == LocalStatus::no_memory) return park(std::move(raw), 1);
  report_load();
  if (regions_.owns_region(c.parent)) return send_toward(c.to.origin, RallocReply{c.to, MR_OK, id}.encode());
  // The parent lives above: tell its owner, which records the child and
  // answers the worker (5.3, boundary regions).
  post(topo_.parent(self_), Created{c.to, c.parent, id}.encode());
}

void SchedulerCore::on_created(const Created& c) {
  if (Region* p = regions_.find(c.parent)) {
    p->children.push_back(c.region);
    return send_toward(c.to.origin, RallocReply{c.to, MR_OK, c.region}.encode());
  }
  // The parent was freed meanwhile: free the orphan, report the error.
  int hop = -1;
  if (route_region(c.region, &hop) == Route::forward)
    post(hop, RfreeSub{{static_cast<std::uint64_t>(self_), 0}, c.region, c.parent}.encode());
  reply(c.to, MR_ERR_NO_REGION);
}

void SchedulerCore::child_gone(const ChildGone& g) {
  Region* p = regions_.find(g.parent);
  auto it = std::find(p->children.begin(), p->children.end(), g.child);
  if (it != p->children.end()) {
    *it = p->children.back();
    p->children.pop_back();
  }
}

void SchedulerCore::do_alloc(const AllocRequest& a, Message& raw) {
  Region* r = regions_.find(a.region);
  if (SlabPool::slot_size(a.size) == 0 || a.count == 0 || a.count > (1u << 24)) return reply(a.to, MR_ERR_BAD_ARGUMENT);
  AllocReply rep{a.to, MR_OK, {}};
  rep.addresses.reserve(a.count);
  const LocalStatus st = regions_.alloc(r, a.size, a.count, rep.addresses);
  if (st == LocalStatus::no_memory) {
    const std::uint64_t slot = SlabPool::slot_size(a.size);
    return park(std::move(raw), ceil_div<std::uint64_t>(slot * a.count, slab_bytes) + SlabPool::slabs_for_slot(slot));
  }
  if (st != LocalStatus::ok) return reply(a.to, to_status(st));
  send_toward(a.to.origin, rep.encode());
}

void SchedulerCore::reply_stats(const StatsRequest& s, Message& raw) {
  if (s.scheduler < 0 || s.scheduler >= topo_.nsched) return reply(s.to, MR_ERR_BAD_ARGUMENT);
  if (s.scheduler != self_) return send_toward(static_cast<std::uint64_t>(s.scheduler), std::move(raw));
  const LocalStats st = regions_.stats();
  if constexpr (build::checked_build) {
    if (!regions_.check_invariants())
      std::fprintf(stderr, "manyalloc region: scheduler %d: invariant violated\n", self_);
  }
  send_toward(s.to.origin, StatsReply{s.to, MR_OK, st.regions, st.free_slabs, st.pool_slabs, st.used_slabs,
                                      st.live_objects, st.live_bytes, st.free_ids, delegated_slabs_.total(),
                                      received_.total}
                               .encode());
}

// Shutdown: workers report done to their leaf, schedulers to their parent
// once their whole subtree is done; the top then sends exit downwards. A
// scheduler whose parent failed exits on its own once its subtree is done
// (F3).
void SchedulerCore::on_done() {
  if (done_count_ != topo_.child_count(self_)) return;
  if (topo_.is_top(self_) || parent_failed_) return on_exit();
  post(topo_.parent(self_), DoneNotice{static_cast<std::uint64_t>(self_)}.encode());
}

// F1-F5 (invariants.hpp).
void SchedulerCore::peer_failed(int rank, int src, std::uint64_t found_by) {
  if (rank < 0 || rank >= topo_.world || rank == self_ || known_[static_cast<std::size_t>(rank)] != 0) return;
  if (src < 0 && !topo_.is_scheduler(rank) && topo_.leaf_of(rank) == self_ &&
      done_[static_cast<std::size_t>(rank)] != 0) {
    // A worker that said done and then exited ended normally: nothing is
    // sent to it any more, and nobody needs to hear of it. (A child
    // scheduler that said done still serves until op_exit: its death is a
    // failure.)
    dead_[static_cast<std::size_t>(rank)] = 1;
    return;
  }
  known_[static_cast<std::size_t>(rank)] = 1;
  if (first_failure_ < 0) first_failure_ = rank;
  if (src < 0) found_by = static_cast<std::uint64_t>(self_);
  if (topo_.is_neighbour(self_, rank)) {
    dead_[static_cast<std::size_t>(rank)] = 1;
    if (!topo_.is_top(self_) && rank == topo_.parent(self_)) {
      // F3: no refill, grant or exit will come from above.
      parent_failed_ = true;
      fail_parked(MR_ERR_PEER_FAILED);
    } else {
      // F2: a failed child counts as done, once; a failed child scheduler
      // stands for its whole subtree. Placement skips it from now on (dead_).
      if (done_[static_cast<std::size_t>(rank)] == 0) {
        done_[static_cast<std::size_t>(rank)] = 1;
        ++done_count_;
      }
    }
  }
  // F4: events waiting for answers that passed through a failed scheduler
  // may never get them: every pending event ends now with
  // MR_ERR_PEER_FAILED, and answers that still come find no token.
  if (topo_.is_scheduler(rank)) {
    std::vector<std::uint64_t> tokens;
    for (auto& [token, p] : pending_) tokens.push_back(token);
    for (std::uint64_t token : tokens) {
      Pending& p = pending_[token];
      p.status = MR_ERR_PEER_FAILED;
      p.outstanding = 1;
      finish_pending(token);
    }
  }
  // F5: every other live neighbour hears of it, once.
  const FailedNotice notice{static_cast<std::uint64_t>(rank), found_by};
  for (int n : topo_.neighbours(self_))
    if (n != src && n != rank && dead_[static_cast<std::size_t>(n)] == 0 &&
        (topo_.is_scheduler(n) || done_[static_cast<std::size_t>(n)] == 0))  // no notice to a finished worker
      post(n, notice.encode());
  on_done();
}

// F1: a message for a failed rank. A request that waits for an answer is
// answered with MR_ERR_PEER_FAILED toward its origin (a SubDone for a
// pending event's sub-request); everything else is dropped.
void SchedulerCore::bounce(int dest, Message m) {
  const Envelope e = envelope(m);
  const ReplyTo to{e.origin, e.req};
  switch (e.op) {
    case op_ralloc:
    case op_rfree:
    case op_alloc:
    case op_free:
    case op_info:
    case op_pack:
    case op_stats:
    case op_create_down:
    case op_created:
      ++bounced_;
      if (e.origin >= dead_.size() || dead_[static_cast<std::size_t>(e.origin)] != 0) return;  // nobody to answer
      return send_toward(e.origin, FailedReply{to, MR_ERR_PEER_FAILED, dest}.encode());
    case op_rfree_sub:
    case op_pack_sub:
    case op_info_sub:
      ++bounced_;
      return send_toward(e.origin, SubDone{to, MR_ERR_PEER_FAILED, {}}.encode());
    default: return;
  }
}

void SchedulerCore::on_exit() {
  if (!topo_.is_leaf(self_))
    for (int c = 0; c < topo_.fanout; ++c) post(topo_.first_child(self_) + c, ExitNotice{}.encode());
  exit_ = true;
}

}  // namespace manyalloc::region::detail
