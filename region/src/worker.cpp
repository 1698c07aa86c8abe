// Worker side of the [Lyberis2012] Figure 1 API: every call becomes a request to the
// worker's leaf scheduler ([Lyberis2012] section 2). Transfers between workers
// (send/recv, their non-blocking forms, barrier) are in transfers.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "last_error.hpp"
#include "manyalloc/region/region.h"
#include "runtime.hpp"
#include "slab_pool.hpp"

namespace manyalloc::region::detail {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

mr_status Runtime::peer_failure(int failed) const {
  if (failed < 0 || failed >= topo.world)
    return fail(MR_ERR_PEER_FAILED, "%s: a scheduler on the request's way found a rank it needed failed", call);
  char role[96];
  if (failed == leaf)
    std::snprintf(role, sizeof role, "scheduler rank %d (this worker's leaf)", failed);
  else if (topo.is_scheduler(failed))
    std::snprintf(role, sizeof role, "scheduler rank %d", failed);
  else
    std::snprintf(role, sizeof role, "worker %d (rank %d)", topo.worker_index(failed), failed);
  const std::string& why = watch.why(failed);
  return fail(MR_ERR_PEER_FAILED, "%s: %s has failed: %s", call, role,
              why.empty() ? "reported by another rank" : why.c_str());
}

bool Runtime::take_notice(const Message& m, int* failed) {
  if (!well_formed(m) || envelope(m).op != op_failed) return false;
  const FailedNotice f = FailedNotice::decode(m);
  if (failed != nullptr) *failed = -1;
  if (f.failed_rank < static_cast<std::uint64_t>(topo.world)) {
    char why[160];
    std::snprintf(why, sizeof why, "found by rank %llu and reported to this worker by its leaf scheduler",
                  static_cast<unsigned long long>(f.found_by));
    watch.note_failed(static_cast<int>(f.failed_rank), why);
    if (failed != nullptr) *failed = static_cast<int>(f.failed_rank);
  }
  return true;
}

void Runtime::take_notices() {
  Message m;
  while (transport->try_recv_from(leaf, m)) take_notice(m);  // anything else: a late reply, dropped
}

namespace {
// Replies of at most this many words are waited for with a posted receive
// (MpiTransport::start_recv_from): 512 bytes, below the eager limit of
// every MPI transport.
constexpr std::size_t small_reply_words = 64;

// The most words the answer to `req` can have, or 0 when it has no bound
// known here (a pack's extents). Every reply but the answer's own payload
// (an error, a FailedReply, a FailedNotice from the leaf) is a bare frame.
std::size_t reply_bound(const Message& req) {
  switch (envelope(req).op) {
    case op_alloc: return wire::header_words + AllocRequest::decode(req).count;
    case op_stats: return wire::header_words + StatsReply::words;
    case op_ralloc:
    case op_rfree:
    case op_free:
    case op_info: return wire::header_words;
    default: return 0;
  }
}
}  // namespace

// The RPC waits by polling, so that it notices a failed leaf (W3: the
// watch is checked every 1024 empty polls). A failure heard of while it
// waits (F5) may have taken the request with it: the reply then gets
// rpc_grace_s to come (it does within microseconds when its path is alive)
// before the call fails. Replies to earlier calls that failed so are
// recognised by their sequence number and dropped.
//
// A short answer (reply_bound) is waited for with a posted receive, which
// MPI tests more cheaply than a probe per poll, when no failure was known
// as the call began: then nothing but this call's answer and notices (bare
// frames) can come from the leaf (a late reply needs an earlier call that
// failed). Once a failure was known before the call, a late reply of any
// length may come, and the RPC probes for each message as it comes.
Message Runtime::rpc(const Message& req) {
  const double t0 = now_seconds();
  const std::uint64_t want = envelope(req).req;
  Message rep;
  bool answered = false;
  int heard = -1;  // a scheduler failure heard of during this call
  if (!watch.failed(leaf)) {
    // Non-blocking, so that a request above MPI's eager size cannot wait
    // forever on a dead leaf.
    transport->post(leaf, req);
    const std::size_t bound = reply_bound(req);
    bool fast = bound != 0 && bound <= small_reply_words && !watch.any_failed();
    bool posted = fast && transport->start_recv_from(leaf, small_reply_words);
    // The next message from the leaf, if one has come. A receive that MPI
    // failed (the watch has it) leaves the RPC to probe.
    auto next = [&](Message& m) {
      if (!posted) return transport->try_recv_from(leaf, m);
      const int got = transport->test_recv_from(m);
      if (got == 0) return false;
      posted = false;
      fast = got > 0;
      return got > 0;
    };
    double give_up = 0;
    for (unsigned spin = 1;; ++spin) {
      transport->poll();
      if (next(rep)) {
        int named = -1;
        if (take_notice(rep, &named)) {
          // Only a scheduler can have taken the request with it (workers
          // forward nothing): then the answer gets the grace period.
          if (named >= 0 && topo.is_scheduler(named)) {
            heard = named;
            if (give_up == 0) give_up = now_seconds() + rpc_grace_s;
          }
        } else if (well_formed(rep) && envelope(rep).req == want) {
          answered = true;
          break;
        }
        // Not the answer (a notice came first): post again for what follows.
        if (fast) posted = transport->start_recv_from(leaf, small_reply_words);
        continue;
      }
      if ((spin & 1023) != 0) continue;
      watch.poll();
      if (watch.failed(leaf)) break;
      if (give_up != 0 && now_seconds() > give_up) break;
    }
    if (posted) {
      // Unanswered (the leaf failed, or the grace period ended): what the
      // receive took meanwhile is a notice (kept) or the answer, too late
      // (dropped, as take_notices() drops one that comes later).
      Message late;
      if (transport->cancel_recv_from(late)) take_notice(late);
    }
    if (watch.failed(leaf)) transport->forget_sends_to(leaf);
  }
  sched_s += now_seconds() - t0;
  if (!answered) {
    peer_failure(watch.failed(leaf) ? leaf : heard);
    return StatusReply{ReplyTo{}, MR_ERR_PEER_FAILED}.encode();
  }
  if (StatusReply::decode(rep).status == MR_ERR_PEER_FAILED)
    peer_failure(static_cast<int>(FailedReply::decode(rep).failed_rank));
  return rep;
}

mr_status enter(const char* call) {
  Runtime& rt = runtime();
  if (!rt.initialized) return rt.not_initialized(call);
  if (!rt.on_owner_thread()) return rt.wrong_thread(call);
  rt.call = call;
  if (rt.topo.is_scheduler(rt.rank))
    return fail(MR_ERR_NOT_WORKER, "%s: rank %d is a scheduler (ranks 0 to %d are; only workers make this call)",
                call, rt.rank, rt.topo.nsched - 1);
  return MR_OK;
}

namespace {
// The status of any reply (every reply carries one, in the same place).
mr_status status_of(const Message& m) { return static_cast<mr_status>(StatusReply::decode(m).status); }

// Object size / owner for mr_realloc.
mr_status object_info(void* p, std::uint64_t* size, std::uint64_t* region) {
  Runtime& rt = runtime();
  const InfoReply r = InfoReply::decode(rt.rpc(InfoRequest{rt.next_reply_to(), reinterpret_cast<std::uint64_t>(p)}.encode()));
  if (r.status != MR_OK) return static_cast<mr_status>(r.status);
  *size = r.slot_bytes;
  *region = r.region;
  return MR_OK;
}

mr_status ralloc(mr_rid_t parent, int level_hint, mr_rid_t* out) {
  if (mr_status s = enter("mr_ralloc"); s != MR_OK) return s;
  if (out == nullptr) return MR_ERR_BAD_ARGUMENT;
  Runtime& rt = runtime();
  const RallocReply r = RallocReply::decode(rt.rpc(RallocRequest{rt.next_reply_to(), parent, level_hint}.encode()));
  if (r.status == MR_OK) *out = r.region;
  return static_cast<mr_status>(r.status);
}

// With private memory (copy mode, MANYALLOC_REGION_FORCE_REMOTE, or a host
// without a shared object) the pages this worker wrote in the region are
// its own, and no scheduler can give them back to the operating system
// (gas.hpp): the worker asks for the region's extents first (a pack of its
// sub-regions' whole pools, wherever they are: slabs in use and the free
// slabs of objects freed one by one) and drops their pages once
// the free is answered, so that its footprint follows its live regions.
// Between the pack and the free a scheduler may move free slabs of those
// pools to another region (a trim); dropping this worker's pages of them
// is still safe: it has called nothing in between, so it holds nothing
// there (its pages of a slab it does not hold are stale copies at most).
// A worker's copies of regions it has sent or received and no longer holds
// stay in its memory (region/README.md, "Known limits").
mr_status rfree(mr_rid_t region) {
  if (mr_status s = enter("mr_rfree"); s != MR_OK) return s;
  if (region == MR_ROOT_REGION) return MR_ERR_BAD_ARGUMENT;
  Runtime& rt = runtime();
  std::vector<Extent> drop;
  if (!rt.gas.shared) {
    // The pack's failure is not the free's: the free below answers for
    // itself (the same status for a stale id or a failed leaf).
    const LastError before = save_last_error();
    PackReply r = PackReply::decode(rt.rpc(PackRequest{rt.next_reply_to(), {region}, {}, true}.encode()));
    restore_last_error(before);
    if (r.status == MR_OK) drop = std::move(r.extents);
  }
  const mr_status s = status_of(rt.rpc(RfreeRequest{rt.next_reply_to(), region}.encode()));
  // A refused madvise (locked pages) leaves the pages in memory: the free
  // itself has succeeded, so it is not an error of the call.
  if (s == MR_OK)
    for (const Extent& e : drop) (void)drop_private_pages(rt.gas, e.addr, e.bytes);
  return s;
}

mr_status balloc(size_t size, mr_rid_t region, int n, void** objects) {
  if (mr_status s = enter("mr_balloc"); s != MR_OK) return s;
  if (n <= 0 || objects == nullptr || SlabPool::slot_size(size) == 0) return MR_ERR_BAD_ARGUMENT;
  Runtime& rt = runtime();
  const AllocReply r =
      AllocReply::decode(rt.rpc(AllocRequest{rt.next_reply_to(), region, size, static_cast<std::uint64_t>(n)}.encode()));
  if (r.status != MR_OK) return static_cast<mr_status>(r.status);
  // A reply with fewer addresses than asked would be a scheduler bug: no
  // object is handed out then, and the call fails.
  if (r.addresses.size() != static_cast<std::size_t>(n)) return MR_ERR_NO_MEMORY;
  for (int i = 0; i < n; ++i) objects[i] = reinterpret_cast<void*>(r.addresses[static_cast<std::size_t>(i)]);
  return MR_OK;
}

mr_status alloc(size_t size, mr_rid_t region, void** out) {
  if (mr_status s = enter("mr_alloc"); s != MR_OK) return s;
  if (out == nullptr) return MR_ERR_BAD_ARGUMENT;
  return balloc(size, region, 1, out);
}

mr_status free_object(void* ptr) {
  if (mr_status s = enter("mr_free"); s != MR_OK) return s;
  if (ptr == nullptr) return MR_OK;
  Runtime& rt = runtime();
  return status_of(rt.rpc(FreeRequest{rt.next_reply_to(), reinterpret_cast<std::uint64_t>(ptr)}.encode()));
}

mr_status realloc_object(void* old_ptr, size_t new_size, mr_rid_t new_region, void** out) {
  if (mr_status s = enter("mr_realloc"); s != MR_OK) return s;
  if (out == nullptr) return MR_ERR_BAD_ARGUMENT;
  if (old_ptr == nullptr) return alloc(new_size, new_region, out);
  const std::uint64_t new_slot = SlabPool::slot_size(new_size);
  if (new_slot == 0) return MR_ERR_BAD_ARGUMENT;
  std::uint64_t old_slot = 0, old_region = 0;
  if (mr_status s = object_info(old_ptr, &old_slot, &old_region); s != MR_OK) return s;
  // Same region and the slot still fits without wasting half of it: keep.
  if (old_region == new_region && new_slot <= old_slot && new_slot * 2 > old_slot) {
    *out = old_ptr;
    return MR_OK;
  }
  void* fresh = nullptr;
  if (mr_status s = alloc(new_size, new_region, &fresh); s != MR_OK) return s;
  std::memcpy(fresh, old_ptr, std::min<std::uint64_t>(old_slot, new_size));
  if (mr_status s = free_object(old_ptr); s != MR_OK) return s;
  *out = fresh;
  return MR_OK;
}

mr_status sched_stats_get(int scheduler, mr_sched_stats* out) {
  Runtime& rt = runtime();
  if (mr_status s = enter("mr_sched_stats_get"); s != MR_OK) return s;
  if (out == nullptr || scheduler < 0 || scheduler >= rt.topo.nsched) return MR_ERR_BAD_ARGUMENT;
  const StatsReply r = StatsReply::decode(rt.rpc(StatsRequest{rt.next_reply_to(), scheduler}.encode()));
  if (r.status != MR_OK) return static_cast<mr_status>(r.status);
  *out = mr_sched_stats{r.regions,    r.free_slabs, r.pool_slabs,      r.used_slabs, r.live_objects,
                        r.live_bytes, r.free_ids,   r.delegated_slabs, r.messages};
  return MR_OK;
}

}  // namespace

}  // namespace manyalloc::region::detail

