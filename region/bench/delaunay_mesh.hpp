// The worker-local part of the Delaunay benchmark ([Lyberis2012] section 6.4),
// shared by the region version (bench_delaunay.cpp) and the OpenSHMEM one
// (bench_delaunay_shmem.cpp): points, pointer-linked triangles, the
// Bowyer-Watson insertion with a visibility walk to locate a point and a
// neighbour walk to grow the cavity (the Arens optimisation the paper names),
// the refinement criterion, and the checks.
//
// Decomposition: worker w owns the strip x in [w/W, (w+1)/W) of the unit
// square: the points in it, and the final triangles whose circumcentre lies
// in it (the paper: "each region holds the triangles with circumcenters
// within its bounds"). Every worker triangulates its own points plus the
// halo points its neighbours sent, inside one super triangle.
//
// Zones: a triangle never changes its vertices (Bowyer-Watson only creates
// and deletes triangles), so the region it lives in is chosen once, at
// creation, from its circumdisk: interior (the disk stays inside the strip,
// seen from the neighbours), left (crosses the left seam), right (crosses the
// right seam), both. A worker sends its right and both zones to its right
// neighbour and its left and both zones to its left neighbour: the vertices
// of the triangles whose circumdisk crosses a seam are the points the
// neighbour's triangulation of that seam can need.
//
// Predicates: orientation and in-circle as determinants in long double
// (64-bit mantissa), not exact arithmetic; the checks count a point as inside
// a circumcircle only when the determinant exceeds 1e-10 of the sum of the
// absolute values of its terms.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "bench_json.hpp"

