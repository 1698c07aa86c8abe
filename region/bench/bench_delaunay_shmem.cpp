// Delaunay triangulation with refinement, OpenSHMEM version: the same points,
// Bowyer-Watson insertion, refinement, seam rounds and checks as
// bench_delaunay.cpp (delaunay_mesh.hpp), without regions ([Lyberis2012] 6.5
// compares against a PGAS baseline the same way).
//
// Each PE keeps its mesh in private memory (malloc'd batches). Pointers mean
// nothing on another PE, so a seam is marshalled: the triangles of the zones
// the neighbour needs get indices, their vertices go into a table, and each
// triangle becomes three vertex indices and three neighbour indices (-1 when
// the neighbour is not sent). The PE puts the buffer into the neighbour's
// inbox on the symmetric heap (shmem_putmem, shmem_quiet, shmem_barrier_all);
// the neighbour walks the index-linked triangles, checks the links are
// symmetric and copies the vertices it does not know. Inbox capacity grows
// collectively when a seam does not fit.
//
// Time split: worker communication (puts, quiet, reductions), barrier
// (shmem_barrier_all), computation (the rest, marshalling included:
// marshal_s reports it); no scheduler.
// Usage: oshrun -n <workers> region_bench_delaunay_shmem [points] [max_rounds] [--inject-fault]
#include <shmem.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bench_json.hpp"
#include "delaunay_mesh.hpp"

namespace dl = delaunay;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

