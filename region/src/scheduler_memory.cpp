// Memory and ids between schedulers ([Lyberis2012] section 5.2): parked
// requests, refills (mem_req / mem_grant), flow-back of whole free pages
// (mem_return, M1-M4 in invariants.hpp) and subtree load reports.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "manyalloc/common/math.hpp"
#include "manyalloc/region/region.h"
#include "scheduler.hpp"

namespace manyalloc::region::detail {

namespace {
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

// 5.2: a request that cannot be served for lack of memory or ids waits for
// the parent's refill; the top scheduler owns everything, so there it fails.
void SchedulerCore::park(Message&& m, std::uint64_t need_slabs) {
  if (topo_.is_top(self_) || parent_failed_) {
    // Nothing will come from above (F3 when the parent failed): an empty
    // grant to a child, the error to a worker.
    if (envelope(m).op == op_mem_req) return post(static_cast<int>(MemReq::decode(m).from), MemGrant{}.encode());
    if (parent_failed_)
      return send_toward(envelope(m).origin,
                         FailedReply{reply_to_of(m), MR_ERR_PEER_FAILED, topo_.parent(self_)}.encode());
    return reply(reply_to_of(m), MR_ERR_NO_MEMORY);
  }
  parked_.push_back(std::move(m));
  parked_need_ = std::max(parked_need_, need_slabs);
  check_refill();
}

void SchedulerCore::fail_parked(std::uint64_t status) {
  std::deque<Message> q;
  q.swap(parked_);
  parked_need_ = 0;
  for (Message& m : q) {
    if (envelope(m).op == op_mem_req) {
      // A child waiting on us: give it an empty grant.
      post(static_cast<int>(MemReq::decode(m).from), MemGrant{}.encode());
    } else {
      reply(reply_to_of(m), status);
    }
  }
}

// 5.2 watermarks: below the low watermark (or with requests parked) ask the
// parent for enough pages and ids to get back to the high watermark, both in
// one message (piggy-backed refill).
void SchedulerCore::check_refill() {
  if (topo_.is_top(self_) || mem_outstanding_ || parent_failed_) return;
  const std::uint64_t slabs = regions_.free_slab_count(), ids = regions_.free_id_count();
  if (slabs >= slabs_lo_ && ids >= ids_lo_ && parked_.empty()) return;
  std::uint64_t want_slabs = slabs < slabs_hi_ ? slabs_hi_ - slabs : 0;
  want_slabs = std::max(want_slabs, parked_need_);
  const std::uint64_t want_ids = ids < ids_hi_ ? ids_hi_ - ids : 0;
  mem_outstanding_ = true;
  post(topo_.parent(self_), MemReq{static_cast<std::uint64_t>(self_), want_slabs, want_ids}.encode());
}

// raw: r encoded; parked as it is when nothing can be given yet.
void SchedulerCore::on_mem_req(const MemReq& r, Message& raw) {
  const int child = static_cast<int>(r.from);
  const std::uint64_t pages = ceil_div<std::uint64_t>(r.slabs, slabs_per_page);
  MemGrant g;
  regions_.take_pages(pages, g.slabs, 256);
  auto ids = regions_.take_ids(r.ids);
  const bool short_pages = pages > 0 && g.slabs.empty(), short_ids = r.ids > 0 && ids.second == 0;
  if ((short_pages || short_ids) && !topo_.is_top(self_)) {
    // Nothing to give: return what was taken, wait for our own refill.
    for (auto [a, n] : g.slabs) regions_.add_free_slabs(a, n);
    if (ids.second > 0) regions_.add_free_ids(ids.first, ids.second);
    return park(std::move(raw), pages * slabs_per_page);
  }
  for (auto [a, n] : g.slabs) delegated_slabs_.insert(a, n, static_cast<std::uint64_t>(child));
  if (ids.second > 0) {
    delegated_ids_.insert(ids.first, ids.second, static_cast<std::uint64_t>(child));
    g.ids.emplace_back(ids.first, ids.second);
  }
  post(child, g.encode());
}

void SchedulerCore::on_mem_grant(const MemGrant& g) {
  mem_outstanding_ = false;
  for (auto [a, n] : g.slabs) {
    regions_.add_free_slabs(a, n);
    granted_slabs_.insert(a, n, {});
  }
  for (auto [a, n] : g.ids) {
    regions_.add_free_ids(a, n);
    granted_ids_.insert(a, n, {});
  }
  if (g.slabs.empty() && g.ids.empty()) return fail_parked(MR_ERR_NO_MEMORY);
  retry_parked();
}

// Retry what was waiting; whatever still cannot run parks again.
void SchedulerCore::retry_parked() {
  std::deque<Message> q;
  q.swap(parked_);
  parked_need_ = 0;
  for (Message& p : q) {
    if (envelope(p).op == op_mem_req)
      on_mem_req(MemReq::decode(p), p);
    else
      dispatch(p, self_);
  }
}

// Flow-back (M1-M3 in invariants.hpp), the 5.2 watermarks read upward: past
// slabs_return_ free slabs, the whole pages of the free ranges (never a slab
// of a region) go back to the parent until slabs_hi_ are left. Not while a
// refill is outstanding or requests are parked: memory is short then, and a
// grant never crosses a return of the same child.
void SchedulerCore::check_return() {
  if (topo_.is_top(self_) || mem_outstanding_ || !parked_.empty()) return;
  const std::uint64_t slabs = regions_.free_slab_count();
  if (slabs <= slabs_return_ || slabs == return_scanned_at_) return;
  MemReturn r{static_cast<std::uint64_t>(self_), {}, true};
  const std::uint64_t pages =
      regions_.take_free_pages((slabs - slabs_hi_) / slabs_per_page, r.slabs, max_return_ranges);
  if (pages == 0) {
    return_scanned_at_ = slabs;
    return;
  }
  return_scanned_at_ = ~std::uint64_t{0};
  for (auto [a, n] : r.slabs) {
    // M1: from here the range is the parent's; this scheduler neither
    // routes to it nor hands it out (S1: granted = L2 + L3 + delegated).
    if (!granted_slabs_.erase(a, n)) flowback_violation(self_, "were not granted to this scheduler", a, n);
  }
  post(topo_.parent(self_), r.encode());
}

// M2: a returned range must be delegated to the child that returns it, as a
// whole; it leaves the delegation map and joins the free ranges (L3), where
// parked requests (a child's refill included) may take it at once.
void SchedulerCore::on_mem_return(const MemReturn& r, int src) {
  if (!r.complete) flowback_violation(self_, "came in a malformed message", 0, 0);
  for (auto [a, n] : r.slabs) {
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
// every rank of the top's host) through tuning_.release_pages. A refusal is
// reported once, and the pages then stay allocated as before.
void SchedulerCore::release_to_os(std::uint64_t first, std::uint64_t n) {
  if (!topo_.is_top(self_) || !gas_.shared || !release_returned_ || tuning_.release_pages == nullptr) return;
  if (tuning_.release_pages(gas_, first, n)) return;
  release_returned_ = false;
  std::fprintf(stderr,
               "manyalloc region: scheduler %d: madvise(MADV_REMOVE) of returned pages failed (%s); free pages "
               "stay allocated in memory from now on\n",
               self_, std::strerror(errno));
}

void SchedulerCore::report_load() {
  if (topo_.is_top(self_)) return;
  std::uint64_t load = regions_.region_count();
  for (std::size_t c = 0; c < child_load_.size(); ++c)
    if (dead_[static_cast<std::size_t>(topo_.first_child(self_)) + c] == 0) load += child_load_[c];
  const std::uint64_t diff = load > reported_load_ ? load - reported_load_ : reported_load_ - load;
  if (diff < static_cast<std::uint64_t>(tuning_.load_threshold)) return;
  reported_load_ = load;
  post(topo_.parent(self_), LoadReport{load}.encode());
}

}  // namespace manyalloc::region::detail