using namespace manyalloc::region::detail;

// The C API: each call returns through finish(), which leaves a reason for
// mr_last_error when it fails.
extern "C" {

mr_status mr_ralloc(mr_rid_t parent, int level_hint, mr_rid_t* out) {
  return finish("mr_ralloc", ralloc(parent, level_hint, out));
}
mr_status mr_rfree(mr_rid_t region) { return finish("mr_rfree", rfree(region)); }
mr_status mr_balloc(size_t size, mr_rid_t region, int n, void** objects) {
  return finish("mr_balloc", balloc(size, region, n, objects));
}
mr_status mr_alloc(size_t size, mr_rid_t region, void** out) { return finish("mr_alloc", alloc(size, region, out)); }
mr_status mr_free(void* ptr) { return finish("mr_free", free_object(ptr)); }
mr_status mr_realloc(void* old_ptr, size_t new_size, mr_rid_t new_region, void** out) {
  return finish("mr_realloc", realloc_object(old_ptr, new_size, new_region, out));
}
mr_status mr_sched_stats_get(int scheduler, mr_sched_stats* out) {
  return finish("mr_sched_stats_get", sched_stats_get(scheduler, out));
}

int mr_zero_copy(int peer_worker) {
  Runtime& rt = runtime();
  if (!rt.is_worker() || peer_worker < 0 || peer_worker >= rt.topo.nworkers) return 0;
  return rt.zero_copy_with(rt.topo.worker_rank(peer_worker)) ? 1 : 0;
}

void mr_times(double* sched_comm_s, double* worker_comm_s, double* barrier_s) {
  const Runtime& rt = runtime();
  const bool mine = rt.initialized && rt.on_owner_thread();
  if (sched_comm_s) *sched_comm_s = mine ? rt.sched_s : 0;
  if (worker_comm_s) *worker_comm_s = mine ? rt.worker_s : 0;
  if (barrier_s) *barrier_s = mine ? rt.barrier_s : 0;
}

void mr_times_reset(void) {
  Runtime& rt = runtime();
  if (rt.initialized && !rt.on_owner_thread()) return;
  rt.sched_s = rt.worker_s = rt.barrier_s = 0;
}

}  // extern "C"