namespace delaunay {

struct Vertex {
  double x, y;
  std::int64_t id;     // (owner << 40) | index; super vertices: -1, -2, -3
  std::int32_t owner;  // worker owning the point; -1: super vertex
  std::int32_t pad;
};

enum Zone : std::uint8_t { interior = 0, left = 1, right = 2, both = 3 };
constexpr int num_zones = 4;

struct Tri;
// First object of every zone region: the head of the zone's live list, so
// that the whole pointer structure a neighbour walks is inside the regions
// it receives.
struct ZoneHead {
  Tri* first;
  std::int64_t live;
  std::int32_t zone, owner;
};

struct Tri {
  Vertex* v[3];  // counter-clockwise
  Tri* nb[3];    // nb[i]: across the edge opposite v[i]
  Tri* next;     // zone's live list
  Tri* prev;
  double cx, cy, r2;  // circumcircle, computed from the vertices sorted by id
  std::uint32_t gen;  // bumped when the slot is freed (stale work items)
  std::uint32_t mark;
  std::int32_t index;  // marshalling (OpenSHMEM version)
  std::uint8_t zone, alive, super;
  std::uint8_t link_in[2];  // [0]: to the left send, [1]: to the right send:
                            // bit i when nb[i] is in the same send
};

// Batch allocation callback: fills `out` with objects of `size` bytes in
// pool `pool` (0-3: triangle zones, 4: own points, 5: halo points);
// false on failure.
using BatchAlloc = std::function<bool(int pool, std::size_t size, std::span<void*> out)>;
constexpr int own_points_pool = 4, halo_points_pool = 5, num_pools = 6;

inline long double orient(const Vertex* a, const Vertex* b, double px, double py) {
  return (static_cast<long double>(b->x) - a->x) * (static_cast<long double>(py) - a->y) -
         (static_cast<long double>(b->y) - a->y) * (static_cast<long double>(px) - a->x);
}

// In-circle determinant of (a, b, c) counter-clockwise and point p: > 0 when
// p is inside. *perm (when given): the same terms in absolute value.
inline long double incircle(const Vertex* a, const Vertex* b, const Vertex* c, double px, double py,
                            long double* perm = nullptr) {
  const long double adx = static_cast<long double>(a->x) - px, ady = static_cast<long double>(a->y) - py;
  const long double bdx = static_cast<long double>(b->x) - px, bdy = static_cast<long double>(b->y) - py;
  const long double cdx = static_cast<long double>(c->x) - px, cdy = static_cast<long double>(c->y) - py;
  const long double al = adx * adx + ady * ady, bl = bdx * bdx + bdy * bdy, cl = cdx * cdx + cdy * cdy;
  const long double t1 = bdx * cdy - cdx * bdy, t2 = cdx * ady - adx * cdy, t3 = adx * bdy - bdx * ady;
  if (perm != nullptr)
    *perm = (std::fabs(bdx * cdy) + std::fabs(cdx * bdy)) * al + (std::fabs(cdx * ady) + std::fabs(adx * cdy)) * bl +
            (std::fabs(adx * bdy) + std::fabs(bdx * ady)) * cl;
  return al * t1 + bl * t2 + cl * t3;
}
constexpr long double check_tolerance = 1e-10L;

// Strip of x among nw workers (the same function for points and
// circumcentres, so that every worker assigns a triangle to one owner).
inline int strip_of(double x, int nw) {
  const int s = static_cast<int>(std::floor(x * nw));
  return std::clamp(s, 0, nw - 1);
}

// Circumcentre and squared radius from the vertices in id order: the same
// triangle computed by two workers gives the same bits.
inline void circumcircle(Vertex* const v[3], double* cx, double* cy, double* r2) {
  const Vertex* s[3] = {v[0], v[1], v[2]};
  std::sort(s, s + 3, [](const Vertex* a, const Vertex* b) { return a->id < b->id; });
  const long double bx = static_cast<long double>(s[1]->x) - s[0]->x, by = static_cast<long double>(s[1]->y) - s[0]->y;
  const long double qx = static_cast<long double>(s[2]->x) - s[0]->x, qy = static_cast<long double>(s[2]->y) - s[0]->y;
  const long double d = 2 * (bx * qy - by * qx);
  const long double b2 = bx * bx + by * by, q2 = qx * qx + qy * qy;
  const long double ux = (qy * b2 - by * q2) / d, uy = (bx * q2 - qx * b2) / d;
  *cx = static_cast<double>(s[0]->x + ux);
  *cy = static_cast<double>(s[0]->y + uy);
  *r2 = static_cast<double>(ux * ux + uy * uy);
}

struct Counters {
  long created = 0;       // triangles created (the record's ops)
  long points_own = 0;    // own points inserted (initial + refinement)
  long points_refine = 0; // of them, refinement (circumcentres)
  long points_halo = 0;
  long fails = 0;         // allocation failures, walks that had to scan
};

class Mesh {
 public:
  static constexpr double super_m = 1e3;  // super triangle: far enough that no final
                                          // triangle's circumcircle reaches it

  Mesh(int me, int nw, BatchAlloc alloc) : me_(me), nw_(nw), alloc_(std::move(alloc)) {
    x0_ = static_cast<double>(me) / nw;
    x1_ = static_cast<double>(me + 1) / nw;
  }

  // Zone heads and super triangle. `heads` are the ZoneHead objects, one
  // per zone, each the first object of its zone's region.
  bool start(ZoneHead* heads[num_zones]) {
    for (int z = 0; z < num_zones; ++z) {
      head_[z] = heads[z];
      *head_[z] = ZoneHead{nullptr, 0, z, me_};
    }
    const double m = super_m;
    Vertex* s[3] = {new_vertex(-m, -m, -1, -1, own_points_pool), new_vertex(3 * m, -m, -2, -1, own_points_pool),
                    new_vertex(-m, 3 * m, -3, -1, own_points_pool)};
    if (s[0] == nullptr || s[1] == nullptr || s[2] == nullptr) return false;
    last_ = make_tri(s[0], s[1], s[2]);
    return last_ != nullptr;
  }

