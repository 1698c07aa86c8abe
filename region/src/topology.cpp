#include "topology.hpp"

namespace manyalloc::region::detail {

std::optional<Topology> Topology::make(int world, int levels, int fanout) {
  if (levels < 1 || fanout < 1 || levels > 8) return std::nullopt;
  Topology t;
  t.world = world;
  t.levels = levels;
  t.fanout = fanout;
  long nsched = 0, width = 1;
  for (int l = 0; l < levels; ++l) {
    if (l + 1 == levels) t.first_leaf = static_cast<int>(nsched), t.nleaves = static_cast<int>(width);
    nsched += width;
    width *= fanout;
    if (nsched > world) return std::nullopt;
  }
  t.nsched = static_cast<int>(nsched);
  t.nworkers = world - t.nsched;
  if (t.nworkers < 1) return std::nullopt;
  return t;
}

int Topology::depth(int s) const {
  int d = 0;
  while (s > 0) s = parent(s), ++d;
  return d;
}

int Topology::leaf_of(int worker_rank) const {
  const long w = worker_index(worker_rank);
  return first_leaf + static_cast<int>(w * nleaves / nworkers);
}

void Topology::workers_of(int leaf, int& first, int& last) const {
  const long l = leaf - first_leaf;
  // Smallest w with w * nleaves / nworkers >= l.
  auto lo = [&](long x) { return (x * nworkers + nleaves - 1) / nleaves; };
  first = worker_rank(static_cast<int>(lo(l)));
  last = worker_rank(static_cast<int>(lo(l + 1)));
}

int Topology::descendants(int s) const {
  int n = 0;
  for (int t = s + 1; t < nsched; ++t)
    if (in_subtree(s, t)) ++n;
  return n;
}

bool Topology::in_subtree(int s, int t) const {
  if (t < s) return false;
  while (t > s) t = parent(t);
  return t == s;
}

int Topology::next_hop(int s, int dest) const {
  int target = dest;
  if (!is_scheduler(dest)) {
    const int leaf = leaf_of(dest);
    if (leaf == s) return dest;
    target = leaf;
  }
  if (target == s || !in_subtree(s, target)) return s == 0 ? -1 : parent(s);
  while (parent(target) != s) target = parent(target);
  return target;
}

int Topology::child_count(int s) const {
  if (!is_leaf(s)) return fanout;
  int a = 0, b = 0;
  workers_of(s, a, b);
  return b - a;
}

std::vector<int> Topology::neighbours(int s) const {
  std::vector<int> out;
  if (!is_top(s)) out.push_back(parent(s));
  if (is_leaf(s)) {
    int first = 0, last = 0;
    workers_of(s, first, last);
    for (int w = first; w < last; ++w) out.push_back(w);
  } else {
    for (int c = 0; c < child_count(s); ++c) out.push_back(first_child(s) + c);
  }
  return out;
}

}  // namespace manyalloc::region::detail
