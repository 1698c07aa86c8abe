// The simulator's three patterns (pattern.hpp).
#include <algorithm>
#include <cmath>
#include <vector>

#include "pattern.hpp"

namespace manyalloc::region::sim {

namespace {

Step ralloc(int parent_slot, int out) {
  Step s;
  s.kind = Kind::ralloc;
  s.region = Ref{-1, parent_slot};
  s.out_slot = out;
  return s;
}
Step alloc(Ref region, std::uint64_t size, std::uint64_t count, std::uint64_t keep, int out) {
  Step s;
  s.kind = Kind::alloc;
  s.region = region;
  s.size = size;
  s.count = count;
  s.keep = keep;
  s.out_slot = out;
  return s;
}
Step rfree(int slot) {
  Step s;
  s.kind = Kind::rfree;
  s.region = Ref{-1, slot};
  return s;
}
Step free_object(int slot) {
  Step s;
  s.kind = Kind::free;
  s.object = Ref{-1, slot};
  return s;
}
Step pack(int peer) {
  Step s;
  s.kind = Kind::pack;
  s.peer = peer;
  return s;
}

// Exchange partner of stage s (1..): w ^ s as the benchmarks do, or w + s
// around the ring where w ^ s is not a worker (worker counts that are not
// powers of two).
int partner(int w, int s, int nw) {
  const int x = w ^ s;
  return x < nw ? x : (w + s) % nw;
}

// ---- list (bench_list.cpp) --------------------------------------------------
// Phase 0: a region, the nodes in batches of 4096 (mr_balloc) and an anchor.
// Per stage two phases: the worker sends its list to the stage's peer, then
// the peer's list back (one mr_send, one pack, each). Last: the region is
// freed.
class ListPattern final : public Pattern {
 public:
  explicit ListPattern(const PatternParams& p)
      : p_(p), stages_(std::min(p.stages, p.workers - 1)),
        batches_(static_cast<int>((p.list_nodes + batch - 1) / batch)) {}
  const char* name() const override { return "list"; }
  int phases() const override { return 2 * stages_ + 2; }
  int region_slots() const override { return 1; }
  int object_slots() const override { return 1; }
  Step step(int w, int phase, int i) const override {
    if (phase == 0) {
      if (i == 0) return ralloc(root_slot, 0);
      if (i <= batches_) {
        const std::uint64_t done = static_cast<std::uint64_t>(i - 1) * batch;
        return alloc(Ref{-1, 0}, node_bytes, std::min<std::uint64_t>(batch, p_.list_nodes - done), 0, 0);
      }
      if (i == batches_ + 1) return alloc(Ref{-1, 0}, node_bytes, 1, 1, 0);  // the anchor
      return {};
    }
    if (phase <= 2 * stages_) {
      if (i > 0) return {};
      // Odd phases: the own list to the stage's peer; even phases: the
      // peer's list back, after it arrived (a phase of its own, so that no
      // copying transfer of one region runs both ways at once).
      const int peer = partner(w, (phase + 1) / 2, p_.workers);
      const int whose = phase % 2 == 1 ? -1 : peer;
      Step s = pack(peer);
      s.nregions = s.nobjects = 1;
      s.regions[0] = Ref{whose, 0};
      s.objects[0] = Ref{whose, 0};
      return s;
    }
    return i == 0 ? rfree(0) : Step{};
  }

