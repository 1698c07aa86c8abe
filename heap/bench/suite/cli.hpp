// Command line of the heap benchmark.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace manyalloc::heap::bench {

inline const std::vector<std::string>& experiment_names() {
  static const std::vector<std::string> names{"operator", "throughput", "large", "fragmentation",
                                              "temporal", "access",     "slots", "spread"};
  return names;
}

struct Options {
  std::string experiment = "throughput";
  std::vector<std::uint64_t> sizes;   // empty: the experiment's defaults
  std::uint64_t threads = 0;          // 0: the experiment's default
  unsigned repeat = 0;                // 0: the experiment's default
  double budget = 0;                  // seconds per (allocator, size) series; 0: platform default
  std::uint64_t heap_mb = 0;          // 0: the experiment's default heap
  std::uint64_t max_workers = 0;      // operator: largest N_worker (0: full occupancy)
  unsigned steps = 0;                 // operator/temporal: measured steps (0: default)
  std::vector<std::string> allocators;  // empty: all
  std::string out = "heap_bench.jsonl";
  bool quick = false;
  bool help = false;
  std::vector<std::string> forwarded;  // options as given (for `all`)
};

inline std::vector<std::uint64_t> parse_list(const std::string& s) {
  std::vector<std::uint64_t> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) v.push_back(item == "mixed" ? 0 : std::stoull(item));
  if (v.empty()) throw std::invalid_argument("empty list: " + s);
  return v;
}

inline std::vector<std::string> parse_names(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item != "scatter" && item != "scatter-tuned" && item != "xmalloc" && item != "slabs" && item != "lists" &&
        item != "mp-lists" && item != "baseline" && item != "all")
      throw std::invalid_argument("unknown allocator '" + item +
                                  "' (scatter, scatter-tuned, xmalloc, slabs, lists, mp-lists, baseline, all)");
    v.push_back(item);
  }
  return v;
}

inline const char* usage() {
  return "usage: manyalloc_heap_bench_{cuda,host} EXPERIMENT [options]\n"
         "Runs each allocator configuration (Scatter, a tuned Scatter, XMalloc as Scatter with\n"
         "XMallocSIMD, SizeClassSlabs, the list-based ListBased and MultiList of\n"
         "[Steinberger2012] section 4, and the baseline:\n"
         "CUDA device malloc on the GPU, the C library's malloc on the host) side by side\n"
         "in one process; every run is verified (chunks marked and read back, no two live\n"
         "chunks overlap). JSON Lines go to --out (appended); progress goes to stderr.\n"
         "experiments:\n"
         "  operator       Fig. 3 / thesis 5.1: random kernel sequence, p_alloc = p_free = 0.75,\n"
         "                 N_worker log-spaced 2 .. full occupancy, 16/32/64/128 B; mean and CV\n"
         "                 of cycles per alloc and per free (clock64 / rdtsc)\n"
         "  throughput     one allocation per worker (2^20 on the GPU), 16 B .. 8 KiB and mixed\n"
         "                 (uniform 16 B .. 4 KiB); alloc and free timed separately\n"
         "  large          1 page .. 64 MiB requests from 1 .. 1024 workers\n"
         "  fragmentation  usable share of the heap until the first failure and until full,\n"
         "                 internal/external fragmentation (paper eq. 1, 2), overhead\n"
         "  temporal       Fig. 2: 16384 workers fill a 16 MiB heap with 128-160 B requests\n"
         "                 (p_alloc 0.05 per step); cycles, CV, fill level per step\n"
         "  access         time for every worker to read and write its chunk\n"
         "  slots          getAvailableSlots from the host and from the device\n"
         "  spread         Fig. 4: p_alloc = p_free = 0.6, sizes uniform around 512 B with\n"
         "                 spread 0 .. 896 B (--sizes gives the spreads), 1024 and 4096\n"
         "                 workers, 16 MiB heaps: internal/external fragmentation, cycles\n"
         "                 per word of access to the live chunks\n"
         "  all            every experiment above, each in a child process\n"
         "options:\n"
         "  --quick            tiny configuration (seconds; the CI smoke test)\n"
         "  --sizes A,B,..     request sizes in bytes ('mixed' or 0: uniform 16..4096)\n"
         "  --threads N        workers (default per experiment: 2^20 for throughput on the GPU)\n"
         "  --repeat R         timed repetitions after one warm-up; medians are reported\n"
         "  --budget S         seconds one (allocator, size) series may take; bounds the\n"
         "                     baseline's workers at large sizes (default 10 GPU, 2 host)\n"
         "  --heap-mb M        heap size for throughput/fragmentation/temporal/large/slots\n"
         "  --max-workers N    operator: largest N_worker (default: full occupancy)\n"
         "  --steps S          operator/temporal: measured kernel steps\n"
         "  --allocators L     subset of scatter,scatter-tuned,xmalloc,slabs,lists,mp-lists,\n"
         "                     baseline, or all (default: all but the paper's baselines\n"
         "                     xmalloc, lists, mp-lists)\n"
         "  --out FILE         JSON Lines output, appended (default heap_bench.jsonl)\n";
}

inline Options parse(int argc, char** argv) {
  Options o;
  bool have_experiment = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      o.forwarded.push_back(a);
      o.forwarded.push_back(argv[i + 1]);
      return argv[++i];
    };
    if (a == "--help" || a == "-h") o.help = true;
    else if (a == "--quick") o.quick = true, o.forwarded.push_back(a);
    else if (a == "--sizes") o.sizes = parse_list(value());
    else if (a == "--threads") o.threads = std::stoull(value());
    else if (a == "--repeat") o.repeat = static_cast<unsigned>(std::stoul(value()));
    else if (a == "--budget") o.budget = std::stod(value());
    else if (a == "--heap-mb") o.heap_mb = std::stoull(value());
    else if (a == "--max-workers") o.max_workers = std::stoull(value());
    else if (a == "--steps") o.steps = static_cast<unsigned>(std::stoul(value()));
    else if (a == "--allocators") o.allocators = parse_names(value());
    else if (a == "--out") o.out = value();
    else if (!a.empty() && a[0] != '-' && !have_experiment) o.experiment = a, have_experiment = true;
    else throw std::invalid_argument("unknown option " + a);
  }
  bool known = o.experiment == "all";
  for (const auto& n : experiment_names()) known = known || n == o.experiment;
  if (!known && !o.help) throw std::invalid_argument("unknown experiment '" + o.experiment + "'");
  return o;
}

}  // namespace manyalloc::heap::bench
