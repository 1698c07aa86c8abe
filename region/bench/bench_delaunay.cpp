// Delaunay triangulation with refinement over worker-owned regions
// ([Lyberis2012] section 6.4, Fig. 4d), region version.
//
// Each worker owns a vertical strip of the unit square and triangulates its
// points with Bowyer-Watson (delaunay_mesh.hpp). Its triangles live in four
// regions by circumdisk (interior, crossing the left seam, the right seam,
// both), its points in two more (own, copies of halo points); all six under
// one worker region. Triangles point to their vertices and neighbours, and
// each zone's live list starts in a ZoneHead object in the zone's region.
//
// After the local triangulation and refinement, rounds of seam exchange:
// every worker sends its right and both zones (with the point regions) to
// its right neighbour and its left and both zones to its left neighbour, as
// whole regions. The receiver walks the neighbour's triangles through the
// received pointers (zone list, vertex pointers, neighbour pointers that stay
// inside the sent zones), checks the received neighbour pointers are
// symmetric, and copies the vertices it does not know; after mr_barrier (the
// regions go back to their owner) it inserts those points into its own mesh
// and refines again. Rounds stop when no worker inserted a point.
// Simplification against the paper: a static strip decomposition with a
// halo, not the recursive quadrant split with rotating sub-quadrants (Fig. 5).
//
// Time split as in bench_barnes_hut.cpp: computation, worker communication
// (mr_send/mr_recv and the MPI_Allreduce of the round's insert count),
// scheduler communication, barrier wait, averaged over workers.
// Verification (not timed): neighbour pointers, Euler count, empty
// circumcircle of every owned triangle against own + halo points and
// against all final points of all workers, and the owned triangles of all
// workers numbering 2n - 2 - h (n points, h on the square's boundary). Exit
// status 1 when any check fails.
// Usage: mpiexec -n <schedulers + workers> region_bench_delaunay [points] [max_rounds] [--inject-fault]
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <unordered_set>
#include <vector>

#include "bench_json.hpp"
#include "bench_session.hpp"
#include "delaunay_mesh.hpp"
#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.hpp"

namespace mr = manyalloc::region;
namespace dl = delaunay;

