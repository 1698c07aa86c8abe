// Reentrant events of the scheduler ([Lyberis2012] 4.3, 5.3): a free or a pack
// whose regions or objects live on other schedulers. A Pending record under
// a token counts the sub-requests still out (plus one held by the starter
// until it has sent them all); the answer goes out when the count reaches
// zero, to the worker (op_reply) or to the scheduler whose event asked
// (op_sub_done).
#include <algorithm>

#include "manyalloc/region/region.h"
#include "scheduler.hpp"

namespace manyalloc::region::detail {

std::uint64_t SchedulerCore::new_pending(const ReplyTo& to, bool sub) {
  const std::uint64_t token = next_token_++;
  Pending& p = pending_[token];
  p.to = to;
  p.sub = sub;
  p.status = MR_OK;
  p.outstanding = 1;  // held by the starter until it has sent everything
  return token;
}

void SchedulerCore::finish_pending(std::uint64_t token) {
  auto it = pending_.find(token);
  Pending& p = it->second;
  if (--p.outstanding > 0) return;
  if (!p.sub) {
    // Coalesce extents of all regions (adjacent slabs of different regions
    // merge too) into few (address, size) pairs.
    std::sort(p.extents.begin(), p.extents.end(), [](const Extent& a, const Extent& b) { return a.addr < b.addr; });
    std::vector<Extent> merged;
    for (const Extent& e : p.extents) {
      if (!merged.empty() && merged.back().addr + merged.back().bytes >= e.addr)
        merged.back().bytes = std::max(merged.back().bytes, e.addr + e.bytes - merged.back().addr);
      else
        merged.push_back(e);
    }
    p.extents.swap(merged);
  }
  Message r = p.sub ? SubDone{p.to, p.status, std::move(p.extents)}.encode()
                    : PackReply{p.to, p.status, std::move(p.extents)}.encode();
  const std::uint64_t origin = p.to.origin;
  pending_.erase(it);
  send_toward(origin, std::move(r));
}

void SchedulerCore::on_sub_done(SubDone d) {
  auto it = pending_.find(d.to.req);
  if (it == pending_.end()) return;  // token 0: orphan cleanup, nobody waits
  Pending& p = it->second;
  if (d.status != MR_OK) p.status = d.status;
  p.extents.insert(p.extents.end(), d.extents.begin(), d.extents.end());
  finish_pending(d.to.req);
}

// 4.3: freeing is independent of the number of objects; sub-regions on
// descendant schedulers are freed through rfree_sub events. sub: the
// RfreeSub this free serves (nullptr for a worker's mr_rfree).
void SchedulerCore::do_rfree(const RfreeRequest& req, const RfreeSub* sub) {
  Region* r = regions_.find(req.region);
  if (sub != nullptr && r->parent != sub->expected_parent) {
    // Stale child entry (the id was reused under another parent).
    return send_toward(req.to.origin, SubDone{req.to, MR_OK, {}}.encode());
  }
  if (req.region == 0) return reply(req.to, MR_ERR_BAD_ARGUMENT);
  const std::uint64_t parent = r->parent;
  const bool parent_local = regions_.owns_region(parent);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> remote;
  regions_.destroy(req.region, remote);
  if (!parent_local && sub == nullptr) post(topo_.parent(self_), ChildGone{parent, req.region}.encode());
  const std::uint64_t token = new_pending(req.to, sub != nullptr);
  for (auto [child, its_parent] : remote) {
    int hop = -1;
    if (route_region(child, &hop) != Route::forward) continue;
    ++pending_[token].outstanding;
    post(hop, RfreeSub{{static_cast<std::uint64_t>(self_), token}, child, its_parent}.encode());
  }
  report_load();
  // Pages freed here go up before the free is answered (M3): the worker
  // learns of the free only after the return is posted.
  check_return();
  finish_pending(token);
}

// One op_pack per mr_send: the regions (with their sub-regions, here or on
// other schedulers through op_pack_sub) and the objects (their sizes, here
// or through op_info_sub), answered once with all extents coalesced.
void SchedulerCore::start_pack(const ReplyTo& to, const std::vector<std::uint64_t>& ids,
                               const std::vector<std::uint64_t>& objects, bool sub, bool whole_pools) {
  const std::uint64_t token = new_pending(to, sub);
  const ReplyTo here{static_cast<std::uint64_t>(self_), token};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> remote;
  for (std::uint64_t id : ids) {
    int hop = -1;
    switch (route_region(id, &hop)) {
      case Route::local: regions_.pack(regions_.find(id), pending_[token].extents, remote, whole_pools); break;
      case Route::forward: remote.emplace_back(id, 0); break;
      case Route::error: pending_[token].status = MR_ERR_NO_REGION; break;
    }
  }
  for (auto [id, unused] : remote) {
    int hop = -1;
    if (route_region(id, &hop) != Route::forward) continue;
    ++pending_[token].outstanding;
    post(hop, PackSub{here, id, whole_pools}.encode());
  }
  for (std::uint64_t addr : objects) {
    int hop = -1;
    switch (route_addr(addr, &hop)) {
      case Route::local:
        if (const std::uint64_t size = regions_.region_of(addr)->pool.object_size(addr); size != 0)
          pending_[token].extents.push_back({addr, size});
        else
          pending_[token].status = MR_ERR_INVALID_POINTER;
        break;
      case Route::forward:
        ++pending_[token].outstanding;
        post(hop, InfoSub{here, addr}.encode());
        break;
      case Route::error: pending_[token].status = MR_ERR_INVALID_POINTER; break;
    }
  }
  finish_pending(token);
}

// op_info_sub at the owner of the address: the object's extent, or an error.
void SchedulerCore::info_sub(const InfoSub& s) {
  Region* r = regions_.region_of(s.address);
  const std::uint64_t size = r != nullptr ? r->pool.object_size(s.address) : 0;
  SubDone d{s.to, MR_OK, {}};
  if (size == 0)
    d.status = MR_ERR_INVALID_POINTER;
  else
    d.extents.push_back({s.address, size});
  send_toward(s.to.origin, d.encode());
}

}  // namespace manyalloc::region::detail
