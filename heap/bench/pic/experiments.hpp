// The two experiments of the particle-in-cell benchmark ([Eckert2014] 5.2),
// for any platform (main_cuda.cu, main_host.cpp):
//
//   steps   time per step of a two-species run (Figures 5.3-5.5), one record
//           per step; the count of particles must be conserved every step.
//   growth  for n species sharing one heap, species 0 grows (the others
//           convert into it, new particles are injected) until the first
//           allocation fails; the record holds the largest population it
//           reached (Figure 5.6).
//
// A platform P provides: Runner; shared_pool (a tuple of Entry, heaps.hpp);
// Baseline heap type;
// template <std::uint32_t N> HeapBuffer (split for N species);
// heap_buffer_splits (std::integer_sequence of the N built);
// baseline_name, baseline_bounded (false: the baseline never runs out);
// baseline(bytes) (the one heap of the process, see CudaSetLimits).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "options.hpp"
#include "records.hpp"  // heap/bench/suite
#include "species_mem.hpp"
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

template <class P>
class Bench {
  using Runner = typename P::Runner;
  template <class T>
  using Buffer = typename Runner::template Buffer<T>;

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

 public:
  Bench(Options o, std::FILE* out) : opt_(std::move(o)), out_(out), device_(Runner::device_name()) {}

  void run() {
    meta();
    for (const auto& e : opt_.experiments) {
      if (e == "steps") {
        run_steps();
      } else if (e == "growth") {
        run_growth();
      } else {
        throw std::invalid_argument("unknown experiment " + e + " (steps, growth)");
      }
    }
  }

 private:
  bool enabled(const std::string& name) const {
    return opt_.allocators.empty() ||
           std::find(opt_.allocators.begin(), opt_.allocators.end(), name) != opt_.allocators.end();
  }

  bench::Measurement record(const std::string& experiment, const std::string& allocator) const {
    bench::Measurement m;
    m.suite = "pic";
    m.experiment = experiment;
    m.allocator = allocator;
    m.device = device_;
    m.bytes = opt_.frame_bytes;
    if (const char* c = std::getenv("MANYALLOC_COMMIT"); c != nullptr && *c != '\0') m.tags["commit"] = c;
    return m;
  }
  void emit(const bench::Measurement& m) const { bench::write_jsonl(out_, m); }

  void meta() const {
    auto m = record("meta", "");
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    m.tags["date"] = date;
    m.tags["command"] = opt_.command;
    m.verified = true;
    emit(m);
  }

  static Totals totals(const Buffer<WorkerStats>& b, std::size_t workers) {
    Totals t;
    const auto h = b.to_host();
    for (std::size_t i = 0; i < workers; ++i) t.add(h[i]);
    return t;
  }

