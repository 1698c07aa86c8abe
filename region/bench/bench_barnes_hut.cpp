// Barnes-Hut N-body steps with regions ([Lyberis2012] Fig. 4e-f, section 6.3).
// Each worker owns a slab of bodies, builds its octree level by level with
// every tree level in its own region (one bulk allocation per level),
// exchanges bounding boxes, and sends each peer the top levels of its tree
// that the peer's opening criterion needs, as whole regions. The receiver
// walks the grafted remote trees with the local pointers. Time is split into
// computation, worker communication, scheduler communication and barrier wait
// (per worker, averaged). Run with a single scheduler and with two levels to
// compare scheduler-communication time.
// Simplification: bodies stay with their owner (no recursive-bisection load
// balancing between steps); the step count is small so they move little.
// Usage: mpiexec -n <schedulers + workers> region_bench_barnes_hut [bodies] [steps]
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_json.hpp"
#include "bench_session.hpp"
#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.hpp"

namespace mr = manyalloc::region;

namespace {

constexpr int leaf_max = 8;
constexpr int max_depth = 24;
constexpr double theta = 0.5;
constexpr double eps2 = 1e-6;
constexpr double dt = 1e-4;

struct Cell {
  double center[3];
  double half;
  double com[3];
  double mass;
  Cell* child[8];
  std::int32_t nbodies;
  std::int32_t depth;
  double body[leaf_max][4];  // leaves: x, y, z, m
};

struct Body {
  double p[3], v[3], a[3], m;
};

struct Box {
  double lo[3], hi[3];
};

struct Tree {
  Cell* root = nullptr;
  std::vector<mr::rid_t> levels;  // region of each tree level
  std::vector<std::vector<Cell*>> cells;
  long fails = 0;
};

Box bounding_box(const std::vector<Body>& b) {
  Box x{{1e300, 1e300, 1e300}, {-1e300, -1e300, -1e300}};
  for (const Body& y : b)
    for (int d = 0; d < 3; ++d) x.lo[d] = std::min(x.lo[d], y.p[d]), x.hi[d] = std::max(x.hi[d], y.p[d]);
  return x;
}

double root_half(const Box& b) {
  double h = 0;
  for (int d = 0; d < 3; ++d) h = std::max(h, (b.hi[d] - b.lo[d]) / 2);
  return h * 1.0001 + 1e-12;
}

// Levels [0, k) a peer with box `other` needs from a tree over `mine`.
int levels_needed(const Box& mine, const Box& other, int have) {
  double d2 = 0;
  for (int d = 0; d < 3; ++d) {
    const double gap = std::max({0.0, other.lo[d] - mine.hi[d], mine.lo[d] - other.hi[d]});
    d2 += gap * gap;
  }
  if (d2 == 0) return have;
  const double size = 2 * root_half(mine);
  int j = 0;
  while (j < have - 1 && (size / std::ldexp(1.0, j)) * (size / std::ldexp(1.0, j)) >= theta * theta * d2) ++j;
  return std::min(have, j + 1);
}

// One new tree level: a region of its own and one bulk allocation ([Lyberis2012]
// 6.3: each tree level in a different region).
std::vector<Cell*> new_level(Tree& t, mr::rid_t step_region, std::size_t count) {
  auto lr = mr::ralloc(step_region);
  if (!lr) ++t.fails;
  std::vector<void*> mem(count);
  if (mr::balloc(sizeof(Cell), lr.value, mem) != mr::Status::ok) {
    ++t.fails;
    return {};
  }
  t.levels.push_back(lr.value);
  std::vector<Cell*> cells(count);
  for (std::size_t i = 0; i < count; ++i) cells[i] = static_cast<Cell*>(mem[i]);
  t.cells.push_back(cells);
  return cells;
}

struct Spec {
  Cell* parent;
  int oct, start, count;
};

// Fills a leaf with its bodies, or sorts the cell's bodies by octant and
// appends one Spec per non-empty child.
void split_cell(Cell* c, int start, int count, const std::vector<Body>& bodies, std::vector<int>& idx,
                std::vector<Spec>& specs) {
  c->nbodies = count;
  std::fill(std::begin(c->child), std::end(c->child), nullptr);
  if (count <= leaf_max || c->depth + 1 == max_depth) {
    c->nbodies = std::min(count, leaf_max);
    for (int k = 0; k < c->nbodies; ++k) {
      const Body& b = bodies[static_cast<std::size_t>(idx[static_cast<std::size_t>(start + k)])];
      c->body[k][0] = b.p[0], c->body[k][1] = b.p[1], c->body[k][2] = b.p[2], c->body[k][3] = b.m;
    }
    return;
  }
  auto oct_of = [&](int bi) {
    const Body& b = bodies[static_cast<std::size_t>(bi)];
    return static_cast<std::size_t>((b.p[0] > c->center[0] ? 1 : 0) | (b.p[1] > c->center[1] ? 2 : 0) |
                                    (b.p[2] > c->center[2] ? 4 : 0));
  };
  std::array<int, 8> cnt{}, pos{};
  for (int k = start; k < start + count; ++k) ++cnt[oct_of(idx[static_cast<std::size_t>(k)])];
  for (std::size_t o = 1; o < 8; ++o) pos[o] = pos[o - 1] + cnt[o - 1];
  std::vector<int> tmp(static_cast<std::size_t>(count));
  for (int k = start; k < start + count; ++k) {
    const int bi = idx[static_cast<std::size_t>(k)];
    tmp[static_cast<std::size_t>(pos[oct_of(bi)]++)] = bi;
  }
  std::copy(tmp.begin(), tmp.end(), idx.begin() + start);
  int off = start;
  for (std::size_t o = 0; o < 8; ++o) {
    if (cnt[o] > 0) specs.push_back({c, static_cast<int>(o), off, cnt[o]});
    off += cnt[o];
  }
}

// Builds the octree breadth-first, one region and one balloc per level.
Tree build_tree(std::vector<Body>& bodies, mr::rid_t step_region) {
  Tree t;
  const Box box = bounding_box(bodies);
  std::vector<int> idx(bodies.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
  std::vector<Cell*> cur = new_level(t, step_region, 1);
  if (cur.empty()) return t;
  Cell* r = cur[0];
  for (int d = 0; d < 3; ++d) r->center[d] = (box.lo[d] + box.hi[d]) / 2;
  r->half = root_half(box);
  r->depth = 0;
  t.root = r;
  std::vector<std::pair<int, int>> ranges{{0, static_cast<int>(idx.size())}};
  while (!cur.empty()) {
    std::vector<Spec> specs;
    for (std::size_t i = 0; i < cur.size(); ++i) split_cell(cur[i], ranges[i].first, ranges[i].second, bodies, idx, specs);
    if (specs.empty()) break;
    std::vector<Cell*> next = new_level(t, step_region, specs.size());
    if (next.empty()) break;
    ranges.clear();
    for (std::size_t i = 0; i < specs.size(); ++i) {
      Cell* ch = next[i];
      const Spec& s = specs[i];
      const double h = s.parent->half / 2;
      for (int d = 0; d < 3; ++d) ch->center[d] = s.parent->center[d] + (((s.oct >> d) & 1) ? h : -h);
      ch->half = h;
      ch->depth = s.parent->depth + 1;
      s.parent->child[s.oct] = ch;
      ranges.emplace_back(s.start, s.count);
    }
    cur.swap(next);
  }
  // Centres of mass, bottom-up.
  for (auto lvl = t.cells.rbegin(); lvl != t.cells.rend(); ++lvl) {
    for (Cell* c : *lvl) {
      double m = 0, x[3] = {0, 0, 0};
      bool leaf = true;
      for (Cell* ch : c->child) {
        if (ch == nullptr) continue;
        leaf = false;
        m += ch->mass;
        for (int d = 0; d < 3; ++d) x[d] += ch->mass * ch->com[d];
      }
      if (leaf)
        for (int k = 0; k < c->nbodies; ++k) {
          m += c->body[k][3];
          for (int d = 0; d < 3; ++d) x[d] += c->body[k][3] * c->body[k][d];
        }
      c->mass = m;
      for (int d = 0; d < 3; ++d) c->com[d] = m > 0 ? x[d] / m : c->center[d];
    }
  }
  return t;
}

void accumulate(const Cell* c, const double p[3], int cutoff, double acc[3]) {
  double dx[3], r2 = eps2;
  for (int d = 0; d < 3; ++d) dx[d] = c->com[d] - p[d], r2 += dx[d] * dx[d];
  bool leaf = true;
  for (const Cell* ch : c->child) leaf = leaf && ch == nullptr;
  if (leaf && c->depth <= cutoff) {
    for (int k = 0; k < c->nbodies; ++k) {
      double e[3], s2 = eps2;
      for (int d = 0; d < 3; ++d) e[d] = c->body[k][d] - p[d], s2 += e[d] * e[d];
      if (s2 <= eps2 * 1.0000001) continue;  // the body itself
      const double f = c->body[k][3] / (s2 * std::sqrt(s2));
      for (int d = 0; d < 3; ++d) acc[d] += f * e[d];
    }
    return;
  }
  const double size = 2 * c->half;
  if (c->depth >= cutoff || size * size < theta * theta * r2) {
    const double f = c->mass / (r2 * std::sqrt(r2));
    for (int d = 0; d < 3; ++d) acc[d] += f * dx[d];
    return;
  }
  for (const Cell* ch : c->child)
    if (ch != nullptr) accumulate(ch, p, cutoff, acc);
}

}  // namespace

int main(int argc, char** argv) {
  region_bench::Session session(&argc, &argv);
  if (!session.runs()) return session.exit_status();
  const int me = session.worker_id(), nw = session.num_workers();
  const long nbodies = argc > 1 ? std::atol(argv[1]) : 8192;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 4;
  MPI_Comm comm = mr_worker_comm();
  if ((nw & (nw - 1)) != 0) {
    if (me == 0) std::fprintf(stderr, "bench_barnes_hut: workers (%d) must be a power of two\n", nw);
    return 1;
  }
  // Bodies: uniform in the unit cube; worker w owns the x-slab [w/P, (w+1)/P).
  const long mine_n = nbodies / nw;
  std::vector<Body> bodies(static_cast<std::size_t>(mine_n));
  std::mt19937_64 rng(1000 + static_cast<unsigned>(me));
  std::uniform_real_distribution<double> u(0, 1);
  for (Body& b : bodies) {
    b.p[0] = (me + u(rng)) / nw;
    b.p[1] = u(rng);
    b.p[2] = u(rng);
    b.v[0] = b.v[1] = b.v[2] = 0;
    b.m = 1.0 / static_cast<double>(nbodies);
  }
  auto worker_root = mr::ralloc();  // no hint: on this worker's leaf scheduler
  long fails = worker_root ? 0 : 1;
  mr::rid_t prev_step = 0;
  double t_total = 0, t_sched = 0, t_wcomm = 0, t_barrier = 0, t_extra_wcomm = 0;
  double max_rel_err = 0;
  long remote_levels_sent = 0;
  for (int step = 0; step < steps + 1; ++step) {  // step 0 is warm-up
    mr::barrier();
    mr_times_reset();
    double extra = 0;
    const double t0 = MPI_Wtime();
    if (prev_step != 0 && mr::rfree(prev_step) != mr::Status::ok) ++fails;
    auto step_region = mr::ralloc(worker_root.value);
    if (!step_region) ++fails;
    prev_step = step_region.value;
    Tree tree = build_tree(bodies, step_region.value);
    fails += tree.fails;
    const Box box = bounding_box(bodies);
    std::vector<Box> boxes(static_cast<std::size_t>(nw));
    double ta = MPI_Wtime();
    MPI_Allgather(&box, 6, MPI_DOUBLE, boxes.data(), 6, MPI_DOUBLE, comm);
    // Tree depth of every worker (for the cutoff computation).
    int have = static_cast<int>(tree.levels.size());
    std::vector<int> depths(static_cast<std::size_t>(nw));
    MPI_Allgather(&have, 1, MPI_INT, depths.data(), 1, MPI_INT, comm);
    extra += MPI_Wtime() - ta;
    // Pairwise exchange of the needed top levels (regions) and the root.
    std::vector<std::pair<const Cell*, int>> remote;  // root, cutoff depth
    for (int stage = 1; stage < nw; ++stage) {
      const int peer = me ^ stage;
      const int k_out = levels_needed(box, boxes[static_cast<std::size_t>(peer)], have);
      const int k_in = levels_needed(boxes[static_cast<std::size_t>(peer)], box, depths[static_cast<std::size_t>(peer)]);
      remote_levels_sent += k_out;
      void* root_obj[] = {tree.root};
      std::span<const mr::rid_t> regs(tree.levels.data(), static_cast<std::size_t>(k_out));
      mr::rid_t got[max_depth + 1];
      void* got_obj[1];
      if (me < peer) {
        if (mr::send(peer, regs, root_obj) != mr::Status::ok) ++fails;
        if (!mr::recv(peer, got, got_obj)) ++fails;
      } else {
        if (!mr::recv(peer, got, got_obj)) ++fails;
        if (mr::send(peer, regs, root_obj) != mr::Status::ok) ++fails;
      }
      remote.emplace_back(static_cast<const Cell*>(got_obj[0]), k_in - 1);
    }
    // Forces and leapfrog update.
    for (Body& b : bodies) {
      double acc[3] = {0, 0, 0};
      accumulate(tree.root, b.p, max_depth, acc);
      for (auto& [root, cutoff] : remote) accumulate(root, b.p, cutoff, acc);
      for (int d = 0; d < 3; ++d) b.a[d] = acc[d];
    }
    if (step == 0) {
      // Verify against direct summation for a sample of bodies.
      std::vector<double> all(static_cast<std::size_t>(nbodies) * 4), mineb(static_cast<std::size_t>(mine_n) * 4);
      for (long i = 0; i < mine_n; ++i)
        for (int d = 0; d < 3; ++d) mineb[static_cast<std::size_t>(i * 4 + d)] = bodies[static_cast<std::size_t>(i)].p[d];
      for (long i = 0; i < mine_n; ++i) mineb[static_cast<std::size_t>(i * 4 + 3)] = bodies[static_cast<std::size_t>(i)].m;
      MPI_Allgather(mineb.data(), static_cast<int>(mine_n * 4), MPI_DOUBLE, all.data(), static_cast<int>(mine_n * 4),
                    MPI_DOUBLE, comm);
      for (long s = 0; s < std::min<long>(32, mine_n); ++s) {
        const Body& b = bodies[static_cast<std::size_t>(s * (mine_n / 32 + 1) % mine_n)];
        double a[3] = {0, 0, 0};
        for (long j = 0; j < nw * mine_n; ++j) {
          double e[3], s2 = eps2;
          for (int d = 0; d < 3; ++d) e[d] = all[static_cast<std::size_t>(j * 4 + d)] - b.p[d], s2 += e[d] * e[d];
          if (s2 <= eps2 * 1.0000001) continue;
          const double f = all[static_cast<std::size_t>(j * 4 + 3)] / (s2 * std::sqrt(s2));
          for (int d = 0; d < 3; ++d) a[d] += f * e[d];
        }
        const double n1 = std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
        const double dn = std::sqrt((a[0] - b.a[0]) * (a[0] - b.a[0]) + (a[1] - b.a[1]) * (a[1] - b.a[1]) +
                                    (a[2] - b.a[2]) * (a[2] - b.a[2]));
        max_rel_err = std::max(max_rel_err, dn / n1);
      }
    }
    for (Body& b : bodies)
      for (int d = 0; d < 3; ++d) b.v[d] += dt * b.a[d], b.p[d] += dt * b.v[d];
    mr::barrier();
    const double total = MPI_Wtime() - t0;
    double s = 0, w = 0, br = 0;
    mr_times(&s, &w, &br);
    if (step > 0) {
      t_total += total;
      t_sched += s;
      t_wcomm += w;
      t_barrier += br;
      t_extra_wcomm += extra;
    }
  }
  if (prev_step != 0 && mr::rfree(prev_step) != mr::Status::ok) ++fails;
  if (mr::rfree(worker_root.value) != mr::Status::ok) ++fails;
  // Averages over workers.
  double v[6] = {t_total, t_sched, t_wcomm + t_extra_wcomm, t_barrier, max_rel_err, static_cast<double>(fails)};
  double sum[6], mx[6];
  MPI_Reduce(v, sum, 6, MPI_DOUBLE, MPI_SUM, 0, comm);
  MPI_Reduce(v, mx, 6, MPI_DOUBLE, MPI_MAX, 0, comm);
  if (me == 0) {
    const double total = sum[0] / nw, sched = sum[1] / nw, wc = sum[2] / nw, bar = sum[3] / nw;
    region_bench::Record r;
    r.experiment = "barnes_hut";
    r.allocator = mr_scheduler_levels() > 1 ? "myrmics-region-2level" : "myrmics-region-1sched";
    r.threads = nw;
    r.bytes = 0;
    r.ops = static_cast<double>(nbodies) * steps;  // body updates
    r.seconds = mx[0];
    r.fails = static_cast<long>(sum[5]);
    r.verified = mx[4] < 0.05 && r.fails == 0;
    r.extra("bodies", static_cast<double>(nbodies));
    r.extra("steps", steps);
    r.extra("workers", nw);
    r.extra("schedulers", mr_num_schedulers());
    r.extra("scheduler_levels", mr_scheduler_levels());
    r.extra("compute_s", total - sched - wc - bar);
    r.extra("worker_comm_s", wc);
    r.extra("sched_comm_s", sched);
    r.extra("barrier_s", bar);
    r.extra("avg_total_s", total);
    r.extra("max_rel_force_error", mx[4]);
    r.print();
  }
  return 0;
}
