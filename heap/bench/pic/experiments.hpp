// The particle-in-cell benchmark program ([Eckert2014] 5.2): runs the two
// experiments of run.hpp on every heap configuration
// of a platform (main_cuda.cu, main_host.cpp):
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
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "options.hpp"
#include "records.hpp"  // heap/bench/suite
#include "run.hpp"
#include "species_mem.hpp"

namespace manyalloc::heap::pic {

template <class P>
class Bench {
  using Runner = typename P::Runner;

 public:
  Bench(Options o, std::FILE* out) : opt_(std::move(o)), out_(out), device_(Runner::device_name()) {}

  void run() {
    meta();
    // The baseline's heap is made before any kernel runs (CUDA sizes its
    // malloc heap only before the first kernel that uses it), for the first
    // experiment's heap size; run steps and growth in separate processes to
    // give each its own size.
    if (enabled(P::baseline_name) && !opt_.experiments.empty()) {
      const bool steps_first = opt_.experiments.front() == "steps";
      (void)P::baseline(static_cast<std::size_t>(steps_first ? opt_.heap_mb : opt_.growth_heap_mb) << 20);
    }
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
      auto& heap = P::baseline(heap_bytes);
      if (experiment == "growth" && heap.pool_bytes() != heap_bytes) {
        skip(experiment, P::baseline_name, species,
             "its heap was sized for another experiment of this process (run growth in a process of its own)");
        return;
      }
      f(heap, std::string(P::baseline_name));
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
    Runs<Runner>::steps(opt_, SpeciesMem<Heap>(heap, opt_.species), record("steps", name), heap_bytes,
                        [&](const bench::Measurement& m) { emit(m); },
                        [&](bench::Measurement& m) { add_heap_reports(heap, m); });
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
    Runs<Runner>::growth(opt_, SpeciesMem<Heap>(heap, n), record("growth", name), heap_bytes, n,
                         [&](const bench::Measurement& m) { emit(m); },
                         [&](bench::Measurement& m) { add_heap_reports(heap, m); });
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

  Options opt_;
  std::FILE* out_;
  std::string device_;
  std::string current_;
};

// The programs' main (main_cuda.cu, main_host.cpp): options, then every
// experiment of Bench<P> into the records file; errors reported with the
// program's name, exit status 1.
template <class P>
int bench_main(int argc, char** argv, const char* program) {
  try {
    const Options opt = parse(argc, argv);
    if (opt.help) {
      std::fputs(usage(), stdout);
      return 0;
    }
    std::FILE* out = std::fopen(opt.out.c_str(), "w");
    if (out == nullptr) throw std::runtime_error("cannot write " + opt.out);
    Bench<P>(opt, out).run();
    std::fclose(out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
  return 0;
}

}  // namespace manyalloc::heap::pic