namespace {

struct Regions {
  mr::rid_t root = 0;
  mr::rid_t pool[dl::num_pools] = {};  // zones 0-3, own points, halo points
};

struct Totals {
  double total = 0, local = 0, rounds_s = 0;
  long rounds = 0, received_tris = 0, received_link_faults = 0, fails = 0;
};

// The regions one side's send carries: that side's zone, the zone that
// crosses both seams, and the point regions the triangles' vertices are in.
std::vector<mr::rid_t> side_regions(const Regions& r, int side) {
  return {r.pool[side == 0 ? dl::left : dl::right], r.pool[dl::both], r.pool[dl::own_points_pool],
          r.pool[dl::halo_points_pool]};
}

// Walks one received seam: the neighbour's zone lists from the ZoneHead
// objects, straight through the grafted pointers ([Lyberis2012] 3: pointers
// keep their meaning after a transfer). `side` is the sender's send side.
void walk_seam(void* const heads[2], int side, int me, std::unordered_set<std::int64_t>& seen,
               const dl::Mesh& mesh, std::vector<dl::HaloPoint>& out, Totals& tot) {
  for (int h = 0; h < 2; ++h)
    for (const dl::Tri* t = static_cast<const dl::ZoneHead*>(heads[h])->first; t != nullptr; t = t->next) {
      ++tot.received_tris;
      for (int i = 0; i < 3; ++i) {
        const dl::Vertex* v = t->v[i];
        if (v->owner >= 0 && v->owner != me && !mesh.known(v->id) && seen.insert(v->id).second)
          out.push_back({v->x, v->y, v->id, v->owner});
        if (((t->link_in[side] >> i) & 1) == 0) continue;
        const dl::Tri* n = t->nb[i];
        bool back = false;
        for (int j = 0; j < 3; ++j) back = back || n->nb[j] == t;
        if (!back || !n->alive) ++tot.received_link_faults;
      }
    }
}

// One exchange round's communication: send both seams, receive both, walk
// them; returns the halo points to insert after the barrier.
std::vector<dl::HaloPoint> exchange(dl::Mesh& mesh, const Regions& reg, int me, int nw, Totals& tot) {
  const int peer[2] = {me - 1, me + 1};
  for (int side = 0; side < 2; ++side)
    if (peer[side] >= 0 && peer[side] < nw) mesh.mark_links(side);
  for (int side = 0; side < 2; ++side) {
    if (peer[side] < 0 || peer[side] >= nw) continue;
    const std::vector<mr::rid_t> regs = side_regions(reg, side);
    void* heads[2] = {mesh.head(side == 0 ? dl::left : dl::right), mesh.head(dl::both)};
    if (mr::send(peer[side], regs, heads) != mr::Status::ok) ++tot.fails;
  }
  std::vector<dl::HaloPoint> halo;
  std::unordered_set<std::int64_t> seen;
  for (int side = 0; side < 2; ++side) {
    if (peer[side] < 0 || peer[side] >= nw) continue;
    mr::rid_t got[8];
    void* heads[2] = {nullptr, nullptr};
    auto r = mr::recv(peer[side], got, heads);
    if (!r || r.value.objects != 2) {
      ++tot.fails;
      continue;
    }
    walk_seam(heads, 1 - side, me, seen, mesh, halo, tot);  // my left peer sent its right side
  }
  return halo;
}

// The worker's region tree: one worker region, under it the four zone
// regions (a ZoneHead first in each) and the two point regions.
bool open_regions(Regions& reg, dl::ZoneHead* heads[dl::num_zones]) {
  auto root = mr::ralloc();  // no hint: on this worker's leaf scheduler
  if (!root) return false;
  reg.root = root.value;
  for (int p = 0; p < dl::num_pools; ++p) {
    auto r = mr::ralloc(reg.root);
    if (!r) return false;
    reg.pool[p] = r.value;
    if (p < dl::num_zones && (heads[p] = mr::make<dl::ZoneHead>(reg.pool[p])) == nullptr) return false;
  }
  return true;
}

// Seam rounds until no worker inserts a point: exchange, barrier (the sent
// regions are ours again), insert the halo points, refine, count.
void seam_rounds(dl::Mesh& mesh, const Regions& reg, int me, int nw, const dl::Args& args, long refine_cap,
                 MPI_Comm comm, Totals& tot, double& extra_wcomm) {
  const double max_area = dl::max_area_for(args.points);
  for (;;) {
    std::vector<dl::HaloPoint> halo = exchange(mesh, reg, me, nw, tot);
    mr::barrier();
    long added = 0;
    for (const dl::HaloPoint& h : halo) added += mesh.insert_halo(h.x, h.y, h.id, static_cast<int>(h.owner)) ? 1 : 0;
    added += mesh.refine(max_area, dl::max_ratio2, refine_cap - mesh.count.points_refine);
    ++tot.rounds;
    long any = 0;
    const double ta = MPI_Wtime();
    MPI_Allreduce(&added, &any, 1, MPI_LONG, MPI_SUM, comm);
    extra_wcomm += MPI_Wtime() - ta;
    if (any == 0) return;
    if (tot.rounds >= args.max_rounds) {
      ++tot.fails;  // seams not settled: the halos may miss points
      return;
    }
  }
}

// Every worker's final own points (untimed, for the global check).
std::vector<dl::PointGrid::P> all_points(const dl::Mesh& mesh, int nw, MPI_Comm comm) {
  std::vector<dl::PointGrid::P> mine = dl::mesh_points(mesh, true);
  const int my_bytes = static_cast<int>(mine.size() * sizeof(dl::PointGrid::P));
  std::vector<int> sizes(static_cast<std::size_t>(nw)), displs(static_cast<std::size_t>(nw));
  MPI_Allgather(&my_bytes, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm);
  int total = 0;
  for (std::size_t w = 0; w < sizes.size(); ++w) displs[w] = total, total += sizes[w];
  std::vector<dl::PointGrid::P> all(static_cast<std::size_t>(total) / sizeof(dl::PointGrid::P));
  MPI_Allgatherv(mine.data(), my_bytes, MPI_BYTE, all.data(), sizes.data(), displs.data(), MPI_BYTE, comm);
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  region_bench::Session session(&argc, &argv);
  if (!session.runs()) return session.exit_status();
  const int me = session.worker_id(), nw = session.num_workers();
  const dl::Args args = dl::parse_args(argc, argv);
  MPI_Comm comm = mr_worker_comm();
  std::mt19937_64 rng(7000 + static_cast<unsigned>(me));
  const dl::Workload work = dl::make_points(me, nw, args.points, rng);

  Totals tot;
  Regions reg;
  dl::ZoneHead* heads[dl::num_zones] = {};
  mr::barrier();
  mr_times_reset();
  double extra_wcomm = 0;
  const double t0 = MPI_Wtime();
  if (!open_regions(reg, heads)) {
    std::fprintf(stderr, "bench_delaunay: worker %d: regions: %s\n", me, mr::last_error());
    return 1;
  }
  dl::Mesh mesh(me, nw, [&](int pool, std::size_t size, std::span<void*> out) {
    return mr::balloc(size, reg.pool[pool], out) == mr::Status::ok;
  });
  if (!mesh.start(heads)) ++tot.fails;
  const long refine_cap = 4 * static_cast<long>(work.pts.size()) + 1000;  // refinement points, all rounds
  for (auto [x, y] : work.pts) mesh.insert_own(x, y, false);
  mesh.refine(dl::max_area_for(args.points), dl::max_ratio2, refine_cap);
  tot.local = MPI_Wtime() - t0;
  const double t1 = MPI_Wtime();
  seam_rounds(mesh, reg, me, nw, args, refine_cap, comm, tot, extra_wcomm);
  tot.rounds_s = MPI_Wtime() - t1;
  mr::barrier();
  tot.total = MPI_Wtime() - t0;
  double sched = 0, wcomm = 0, bar = 0;
  mr_times(&sched, &wcomm, &bar);

  // Checks (not timed).
  if (args.inject_fault && me == 0) mesh.break_one_link();
  const dl::LocalVerdict lv = dl::verify_local(mesh);
  std::vector<dl::PointGrid::P> all = all_points(mesh, nw, comm);
  const long n_all = static_cast<long>(all.size());
  const long gviol = dl::global_violations(mesh, dl::PointGrid(std::move(all)));
  dl::Tally v = dl::tally(mesh, lv, work, gviol, tot.received_tris, tot.received_link_faults, tot.fails);
  v[dl::f_total] = tot.total, v[dl::f_sched] = sched, v[dl::f_wcomm] = wcomm + extra_wcomm, v[dl::f_barrier] = bar;
  v[dl::f_local] = tot.local, v[dl::f_rounds_s] = tot.rounds_s;
  dl::Tally sum{}, mx{};
  MPI_Allreduce(v.data(), sum.data(), dl::num_fields, MPI_DOUBLE, MPI_SUM, comm);
  MPI_Allreduce(v.data(), mx.data(), dl::num_fields, MPI_DOUBLE, MPI_MAX, comm);
  const bool verified = dl::passed(sum, n_all);
  if (me == 0) {
    region_bench::Record r = dl::record(sum, mx, nw, args.points, n_all, tot.rounds);
    r.allocator = "manyalloc-region";
    r.extra("schedulers", mr_num_schedulers());
    r.extra("scheduler_levels", mr_scheduler_levels());
    r.extra_str("transfer", mr_zero_copy(nw > 1 ? 1 : 0) ? "zero-copy" : "copy");  // 1 worker: itself
    r.print();
    if (!verified) std::fprintf(stderr, "bench_delaunay: verification failed\n");
  }
  if (mr::rfree(reg.root) != mr::Status::ok) return 1;
  return verified ? 0 : 1;
}