  CensusSum census(Arrays& a, const StepParams& sp) {
    Runner::run(sp.cells * sp.species, Verify{a.grid(), sp, a.census.data()});
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

  // Calls f(heap, name) for each enabled allocator, the HeapBuffer split for
  // `species` (skipped with a record when that split is not built).
  template <class F>
  void for_each_heap(const std::string& experiment, std::size_t heap_bytes, std::uint32_t species, F&& f) {
    if (enabled("HeapBuffer")) {
      bool built = false;
      if (opt_.frame_bytes == 8192) {
        with_split(species, heap_bytes, f, built, typename P::heap_buffer_splits{});
      }
      if (!built) skip(experiment, "HeapBuffer", species,
                       opt_.frame_bytes != 8192 ? "HeapBuffer is built for 8192-byte frames"
                                                : "no HeapBuffer split built for this many species");
    }
    std::apply([&](auto... entry) { (shared_pool_heap(experiment, heap_bytes, species, f, entry), ...); },
               typename P::shared_pool{});
    guarded(experiment, P::baseline_name, species, [&] {
      if (!enabled(P::baseline_name)) return;
      if (experiment == "growth" && !P::baseline_bounded) {
        skip(experiment, P::baseline_name, species, "the host's malloc has no bound to reach");
        return;
      }
      f(P::baseline(heap_bytes), std::string(P::baseline_name));
    });
  }

  template <class F, class E>
  void shared_pool_heap(const std::string& experiment, std::size_t heap_bytes, std::uint32_t species, F& f, E) {
    if (!enabled(E::name)) return;
    guarded(experiment, E::name, species, [&] {
      typename E::heap heap(heap_bytes);
      f(heap, std::string(E::name));
    });
  }

  template <class F, std::uint32_t... N>
  void with_split(std::uint32_t species, std::size_t heap_bytes, F& f, bool& built,
                  std::integer_sequence<std::uint32_t, N...>) {
    auto one = [&](auto n) {
      if (n.value != species) return;
      built = true;
      guarded("", "HeapBuffer", species, [&] {
        typename P::template HeapBuffer<decltype(n)::value> heap(heap_bytes);
        f(heap, std::string("HeapBuffer"));
      });
    };
    (one(std::integral_constant<std::uint32_t, N>{}), ...);
  }

  template <class G>
  void guarded(const std::string& experiment, const std::string& name, std::uint32_t species, G&& g) {
    try {
      g();
    } catch (const std::exception& e) {
      skip(experiment.empty() ? current_ : experiment, name, species, std::string("failed: ") + e.what());
    }
  }

  void skip(const std::string& experiment, const std::string& name, std::uint32_t species, const std::string& why) {
    auto m = record(experiment, name);
    m.extra["species"] = species;
    m.tags["skipped"] = "true";
    m.tags["note"] = why;
    emit(m);
    std::fprintf(stderr, "%s %s (species %u): skipped: %s\n", experiment.c_str(), name.c_str(), species, why.c_str());
  }

  // ---- steps: Figures 5.3-5.5 --------------------------------------------------
  void run_steps() {
    current_ = "steps";
    const std::size_t heap_bytes = static_cast<std::size_t>(opt_.heap_mb) << 20;
    for_each_heap("steps", heap_bytes, opt_.species, [&](auto& heap, const std::string& name) {
      steps(heap, name, heap_bytes);
    });
  }

  template <class Heap>
  void steps(Heap& heap, const std::string& name, std::size_t heap_bytes) {
    const SpeciesMem<Heap> mem(heap, opt_.species);
    StepParams sp;
    sp.cells = opt_.cells;
    sp.species = opt_.species;
    sp.frame_bytes = opt_.frame_bytes;
    sp.move = static_cast<float>(opt_.move);
    Arrays a(sp.cells, sp.species);
    const std::uint32_t lists = sp.cells * sp.species;
    Runner::run(lists, Init<SpeciesMem<Heap>>{mem, a.grid(), sp, opt_.per_list});
    const Totals init = totals(a.stats, lists);
    const CensusSum start = census(a, sp);
    std::fprintf(stderr, "steps %s: %llu particles in %u cells x %u species\n", name.c_str(),
                 static_cast<unsigned long long>(start.total), sp.cells, sp.species);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<double> times;
    bool all_verified = start.broken == 0 && init.fails == 0;
    std::uint64_t fails = init.fails;
    for (std::uint32_t k = 1; k <= opt_.steps; ++k) {
      sp.step = k;
      sp.growing = ((k - 1) / opt_.shift_period) % sp.species;
      sp.convert = static_cast<float>(opt_.convert);
      const double t_emit = Runner::timed_run(lists, Emit<SpeciesMem<Heap>>{mem, a.grid(), sp});
      Totals t = totals(a.stats, lists);
      const double t_gather = Runner::timed_run(sp.cells, Gather<SpeciesMem<Heap>>{mem, a.grid(), sp});
      t.add_all(totals(a.stats, sp.cells));
      const CensusSum c = census(a, sp);
      const bool ok = c.total == start.total && c.broken == 0;
      all_verified = all_verified && ok;
      fails += t.fails;
      auto m = record("steps", name);
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
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > opt_.budget_s) break;
    }
    teardown(mem, a, sp);
    auto m = record("steps_summary", name);
    add_heap_reports(heap, m);
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
    emit(m);
    std::fprintf(stderr, "steps %s: %zu steps, median %.3f ms, fails %llu, verified %s\n", name.c_str(),
                 times.size(), m.seconds * 1e3, static_cast<unsigned long long>(fails),
                 all_verified ? "yes" : "NO");
  }

  // ---- growth: Figure 5.6 ------------------------------------------------------
  void run_growth() {
    current_ = "growth";
    const std::size_t heap_bytes = static_cast<std::size_t>(opt_.growth_heap_mb) << 20;
    for (const std::uint32_t n : opt_.growth_species) {
      for_each_heap("growth", heap_bytes, n, [&](auto& heap, const std::string& name) {
        growth(heap, name, heap_bytes, n);
      });
    }
  }

