// The two PIC experiments ([Eckert2014] 5.2) on one heap, over any launcher:
// the test runners (manyalloc_support: HostRunner, CudaRunner) and the peers
// benchmark's launcher (peer_pic.cuh). C++17, so that the peers' translation
// units (compiled as C++17) run the same code.
//
// A launcher L provides run(n, f), timed_run(n, f) -> seconds (f(acc, w) for
// w < n) and Buffer<T> (zeroed device array: data(), to_host()). Mem
// provides alloc(acc, species, bytes) and free(acc, p) (species_mem.hpp).
// Records go to emit(Measurement); `base` carries suite, allocator, device,
// commit; finish(Measurement&) may add fields to the closing record.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "census.hpp"
#include "options.hpp"
#include "records.hpp"  // heap/bench/suite
#include "step.hpp"

namespace manyalloc::heap::pic {

struct Totals {
  std::uint64_t allocs = 0, frees = 0, fails = 0, births = 0;
  void add(const WorkerStats& s) {
    allocs += s.allocs;
    frees += s.frees;
    fails += s.fails;
    births += s.births;
  }
  void add_all(const Totals& o) {
    allocs += o.allocs;
    frees += o.frees;
    fails += o.fails;
    births += o.births;
  }
};

struct CensusSum {
  std::uint64_t total = 0;
  std::uint64_t frames = 0;
  std::uint64_t broken = 0;
  std::vector<std::uint64_t> per_species;
};

template <class L>
class Runs {
  template <class T>
  using Buffer = typename L::template Buffer<T>;

  // The device-side arrays of one run.
  struct Arrays {
    Buffer<FrameList> lists, outbox;
    Buffer<WorkerStats> stats;
    Buffer<Census> census;
    Arrays(std::uint32_t cells, std::uint32_t species)
        : lists(std::size_t{cells} * species), outbox(std::size_t{cells} * species * directions),
          stats(std::size_t{cells} * species), census(std::size_t{cells} * species) {}
    Grid grid() { return Grid{lists.data(), outbox.data(), stats.data()}; }
  };

  static Totals totals(const Buffer<WorkerStats>& b, std::size_t workers) {
    Totals t;
    const auto h = b.to_host();
    for (std::size_t i = 0; i < workers; ++i) t.add(h[i]);
    return t;
  }

  static CensusSum census(Arrays& a, const StepParams& sp) {
    L::run(sp.cells * sp.species, Verify{a.grid(), sp, a.census.data()});
    CensusSum c;
    c.per_species.assign(sp.species, 0);
    const auto h = a.census.to_host();
    for (std::size_t w = 0; w < std::size_t{sp.cells} * sp.species; ++w) {
      c.total += h[w].particles;
      c.frames += h[w].frames;
      c.broken += h[w].broken;
      c.per_species[w % sp.species] += h[w].particles;
    }
    return c;
  }

  template <class Mem>
  static void teardown(const Mem& mem, Arrays& a, const StepParams& sp) {
    L::run(sp.cells * sp.species, Teardown<Mem>{mem, a.grid()});
  }

  static double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

 public:
  // Time per step of opt.species species (Figures 5.3-5.5): one record per
  // step, then a summary record.
  template <class Mem, class Out, class Finish>
  static void steps(const Options& opt, const Mem& mem, const bench::Measurement& base, std::size_t heap_bytes,
                    Out&& emit, Finish&& finish) {
    const std::string& name = base.allocator;
    StepParams sp;
    sp.cells = opt.cells;
    sp.species = opt.species;
    sp.frame_bytes = opt.frame_bytes;
    sp.move = static_cast<float>(opt.move);
    Arrays a(sp.cells, sp.species);
    const std::uint32_t lists = sp.cells * sp.species;
    L::run(lists, Init<Mem>{mem, a.grid(), sp, opt.per_list});
    const Totals init = totals(a.stats, lists);
    const CensusSum start = census(a, sp);
    std::fprintf(stderr, "steps %s: %llu particles in %u cells x %u species\n", name.c_str(),
                 static_cast<unsigned long long>(start.total), sp.cells, sp.species);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<double> times;
    bool all_verified = start.broken == 0 && init.fails == 0;
    std::uint64_t fails = init.fails;
    for (std::uint32_t k = 1; k <= opt.steps; ++k) {
      sp.step = k;
      sp.growing = ((k - 1) / opt.shift_period) % sp.species;
      sp.convert = static_cast<float>(opt.convert);
      const double t_emit = L::timed_run(lists, Emit<Mem>{mem, a.grid(), sp});
      Totals t = totals(a.stats, lists);
      const double t_gather = L::timed_run(sp.cells, Gather<Mem>{mem, a.grid(), sp});
      t.add_all(totals(a.stats, sp.cells));
      const CensusSum c = census(a, sp);
      const bool ok = c.total == start.total && c.broken == 0;
      all_verified = all_verified && ok;
      fails += t.fails;
      bench::Measurement m = base;
      m.experiment = "steps";
      m.threads = lists;
      m.ops = t.allocs + t.frees;
      m.seconds = t_emit + t_gather;
      m.fails = t.fails;
      m.verified = ok;
      m.extra["step"] = k;
      m.extra["species"] = sp.species;
      m.extra["cells"] = sp.cells;
      m.extra["particles"] = static_cast<double>(c.total);
      m.extra["allocs"] = static_cast<double>(t.allocs);
      m.extra["frees"] = static_cast<double>(t.frees);
      m.extra["seconds_emit"] = t_emit;
      m.extra["seconds_gather"] = t_gather;
      m.extra["growing"] = sp.growing;
      m.extra["population_growing"] = static_cast<double>(c.per_species[sp.growing]);
      m.extra["frames_in_use"] = static_cast<double>(c.frames);
      m.extra["heap_bytes"] = static_cast<double>(heap_bytes);
      emit(m);
      times.push_back(m.seconds);
      if (!ok) {
        std::fprintf(stderr, "steps %s: step %u NOT verified: %llu particles (expected %llu), %llu broken lists\n",
                     name.c_str(), k, static_cast<unsigned long long>(c.total),
                     static_cast<unsigned long long>(start.total), static_cast<unsigned long long>(c.broken));
      }
      if (since(t0) > opt.budget_s) break;
    }
    teardown(mem, a, sp);
    bench::Measurement m = base;
    m.experiment = "steps_summary";
    m.threads = lists;
    m.ops = times.size();
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    m.seconds = sorted.empty() ? 0 : sorted[sorted.size() / 2];
    m.fails = fails;
    m.verified = all_verified;
    m.extra["species"] = sp.species;
    m.extra["cells"] = sp.cells;
    m.extra["particles"] = static_cast<double>(start.total);
    m.extra["steps_run"] = static_cast<double>(times.size());
    m.extra["heap_bytes"] = static_cast<double>(heap_bytes);
    finish(m);
    emit(m);
    std::fprintf(stderr, "steps %s: %zu steps, median %.3f ms, fails %llu, verified %s\n", name.c_str(),
                 times.size(), m.seconds * 1e3, static_cast<unsigned long long>(fails),
                 all_verified ? "yes" : "NO");
  }

