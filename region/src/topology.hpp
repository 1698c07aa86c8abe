// Layout of ranks ([Lyberis2012] section 5.1, Figure 3): ranks 0 .. nsched-1 are
// schedulers numbered breadth-first in a tree of `levels` levels where every
// non-leaf scheduler has `fanout` children (the scheduler-to-scheduler
// ratio): children of s are s*fanout+1 .. s*fanout+fanout. The remaining
// ranks are workers, split into contiguous blocks among the leaf schedulers
// (the scheduler-to-worker ratio is nworkers / nleaves). Processes talk only
// to the level directly above or below them.
#pragma once

#include <optional>
#include <vector>

namespace manyalloc::region::detail {

struct Topology {
  int world = 0;
  int levels = 1;
  int fanout = 1;
  int nsched = 1;
  int nleaves = 1;
  int first_leaf = 0;
  int nworkers = 0;

  // nullopt when the world is too small for the tree (needs >= 1 worker).
  static std::optional<Topology> make(int world, int levels, int fanout);

  bool is_scheduler(int rank) const { return rank < nsched; }
  bool is_leaf(int s) const { return s >= first_leaf && s < nsched; }
  bool is_top(int s) const { return s == 0; }
  int depth(int s) const;
  int parent(int s) const { return (s - 1) / fanout; }
  int first_child(int s) const { return s * fanout + 1; }
  int worker_index(int rank) const { return rank - nsched; }
  int worker_rank(int index) const { return index + nsched; }
  // Leaf scheduler of a worker rank.
  int leaf_of(int worker_rank) const;
  // Workers (ranks) attached to leaf s: [first, last).
  void workers_of(int leaf, int& first, int& last) const;
  // Number of scheduler descendants of s (excluding s).
  int descendants(int s) const;
  // Is scheduler t in the subtree rooted at scheduler s (t == s counts)?
  bool in_subtree(int s, int t) const;
  // Next rank on the path from scheduler s to any rank `dest` (scheduler or
  // worker): a child, an attached worker, or the parent.
  int next_hop(int s, int dest) const;
  // Number of direct children (schedulers or, for leaves, workers).
  int child_count(int s) const;
  // The ranks scheduler s talks to: its parent (none for the top), then its
  // children (schedulers, or a leaf's workers).
  std::vector<int> neighbours(int s) const;
  // Whether `rank` is one of neighbours(s).
  bool is_neighbour(int s, int rank) const {
    if (!is_top(s) && rank == parent(s)) return true;
    if (is_scheduler(rank)) return !is_top(rank) && parent(rank) == s;
    return is_leaf(s) && leaf_of(rank) == s;
  }
};

}  // namespace manyalloc::region::detail