  // Inserts an own point (id from the running own count).
  Vertex* insert_own(double x, double y, bool refinement, std::vector<Tri*>* created = nullptr,
                     Tri* start = nullptr) {
    const std::int64_t id = (static_cast<std::int64_t>(me_) << 40) | own_index_;
    Vertex* v = insert(x, y, id, me_, own_points_pool, created, start);
    if (v != nullptr) {
      ++own_index_;
      ++count.points_own;
      if (refinement) ++count.points_refine;
    }
    return v;
  }
  // Inserts a neighbour's point once (duplicates by id are skipped).
  bool insert_halo(double x, double y, std::int64_t id, int owner) {
    if (owner < 0 || owner == me_ || !known_.insert(id).second) return false;
    if (insert(x, y, id, owner, halo_points_pool, nullptr, nullptr) == nullptr) return false;
    ++count.points_halo;
    return true;
  }
  bool known(std::int64_t id) const { return known_.count(id) != 0; }

  // Refinement ([Lyberis2012] 6.4: the triangles that violate the quality
  // constraints are re-triangulated): every triangle this worker owns that
  // is too large or too skinny gets its circumcentre inserted, when that
  // lies inside the unit square. Returns how many points went in.
  long refine(double max_area, double max_ratio2, long cap) {
    std::vector<std::pair<Tri*, std::uint32_t>> work;
    for (ZoneHead* h : head_)
      for (Tri* t = h->first; t != nullptr; t = t->next) work.emplace_back(t, t->gen);
    long added = 0;
    std::vector<Tri*> fresh;
    while (!work.empty() && added < cap) {
      auto [t, g] = work.back();
      work.pop_back();
      if (!t->alive || t->gen != g || !bad(t, max_area, max_ratio2)) continue;
      fresh.clear();
      if (insert_own(t->cx, t->cy, true, &fresh, t) == nullptr) continue;
      ++added;
      for (Tri* n : fresh) work.emplace_back(n, n->gen);
    }
    return added;
  }

  // Triangle owned by this worker: no super vertex, circumcentre in the strip.
  bool owned(const Tri* t) const { return !t->super && strip_of(t->cx, nw_) == me_; }

  // Every live triangle, zone by zone.
  template <class F>
  void for_each(F&& f) const {
    for (ZoneHead* h : head_)
      for (Tri* t = h->first; t != nullptr; t = t->next) f(t);
  }
  ZoneHead* head(int z) const { return head_[z]; }
  long live() const {
    long n = 0;
    for (ZoneHead* h : head_) n += h->live;
    return n;
  }
  long points() const { return count.points_own + count.points_halo; }
  const std::vector<Vertex*>& own_points() const { return own_; }
  const std::vector<Vertex*>& halo_points() const { return halo_; }

  // Sets link_in[side] of the triangles of the zones sent to `side` (0:
  // left, 1: right): bit i when nb[i] is sent along, so that the receiver
  // follows only pointers into the regions it received.
  void mark_links(int side) {
    const int zs[2] = {side == 0 ? left : right, both};
    for (int z : zs)
      for (Tri* t = head_[z]->first; t != nullptr; t = t->next) {
        std::uint8_t bits = 0;
        for (int i = 0; i < 3; ++i)
          if (t->nb[i] != nullptr && (t->nb[i]->zone == zs[0] || t->nb[i]->zone == both)) bits |= 1u << i;
        t->link_in[side] = bits;
      }
  }

  // Neighbour pointers symmetric (same shared edge both ways), every live
  // triangle counter-clockwise. Returns the number of faults.
  long check_links() const {
    long bad_links = 0;
    for_each([&](const Tri* t) {
      if (orient(t->v[0], t->v[1], t->v[2]->x, t->v[2]->y) <= 0) ++bad_links;
      for (int i = 0; i < 3; ++i)
        if (t->nb[i] != nullptr && !mutual(t, i)) ++bad_links;
    });
    return bad_links;
  }
  // Euler: a triangulation of n points whose convex hull is the super
  // triangle has 2n - 5 triangles (n counts the 3 super vertices).
  bool check_euler() const { return live() == 2 * (points() + 3) - 5; }

  // Fault injection for the test of the checks: one neighbour pointer
  // forgotten (the other side still points back).
  void break_one_link() {
    for (ZoneHead* h : head_)
      for (Tri* t = h->first; t != nullptr; t = t->next)
        for (Tri*& n : t->nb)
          if (n != nullptr) {
            n = nullptr;
            return;
          }
  }