  // For n species in one heap, species 0 grows until the first failed
  // allocation (Figure 5.6): the others convert into it within
  // opt.ramp_steps steps while new particles are injected. One record.
  template <class Mem, class Out, class Finish>
  static void growth(const Options& opt, const Mem& mem, const bench::Measurement& base, std::size_t heap_bytes,
                     std::uint32_t n, Out&& emit, Finish&& finish) {
    StepParams sp;
    sp.cells = opt.growth_cells;
    sp.species = n;
    sp.frame_bytes = opt.frame_bytes;
    sp.move = static_cast<float>(opt.move);
    sp.growing = 0;
    sp.inject = opt.inject;
    const std::uint32_t cap = frame_capacity(opt.frame_bytes);
    const double capacity = static_cast<double>(heap_bytes / opt.frame_bytes) * cap;
    const auto per_list = static_cast<std::uint32_t>(opt.init_share * capacity / (static_cast<double>(sp.cells) * n));
    Arrays a(sp.cells, sp.species);
    const std::uint32_t lists = sp.cells * n;
    L::run(lists, Init<Mem>{mem, a.grid(), sp, per_list});
    const Totals init = totals(a.stats, lists);
    const CensusSum start = census(a, sp);
    bool verified = start.broken == 0;
    std::uint64_t births = 0, max_pop = start.per_species[0], fails = init.fails, frames_at_fail = 0;
    std::uint32_t k = 0, first_fail = 0;
    double seconds = 0;
    bool over_budget = false;
    const auto t0 = std::chrono::steady_clock::now();
    while (fails == 0 && k < opt.max_growth_steps && !over_budget) {
      ++k;
      sp.step = k;
      // A share 1/(ramp - k + 1) of what is left converts each step.
      sp.convert = k <= opt.ramp_steps ? 1.0f / static_cast<float>(opt.ramp_steps - k + 1) : 1.0f;
      sp.id_base = 0x40000000u + k * sp.cells * sp.inject;
      seconds += L::timed_run(lists, Emit<Mem>{mem, a.grid(), sp});
      Totals t = totals(a.stats, lists);
      seconds += L::timed_run(sp.cells, Gather<Mem>{mem, a.grid(), sp});
      t.add_all(totals(a.stats, sp.cells));
      births += t.births;
      const CensusSum c = census(a, sp);
      verified = verified && c.broken == 0 && c.total == start.total + births;
      max_pop = std::max<std::uint64_t>(max_pop, c.per_species[0]);
      fails += t.fails;
      if (t.fails != 0) {
        first_fail = k;
        frames_at_fail = c.frames;
      }
      over_budget = since(t0) > opt.budget_s;
    }
    teardown(mem, a, sp);
    bench::Measurement m = base;
    m.experiment = "growth";
    m.threads = lists;
    m.bytes = heap_bytes;
    m.ops = k;
    m.seconds = seconds;
    m.fails = fails;
    m.verified = verified;
    m.extra["species"] = n;
    m.extra["cells"] = sp.cells;
    m.extra["max_population"] = static_cast<double>(max_pop);
    m.extra["first_fail_step"] = first_fail;
    m.extra["steps_run"] = k;
    m.extra["initial_per_species"] = static_cast<double>(per_list) * sp.cells;
    m.extra["frame_capacity"] = cap;
    m.extra["heap_bytes"] = static_cast<double>(heap_bytes);
    m.extra["ideal_particles"] = capacity;
    // Frames held when the first allocation failed, of the pool's frames: a
    // low share means the heap refused while memory was free.
    m.extra["frames_at_first_fail"] = static_cast<double>(frames_at_fail);
    m.extra["pool_frames"] = static_cast<double>(heap_bytes / opt.frame_bytes);
    if (first_fail == 0) {
      m.tags["note"] = over_budget ? "stopped at the time budget before any allocation failed"
                                   : "no allocation failed within max_growth_steps";
    }
    finish(m);
    emit(m);
    std::fprintf(stderr, "growth %s species %u: max population %llu (%.1f%% of %g) after %u steps, verified %s\n",
                 base.allocator.c_str(), n, static_cast<unsigned long long>(max_pop), 100.0 * max_pop / capacity,
                 capacity, k, verified ? "yes" : "NO");
  }
};

}  // namespace manyalloc::heap::pic
