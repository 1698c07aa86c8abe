// Worker side of the [Lyberis2012] Figure 1 API: every call becomes a request to the
// worker's leaf scheduler ([Lyberis2012] section 2); send/recv pack regions into
// (address, size) lists and move the bytes with one MPI message each.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "last_error.hpp"
#include "manyalloc/region/region.h"
#include "runtime.hpp"
#include "slab_pool.hpp"

namespace manyalloc::region::detail {

Runtime& runtime() {
  static Runtime rt;
  return rt;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Message Runtime::rpc(Message req) {
  const double t0 = now_seconds();
  req[w_origin] = static_cast<std::uint64_t>(rank);
  req[w_req] = ++seq;
  transport->send(leaf, req);
  Message rep;
  transport->recv_from(leaf, rep);
  sched_s += now_seconds() - t0;
  return rep;
}

namespace {
mr_status status_of(const Message& m) { return static_cast<mr_status>(m[w_status]); }

// The first step of every worker call: the library is initialised and this
// rank is a worker; else the init or scheduler error, with its reason.
mr_status enter(const char* call) {
  const Runtime& rt = runtime();
  if (!rt.initialized) return rt.not_initialized(call);
  if (!rt.on_owner_thread()) return rt.wrong_thread(call);
  if (rt.topo.is_scheduler(rt.rank))
    return fail(MR_ERR_NOT_WORKER, "%s: rank %d is a scheduler (ranks 0 to %d are; only workers make this call)",
                call, rt.rank, rt.topo.nsched - 1);
  return MR_OK;
}

// Object size / owner for mr_realloc.
mr_status object_info(void* p, std::uint64_t* size, std::uint64_t* region) {
  Message r = runtime().rpc(make_msg(op_info, 0, 0, {reinterpret_cast<std::uint64_t>(p)}));
  if (status_of(r) != MR_OK) return status_of(r);
  *size = r[w_a0];
  *region = r[w_a1];
  return MR_OK;
}

mr_status ralloc(mr_rid_t parent, int level_hint, mr_rid_t* out) {
  if (mr_status s = enter("mr_ralloc"); s != MR_OK) return s;
  if (out == nullptr) return MR_ERR_BAD_ARGUMENT;
  Message r = runtime().rpc(
      make_msg(op_ralloc, 0, 0, {parent, static_cast<std::uint64_t>(static_cast<std::int64_t>(level_hint))}));
  if (status_of(r) == MR_OK) *out = r[w_a0];
  return status_of(r);
}

mr_status rfree(mr_rid_t region) {
  if (mr_status s = enter("mr_rfree"); s != MR_OK) return s;
  if (region == MR_ROOT_REGION) return MR_ERR_BAD_ARGUMENT;
  return status_of(runtime().rpc(make_msg(op_rfree, 0, 0, {region})));
}

mr_status balloc(size_t size, mr_rid_t region, int n, void** objects) {
  if (mr_status s = enter("mr_balloc"); s != MR_OK) return s;
  if (n <= 0 || objects == nullptr || SlabPool::slot_size(size) == 0) return MR_ERR_BAD_ARGUMENT;
  Message r = runtime().rpc(make_msg(op_alloc, 0, 0, {region, size, static_cast<std::uint64_t>(n)}));
  if (status_of(r) != MR_OK) return status_of(r);
  for (int i = 0; i < n; ++i) objects[i] = reinterpret_cast<void*>(r[hdr_words + static_cast<std::size_t>(i)]);
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
  return status_of(runtime().rpc(make_msg(op_free, 0, 0, {reinterpret_cast<std::uint64_t>(ptr)})));
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

// Header of a transfer: [status, nregions, nobjects, nextents, flags,
//                        region ids..., object addresses..., (addr, bytes)...]
// flags bit 0 (hdr_zero_copy): the peer shares this host's GAS object, no
// bytes follow; otherwise the extents' bytes follow (MpiTransport::send_extents).
constexpr std::uint64_t hdr_words_xfer = 5;
constexpr std::uint64_t hdr_zero_copy = 1;

mr_status send_regions(int peer_worker, const mr_rid_t* regions, int num_regions, void* const* objects, int num_objects) {
  Runtime& rt = runtime();
  if (mr_status s = enter("mr_send"); s != MR_OK) return s;
  if (peer_worker < 0 || peer_worker >= rt.topo.nworkers || peer_worker == rt.topo.worker_index(rt.rank) ||
      num_regions < 0 || num_objects < 0 || (num_regions > 0 && regions == nullptr) ||
      (num_objects > 0 && objects == nullptr))
    return MR_ERR_BAD_ARGUMENT;
  mr_status status = MR_OK;
  std::vector<Extent> extents;
  if (num_regions > 0 || num_objects > 0) {
    // One request for everything: the schedulers pack the regions (4.3),
    // look up the objects' sizes, and return the extents sorted and
    // coalesced (objects inside the regions merge into them).
    Message req = make_msg(op_pack, 0, 0, {static_cast<std::uint64_t>(num_regions)});
    req.insert(req.end(), regions, regions + num_regions);
    for (int i = 0; i < num_objects; ++i) req.push_back(reinterpret_cast<std::uint64_t>(objects[i]));
    Message r = rt.rpc(std::move(req));
    status = status_of(r);
    if (status == MR_OK)
      for (std::size_t i = hdr_words; i + 1 < r.size(); i += 2) extents.push_back({r[i], r[i + 1]});
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
  // passes with it (region.h, mr_send).
  rt.transport->send_header(peer_worker, hdr);
  if (status == MR_OK && !zero_copy) rt.transport->send_extents(peer_worker, extents);
  // What this worker sends it has almost always written, so its pages are
  // mapped here: when they come back, mr_recv has nothing to prefault.
  if (status == MR_OK && zero_copy) rt.prefault.note_mapped(extents);
  rt.worker_s += now_seconds() - t0;
  return status;
}

mr_status recv_regions(int peer_worker, mr_rid_t* regions, int max_regions, int* num_regions, void** objects,
                  int max_objects, int* num_objects) {
  Runtime& rt = runtime();
  if (mr_status s = enter("mr_recv"); s != MR_OK) return s;
  if (peer_worker < 0 || peer_worker >= rt.topo.nworkers || peer_worker == rt.topo.worker_index(rt.rank))
    return MR_ERR_BAD_ARGUMENT;
  const double t0 = now_seconds();
  std::vector<std::uint64_t> hdr;
  rt.transport->recv_header(peer_worker, hdr);
  const auto status = static_cast<mr_status>(hdr[0]);
  const std::uint64_t nr = hdr[1], no = hdr[2], ne = hdr[3];
  const bool zero_copy = (hdr[4] & hdr_zero_copy) != 0;
  std::vector<Extent> extents(ne);
  const std::size_t er = hdr_words_xfer + nr + no;
  bool in_gas = true;
  for (std::uint64_t i = 0; i < ne; ++i) {
    extents[i] = {hdr[er + 2 * i], hdr[er + 2 * i + 1]};
    in_gas = in_gas && extents[i].addr >= rt.gas.base && extents[i].addr + extents[i].bytes <= rt.gas.base + rt.gas.bytes;
  }
  // Both sides derive the mode from the same host table (GasMapping); a
  // zero-copy header from a peer that does not share our memory would mean
  // the data is not here.
  const bool mode_ok = zero_copy == rt.zero_copy_with(rt.topo.worker_rank(peer_worker));
  // The sender sends the bytes whenever its status is ok and it did not
  // choose zero copy: receive them even when we reject the extents, so the
  // message does not stay behind to be matched by a later transfer.
  if (status == MR_OK && !zero_copy) {
    if (in_gas)
      rt.transport->recv_extents(peer_worker, extents);
    else
      rt.transport->discard_extents(peer_worker, extents);
  }
  if (status == MR_OK && zero_copy && in_gas && mode_ok) rt.prefault.populate(extents);
  rt.worker_s += now_seconds() - t0;
  if (status != MR_OK) return status;
  if (!in_gas || !mode_ok) return MR_ERR_INVALID_POINTER;
  if (num_regions != nullptr) *num_regions = static_cast<int>(nr);
  if (num_objects != nullptr) *num_objects = static_cast<int>(no);
  for (std::uint64_t i = 0; i < nr && i < static_cast<std::uint64_t>(std::max(max_regions, 0)); ++i)
    if (regions != nullptr) regions[i] = hdr[hdr_words_xfer + i];
  for (std::uint64_t i = 0; i < no && i < static_cast<std::uint64_t>(std::max(max_objects, 0)); ++i)
    if (objects != nullptr) objects[i] = reinterpret_cast<void*>(hdr[hdr_words_xfer + nr + i]);
  if (nr > static_cast<std::uint64_t>(std::max(max_regions, 0)) || no > static_cast<std::uint64_t>(std::max(max_objects, 0)))
    return MR_ERR_TRUNCATED;
  return MR_OK;
}

mr_status barrier(void) {
  Runtime& rt = runtime();
  if (mr_status s = enter("mr_barrier"); s != MR_OK) return s;
  const double t0 = now_seconds();
  rt.transport->worker_barrier();
  rt.barrier_s += now_seconds() - t0;
  return MR_OK;
}

mr_status sched_stats_get(int scheduler, mr_sched_stats* out) {
  Runtime& rt = runtime();
  if (mr_status s = enter("mr_sched_stats_get"); s != MR_OK) return s;
  if (out == nullptr || scheduler < 0 || scheduler >= rt.topo.nsched) return MR_ERR_BAD_ARGUMENT;
  Message r = rt.rpc(make_msg(op_stats, 0, 0, {static_cast<std::uint64_t>(scheduler)}));
  if (status_of(r) != MR_OK) return status_of(r);
  const std::uint64_t* p = r.data() + hdr_words;
  *out = mr_sched_stats{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]};
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
mr_status mr_send(int peer_worker, const mr_rid_t* regions, int num_regions, void* const* objects, int num_objects) {
  return finish("mr_send", send_regions(peer_worker, regions, num_regions, objects, num_objects));
}
mr_status mr_recv(int peer_worker, mr_rid_t* regions, int max_regions, int* num_regions, void** objects,
                  int max_objects, int* num_objects) {
  return finish("mr_recv", recv_regions(peer_worker, regions, max_regions, num_regions, objects, max_objects, num_objects));
}
mr_status mr_barrier(void) { return finish("mr_barrier", barrier()); }
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