  Counters count;

 private:
  int me_, nw_;
  double x0_, x1_;
  BatchAlloc alloc_;
  ZoneHead* head_[num_zones] = {};
  std::vector<void*> free_[num_pools];  // allocated, unused slots per pool
  std::vector<Vertex*> own_, halo_;
  std::unordered_set<std::int64_t> known_;
  std::int64_t own_index_ = 0;
  std::uint32_t epoch_ = 0;
  Tri* last_ = nullptr;
  std::vector<Tri*> cavity_, fresh_;
  struct Edge {
    Vertex* a;
    Vertex* b;
    Tri* outer;
  };
  std::vector<Edge> rim_;

  static constexpr int batch = 4096;  // objects per mr_balloc ([Lyberis2012] 6.5: every
                                     // allocation is a scheduler request, so they are batched)

  void* take(int pool, std::size_t size) {
    auto& f = free_[pool];
    if (f.empty()) {
      f.resize(batch);
      if (!alloc_(pool, size, f)) {
        f.clear();
        ++count.fails;
        return nullptr;
      }
      std::reverse(f.begin(), f.end());  // hand out in address order
    }
    void* p = f.back();
    f.pop_back();
    return p;
  }

  Vertex* new_vertex(double x, double y, std::int64_t id, int owner, int pool) {
    auto* v = static_cast<Vertex*>(take(pool, sizeof(Vertex)));
    if (v == nullptr) return nullptr;
    *v = Vertex{x, y, id, owner, 0};
    (pool == halo_points_pool ? halo_ : own_).push_back(v);
    return v;
  }

  std::uint8_t zone_of(double cx, double r2) const {
    const double r = std::sqrt(r2) * (1 + 1e-9) + 1e-12;  // err towards sending
    const bool l = me_ > 0 && cx - r <= x0_, rt = me_ < nw_ - 1 && cx + r >= x1_;
    return static_cast<std::uint8_t>((l ? left : 0) | (rt ? right : 0));
  }

  Tri* make_tri(Vertex* a, Vertex* b, Vertex* c) {
    double cx, cy, r2;
    Vertex* v[3] = {a, b, c};
    circumcircle(v, &cx, &cy, &r2);
    const std::uint8_t z = zone_of(cx, r2);
    auto* t = static_cast<Tri*>(take(z, sizeof(Tri)));
    if (t == nullptr) return nullptr;
    const std::uint32_t gen = t->gen;  // kept across reuse of the slot
    *t = Tri{};
    t->gen = gen;
    t->v[0] = a, t->v[1] = b, t->v[2] = c;
    t->cx = cx, t->cy = cy, t->r2 = r2;
    t->zone = z;
    t->alive = 1;
    t->super = (a->owner < 0 || b->owner < 0 || c->owner < 0) ? 1 : 0;
    ZoneHead* h = head_[z];
    t->next = h->first;
    if (h->first != nullptr) h->first->prev = t;
    h->first = t;
    ++h->live;
    ++count.created;
    return t;
  }

  void kill_tri(Tri* t) {
    ZoneHead* h = head_[t->zone];
    if (t->prev != nullptr) t->prev->next = t->next;
    else h->first = t->next;
    if (t->next != nullptr) t->next->prev = t->prev;
    --h->live;
    t->alive = 0;
    ++t->gen;
    free_[t->zone].push_back(t);
  }

  bool mutual(const Tri* t, int i) const {
    const Tri* n = t->nb[i];
    if (!n->alive) return false;
    for (int j = 0; j < 3; ++j)
      if (n->nb[j] == t)
        return n->v[(j + 1) % 3] == t->v[(i + 2) % 3] && n->v[(j + 2) % 3] == t->v[(i + 1) % 3];
    return false;
  }