  template <class Heap>
  void growth(Heap& heap, const std::string& name, std::size_t heap_bytes, std::uint32_t n) {
    const SpeciesMem<Heap> mem(heap, n);
    StepParams sp;
    sp.cells = opt_.growth_cells;
    sp.species = n;
    sp.frame_bytes = opt_.frame_bytes;
    sp.move = static_cast<float>(opt_.move);
    sp.growing = 0;
    sp.inject = opt_.inject;
    const std::uint32_t cap = frame_capacity(opt_.frame_bytes);
    const double capacity = static_cast<double>(heap_bytes / opt_.frame_bytes) * cap;
    const auto per_list = static_cast<std::uint32_t>(opt_.init_share * capacity / (static_cast<double>(sp.cells) * n));
    Arrays a(sp.cells, sp.species);
    const std::uint32_t lists = sp.cells * n;
    Runner::run(lists, Init<SpeciesMem<Heap>>{mem, a.grid(), sp, per_list});
    const Totals init = totals(a.stats, lists);
    const CensusSum start = census(a, sp);
    bool verified = start.broken == 0;
    std::uint64_t births = 0, max_pop = start.per_species[0], fails = init.fails;
    std::uint32_t k = 0, first_fail = 0;
    double seconds = 0;
    bool over_budget = false;
    const auto t0 = std::chrono::steady_clock::now();
    while (fails == 0 && k < opt_.max_growth_steps && !over_budget) {
      ++k;
      sp.step = k;
      // The other species convert into species 0 within ramp_steps steps
      // (a share 1/(ramp - k + 1) of what is left each step).
      sp.convert = k <= opt_.ramp_steps ? 1.0f / static_cast<float>(opt_.ramp_steps - k + 1) : 1.0f;
      sp.id_base = 0x40000000u + k * sp.cells * sp.inject;
      seconds += Runner::timed_run(lists, Emit<SpeciesMem<Heap>>{mem, a.grid(), sp});
      Totals t = totals(a.stats, lists);
      seconds += Runner::timed_run(sp.cells, Gather<SpeciesMem<Heap>>{mem, a.grid(), sp});
      t.add_all(totals(a.stats, sp.cells));
      births += t.births;
      const CensusSum c = census(a, sp);
      verified = verified && c.broken == 0 && c.total == start.total + births;
      max_pop = std::max<std::uint64_t>(max_pop, c.per_species[0]);
      fails += t.fails;
      if (t.fails != 0) first_fail = k;
      over_budget = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > opt_.budget_s;
    }
    teardown(mem, a, sp);
    auto m = record("growth", name);
    add_heap_reports(heap, m);
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
    if (first_fail == 0) {
      m.tags["note"] = over_budget ? "stopped at the time budget before any allocation failed"
                                   : "no allocation failed within max_growth_steps";
    }
    emit(m);
    std::fprintf(stderr, "growth %s species %u: max population %llu (%.1f%% of %g) after %u steps, verified %s\n",
                 name.c_str(), n, static_cast<unsigned long long>(max_pop), 100.0 * max_pop / capacity, capacity, k,
                 verified ? "yes" : "NO");
  }

  // HeapBuffer's own counts (2.4.4): requests refused at an empty ring and
  // waits for a free still being written; a live frame offered must stay 0.
  template <class Heap>
  static void add_heap_reports(const Heap& heap, bench::Measurement& m) {
    if constexpr (SplitBySpecies<Heap>) {
      const auto r = heap.creation().template reports<typename Heap::backend>();
      m.extra["ring_empty"] = r.empty;
      m.extra["ring_late"] = r.late;
      m.extra["ring_live_refused"] = r.live_refused;
      m.extra["ring_misuse"] = r.misuse;
    }
  }

  template <class Mem>
  void teardown(const Mem& mem, Arrays& a, const StepParams& sp) {
    Runner::run(sp.cells * sp.species, Teardown<Mem>{mem, a.grid()});
  }

  Options opt_;
  std::FILE* out_;
  std::string device_;
  std::string current_;
};

}  // namespace manyalloc::heap::pic