long psync[2][SHMEM_REDUCE_SYNC_SIZE];
long csync[SHMEM_COLLECT_SYNC_SIZE];
constexpr int max_pes = 4096;
double pwrk_d[dl::num_fields / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
long pwrk_l[1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
double red_src[dl::num_fields], red_dst[dl::num_fields];
long lsrc, ldst;
long cnt_src, cnt_dst[max_pes];

struct Times {
  double wcomm = 0, barrier = 0, marshal = 0;
};

void barrier(Times& t) {
  const double a = now();
  shmem_barrier_all();
  t.barrier += now() - a;
}

long reduce_long(long x, bool max, Times& t) {
  const double a = now();
  lsrc = x;
  if (max)
    shmem_long_max_to_all(&ldst, &lsrc, 1, 0, 0, shmem_n_pes(), pwrk_l, psync[0]);
  else
    shmem_long_sum_to_all(&ldst, &lsrc, 1, 0, 0, shmem_n_pes(), pwrk_l, psync[0]);
  shmem_barrier_all();  // psync reusable
  t.wcomm += now() - a;
  return ldst;
}

// Marshalled seam: header {triangles, vertices}, vertex table, triangles.
struct WireTri {
  std::int32_t v[3], nb[3];
};

// Serialises the zones a neighbour on `side` (0 left, 1 right) needs.
std::vector<char> marshal(const dl::Mesh& mesh, int side) {
  const int zs[2] = {side == 0 ? dl::left : dl::right, dl::both};
  std::vector<dl::Tri*> tris;
  for (int z : zs)
    for (dl::Tri* t = mesh.head(z)->first; t != nullptr; t = t->next) {
      t->index = static_cast<std::int32_t>(tris.size());
      tris.push_back(t);
    }
  std::unordered_map<const dl::Vertex*, std::int32_t> vidx;
  std::vector<dl::HaloPoint> verts;
  std::vector<WireTri> wire(tris.size());
  for (std::size_t k = 0; k < tris.size(); ++k) {
    const dl::Tri* t = tris[k];
    for (int i = 0; i < 3; ++i) {
      auto [it, fresh] = vidx.emplace(t->v[i], static_cast<std::int32_t>(verts.size()));
      if (fresh) verts.push_back({t->v[i]->x, t->v[i]->y, t->v[i]->id, t->v[i]->owner});
      wire[k].v[i] = it->second;
      const dl::Tri* n = t->nb[i];
      wire[k].nb[i] = (n != nullptr && (n->zone == zs[0] || n->zone == dl::both)) ? n->index : -1;
    }
  }
  const std::int64_t hdr[2] = {static_cast<std::int64_t>(wire.size()), static_cast<std::int64_t>(verts.size())};
  std::vector<char> buf(sizeof hdr + verts.size() * sizeof(dl::HaloPoint) + wire.size() * sizeof(WireTri));
  char* p = buf.data();
  std::memcpy(p, hdr, sizeof hdr);
  p += sizeof hdr;
  std::memcpy(p, verts.data(), verts.size() * sizeof(dl::HaloPoint));
  p += verts.size() * sizeof(dl::HaloPoint);
  std::memcpy(p, wire.data(), wire.size() * sizeof(WireTri));
  return buf;
}

struct Seen {
  long tris = 0, link_faults = 0;
};

// Walks a received seam by index: symmetric links, unknown vertices out.
void unmarshal(const char* buf, int me, const dl::Mesh& mesh, std::unordered_set<std::int64_t>& seen,
               std::vector<dl::HaloPoint>& out, Seen& s) {
  std::int64_t hdr[2];
  std::memcpy(hdr, buf, sizeof hdr);
  const auto* verts = reinterpret_cast<const dl::HaloPoint*>(buf + sizeof hdr);
  const auto* tris = reinterpret_cast<const WireTri*>(buf + sizeof hdr + hdr[1] * sizeof(dl::HaloPoint));
  for (std::int64_t k = 0; k < hdr[0]; ++k) {
    ++s.tris;
    for (int i = 0; i < 3; ++i) {
      const dl::HaloPoint& v = verts[tris[k].v[i]];
      if (v.owner >= 0 && v.owner != me && !mesh.known(v.id) && seen.insert(v.id).second) out.push_back(v);
      const std::int32_t n = tris[k].nb[i];
      if (n < 0) continue;
      bool back = false;
      for (int j = 0; j < 3; ++j) back = back || tris[n].nb[j] == k;
      if (!back) ++s.link_faults;
    }
  }
}

// The symmetric inbox: slot 0 from the left neighbour, slot 1 from the right.
struct Inbox {
  char* base = nullptr;
  std::size_t cap = 0;
  char* slot(int s) const { return base + static_cast<std::size_t>(s) * cap; }
};

// One round's communication; returns the halo points to insert.
std::vector<dl::HaloPoint> exchange(const dl::Mesh& mesh, Inbox& box, int me, int nw, Times& t, Seen& s) {
  const double m0 = now();
  const int peer[2] = {me - 1, me + 1};
  std::vector<char> out[2];
  for (int side = 0; side < 2; ++side)
    if (peer[side] >= 0 && peer[side] < nw) out[side] = marshal(mesh, side);
  t.marshal += now() - m0;
  const long need = static_cast<long>(std::max(out[0].size(), out[1].size()));
  // The inbox is symmetric: every PE resizes it alike, to the largest seam.
  const long need_all = reduce_long(need, true, t);
  if (static_cast<std::size_t>(need_all) > box.cap) {
    if (box.base != nullptr) shmem_free(box.base);
    box.cap = static_cast<std::size_t>(need_all) + static_cast<std::size_t>(need_all) / 2 + 4096;
    box.base = static_cast<char*>(shmem_malloc(2 * box.cap));
  }
  const double a = now();
  for (int side = 0; side < 2; ++side)
    if (!out[side].empty()) shmem_putmem(box.slot(1 - side), out[side].data(), out[side].size(), peer[side]);
  shmem_quiet();
  t.wcomm += now() - a;
  barrier(t);
  const double m1 = now();
  std::vector<dl::HaloPoint> halo;
  std::unordered_set<std::int64_t> seen;
  for (int side = 0; side < 2; ++side)
    if (peer[side] >= 0 && peer[side] < nw) unmarshal(box.slot(side), me, mesh, seen, halo, s);
  t.marshal += now() - m1;
  return halo;
}

// Seam rounds until no PE inserts a point (as bench_delaunay.cpp).
long seam_rounds(dl::Mesh& mesh, Inbox& box, int me, int nw, const dl::Args& args, long refine_cap, Times& tm,
                 Seen& seen, long& fails) {
  const double max_area = dl::max_area_for(args.points);
  for (long rounds = 1;; ++rounds) {
    std::vector<dl::HaloPoint> halo = exchange(mesh, box, me, nw, tm, seen);
    long added = 0;
    for (const dl::HaloPoint& h : halo) added += mesh.insert_halo(h.x, h.y, h.id, static_cast<int>(h.owner)) ? 1 : 0;
    added += mesh.refine(max_area, dl::max_ratio2, refine_cap - mesh.count.points_refine);
    if (reduce_long(added, false, tm) == 0) return rounds;
    if (rounds >= args.max_rounds) {
      ++fails;  // seams not settled: the halos may miss points
      return rounds;
    }
  }
}

// Every PE's final own points (untimed, for the global check), with
// shmem_collect64 into symmetric buffers.
std::vector<dl::PointGrid::P> all_points(const dl::Mesh& mesh, int nw) {
  std::vector<dl::PointGrid::P> mine = dl::mesh_points(mesh, true);
  constexpr long words = sizeof(dl::PointGrid::P) / 8;
  cnt_src = static_cast<long>(mine.size());
  shmem_fcollect64(cnt_dst, &cnt_src, 1, 0, 0, nw, csync);
  shmem_barrier_all();
  long n_all = 0, n_max = 1;
  for (int w = 0; w < nw; ++w) n_all += cnt_dst[w], n_max = std::max(n_max, cnt_dst[w]);
  // Symmetric allocations have the same size on every PE.
  auto* src = static_cast<dl::PointGrid::P*>(shmem_malloc(static_cast<std::size_t>(n_max) * sizeof(dl::PointGrid::P)));
  auto* dst = static_cast<dl::PointGrid::P*>(shmem_malloc(static_cast<std::size_t>(n_all) * sizeof(dl::PointGrid::P)));
  std::memcpy(src, mine.data(), mine.size() * sizeof(dl::PointGrid::P));
  shmem_barrier_all();
  shmem_collect64(dst, src, static_cast<std::size_t>(cnt_src * words), 0, 0, nw, csync);
  shmem_barrier_all();
  std::vector<dl::PointGrid::P> all(dst, dst + n_all);
  shmem_free(dst);
  shmem_free(src);
  return all;
}

// Sum and max over PEs of every field.
void reduce_tally(const dl::Tally& v, dl::Tally& sum, dl::Tally& mx) {
  std::copy(v.begin(), v.end(), red_src);
  shmem_double_sum_to_all(red_dst, red_src, dl::num_fields, 0, 0, shmem_n_pes(), pwrk_d, psync[0]);
  std::copy(red_dst, red_dst + dl::num_fields, sum.begin());
  shmem_barrier_all();
  shmem_double_max_to_all(red_dst, red_src, dl::num_fields, 0, 0, shmem_n_pes(), pwrk_d, psync[1]);
  std::copy(red_dst, red_dst + dl::num_fields, mx.begin());
  shmem_barrier_all();
}

}  // namespace

int main(int argc, char** argv) {
  shmem_init();
  const int me = shmem_my_pe(), nw = shmem_n_pes();
  for (auto& ps : psync)
    for (long& x : ps) x = SHMEM_SYNC_VALUE;
  for (long& x : csync) x = SHMEM_SYNC_VALUE;
  if (nw > max_pes) {
    shmem_finalize();
    return 1;
  }
  const dl::Args args = dl::parse_args(argc, argv);
  std::mt19937_64 rng(7000 + static_cast<unsigned>(me));
  const dl::Workload work = dl::make_points(me, nw, args.points, rng);

  Times tm;
  long fails = 0;
  Seen seen;
  Inbox box;
  std::vector<void*> blocks;  // private batches, freed at the end
  dl::ZoneHead heads_mem[dl::num_zones];
  dl::ZoneHead* heads[dl::num_zones];
  for (int z = 0; z < dl::num_zones; ++z) heads[z] = &heads_mem[z];
  shmem_barrier_all();
  const double t0 = now();
  dl::Mesh mesh(me, nw, [&](int, std::size_t size, std::span<void*> out) {
    char* b = static_cast<char*>(std::malloc(size * out.size()));
    if (b == nullptr) return false;
    blocks.push_back(b);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = b + i * size;
    return true;
  });
  if (!mesh.start(heads)) ++fails;
  const long refine_cap = 4 * static_cast<long>(work.pts.size()) + 1000;
  for (auto [x, y] : work.pts) mesh.insert_own(x, y, false);
  mesh.refine(dl::max_area_for(args.points), dl::max_ratio2, refine_cap);
  const double local = now() - t0;
  const double t1 = now();
  const long rounds = seam_rounds(mesh, box, me, nw, args, refine_cap, tm, seen, fails);
  const double rounds_s = now() - t1;
  barrier(tm);
  const double total = now() - t0;

  // Checks (not timed).
  if (args.inject_fault && me == 0) mesh.break_one_link();
  const dl::LocalVerdict lv = dl::verify_local(mesh);
  std::vector<dl::PointGrid::P> all = all_points(mesh, nw);
  const long n_all = static_cast<long>(all.size());
  const long gviol = dl::global_violations(mesh, dl::PointGrid(std::move(all)));
  dl::Tally v = dl::tally(mesh, lv, work, gviol, seen.tris, seen.link_faults, fails);
  v[dl::f_total] = total, v[dl::f_wcomm] = tm.wcomm, v[dl::f_barrier] = tm.barrier, v[dl::f_marshal] = tm.marshal;
  v[dl::f_local] = local, v[dl::f_rounds_s] = rounds_s;
  dl::Tally sum{}, mx{};
  reduce_tally(v, sum, mx);
  const bool verified = dl::passed(sum, n_all);
  if (me == 0) {
    region_bench::Record r = dl::record(sum, mx, nw, args.points, n_all, rounds);
    r.allocator = "openshmem";
    r.extra("schedulers", 0);
    r.extra("scheduler_levels", 0);
    r.print();
    if (!verified) std::fprintf(stderr, "bench_delaunay_shmem: verification failed\n");
  }
  if (box.base != nullptr) shmem_free(box.base);
  for (void* b : blocks) std::free(b);
  shmem_finalize();
  return verified ? 0 : 1;
}