  // Visibility walk from `t` towards (x, y); a cycle (possible only with
  // inconsistent predicates) falls back to scanning every triangle.
  Tri* locate(double x, double y, Tri* t) {
    if (t == nullptr || !t->alive) t = last_;
    for (long steps = 0; steps < 1000000; ++steps) {
      int out = -1;
      for (int i = 0; i < 3 && out < 0; ++i)
        if (orient(t->v[(i + 1) % 3], t->v[(i + 2) % 3], x, y) < 0) out = i;
      if (out < 0) return t;
      if (t->nb[out] == nullptr) break;
      t = t->nb[out];
    }
    ++count.fails;
    Tri* found = nullptr;
    for_each([&](Tri* s) {
      if (found == nullptr && orient(s->v[1], s->v[2], x, y) >= 0 && orient(s->v[2], s->v[0], x, y) >= 0 &&
          orient(s->v[0], s->v[1], x, y) >= 0)
        found = s;
    });
    return found;
  }

  bool bad(const Tri* t, double max_area, double max_ratio2) const {
    if (!owned(t) || t->cx <= 1e-9 || t->cx >= 1 - 1e-9 || t->cy <= 1e-9 || t->cy >= 1 - 1e-9) return false;
    double lmin2 = 1e300;
    for (int i = 0; i < 3; ++i) {
      const double dx = t->v[i]->x - t->v[(i + 1) % 3]->x, dy = t->v[i]->y - t->v[(i + 1) % 3]->y;
      lmin2 = std::min(lmin2, dx * dx + dy * dy);
    }
    const double area = 0.5 * static_cast<double>(orient(t->v[0], t->v[1], t->v[2]->x, t->v[2]->y));
    return area > max_area || t->r2 > max_ratio2 * lmin2;
  }

  // Bowyer-Watson insertion: locate, grow the cavity (triangles whose
  // circumcircle holds the point) through the neighbour pointers, fan the
  // cavity's rim to the new vertex, relink, free the cavity.
  Vertex* insert(double x, double y, std::int64_t id, int owner, int pool, std::vector<Tri*>* created, Tri* start) {
    Tri* t0 = locate(x, y, start);
    if (t0 == nullptr) return nullptr;
    for (Vertex* v : t0->v)
      if (v->x == x && v->y == y) return nullptr;  // point already there
    grow_cavity(t0, x, y);
    Vertex* p = new_vertex(x, y, id, owner, pool);
    if (p == nullptr) return nullptr;
    if (!fan(p)) return nullptr;
    for (Tri* c : cavity_) kill_tri(c);
    last_ = fresh_.front();
    if (created != nullptr) created->insert(created->end(), fresh_.begin(), fresh_.end());
    return p;
  }

  void grow_cavity(Tri* t0, double x, double y) {
    ++epoch_;
    cavity_.clear();
    rim_.clear();
    t0->mark = epoch_;
    cavity_.push_back(t0);
    for (std::size_t k = 0; k < cavity_.size(); ++k) {
      Tri* t = cavity_[k];
      for (int i = 0; i < 3; ++i) {
        Tri* n = t->nb[i];
        if (n != nullptr && n->mark == epoch_) continue;
        if (n != nullptr && incircle(n->v[0], n->v[1], n->v[2], x, y) > 0) {
          n->mark = epoch_;
          cavity_.push_back(n);
        }
      }
    }
    for (Tri* t : cavity_)
      for (int i = 0; i < 3; ++i)
        if (t->nb[i] == nullptr || t->nb[i]->mark != epoch_) rim_.push_back({t->v[(i + 1) % 3], t->v[(i + 2) % 3], t->nb[i]});
  }