 private:
  static constexpr std::uint64_t batch = 4096, node_bytes = 16;
  PatternParams p_;
  int stages_;
  int batches_;
};

// ---- Barnes-Hut (bench_barnes_hut.cpp, [Lyberis2012] 6.3) ------------------
// A worker root region; per time step a step region with one region per
// octree level (one mr_balloc of cells each), the previous step freed first;
// per exchange stage one mr_send of the top levels the peer needs and the
// root cell. Region slots: 0 worker root, 1 step region, 2.. levels.
class BarnesHutPattern final : public Pattern {
 public:
  enum class Ph { root, free_step, build, exchange, free_root };
  explicit BarnesHutPattern(const PatternParams& p) : p_(p), stages_(std::min(p.stages, p.workers - 1)) {
    // Octree levels over `bodies` with at most 8 bodies a leaf cell: 1, 8,
    // 64... cells until the leaves hold them all (at most 7 levels).
    for (std::uint64_t c = 1; levels_.size() < 7; c *= 8) {
      levels_.push_back(c);
      if (c * 8 >= p.bodies) break;
    }
    phases_.push_back(Ph::root);
    for (int t = 0; t < p.steps; ++t) {
      if (t > 0) phases_.push_back(Ph::free_step);
      phases_.push_back(Ph::build);
      phases_.push_back(Ph::exchange);
    }
    // Two phases: the step regions (1 + levels each), then the roots (1
    // each), so that every leaf's region count falls by one step size.
    phases_.push_back(Ph::free_step);
    phases_.push_back(Ph::free_root);
  }
  const char* name() const override { return "barnes-hut"; }
  int phases() const override { return static_cast<int>(phases_.size()); }
  int region_slots() const override { return 2 + static_cast<int>(levels_.size()); }
  int object_slots() const override { return 1; }
  Step step(int w, int phase, int i) const override {
    const int depth = static_cast<int>(levels_.size());
    switch (phases_[static_cast<std::size_t>(phase)]) {
      case Ph::root: return i == 0 ? ralloc(root_slot, 0) : Step{};
      case Ph::free_step: return i == 0 ? rfree(1) : Step{};
      case Ph::free_root: return i == 0 ? rfree(0) : Step{};
      case Ph::build: {
        if (i == 0) return ralloc(0, 1);
        const int l = (i - 1) / 2;
        if (l >= depth) return {};
        if ((i - 1) % 2 == 0) return ralloc(1, 2 + l);
        return alloc(Ref{-1, 2 + l}, cell_bytes, levels_[static_cast<std::size_t>(l)], l == 0 ? 1 : 0, 0);
      }
      case Ph::exchange: {
        if (i >= stages_) return {};
        const int s = i + 1;
        // Nearer peers (low stages) need more levels; log2 of the stage
        // stands for the distance of the peers' bounding boxes.
        const int k = std::max(1, depth - static_cast<int>(std::log2(s)));
        Step st = pack(partner(w, s, p_.workers));
        st.nregions = k;
        for (int l = 0; l < k; ++l) st.regions[static_cast<std::size_t>(l)] = Ref{-1, 2 + l};
        st.nobjects = 1;
        st.objects[0] = Ref{-1, 0};
        return st;
      }
    }
    return {};
  }

 private:
  static constexpr std::uint64_t cell_bytes = 384;
  PatternParams p_;
  int stages_;
  std::vector<std::uint64_t> levels_;
  std::vector<Ph> phases_;
};

// ---- Delaunay ([Lyberis2012] 6.4, Figure 5) ---------------------------------
// Workers on a gx x gy grid; each owns a quadrant region (slot 0) of four
// sub-quadrant regions (slots 1-4) on a 2gx x 2gy grid of sub-quadrants
// (a torus). Main phase: per sub-quadrant and point, two triangles freed and
// four allocated (one mr_alloc / mr_free each). Rotations 1-3 shift every
// worker's 2x2 window of sub-quadrants right, down, left: the previous
// handler sends each sub-quadrant to its new one (one mr_send per new
// handler), which inserts the border points (three triangles, one freed)
// into regions owned elsewhere; rotation 4 sends them home. Last: the
// quadrants are freed.
class DelaunayPattern final : public Pattern {
 public:
  explicit DelaunayPattern(const PatternParams& p) : p_(p) {
    gx_ = std::max(1, static_cast<int>(std::sqrt(static_cast<double>(p.workers))));
    while (p.workers % gx_ != 0) --gx_;
    gy_ = p.workers / gx_;
    per_sub_ = 2 + 4 * p.points;
  }
  const char* name() const override { return "delaunay"; }
  int phases() const override { return 7; }
  int region_slots() const override { return 5; }
  int object_slots() const override { return 4 * per_sub_ + 4 * p_.border_points * 3; }
  Step step(int w, int phase, int i) const override {
    if (phase == 0) {
      if (i == 0) return ralloc(root_slot, 0);
      if (i <= 4) return ralloc(0, i);
      if (i <= 8) return alloc(Ref{-1, i - 4}, tri_bytes, 2, 2, (i - 5) * per_sub_);  // placeholders
      return {};
    }
    if (phase == 1) return main_step(i);
    if (phase <= 5) return rotation_step(w, phase - 1, i);
    return i == 0 ? rfree(0) : Step{};
  }

