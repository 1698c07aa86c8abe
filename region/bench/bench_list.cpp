// Linked-list exchange ([Lyberis2012] Fig. 4g-h, section 6.5). Every worker builds
// a list of 256-B nodes; in stages (partner = me XOR stage) pairs exchange
// whole lists, the receiver modifies every node, and the lists go back.
//   allocator "myrmics-region": nodes in a region, whole-region send/recv;
//   allocator "mpi-get":        nodes in an MPI window, fetched one by one
//                               with MPI_Get (+flush), written back with MPI_Put.
// Both run in the same process, alternating, for each list length.
// Usage: mpiexec -n <1 + workers or more> region_bench_list [nodes...] [--reps R]
// Workers must be a power of two.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_list_common.hpp"
#include "bench_session.hpp"
#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.hpp"

namespace mr = manyalloc::region;
using region_bench::Node;

namespace {

struct Result {
  double build = 0, exchange = 0;
  double send_recv = 0;  // regions: time inside mr_send/mr_recv (pack request included)
  double pack = 0;       // regions: of send_recv, the pack requests to the scheduler
  double barrier = 0;    // regions: time in mr_barrier
  double walk = 0;       // regions: the application's traversal of the peer's list alone
  double faults = 0;     // minor page faults of this process during the exchange
  double in_order = 0;   // share of nodes whose successor lies at the next address
  long fails = 0;
  bool verified = true;
};

double now() { return MPI_Wtime(); }
using region_bench::minor_faults;

// ---- regions -------------------------------------------------------------
Result run_region(int me, int nw, std::uint64_t n, MPI_Comm comm) {
  Result res;
  mr::barrier();
  double t0 = now();
  auto rid = mr::ralloc();
  if (!rid) ++res.fails;
  // Bulk allocation in batches: one scheduler request per 4096 nodes.
  std::vector<void*> nodes(n);
  for (std::uint64_t i = 0; i < n; i += 4096) {
    const std::uint64_t k = std::min<std::uint64_t>(4096, n - i);
    if (mr::balloc(sizeof(Node), rid.value, std::span(nodes).subspan(i, k)) != mr::Status::ok) ++res.fails;
  }
  Node* head = mr::make<Node>(rid.value);  // list anchor holds the head pointer
  for (std::uint64_t i = 0; i < n; ++i) {
    auto* x = static_cast<Node*>(nodes[i]);
    x->next = i + 1 < n ? static_cast<Node*>(nodes[i + 1]) : nullptr;
    x->value = region_bench::initial_value(me, i);
  }
  head->next = static_cast<Node*>(nodes[0]);
  res.build = now() - t0;
  mr::barrier();
  mr_times_reset();
  const double f0 = minor_faults();
  t0 = now();
  for (int stage = 1; stage < nw; ++stage) {
    const int peer = me ^ stage;
    const mr::rid_t mine[] = {rid.value};
    void* anchor[] = {head};
    mr::rid_t theirs[1], back[1];
    void* theirs_obj[1];
    void* back_obj[1];
    // Both lists cross (lower id sends first, so that a copying transfer
    // is never sent both ways at once), both workers modify the peer's list
    // at the same time, and both lists go back: the pair's two traversals
    // overlap, as the baselines' do.
    if (me < peer) {
      if (mr::send(peer, mine, anchor) != mr::Status::ok) ++res.fails;
      if (!mr::recv(peer, theirs, theirs_obj)) ++res.fails;
    } else {
      if (!mr::recv(peer, theirs, theirs_obj)) ++res.fails;
      if (mr::send(peer, mine, anchor) != mr::Status::ok) ++res.fails;
    }
    const double w0 = now();
    region_bench::add_one_to_each(static_cast<Node*>(theirs_obj[0]));
    res.walk += now() - w0;
    if (me < peer) {
      if (mr::send(peer, theirs, theirs_obj) != mr::Status::ok) ++res.fails;
      if (!mr::recv(peer, back, back_obj)) ++res.fails;  // own list back
    } else {
      if (!mr::recv(peer, back, back_obj)) ++res.fails;
      if (mr::send(peer, theirs, theirs_obj) != mr::Status::ok) ++res.fails;
    }
    if (back[0] != rid.value || back_obj[0] != head) ++res.fails;
    mr::barrier();
  }
  res.exchange = now() - t0;
  res.faults = minor_faults() - f0;
  double sched_s = 0, worker_s = 0;
  mr_times(&sched_s, &worker_s, &res.barrier);
  res.send_recv = sched_s + worker_s;
  res.pack = sched_s;
  if (!region_bench::check_list(head, n, me, nw, &res.in_order)) res.verified = false;
  if (mr::rfree(rid.value) != mr::Status::ok) ++res.fails;
  (void)comm;
  return res;
}

// ---- MPI one-sided pointer chasing ------------------------------------------
Result run_mpi_get(int me, int nw, std::uint64_t n, MPI_Comm comm) {
  Result res;
  MPI_Barrier(comm);
  double t0 = now();
  Node* base = nullptr;
  MPI_Win win;
  MPI_Win_allocate(static_cast<MPI_Aint>(n * sizeof(Node)), sizeof(Node), MPI_INFO_NULL, comm, &base, &win);
  region_bench::build_indexed(base, n, me);
  res.build = now() - t0;
  MPI_Barrier(comm);
  const double f0 = minor_faults();
  t0 = now();
  MPI_Win_lock_all(0, win);
  for (int stage = 1; stage < nw; ++stage) {
    const int peer = me ^ stage;
    Node local;
    for (std::uint64_t idx = 0; idx != region_bench::no_index;) {
      MPI_Get(&local, sizeof(Node), MPI_BYTE, peer, static_cast<MPI_Aint>(idx), sizeof(Node), MPI_BYTE, win);
      MPI_Win_flush(peer, win);
      local.value += 1;
      MPI_Put(&local, sizeof(Node), MPI_BYTE, peer, static_cast<MPI_Aint>(idx), sizeof(Node), MPI_BYTE, win);
      MPI_Win_flush(peer, win);  // `local` is reused for the next node
      idx = local.next_index;
    }
    MPI_Barrier(comm);
  }
  MPI_Win_unlock_all(win);
  res.exchange = now() - t0;
  res.faults = minor_faults() - f0;
  MPI_Barrier(comm);  // all puts into our window completed (unlock_all + barrier)
  if (!region_bench::check_indexed(base, n, me, nw)) res.verified = false;
  MPI_Win_free(&win);
  return res;
}

void report(const char* alloc, int nw, std::uint64_t n, int rep, Result r, MPI_Comm comm, int me) {
  double build = 0, exch = 0;
  long fails = 0;
  int ok = r.verified ? 1 : 0, all_ok = 0;
  MPI_Reduce(&r.build, &build, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  MPI_Reduce(&r.exchange, &exch, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  double sr = 0, walk = 0, faults = 0, in_order = 0, pack = 0, bar = 0;
  MPI_Reduce(&r.send_recv, &sr, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  MPI_Reduce(&r.pack, &pack, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  MPI_Reduce(&r.barrier, &bar, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  MPI_Reduce(&r.walk, &walk, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  MPI_Reduce(&r.faults, &faults, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  MPI_Reduce(&r.in_order, &in_order, 1, MPI_DOUBLE, MPI_MIN, 0, comm);
  MPI_Reduce(&r.fails, &fails, 1, MPI_LONG, MPI_SUM, 0, comm);
  MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, comm);
  if (me != 0) return;
  region_bench::Record rec = region_bench::list_record(alloc, nw, n);
  rec.seconds = exch;
  rec.fails = fails;
  rec.verified = all_ok == 1;
  rec.extra("schedulers", mr_num_schedulers());
  rec.extra("scheduler_levels", mr_scheduler_levels());
  rec.extra("build_seconds", build);
  rec.extra("rep", rep);
  rec.extra("minor_faults", faults);  // max over workers, during the exchange
  if (std::string(alloc) == "myrmics-region") {
    // As seen from worker 0: zero-copy when every peer shares this host's
    // GAS object (a one-host run with MANYALLOC_REGION_TRANSFER=auto), copy
    // when none does, mixed across hosts.
    int zc = 0;
    for (int p = 0; p < nw; ++p) zc += p != me && mr_zero_copy(p) ? 1 : 0;
    rec.extra_str("transfer", zc == nw - 1 ? "zero-copy" : zc == 0 ? "copy" : "mixed");
    // Max over workers of the time spent inside mr_send/mr_recv during the
    // exchange (includes waiting for the peer to reach its call).
    rec.extra("send_recv_seconds", sr);
    rec.extra("pack_request_seconds", pack);  // part of send_recv (max over workers)
    rec.extra("barrier_seconds", bar);        // mr_barrier after each stage
    // Max over workers of the application's own traversal of the peer's
    // lists (no library call inside), and the smallest share of a worker's
    // nodes that bulk allocation placed right after their predecessor.
    rec.extra("walk_seconds", walk);
    rec.extra("nodes_in_address_order", in_order);
  }
  rec.print();
}

}  // namespace

int main(int argc, char** argv) {
  region_bench::Session session(&argc, &argv);
  if (!session.runs()) return session.exit_status();
  const region_bench::ListArgs args = region_bench::parse_list_args(argc, argv, "--no-mpi-get");
  const bool skip_get = args.flag;
  const int me = session.worker_id(), nw = session.num_workers();
  MPI_Comm comm = mr_worker_comm();
  if (!region_bench::power_of_two(nw)) {
    if (me == 0) std::fprintf(stderr, "bench_list: workers (%d) must be a power of two\n", nw);
    return 1;
  }
  for (std::uint64_t n : args.sizes) {
    for (int rep = 0; rep < args.reps; ++rep) {
      report("myrmics-region", nw, n, rep, run_region(me, nw, n, comm), comm, me);
      if (!skip_get) report("mpi-get", nw, n, rep, run_mpi_get(me, nw, n, comm), comm, me);
    }
  }
  return 0;
}