  // One new triangle (p, a, b) per rim edge; the outer neighbour points
  // back to it, and the new triangles link among themselves by shared
  // vertex (the rim is one cycle, so each a is one triangle's b).
  bool fan(Vertex* p) {
    fresh_.clear();
    for (const Edge& e : rim_) {
      Tri* n = make_tri(p, e.a, e.b);
      if (n == nullptr) return false;
      n->nb[0] = e.outer;
      if (e.outer != nullptr)
        for (int j = 0; j < 3; ++j)
          if (e.outer->nb[j] != nullptr && e.outer->nb[j]->mark == epoch_ && e.outer->v[(j + 1) % 3] == e.b &&
              e.outer->v[(j + 2) % 3] == e.a)
            e.outer->nb[j] = n;
      fresh_.push_back(n);
    }
    for (Tri* n : fresh_)
      for (Tri* m : fresh_) {
        if (m->v[1] == n->v[2]) n->nb[1] = m;  // edge (b, p)
        if (m->v[2] == n->v[1]) n->nb[2] = m;  // edge (p, a)
      }
    return true;
  }
};

// Points of the whole square (or of a worker's neighbourhood) in a uniform
// grid, for the empty-circumcircle checks.
class PointGrid {
 public:
  struct P {
    double x, y;
    std::int64_t id;
  };
  explicit PointGrid(std::vector<P> pts) : pts_(std::move(pts)) {
    g_ = std::max(1, static_cast<int>(std::sqrt(static_cast<double>(pts_.size()) / 2)));
    cells_.assign(static_cast<std::size_t>(g_) * g_ + 1, 0);
    for (const P& p : pts_) ++cells_[cell(p.x, p.y) + 1];
    for (std::size_t i = 1; i < cells_.size(); ++i) cells_[i] += cells_[i - 1];
    std::vector<P> sorted(pts_.size());
    std::vector<std::size_t> pos(cells_.begin(), cells_.end() - 1);
    for (const P& p : pts_) sorted[pos[cell(p.x, p.y)]++] = p;
    pts_.swap(sorted);
  }
  std::size_t size() const { return pts_.size(); }
  // Points strictly inside t's circumcircle (beyond the tolerance), other
  // than its vertices.
  long inside(const Tri* t) const {
    const double r = std::sqrt(t->r2) * (1 + 1e-9);
    const int ia = idx(t->cx - r), ib = idx(t->cx + r), ja = idx(t->cy - r), jb = idx(t->cy + r);
    long n = 0;
    for (int j = ja; j <= jb; ++j)
      for (int i = ia; i <= ib; ++i) {
        const std::size_t c = static_cast<std::size_t>(j) * g_ + i;
        for (std::size_t k = cells_[c]; k < cells_[c + 1]; ++k) {
          const P& p = pts_[k];
          if (p.id == t->v[0]->id || p.id == t->v[1]->id || p.id == t->v[2]->id) continue;
          long double perm = 0;
          const long double d = incircle(t->v[0], t->v[1], t->v[2], p.x, p.y, &perm);
          if (d > check_tolerance * perm) ++n;
        }
      }
    return n;
  }

