// Request patterns of the region simulator: what each worker asks of the
// schedulers, modelled on the region benchmarks (bench_list.cpp,
// bench_barnes_hut.cpp) and on the Delaunay refinement of [Lyberis2012]
// section 6.4. A pattern is a sequence of phases (a barrier between two);
// in a phase every worker runs a short script of steps, one request per
// step, exactly the requests the mr_* calls of the step send (region.h).
//
// Scripts are computed on demand (step(w, phase, i)), never stored, so that
// 65,536 workers cost only their own few region ids and kept addresses.
//
// Determinism (the exact-match check, README): within one phase every
// worker changes its leaf's region count by steps of one size and one sign
// (only creations, or only frees of equal subtrees), and no request carries
// a level hint, so the subtree loads a leaf reports, the placement of every
// region and (with the check's sizes) the refills are the same whatever the
// order in which the workers' requests meet at a scheduler.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

namespace manyalloc::region::sim {

// A region id or object address held by a worker: its slot in that
// worker's tables. worker < 0: the worker running the step.
struct Ref {
  int worker = -1;
  int slot = 0;
};
// The root region (mr_ralloc's default parent).
inline constexpr int root_slot = -1;

enum class Kind { none, ralloc, alloc, free, rfree, pack };

struct Step {
  static constexpr int max_refs = 8;
  Kind kind = Kind::none;  // none: the worker's script of this phase is over
  // ralloc: the parent (slot root_slot: the root region); alloc, rfree: the region.
  Ref region;
  // ralloc: region slot the new id goes to. alloc: first object slot the
  // first `keep` addresses go to.
  int out_slot = 0;
  std::uint64_t size = 0, count = 0, keep = 0;  // alloc: bytes per object, objects (count > 1: mr_balloc)
  Ref object;                                     // free
  // pack (mr_send to `peer`): regions and objects.
  int peer = -1;
  int nregions = 0, nobjects = 0;
  std::array<Ref, max_refs> regions{};
  std::array<Ref, max_refs> objects{};
};

struct PatternParams {
  int workers = 16;
  // Exchange stages (list, Barnes-Hut): peers me ^ 1 .. me ^ stages.
  int stages = 4;
  std::uint64_t list_nodes = 1024;  // list: nodes per worker
  std::uint64_t bodies = 256;       // Barnes-Hut: bodies per worker
  int steps = 2;                    // Barnes-Hut: time steps
  int points = 2;                   // Delaunay: points per sub-quadrant, main phase
  int border_points = 1;            // Delaunay: points per sub-quadrant, each rotation
};

class Pattern {
 public:
  virtual ~Pattern() = default;
  virtual const char* name() const = 0;
  virtual int phases() const = 0;
  // Region and object slots every worker needs.
  virtual int region_slots() const = 0;
  virtual int object_slots() const = 0;
  // Step i of worker w's script in `phase` (kind none past its end).
  virtual Step step(int w, int phase, int i) const = 0;
};

// "list", "barnes-hut" or "delaunay"; nullptr for another name.
std::unique_ptr<Pattern> make_pattern(const std::string& name, const PatternParams& p);

}  // namespace manyalloc::region::sim
