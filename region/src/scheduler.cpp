// The scheduler event server ([Lyberis2012] section 5.2 / 5.3).
#include "scheduler.hpp"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "manyalloc/common/build_config.hpp"
#include "manyalloc/common/math.hpp"
#include "manyalloc/region/region.h"

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

// A page range of a flow-back that breaks M1/M2 (invariants.hpp): the
// accounting of the whole tree (S3) would be wrong from here on, so the job
// stops with the range named.
[[noreturn]] void flowback_violation(int self, const char* what, std::uint64_t first, std::uint64_t n) {
  std::fprintf(stderr,
               "manyalloc region: scheduler %d: returned slabs [%llu, +%llu) %s; the memory accounting would be "
               "wrong, aborting\n",
               self, static_cast<unsigned long long>(first), static_cast<unsigned long long>(n), what);
  std::abort();
}

// Ranges per op_mem_return (as per op_mem_grant): a message stays small.
constexpr std::size_t max_return_ranges = 256;
}  // namespace

Scheduler::Scheduler(MpiTransport& transport, const Topology& topo, const GasMapping& gas,
                     const SchedulerTuning& tuning)
    : t_(transport),
      topo_(topo),
      self_(transport.rank()),
      depth_(topo.depth(transport.rank())),
      gas_(gas),
      tuning_(tuning),
      regions_(gas.base, tuning.regions) {
  const std::uint64_t scale = static_cast<std::uint64_t>(topo_.descendants(self_)) + 1;
  slabs_hi_ = tuning_.leaf_pages_hi * slabs_per_page * scale;
  slabs_lo_ = slabs_hi_ / 4;
  slabs_return_ = 2 * slabs_hi_;  // flow-back watermark (M1-M3 in invariants.hpp)
  ids_hi_ = tuning_.leaf_ids_hi * scale;
  ids_lo_ = ids_hi_ / 4;
  if (!topo_.is_leaf(self_)) child_load_.assign(static_cast<std::size_t>(topo_.fanout), 0);
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

// S2: local, down to the child named in the delegation tables, up when the
// key was never granted here, else a programmer error.
Scheduler::Route Scheduler::route_region(std::uint64_t id, int* hop) const {
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
Scheduler::Route Scheduler::route_addr(std::uint64_t addr, int* hop) const {
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

void Scheduler::send_toward(int dest, Message m) {
  if (dest == self_) {
    dispatch(m, self_);
    return;
  }
  const int hop = topo_.next_hop(self_, dest);
  if (hop < 0) return;  // unreachable: dest is not a rank of this layout
  t_.post(hop, std::move(m));
}

void Scheduler::send_to_origin(Message m) {
  const int dest = static_cast<int>(m[w_origin]);
  send_toward(dest, std::move(m));
}

void Scheduler::reply(const Message& m, std::uint64_t status, std::initializer_list<std::uint64_t> args,
                      const std::uint64_t* payload, std::size_t payload_words) {
  Message r = make_msg(op_reply, m[w_origin], m[w_req], args);
  r[w_status] = status;
  r.insert(r.end(), payload, payload + payload_words);
  send_toward(static_cast<int>(m[w_origin]), std::move(r));
}

void Scheduler::run() {
  on_done();  // a leaf without workers is done at once
  check_refill();
  Message m;
  unsigned idle = 0;
  while (!exit_) {
    t_.poll();
    const int src = t_.try_recv_any(m);
    if (src < 0) {
      // Polite polling: spin a little, then sleep so that oversubscribed
      // workers get the CPU.
      if (++idle > 256) {
        timespec ts{0, idle > 4096 ? 50000 : 5000};
        nanosleep(&ts, nullptr);
      }
      continue;
    }
    idle = 0;
    ++messages_;
    dispatch(m, src);
    // Return first: after the answer to a refill, surplus pages go up
    // before a refill of ids alone could hold them back again (M3).
    check_return();
    check_refill();
  }
  t_.flush();
}

void Scheduler::dispatch(Message& m, int src) {
  int hop = -1;
  switch (m[w_op]) {
    case op_ralloc:
    case op_alloc:
    case op_rfree: {
      const Route r = route_region(m[w_a0], &hop);
      if (r == Route::forward) return t_.post(hop, std::move(m));
      if (r == Route::error) return reply(m, MR_ERR_NO_REGION);
      if (m[w_op] == op_ralloc) return place_region(m);
      if (m[w_op] == op_alloc) return do_alloc(m);
      return do_rfree(m, false);
    }
    case op_free:
    case op_info: {
      const Route r = route_addr(m[w_a0], &hop);
      if (r == Route::forward) return t_.post(hop, std::move(m));
      if (r == Route::error) return reply(m, MR_ERR_INVALID_POINTER);
      return m[w_op] == op_free ? do_free(m) : do_info(m);
    }
    case op_pack: return start_pack(m, false);
    case op_stats: return reply_stats(m);
    case op_done: ++done_count_; return on_done();
    case op_reply: return send_to_origin(std::move(m));
    case op_create_down: return place_region(m);
    case op_created: return on_created(m);
    case op_rfree_sub:
    case op_pack_sub: {
      const Route r = route_region(m[w_a0], &hop);
      if (r == Route::forward) return t_.post(hop, std::move(m));
      if (r == Route::local) return m[w_op] == op_rfree_sub ? do_rfree(m, true) : start_pack(m, true);
      // Already gone (rfree) or never existed (pack).
      Message d = make_msg(op_sub_done, m[w_origin], m[w_req]);
      d[w_status] = m[w_op] == op_rfree_sub ? MR_OK : MR_ERR_NO_REGION;
      return send_toward(static_cast<int>(m[w_origin]), std::move(d));
    }
    case op_info_sub: {
      const Route r = route_addr(m[w_a0], &hop);
      if (r == Route::forward) return t_.post(hop, std::move(m));
      if (r == Route::local) return info_sub(m);
      Message d = make_msg(op_sub_done, m[w_origin], m[w_req]);
      d[w_status] = MR_ERR_INVALID_POINTER;
      return send_toward(static_cast<int>(m[w_origin]), std::move(d));
    }
    case op_child_gone: {
      const Route r = route_region(m[w_a0], &hop);
      if (r == Route::forward) return t_.post(hop, std::move(m));
      if (r == Route::local) {
        Region* p = regions_.find(m[w_a0]);
        auto it = std::find(p->children.begin(), p->children.end(), m[w_a1]);
        if (it != p->children.end()) {
          *it = p->children.back();
          p->children.pop_back();
        }
      }
      return;
    }
    case op_sub_done:
      if (m[w_origin] != static_cast<std::uint64_t>(self_))
        return send_to_origin(std::move(m));
      return on_sub_done(m);
    case op_mem_req: return on_mem_req(m, src);
    case op_mem_grant: return on_mem_grant(m);
    case op_mem_return: return on_mem_return(m, src);
    case op_load:
      child_load_[static_cast<std::size_t>(src - topo_.first_child(self_))] = m[w_a0];
      return report_load();
    case op_exit: return on_exit();
    default:
      if constexpr (build::checked_build)
        std::fprintf(stderr, "manyalloc region: scheduler %d: unknown op %llu\n", self_,
                     static_cast<unsigned long long>(m[w_op]));
      return;
  }
}

// 5.2: the level hint sets the scheduler depth ("vertical" placement), the
// subtree loads pick the child ("horizontal" placement). Without a hint the
// region goes to the leaf serving the requesting worker when the parent
// region's scheduler is above it (locality), else to the least-loaded child.
void Scheduler::place_region(Message& m) {
  if (m[w_op] == op_ralloc) {
    const auto hint = static_cast<std::int64_t>(m[w_a1]);
    int target = hint < 0 ? topo_.levels - 1 : static_cast<int>(std::min<std::int64_t>(hint, topo_.levels - 1));
    target = std::max(target, depth_);
    m[w_op] = op_create_down;
    m[w_a1] = static_cast<std::uint64_t>(target);
    m[w_a2] = static_cast<std::uint64_t>(hint);
  }
  const int target = static_cast<int>(m[w_a1]);
  const auto hint = static_cast<std::int64_t>(m[w_a2]);
  if (depth_ < target) {
    const int origin = static_cast<int>(m[w_origin]);
    int child = -1;
    if (hint < 0 && !topo_.is_scheduler(origin) && topo_.in_subtree(self_, topo_.leaf_of(origin)))
      child = topo_.next_hop(self_, origin);
    if (child < 0) {
      const auto it = std::min_element(child_load_.begin(), child_load_.end());
      child = topo_.first_child(self_) + static_cast<int>(it - child_load_.begin());
    }
    ++child_load_[static_cast<std::size_t>(child - topo_.first_child(self_))];  // until the next report
    return t_.post(child, std::move(m));
  }
  std::uint64_t id = 0;
  const LocalStatus st = regions_.create(m[w_a0], &id);
  if (st == LocalStatus::no_ids || st == LocalStatus::no_memory) return park(m, 1);
  report_load();
  if (regions_.owns_region(m[w_a0])) return reply(m, MR_OK, {id});
  // The parent lives above: tell its owner, which records the child and
  // answers the worker (5.3, boundary regions).
  Message c = make_msg(op_created, m[w_origin], m[w_req], {m[w_a0], id});
  t_.post(topo_.parent(self_), std::move(c));
}

void Scheduler::on_created(Message& m) {
  int hop = -1;
  const Route r = route_region(m[w_a0], &hop);
  if (r == Route::forward) return t_.post(hop, std::move(m));
  if (r == Route::local) {
    regions_.find(m[w_a0])->children.push_back(m[w_a1]);
    return reply(m, MR_OK, {m[w_a1]});
  }
  // The parent was freed meanwhile: free the orphan, report the error.
  Message f = make_msg(op_rfree_sub, static_cast<std::uint64_t>(self_), 0, {m[w_a1], m[w_a0]});
  if (route_region(m[w_a1], &hop) == Route::forward) t_.post(hop, std::move(f));
  reply(m, MR_ERR_NO_REGION);
}

std::uint64_t Scheduler::new_pending(const Message& m, bool sub) {
  const std::uint64_t token = next_token_++;
  Pending& p = pending_[token];
  p.origin = m[w_origin];
  p.req = m[w_req];
  p.sub = sub;
  p.status = MR_OK;
  p.outstanding = 1;  // held by the starter until it has sent everything
  return token;
}

void Scheduler::finish_pending(std::uint64_t token) {
  auto it = pending_.find(token);
  Pending& p = it->second;
  if (--p.outstanding > 0) return;
  std::vector<std::uint64_t> words;
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
  words.reserve(p.extents.size() * 2);
  for (const Extent& e : p.extents) {
    words.push_back(e.addr);
    words.push_back(e.bytes);
  }
  Message r = make_msg(p.sub ? op_sub_done : op_reply, p.origin, p.req);
  r[w_status] = p.status;
  r.insert(r.end(), words.begin(), words.end());
  pending_.erase(it);
  send_to_origin(std::move(r));
}

void Scheduler::on_sub_done(Message& m) {
  auto it = pending_.find(m[w_req]);
  if (it == pending_.end()) return;  // token 0: orphan cleanup, nobody waits
  Pending& p = it->second;
  if (m[w_status] != MR_OK) p.status = m[w_status];
  for (std::size_t i = hdr_words; i + 1 < m.size(); i += 2) p.extents.push_back({m[i], m[i + 1]});
  finish_pending(m[w_req]);
}

// 4.3: freeing is independent of the number of objects; sub-regions on
// descendant schedulers are freed through rfree_sub events.
void Scheduler::do_rfree(Message& m, bool sub) {
  const std::uint64_t id = m[w_a0];
  Region* r = regions_.find(id);
  if (sub && r->parent != m[w_a1]) {
    // Stale child entry (the id was reused under another parent).
    Message d = make_msg(op_sub_done, m[w_origin], m[w_req]);
    return send_toward(static_cast<int>(m[w_origin]), std::move(d));
  }
  if (id == 0) return reply(m, MR_ERR_BAD_ARGUMENT);
  const std::uint64_t parent = r->parent;
  const bool parent_local = regions_.owns_region(parent);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> remote;
  regions_.destroy(id, remote);
  if (!parent_local && !sub) t_.post(topo_.parent(self_), make_msg(op_child_gone, 0, 0, {parent, id}));
  const std::uint64_t token = new_pending(m, sub);
  for (auto [child, its_parent] : remote) {
    int hop = -1;
    if (route_region(child, &hop) != Route::forward) continue;
    ++pending_[token].outstanding;
    t_.post(hop, make_msg(op_rfree_sub, static_cast<std::uint64_t>(self_), token, {child, its_parent}));
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
void Scheduler::start_pack(Message& m, bool sub) {
  std::vector<std::uint64_t> ids, objects;
  if (sub) {
    ids.push_back(m[w_a0]);
  } else {
    const std::uint64_t nr = std::min<std::uint64_t>(m[w_a0], m.size() - hdr_words);
    ids.assign(m.begin() + hdr_words, m.begin() + static_cast<std::ptrdiff_t>(hdr_words + nr));
    objects.assign(m.begin() + static_cast<std::ptrdiff_t>(hdr_words + nr), m.end());
  }
  const std::uint64_t token = new_pending(m, sub);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> remote;
  for (std::uint64_t id : ids) {
    int hop = -1;
    switch (route_region(id, &hop)) {
      case Route::local: regions_.pack(regions_.find(id), pending_[token].extents, remote); break;
      case Route::forward: remote.emplace_back(id, 0); break;
      case Route::error: pending_[token].status = MR_ERR_NO_REGION; break;
    }
  }
  for (auto [id, unused] : remote) {
    int hop = -1;
    if (route_region(id, &hop) != Route::forward) continue;
    ++pending_[token].outstanding;
    t_.post(hop, make_msg(op_pack_sub, static_cast<std::uint64_t>(self_), token, {id}));
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
        t_.post(hop, make_msg(op_info_sub, static_cast<std::uint64_t>(self_), token, {addr}));
        break;
      case Route::error: pending_[token].status = MR_ERR_INVALID_POINTER; break;
    }
  }
  finish_pending(token);
}

// op_info_sub at the owner of the address: the object's extent, or an error.
void Scheduler::info_sub(Message& m) {
  Message d = make_msg(op_sub_done, m[w_origin], m[w_req]);
  Region* r = regions_.region_of(m[w_a0]);
  const std::uint64_t size = r != nullptr ? r->pool.object_size(m[w_a0]) : 0;
  if (size == 0) {
    d[w_status] = MR_ERR_INVALID_POINTER;
  } else {
    d.push_back(m[w_a0]);
    d.push_back(size);
  }
  send_toward(static_cast<int>(m[w_origin]), std::move(d));
}

void Scheduler::do_alloc(Message& m) {
  Region* r = regions_.find(m[w_a0]);
  const std::uint64_t size = m[w_a1], n = m[w_a2];
  if (SlabPool::slot_size(size) == 0 || n == 0 || n > (1u << 24)) return reply(m, MR_ERR_BAD_ARGUMENT);
  std::vector<std::uint64_t> out;
  out.reserve(n);
  const LocalStatus st = regions_.alloc(r, size, n, out);
  if (st == LocalStatus::no_memory) {
    const std::uint64_t slot = SlabPool::slot_size(size);
    return park(m, ceil_div<std::uint64_t>(slot * n, slab_bytes) + SlabPool::slabs_for_slot(slot));
  }
  if (st != LocalStatus::ok) return reply(m, to_status(st));
  reply(m, MR_OK, {n}, out.data(), out.size());
}

void Scheduler::do_free(Message& m) {
  const FreeStatus st = regions_.free(m[w_a0]);
  reply(m, st == FreeStatus::ok ? MR_OK : MR_ERR_INVALID_POINTER);
}

void Scheduler::do_info(Message& m) {
  Region* r = regions_.region_of(m[w_a0]);
  const std::uint64_t size = r->pool.object_size(m[w_a0]);
  if (size == 0) return reply(m, MR_ERR_INVALID_POINTER);
  reply(m, MR_OK, {size, r->id});
}

void Scheduler::reply_stats(Message& m) {
  const auto target = static_cast<std::int64_t>(m[w_a0]);
  if (target < 0 || target >= topo_.nsched) return reply(m, MR_ERR_BAD_ARGUMENT);
  if (target != self_) return send_toward(static_cast<int>(target), std::move(m));
  const LocalStats s = regions_.stats();
  if constexpr (build::checked_build) {
    if (!regions_.check_invariants())
      std::fprintf(stderr, "manyalloc region: scheduler %d: invariant violated\n", self_);
  }
  const std::uint64_t words[] = {s.regions,      s.free_slabs, s.pool_slabs,           s.used_slabs, s.live_objects,
                                 s.live_bytes,   s.free_ids,   delegated_slabs_.total(), messages_};
  reply(m, MR_OK, {}, words, std::size(words));
}

// 5.2: a request that cannot be served for lack of memory or ids waits for
// the parent's refill; the top scheduler owns everything, so there it fails.
void Scheduler::park(Message& m, std::uint64_t need_slabs) {
  if (topo_.is_top(self_)) return reply(m, MR_ERR_NO_MEMORY);
  parked_.push_back(std::move(m));
  parked_need_ = std::max(parked_need_, need_slabs);
  check_refill();
}

void Scheduler::fail_parked() {
  std::deque<Message> q;
  q.swap(parked_);
  parked_need_ = 0;
  for (Message& m : q) {
    if (m[w_op] == op_mem_req) {
      // A child waiting on us: give it an empty grant.
      t_.post(static_cast<int>(m[w_origin]), make_msg(op_mem_grant, 0, 0, {0, 0}));
    } else {
      reply(m, MR_ERR_NO_MEMORY);
    }
  }
}

// 5.2 watermarks: below the low watermark (or with requests parked) ask the
// parent for enough pages and ids to get back to the high watermark, both in
// one message (piggy-backed refill).
void Scheduler::check_refill() {
  if (topo_.is_top(self_) || mem_outstanding_) return;
  const std::uint64_t slabs = regions_.free_slab_count(), ids = regions_.free_id_count();
  if (slabs >= slabs_lo_ && ids >= ids_lo_ && parked_.empty()) return;
  std::uint64_t want_slabs = slabs < slabs_hi_ ? slabs_hi_ - slabs : 0;
  want_slabs = std::max(want_slabs, parked_need_);
  const std::uint64_t want_ids = ids < ids_hi_ ? ids_hi_ - ids : 0;
  mem_outstanding_ = true;
  t_.post(topo_.parent(self_), make_msg(op_mem_req, static_cast<std::uint64_t>(self_), 0, {want_slabs, want_ids}));
}

void Scheduler::on_mem_req(Message& m, int src) {
  const std::uint64_t pages = ceil_div<std::uint64_t>(m[w_a0], slabs_per_page);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> slab_ranges;
  const std::uint64_t got = regions_.take_pages(pages, slab_ranges, 256);
  auto ids = regions_.take_ids(m[w_a1]);
  const bool short_pages = pages > 0 && got == 0, short_ids = m[w_a1] > 0 && ids.second == 0;
  if ((short_pages || short_ids) && !topo_.is_top(self_)) {
    // Nothing to give: return what was taken, wait for our own refill.
    for (auto [a, n] : slab_ranges) regions_.add_free_slabs(a, n);
    if (ids.second > 0) regions_.add_free_ids(ids.first, ids.second);
    m[w_origin] = static_cast<std::uint64_t>(src);
    return park(m, pages * slabs_per_page);
  }
  Message g = make_msg(op_mem_grant, 0, 0, {slab_ranges.size(), ids.second > 0 ? 1u : 0u});
  for (auto [a, n] : slab_ranges) {
    delegated_slabs_.insert(a, n, static_cast<std::uint64_t>(src));
    g.push_back(a);
    g.push_back(n);
  }
  if (ids.second > 0) {
    delegated_ids_.insert(ids.first, ids.second, static_cast<std::uint64_t>(src));
    g.push_back(ids.first);
    g.push_back(ids.second);
  }
  t_.post(src, std::move(g));
}

void Scheduler::on_mem_grant(Message& m) {
  mem_outstanding_ = false;
  const std::uint64_t nslab = m[w_a0], nid = m[w_a1];
  std::size_t i = hdr_words;
  for (std::uint64_t k = 0; k < nslab; ++k, i += 2) {
    regions_.add_free_slabs(m[i], m[i + 1]);
    granted_slabs_.insert(m[i], m[i + 1], {});
  }
  for (std::uint64_t k = 0; k < nid; ++k, i += 2) {
    regions_.add_free_ids(m[i], m[i + 1]);
    granted_ids_.insert(m[i], m[i + 1], {});
  }
  if (nslab == 0 && nid == 0) return fail_parked();
  retry_parked();
}

// Retry what was waiting; whatever still cannot run parks again.
void Scheduler::retry_parked() {
  std::deque<Message> q;
  q.swap(parked_);
  parked_need_ = 0;
  for (Message& p : q) {
    if (p[w_op] == op_mem_req)
      on_mem_req(p, static_cast<int>(p[w_origin]));
    else
      dispatch(p, self_);
  }
}

// Flow-back (M1-M3 in invariants.hpp), the 5.2 watermarks read upward: past
// slabs_return_ free slabs, the whole pages of the free ranges (never a slab
// of a region) go back to the parent until slabs_hi_ are left. Not while a
// refill is outstanding or requests are parked: memory is short then, and a
// grant never crosses a return of the same child.
void Scheduler::check_return() {
  if (topo_.is_top(self_) || mem_outstanding_ || !parked_.empty()) return;
  const std::uint64_t slabs = regions_.free_slab_count();
  if (slabs <= slabs_return_ || slabs == return_scanned_at_) return;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  const std::uint64_t pages = regions_.take_free_pages((slabs - slabs_hi_) / slabs_per_page, ranges, max_return_ranges);
  if (pages == 0) {
    return_scanned_at_ = slabs;
    return;
  }
  return_scanned_at_ = ~std::uint64_t{0};
  Message r = make_msg(op_mem_return, static_cast<std::uint64_t>(self_), 0, {ranges.size()});
  for (auto [a, n] : ranges) {
    // M1: from here the range is the parent's; this scheduler neither
    // routes to it nor hands it out (S1: granted = L2 + L3 + delegated).
    if (!granted_slabs_.erase(a, n)) flowback_violation(self_, "were not granted to this scheduler", a, n);
    r.push_back(a);
    r.push_back(n);
  }
  t_.post(topo_.parent(self_), std::move(r));
}

// M2: a returned range must be delegated to the child that returns it, as a
// whole; it leaves the delegation map and joins the free ranges (L3), where
// parked requests (a child's refill included) may take it at once.
void Scheduler::on_mem_return(Message& m, int src) {
  const std::uint64_t nslab = m[w_a0];
  if (m.size() != hdr_words + 2 * nslab) flowback_violation(self_, "came in a malformed message", 0, 0);
  for (std::size_t i = hdr_words; i + 1 < m.size(); i += 2) {
    const std::uint64_t a = m[i], n = m[i + 1];
    const auto d = delegated_slabs_.find(a);
    if (!d || *d.value != static_cast<std::uint64_t>(src) || a + n > d.start + d.length)
      flowback_violation(self_, "were not delegated to the child that returned them", a, n);
    delegated_slabs_.erase(a, n);
    regions_.add_free_slabs(a, n);
    release_to_os(a, n);
  }
  if (!parked_.empty()) retry_parked();
}

// M4: pages that came back to the top scheduler are wanted by no subtree;
// with a shared GAS their memory goes back to the operating system (for
// every rank of the top's host). A refusal is reported once, and the pages
// then stay allocated as before.
void Scheduler::release_to_os(std::uint64_t first, std::uint64_t n) {
  if (!topo_.is_top(self_) || !gas_.shared || !release_returned_) return;
  if (release_gas_slabs(gas_, first, n)) return;
  release_returned_ = false;
  std::fprintf(stderr,
               "manyalloc region: scheduler %d: madvise(MADV_REMOVE) of returned pages failed (%s); free pages "
               "stay allocated in memory from now on\n",
               self_, std::strerror(errno));
}

void Scheduler::report_load() {
  if (topo_.is_top(self_)) return;
  std::uint64_t load = regions_.region_count();
  for (std::uint64_t l : child_load_) load += l;
  const std::uint64_t diff = load > reported_load_ ? load - reported_load_ : reported_load_ - load;
  if (diff < static_cast<std::uint64_t>(tuning_.load_threshold)) return;
  reported_load_ = load;
  t_.post(topo_.parent(self_), make_msg(op_load, 0, 0, {load}));
}

// Shutdown: workers report done to their leaf, schedulers to their parent
// once their whole subtree is done; the top then sends exit downwards.
void Scheduler::on_done() {
  if (done_count_ != topo_.child_count(self_)) return;
  if (topo_.is_top(self_)) return on_exit();
  t_.post(topo_.parent(self_), make_msg(op_done, 0, 0));
}

void Scheduler::on_exit() {
  if (!topo_.is_leaf(self_))
    for (int c = 0; c < topo_.fanout; ++c) t_.post(topo_.first_child(self_) + c, make_msg(op_exit, 0, 0));
  exit_ = true;
}

}  // namespace manyalloc::region::detail