 private:
  std::vector<P> pts_;
  std::vector<std::size_t> cells_;
  int g_ = 1;
  int idx(double x) const { return std::clamp(static_cast<int>(std::floor(x * g_)), 0, g_ - 1); }
  std::size_t cell(double x, double y) const { return static_cast<std::size_t>(idx(y)) * g_ + idx(x); }
};

// The benchmark's points of worker me: random boundary points on the
// square's edges inside its strip (corners and the left/right edges to the
// first/last worker), then uniform interior points; ordered in snake rows so
// that consecutive insertions are near each other.
struct Workload {
  std::vector<std::pair<double, double>> pts;
  long boundary = 0;  // of pts, on the square's boundary (convex hull points)
};

template <class Rng>
Workload make_points(int me, int nw, long total, Rng& rng) {
  Workload w;
  const double x0 = static_cast<double>(me) / nw, x1 = static_cast<double>(me + 1) / nw;
  std::uniform_real_distribution<double> ux(x0, x1), u01(0, 1);
  const long side = std::max(2L, static_cast<long>(std::sqrt(static_cast<double>(total)) / 2));
  const long edge = std::max(1L, side / nw);
  auto inside_strip = [&](double x) { return x > x0 && x < x1; };
  for (long i = 0; i < edge; ++i) {
    double x = ux(rng);
    if (!inside_strip(x)) continue;
    w.pts.emplace_back(x, 0.0);
    w.pts.emplace_back(x, 1.0);
  }
  // The left edge (x = 0) belongs to the first strip, the right edge (x = 1)
  // to the last; each with its two corners.
  for (double ex : {0.0, 1.0}) {
    if (strip_of(ex, nw) != me) continue;
    for (long i = 0; i < side; ++i) {
      const double y = u01(rng);
      if (y > 0) w.pts.emplace_back(ex, y);
    }
    w.pts.emplace_back(ex, 0.0);
    w.pts.emplace_back(ex, 1.0);
  }
  w.boundary = static_cast<long>(w.pts.size());
  const long interior = std::max(0L, total / nw - w.boundary);
  for (long i = 0; i < interior; ++i) {
    double x = ux(rng), y = u01(rng);
    if (inside_strip(x) && y > 0) w.pts.emplace_back(x, y);
  }
  const int rows = std::max(1, static_cast<int>(std::sqrt(static_cast<double>(w.pts.size()) / nw / 4)));
  auto key = [&](const std::pair<double, double>& p) {
    const int r = std::min(rows - 1, static_cast<int>(p.second * rows));
    return std::pair<int, double>(r, (r & 1) ? -p.first : p.first);
  };
  std::stable_sort(w.pts.begin() + w.boundary, w.pts.end(), [&](auto& a, auto& b) { return key(a) < key(b); });
  return w;
}

// Command line of both programs: [points] [max_rounds] [--inject-fault].
struct Args {
  long points = 20000;
  int max_rounds = 30;
  bool inject_fault = false;  // break one link after the run: the checks must fail
};
inline Args parse_args(int argc, char** argv) {
  Args a;
  int pos = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--inject-fault") a.inject_fault = true;
    else if (pos++ == 0) a.points = std::atol(argv[i]);
    else a.max_rounds = std::atoi(argv[i]);
  }
  return a;
}

// Refinement thresholds for `total` initial points: at most twice the mean
// triangle area of the initial points, and a circumradius to shortest edge
// ratio of at most sqrt(2) (Ruppert's bound, minimum angle about 20.7 deg).
inline double max_area_for(long total) { return 1.0 / static_cast<double>(total); }
constexpr double max_ratio2 = 2.0;

}  // namespace delaunay

namespace delaunay {

// A neighbour's point, copied out of the received structure.
struct HaloPoint {
  double x, y;
  std::int64_t id;
  std::int64_t owner;
};

// The checks of one worker's final mesh that need no other worker:
// neighbour pointers, Euler count, and the empty circumcircle of every owned
// triangle against the worker's own and halo points.
struct LocalVerdict {
  long link_faults = 0;
  bool euler = false;
  long owned = 0;
  long violations = 0;
};

inline std::vector<PointGrid::P> mesh_points(const Mesh& m, bool own_only) {
  std::vector<PointGrid::P> pts;
  for (const Vertex* v : m.own_points())
    if (v->owner >= 0) pts.push_back({v->x, v->y, v->id});
  if (!own_only)
    for (const Vertex* v : m.halo_points()) pts.push_back({v->x, v->y, v->id});
  return pts;
}

inline LocalVerdict verify_local(const Mesh& m) {
  LocalVerdict v;
  v.link_faults = m.check_links();
  v.euler = m.check_euler();
  const PointGrid grid(mesh_points(m, false));
  m.for_each([&](const Tri* t) {
    if (!m.owned(t)) return;
    ++v.owned;
    if (grid.inside(t) > 0) ++v.violations;
  });
  return v;
}

// Owned triangles whose circumcircle holds a point of the whole point set
// (every worker's final points, gathered after the timed part).
inline long global_violations(const Mesh& m, const PointGrid& all) {
  long n = 0;
  m.for_each([&](const Tri* t) {
    if (m.owned(t) && all.inside(t) > 0) ++n;
  });
  return n;
}

}  // namespace delaunay

