// Worker-to-worker transfers ([Lyberis2012] Figure 1 sys_send / sys_recv) and
// their non-blocking forms. The rule (invariants.hpp, X1): nothing a worker
// does in a transfer waits for another worker to make a call. Sends post
// the header and the bytes as non-blocking messages and return; every wait
// of the library (mr_recv, mr_wait, mr_barrier, mr_finalize) runs
// progress(), which takes in every header that has arrived, from any
// worker, and posts the receives of its bytes straight into the GAS at
// once. A posted send therefore completes as soon as its receiver is inside
// any library wait, whatever the sizes and the order of the calls.
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "last_error.hpp"
#include "manyalloc/region/region.h"
#include "runtime.hpp"

namespace manyalloc::region::detail {

namespace {

// Header of a transfer: [status, nregions, nobjects, nextents, flags,
//                        region ids..., object addresses..., (addr, bytes)...]
// flags bit 0 (hdr_zero_copy): the peer shares this host's GAS object, no
// bytes follow; otherwise the extents' bytes follow (MpiTransport::start_send).
constexpr std::uint64_t hdr_words_xfer = 5;
constexpr std::uint64_t hdr_zero_copy = 1;

bool overlap(const std::vector<Extent>& a, const std::vector<Extent>& b) {
  for (const Extent& x : a)
    for (const Extent& y : b)
      if (x.addr < y.addr + y.bytes && y.addr < x.addr + x.bytes) return true;
  return false;
}

void complete_out(TransferState& ts, std::list<TransferState::Out>::iterator it) {
  if (it->req != 0) {
    auto r = ts.reqs.find(it->req);
    if (r != ts.reqs.end()) r->second.done = true;
  }
  ts.outs.erase(it);
}

// A header arrived from `peer`: note it and post the receives of its bytes.
void accept(Runtime& rt, TransferState& ts, int peer, std::vector<std::uint64_t>&& hdr) {
  TransferState::In in;
  in.peer = peer;
  in.hdr = std::move(hdr);
  ++ts.taken_from[static_cast<std::size_t>(peer)];
  const std::vector<std::uint64_t>& h = in.hdr;
  const auto status = static_cast<mr_status>(h[0]);
  const std::uint64_t nr = h[1], no = h[2], ne = h[3];
  in.zero_copy = (h[4] & hdr_zero_copy) != 0;
  const std::size_t er = hdr_words_xfer + nr + no;
  in.extents.resize(ne);
  for (std::uint64_t i = 0; i < ne; ++i) {
    in.extents[i] = {h[er + 2 * i], h[er + 2 * i + 1]};
    in.in_gas = in.in_gas && in.extents[i].addr >= rt.gas.base &&
                in.extents[i].addr + in.extents[i].bytes <= rt.gas.base + rt.gas.bytes;
  }
  // Both sides derive the mode from the same host table (GasMapping); a
  // zero-copy header from a peer that does not share our memory would mean
  // the data is not here.
  in.mode_ok = in.zero_copy == rt.zero_copy_with(rt.topo.worker_rank(peer));
  // The sender sends the bytes whenever its status is ok and it did not
  // choose zero copy: receive them even when we reject the extents, so the
  // messages do not stay behind to be matched by a later transfer.
  if (status == MR_OK && !in.zero_copy && !in.extents.empty()) {
    // Regions coming back to this worker while its own send of them is
    // still in flight (MPI has not reported that send complete): finish
    // that send first, so that no receive writes a buffer MPI may still
    // read. The peer has taken those bytes (it owned them to send them
    // back), so this needs no call of any other worker.
    for (auto it = ts.outs.begin(); it != ts.outs.end();) {
      auto cur = it++;
      if (!overlap(cur->extents, in.extents)) continue;
      // The send completes unless its peer fails (its operation then never
      // does): the bytes stay where they are, taken as they come.
      bool sent = true;
      for (unsigned spin = 1; !rt.transport->test_op(cur->op); ++spin) {
        if ((spin & 1023) != 0) continue;
        rt.watch.poll();
        if (rt.watch.failed(rt.topo.worker_rank(cur->peer))) {
          sent = false;
          break;
        }
      }
      if (sent) complete_out(ts, cur);
    }
    in.op = rt.transport->start_recv(peer, in.extents, !in.in_gas);
  } else {
    in.done = true;
  }
  ts.ins.push_back(std::move(in));
}

// Writes a completed receive's outputs; its status.
mr_status deliver(Runtime& rt, TransferState::Req& q, const TransferState::In& in) {
  if (q.source_out != nullptr) *q.source_out = in.peer;
  const std::vector<std::uint64_t>& h = in.hdr;
  const auto status = static_cast<mr_status>(h[0]);
  // No fail() here: progress() runs inside other calls, whose last error
  // this must not touch; mr_wait/mr_recv's finish() names the code.
  if (status != MR_OK) return status;
  if (!in.in_gas || !in.mode_ok) return MR_ERR_INVALID_POINTER;
  if (in.zero_copy) rt.prefault.populate(in.extents);
  const std::uint64_t nr = h[1], no = h[2];
  if (q.num_regions != nullptr) *q.num_regions = static_cast<int>(nr);
  if (q.num_objects != nullptr) *q.num_objects = static_cast<int>(no);
  const auto max_r = static_cast<std::uint64_t>(std::max(q.max_regions, 0));
  const auto max_o = static_cast<std::uint64_t>(std::max(q.max_objects, 0));
  for (std::uint64_t i = 0; i < nr && i < max_r; ++i)
    if (q.regions != nullptr) q.regions[i] = h[hdr_words_xfer + i];
  for (std::uint64_t i = 0; i < no && i < max_o; ++i)
    if (q.objects != nullptr) q.objects[i] = reinterpret_cast<void*>(h[hdr_words_xfer + nr + i]);
  if (nr > max_r || no > max_o) return MR_ERR_TRUNCATED;
  return MR_OK;
}

// One round of progress: sends that completed, headers that arrived,
// bytes that came in, receive requests matched and completed. Never blocks
// on another worker. True when anything moved.
bool progress() {
  Runtime& rt = runtime();
  TransferState& ts = rt.xfers;
  bool moved = false;
  for (auto it = ts.outs.begin(); it != ts.outs.end();) {
    auto cur = it++;
    if (rt.transport->test_op(cur->op)) {
      complete_out(ts, cur);
      moved = true;
    }
  }
  std::vector<std::uint64_t> hdr;
  for (int peer; (peer = rt.transport->try_recv_header(hdr)) >= 0;) {
    accept(rt, ts, peer, std::move(hdr));
    hdr.clear();
    moved = true;
  }
  for (TransferState::In& in : ts.ins)
    if (!in.done && rt.transport->test_op(in.op)) in.done = moved = true;
  // Receive requests in posting order take the earliest unclaimed arrival
  // from their source; a matched one completes when its bytes are in.
  for (auto& [id, q] : ts.reqs) {
    if (q.send || q.done) continue;
    if (!q.matched) {
      for (auto in = ts.ins.begin(); in != ts.ins.end(); ++in)
        if (!in->claimed && (q.source == MR_ANY_WORKER || q.source == in->peer)) {
          in->claimed = q.matched = true;
          q.in = in;
          break;
        }
    }
    if (q.matched && q.in->done) {
      q.result = deliver(rt, q, *q.in);
      q.done = moved = true;
      ts.ins.erase(q.in);
    }
  }
  return moved;
}

// The failed world rank a wait on `peer` (a worker index, or MR_ANY_WORKER:
// any worker may be needed) depends on, or -1 (region.h, "Failures").
int failed_needed(const Runtime& rt, int peer) {
  if (peer != MR_ANY_WORKER) {
    const int r = rt.topo.worker_rank(peer);
    return rt.watch.failed(r) ? r : -1;
  }
  if (!rt.watch.any_failed()) return -1;
  for (int w = 0; w < rt.topo.nworkers; ++w)
    if (rt.watch.failed(rt.topo.worker_rank(w))) return rt.topo.worker_rank(w);
  return -1;
}

// MR_ERR_PEER_FAILED with its reason when a wait on `peer` cannot end, else MR_OK.
mr_status check_needed(Runtime& rt, int peer) {
  if (const int r = failed_needed(rt, peer); r >= 0) return rt.peer_failure(r);
  if (!rt.watch.broken().empty()) return fail(MR_ERR_PEER_FAILED, "%s: %s", rt.call, rt.watch.broken().c_str());
  return MR_OK;
}

// How long a wait spins on progress() after the last movement before it
// yields the core at every idle round. A header or a barrier step that
// comes within this time is seen at once (each round of a non-blocking
// collective advances only inside a test); past it, ranks that share cores
// when oversubscribed get them.
constexpr double quiet_spin_s = 20e-6;

// Spins on progress() until `ready`; once nothing has moved for
// quiet_spin_s it yields the core at every idle round. Every 256 idle
// rounds the watch is checked (W3): a wait that depends on a failed worker
// (`peer`, as in failed_needed) ends with MR_ERR_PEER_FAILED instead of
// spinning forever. `peer` may also be a callable that names it as the
// wait goes on.
template <class F, class P>
mr_status progress_until(F ready, P peer) {
  Runtime& rt = runtime();
  double quiet_since = 0;  // 0: something moved in the last round
  for (unsigned idle = 0; !ready();) {
    if (progress()) {
      quiet_since = 0;
      continue;
    }
    const double t = now_seconds();
    if (quiet_since == 0) quiet_since = t;
    if (t - quiet_since >= quiet_spin_s) sched_yield();
    if ((++idle & 255) != 0) continue;
    rt.watch.poll();
    rt.take_notices();
    int p = 0;
    if constexpr (std::is_invocable_v<P>)
      p = peer();
    else
      p = peer;
    if (mr_status s = check_needed(rt, p); s != MR_OK) return s;
  }
  return MR_OK;
}

mr_status check_peer(const char* call, int peer_worker, bool any_ok) {
  const Runtime& rt = runtime();
  if (any_ok && peer_worker == MR_ANY_WORKER) return MR_OK;
  if (peer_worker < 0 || peer_worker >= rt.topo.nworkers || peer_worker == rt.topo.worker_index(rt.rank))
    return fail(MR_ERR_BAD_ARGUMENT, "%s: peer worker %d is not another worker (workers are 0 to %d, this is %d%s)",
                call, peer_worker, rt.topo.nworkers - 1, rt.topo.worker_index(rt.rank),
                any_ok ? "; MR_ANY_WORKER receives from any" : "");
  return MR_OK;
}

mr_status post_send(const char* call, int peer_worker, const mr_rid_t* regions, int num_regions, void* const* objects,
                    int num_objects, mr_request_t* request) {
  Runtime& rt = runtime();
  if (mr_status s = enter(call); s != MR_OK) return s;
  if (mr_status s = check_peer(call, peer_worker, false); s != MR_OK) return s;
  if (num_regions < 0 || num_objects < 0 || (num_regions > 0 && regions == nullptr) ||
      (num_objects > 0 && objects == nullptr))
    return MR_ERR_BAD_ARGUMENT;
  mr_status status = MR_OK;
  std::vector<Extent> extents;
  if (num_regions > 0 || num_objects > 0) {
    // One request for everything: the schedulers pack the regions (4.3),
    // look up the objects' sizes, and return the extents sorted and
    // coalesced (objects inside the regions merge into them).
    PackRequest req{rt.next_reply_to(), {regions, regions + num_regions}, {}};
    for (int i = 0; i < num_objects; ++i) req.objects.push_back(reinterpret_cast<std::uint64_t>(objects[i]));
    PackReply r = PackReply::decode(rt.rpc(req.encode()));
    status = static_cast<mr_status>(r.status);
    if (status == MR_OK) extents = std::move(r.extents);
  }
  const double t0 = now_seconds();
  const bool zero_copy = rt.zero_copy_with(rt.topo.worker_rank(peer_worker));
  std::vector<std::uint64_t> hdr{status, static_cast<std::uint64_t>(num_regions),
                                 static_cast<std::uint64_t>(num_objects), extents.size(),
                                 zero_copy ? hdr_zero_copy : 0};
  hdr.insert(hdr.end(), regions, regions + num_regions);
  for (int i = 0; i < num_objects; ++i) hdr.push_back(reinterpret_cast<std::uint64_t>(objects[i]));
  for (const Extent& e : extents) {
    hdr.push_back(e.addr);
    hdr.push_back(e.bytes);
  }
  // Zero copy: the header is the whole transfer. The MPI message orders
  // this rank's earlier writes before the receiver's reads, and ownership
  // passes with it (region.h, mr_send). A failed pack still sends the
  // header, so that the receiver gets the error.
  const bool bytes = status == MR_OK && !zero_copy;
  TransferState& ts = rt.xfers;
  TransferState::Out out;
  out.peer = peer_worker;
  out.op = rt.transport->start_send(peer_worker, std::move(hdr), bytes ? std::span<const Extent>(extents)
                                                                       : std::span<const Extent>());
  if (bytes) out.extents = std::move(extents);
  ++ts.sent_to[static_cast<std::size_t>(peer_worker)];
  // What this worker sends it has almost always written, so its pages are
  // mapped here: when they come back, mr_recv has nothing to prefault.
  if (status == MR_OK && zero_copy) rt.prefault.note_mapped(extents);
  if (request != nullptr) *request = MR_REQUEST_NULL;
  if (status == MR_OK && request != nullptr) {
    out.req = ++ts.next_req;
    TransferState::Req q;
    q.send = true;
    q.source = peer_worker;  // the peer the wait depends on
    ts.reqs.emplace(out.req, q);
    *request = out.req;
  }
  ts.outs.push_back(std::move(out));
  progress();
  rt.worker_s += now_seconds() - t0;
  return status;
}

mr_status post_recv(const char* call, int peer_worker, mr_rid_t* regions, int max_regions, int* num_regions,
                    void** objects, int max_objects, int* num_objects, int* source, mr_request_t* request) {
  Runtime& rt = runtime();
  if (mr_status s = enter(call); s != MR_OK) return s;
  if (request == nullptr) return MR_ERR_BAD_ARGUMENT;
  *request = MR_REQUEST_NULL;
  if (mr_status s = check_peer(call, peer_worker, true); s != MR_OK) return s;
  TransferState& ts = rt.xfers;
  TransferState::Req q;
  q.source = peer_worker;
  q.regions = regions;
  q.max_regions = max_regions;
  q.num_regions = num_regions;
  q.objects = objects;
  q.max_objects = max_objects;
  q.num_objects = num_objects;
  q.source_out = source;
  *request = ++ts.next_req;
  ts.reqs.emplace(*request, q);
  return MR_OK;
}

// The request named by *request, or MR_ERR_BAD_REQUEST.
mr_status find_request(const char* call, const mr_request_t* request, std::map<std::uint64_t, TransferState::Req>::iterator* it) {
  if (request == nullptr) return fail(MR_ERR_BAD_ARGUMENT, "%s: the request pointer is NULL", call);
  TransferState& ts = runtime().xfers;
  if (*request == MR_REQUEST_NULL)
    return fail(MR_ERR_BAD_REQUEST, "%s: the request is MR_REQUEST_NULL (already completed by mr_wait/mr_test, or "
                                    "from a call that failed)", call);
  *it = ts.reqs.find(*request);
  if (*it == ts.reqs.end())
    return fail(MR_ERR_BAD_REQUEST, "%s: request %llu is not pending (never issued, or already completed by "
                                    "mr_wait/mr_test)", call, static_cast<unsigned long long>(*request));
  return MR_OK;
}

mr_status retire(mr_request_t* request, std::map<std::uint64_t, TransferState::Req>::iterator it) {
  const mr_status s = it->second.result;
  runtime().xfers.reqs.erase(it);
  *request = MR_REQUEST_NULL;
  return s;
}

mr_status wait_request(mr_request_t* request) {
  if (mr_status s = enter("mr_wait"); s != MR_OK) return s;
  std::map<std::uint64_t, TransferState::Req>::iterator it;
  if (mr_status s = find_request("mr_wait", request, &it); s != MR_OK) return s;
  const double t0 = now_seconds();
  const mr_status s = progress_until([&] { return it->second.done; }, it->second.source);
  runtime().worker_s += now_seconds() - t0;
  if (s != MR_OK) it->second.result = s;  // retired: the peer it waits on has failed
  return retire(request, it);
}

mr_status test_request(mr_request_t* request, int* done) {
  if (mr_status s = enter("mr_test"); s != MR_OK) return s;
  if (done == nullptr) return fail(MR_ERR_BAD_ARGUMENT, "mr_test: done is NULL");
  *done = 0;
  std::map<std::uint64_t, TransferState::Req>::iterator it;
  if (mr_status s = find_request("mr_test", request, &it); s != MR_OK) return s;
  progress();
  if (!it->second.done) {
    // A request whose peer failed ends with the error (region.h, "Failures").
    Runtime& rt = runtime();
    rt.watch.poll();
    rt.take_notices();
    const mr_status s = check_needed(rt, it->second.source);
    if (s == MR_OK) return MR_OK;
    it->second.result = s;
  }
  *done = 1;
  return retire(request, it);
}

mr_status recv_blocking(const char* call, int peer_worker, mr_rid_t* regions, int max_regions, int* num_regions,
                        void** objects, int max_objects, int* num_objects, int* source) {
  mr_request_t req = MR_REQUEST_NULL;
  if (mr_status s = post_recv(call, peer_worker, regions, max_regions, num_regions, objects, max_objects, num_objects,
                              source, &req);
      s != MR_OK)
    return s;
  Runtime& rt = runtime();
  auto it = rt.xfers.reqs.find(req);
  const double t0 = now_seconds();
  const mr_status s = progress_until([&] { return it->second.done; }, peer_worker);
  rt.worker_s += now_seconds() - t0;
  if (s != MR_OK) it->second.result = s;
  return retire(&req, it);
}

mr_status barrier() {
  Runtime& rt = runtime();
  if (mr_status s = enter("mr_barrier"); s != MR_OK) return s;
  // Every worker takes part: none may have failed (a barrier started
  // without them would never end, and its request could not be taken back).
  if (mr_status s = check_needed(rt, MR_ANY_WORKER); s != MR_OK) return s;
  const double t0 = now_seconds();
  rt.transport->start_worker_barrier();
  const mr_status s = progress_until([&] { return rt.transport->test_worker_barrier(); }, MR_ANY_WORKER);
  rt.barrier_s += now_seconds() - t0;
  return s;
}

}  // namespace

mr_status drain_transfers() {
  Runtime& rt = runtime();
  TransferState& ts = rt.xfers;
  // Every worker is here once the barrier completes; then the counts say
  // how many transfers each must still take from each other worker. With a
  // failed worker neither collective can end: nothing is drained. (No
  // worker can have ended normally before both complete everywhere: they
  // are the first steps of its own mr_finalize.)
  rt.watch.poll();
  rt.take_notices();
  mr_status s = check_needed(rt, MR_ANY_WORKER);
  if (s == MR_OK) {
    rt.transport->start_worker_barrier();
    s = progress_until([&] { return rt.transport->test_worker_barrier(); }, MR_ANY_WORKER);
  }
  std::vector<std::uint64_t> expect(ts.sent_to.size(), 0);
  if (s == MR_OK) {
    rt.transport->start_exchange_counts(ts.sent_to);
    s = progress_until([&] { return rt.transport->test_exchange_counts(expect); }, MR_ANY_WORKER);
  }
  if (s == MR_OK) {
    // After the barrier a worker that is done may exit at any time: only a
    // failed worker whose transfers have not all arrived ends the drain.
    int waiting_on = MR_ANY_WORKER;  // a worker the drain still needs
    s = progress_until(
        [&] {
          waiting_on = MR_ANY_WORKER;
          for (std::size_t i = 0; i < expect.size() && waiting_on == MR_ANY_WORKER; ++i)
            if (ts.taken_from[i] != expect[i]) waiting_on = static_cast<int>(i);
          for (const TransferState::In& in : ts.ins)
            if (!in.done && waiting_on == MR_ANY_WORKER) waiting_on = in.peer;
          for (const TransferState::Out& out : ts.outs)
            if (waiting_on == MR_ANY_WORKER && !rt.watch.failed(rt.topo.worker_rank(out.peer))) waiting_on = out.peer;
          return waiting_on == MR_ANY_WORKER;
        },
        [&] { return waiting_on; });
  }
  // Transfers no receive asked for, and requests never waited for, are dropped.
  ts = TransferState{};
  return s;
}

}  // namespace manyalloc::region::detail