 private:
  static constexpr std::uint64_t tri_bytes = 96;
  static constexpr int off_x[5] = {0, 1, 1, 0, 0}, off_y[5] = {0, 0, 1, 1, 0};

  Step main_step(int i) const {
    const int per_point = 6, sub = i / (per_point * p_.points);
    if (sub >= 4) return {};
    const int p = (i / per_point) % p_.points, j = i % per_point, base = sub * per_sub_;
    if (j < 2) return free_object(p == 0 ? base + j : base + 2 + 4 * (p - 1) + j);
    return alloc(Ref{-1, 1 + sub}, tri_bytes, 1, 1, base + 2 + 4 * p + (j - 2));
  }

  // Sub-quadrant k (0..3: (0,0) (1,0) (0,1) (1,1)) of worker w's window in
  // rotation r, as grid coordinates.
  void window(int w, int r, int k, int& a, int& b) const {
    a = (2 * (w % gx_) + off_x[r] + (k & 1)) % (2 * gx_);
    b = (2 * (w / gx_) + off_y[r] + (k >> 1)) % (2 * gy_);
  }
  int handler(int a, int b, int r) const {
    const int x = ((a - off_x[r]) % (2 * gx_) + 2 * gx_) % (2 * gx_) / 2;
    const int y = ((b - off_y[r]) % (2 * gy_) + 2 * gy_) % (2 * gy_) / 2;
    return x + y * gx_;
  }
  Ref owner(int a, int b) const { return Ref{a / 2 + (b / 2) * gx_, 1 + (a & 1) + 2 * (b & 1)}; }

  Step rotation_step(int w, int r, int i) const {
    // The sends: previous window (rotation r - 1) grouped by new handler.
    std::array<int, 4> peers{};
    int npeers = 0;
    for (int k = 0; k < 4; ++k) {
      int a = 0, b = 0;
      window(w, r - 1, k, a, b);
      const int h = handler(a, b, r);
      if (h != w && std::find(peers.begin(), peers.begin() + npeers, h) == peers.begin() + npeers) peers[npeers++] = h;
    }
    if (i < npeers) {
      Step s = pack(peers[static_cast<std::size_t>(i)]);
      for (int k = 0; k < 4; ++k) {
        int a = 0, b = 0;
        window(w, r - 1, k, a, b);
        if (handler(a, b, r) == s.peer) s.regions[static_cast<std::size_t>(s.nregions++)] = owner(a, b);
      }
      return s;
    }
    if (r == 4) return {};  // home again: no points
    const int t = i - npeers, per_point = 4, k = t / (per_point * p_.border_points);
    if (k >= 4) return {};
    const int pt = (t / per_point) % p_.border_points, j = t % per_point;
    const int scratch = 4 * per_sub_ + (k * p_.border_points + pt) * 3;
    if (j == 3) return free_object(scratch);  // the first of the point's three
    int a = 0, b = 0;
    window(w, r, k, a, b);
    return alloc(owner(a, b), tri_bytes, 1, 1, scratch + j);
  }

  PatternParams p_;
  int gx_ = 1, gy_ = 1, per_sub_ = 0;
};

}  // namespace

std::unique_ptr<Pattern> make_pattern(const std::string& name, const PatternParams& p) {
  if (name == "list") return std::make_unique<ListPattern>(p);
  if (name == "barnes-hut") return std::make_unique<BarnesHutPattern>(p);
  if (name == "delaunay") return std::make_unique<DelaunayPattern>(p);
  return nullptr;
}

}  // namespace manyalloc::region::sim