namespace delaunay {

// What every worker contributes to the record, reduced over workers (sum
// and max) by each program's own collective.
enum Field {
  f_total, f_sched, f_wcomm, f_barrier, f_marshal, f_local, f_rounds_s,
  f_fails, f_link_faults, f_euler_faults, f_local_viol, f_global_viol,
  f_owned, f_boundary, f_created, f_refine, f_halo, f_recv_tris, f_bytes,
  num_fields
};
using Tally = std::array<double, num_fields>;

// The mesh's counts and the checks' results (times are the caller's).
inline Tally tally(const Mesh& m, const LocalVerdict& lv, const Workload& w, long global_viol, long recv_tris,
                   long recv_link_faults, long fails) {
  Tally t{};
  t[f_fails] = static_cast<double>(fails + m.count.fails);
  t[f_link_faults] = static_cast<double>(lv.link_faults + recv_link_faults);
  t[f_euler_faults] = lv.euler ? 0 : 1;
  t[f_local_viol] = static_cast<double>(lv.violations);
  t[f_global_viol] = static_cast<double>(global_viol);
  t[f_owned] = static_cast<double>(lv.owned);
  t[f_boundary] = static_cast<double>(w.boundary);
  t[f_created] = static_cast<double>(m.count.created);
  t[f_refine] = static_cast<double>(m.count.points_refine);
  t[f_halo] = static_cast<double>(m.count.points_halo);
  t[f_recv_tris] = static_cast<double>(recv_tris);
  t[f_bytes] = static_cast<double>(m.live()) * sizeof(Tri) + static_cast<double>(m.points() + 3) * sizeof(Vertex);
  return t;
}

// The Delaunay triangulation of n points, h of them on the convex hull (the
// square's boundary), has 2n - 2 - h triangles; the workers' owned
// triangles must be exactly those.
inline long expected_triangles(const Tally& sum, long n_all) {
  return 2 * n_all - 2 - static_cast<long>(sum[f_boundary]);
}
inline bool passed(const Tally& sum, long n_all) {
  return sum[f_fails] == 0 && sum[f_link_faults] == 0 && sum[f_euler_faults] == 0 && sum[f_local_viol] == 0 &&
         sum[f_global_viol] == 0 && static_cast<long>(sum[f_owned]) == expected_triangles(sum, n_all);
}

// The fields both programs report; the caller sets allocator and adds its own.
inline region_bench::Record record(const Tally& sum, const Tally& mx, int nw, long npoints, long n_all, long rounds) {
  region_bench::Record r;
  r.experiment = "delaunay";
  r.threads = nw;
  r.bytes = sum[f_bytes];
  r.ops = sum[f_created];  // triangles created
  r.seconds = mx[f_total];
  r.fails = static_cast<long>(sum[f_fails]);
  r.verified = passed(sum, n_all);
  r.extra("workers", nw);
  r.extra("points_initial", static_cast<double>(npoints));
  r.extra("points_final", static_cast<double>(n_all));
  r.extra("points_refinement", sum[f_refine]);
  r.extra("halo_points", sum[f_halo]);
  r.extra("triangles_final", sum[f_owned]);
  r.extra("triangles_expected", static_cast<double>(expected_triangles(sum, n_all)));
  r.extra("rounds", static_cast<double>(rounds));
  r.extra("seam_triangles_received", sum[f_recv_tris]);
  r.extra("link_faults", sum[f_link_faults]);
  r.extra("euler_faults", sum[f_euler_faults]);
  r.extra("local_violations", sum[f_local_viol]);
  r.extra("global_violations", sum[f_global_viol]);
  const double total = sum[f_total] / nw, s = sum[f_sched] / nw, wc = sum[f_wcomm] / nw, b = sum[f_barrier] / nw;
  r.extra("compute_s", total - s - wc - b);
  r.extra("worker_comm_s", wc);
  r.extra("sched_comm_s", s);
  r.extra("barrier_s", b);
  r.extra("marshal_s", sum[f_marshal] / nw);
  r.extra("avg_total_s", total);
  r.extra("local_phase_s", mx[f_local]);
  r.extra("seam_rounds_s", mx[f_rounds_s]);
  return r;
}

}  // namespace delaunay