using namespace manyalloc::region::detail;

extern "C" {

mr_status mr_send(int peer_worker, const mr_rid_t* regions, int num_regions, void* const* objects, int num_objects) {
  return finish("mr_send", post_send("mr_send", peer_worker, regions, num_regions, objects, num_objects, nullptr));
}
mr_status mr_isend(int peer_worker, const mr_rid_t* regions, int num_regions, void* const* objects, int num_objects,
                   mr_request_t* request) {
  if (request == nullptr) return finish("mr_isend", MR_ERR_BAD_ARGUMENT);
  *request = MR_REQUEST_NULL;
  return finish("mr_isend", post_send("mr_isend", peer_worker, regions, num_regions, objects, num_objects, request));
}
mr_status mr_recv(int peer_worker, mr_rid_t* regions, int max_regions, int* num_regions, void** objects,
                  int max_objects, int* num_objects) {
  return finish("mr_recv", recv_blocking("mr_recv", peer_worker, regions, max_regions, num_regions, objects,
                                         max_objects, num_objects, nullptr));
}
mr_status mr_recv_any(int* source, mr_rid_t* regions, int max_regions, int* num_regions, void** objects,
                      int max_objects, int* num_objects) {
  return finish("mr_recv_any", recv_blocking("mr_recv_any", MR_ANY_WORKER, regions, max_regions, num_regions,
                                             objects, max_objects, num_objects, source));
}
mr_status mr_irecv(int peer_worker, mr_rid_t* regions, int max_regions, int* num_regions, void** objects,
                   int max_objects, int* num_objects, int* source, mr_request_t* request) {
  return finish("mr_irecv", post_recv("mr_irecv", peer_worker, regions, max_regions, num_regions, objects,
                                      max_objects, num_objects, source, request));
}
mr_status mr_wait(mr_request_t* request) { return finish("mr_wait", wait_request(request)); }
mr_status mr_test(mr_request_t* request, int* done) { return finish("mr_test", test_request(request, done)); }
mr_status mr_barrier(void) { return finish("mr_barrier", barrier()); }

}  // extern "C"
