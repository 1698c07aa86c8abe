// Command line of the particle-in-cell benchmark ([Eckert2014] 5.2).
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace manyalloc::heap::pic {

struct Options {
  std::vector<std::string> experiments{"steps", "growth"};
  std::vector<std::string> allocators;  // empty: all
  std::uint32_t frame_bytes = 8192;     // 5.2.1: PIConGPU's frames
  std::uint64_t heap_mb = 8192;
  // steps (Figures 5.3-5.5): two species as in 5.2.1, populations shifting slowly.
  std::uint32_t cells = 65536;
  std::uint32_t species = 2;
  std::uint32_t per_list = 400;    // particles per cell and species at the start
  std::uint32_t steps = 300;
  double move = 0.1;               // share leaving its cell per step
  double convert = 0.002;          // chance per step to join the growing species
  std::uint32_t shift_period = 100;  // steps before another species starts growing
  double budget_s = 30;            // per allocator and run: no further step after it
  // growth (Figure 5.6): species 0 grows until the first failed allocation.
  std::uint64_t growth_heap_mb = 2048;
  // Few cells, so that the lists' own frames stay a small share of the pool:
  // every list and each of its three outboxes holds a partly filled frame,
  // about 4 frames per cell and species (16 species x 256 cells: 16,384 of a
  // 2 GiB pool's 262,144 frames; with 4096 cells they alone would fill it).
  std::uint32_t growth_cells = 256;
  std::vector<std::uint32_t> growth_species{1, 2, 3, 4, 6, 8, 12, 16};
  double init_share = 0.25;        // of the heap's particle capacity, split among the species
  std::uint32_t inject = 32768;    // new particles of species 0 per cell per step
  std::uint32_t ramp_steps = 4;    // the other species have all converted after this many steps
  std::uint32_t max_growth_steps = 400;
  std::string out = "pic.jsonl";
  bool quick = false;
  bool help = false;
  std::string command;
};

inline std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) v.push_back(item);
  }
  return v;
}

// Tiny sizes: a smoke test of every path in seconds.
inline void make_quick(Options& o) {
  o.quick = true;
  o.heap_mb = 64;
  o.cells = 64;
  o.per_list = 300;
  o.steps = 12;
  o.shift_period = 4;
  o.convert = 0.02;
  o.budget_s = 20;
  o.growth_heap_mb = 16;
  o.growth_cells = 8;
  o.growth_species = {1, 2, 4, 16};
  o.inject = 1024;
}

inline const char* usage() {
  return "usage: manyalloc_heap_pic_{cuda,host} [options]\n"
         "Particle-in-cell benchmark ([Eckert2014] 5.2): particles in 8 KiB frames per cell and\n"
         "species; each step moves particles between cells, converts some to a growing species,\n"
         "and counts them all (conserved every step, or the record says verified=false).\n"
         "  --experiments steps,growth   steps: time per step (Figures 5.3-5.5);\n"
         "                               growth: largest population of one species (Figure 5.6)\n"
         "  --allocators A,B             HeapBuffer, Scatter, SizeClassSlabs,\n"
         "                               DeviceMalloc|HostMalloc\n"
         "  --heap-mb N --cells N --species N --per-list N --steps N --move F --convert F\n"
         "  --shift-period N --budget-s S --frame-bytes N\n"
         "  --growth-heap-mb N --growth-cells N --growth-species 1,2,4 --init-share F --inject N\n"
         "  --ramp-steps N --max-growth-steps N\n"
         "  --quick                      tiny sizes (smoke test)\n"
         "  --out FILE                   JSON Lines records (default pic.jsonl)\n";
}

inline Options parse(int argc, char** argv) {
  Options o;
  for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + std::string(argv[i]);
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) throw std::invalid_argument(std::string("missing value for ") + argv[i]);
    return argv[++i];
  };
  bool quick_seen = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick_seen = true;
  }
  if (quick_seen) make_quick(o);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") continue;
    if (a == "--help" || a == "-h") o.help = true;
    else if (a == "--experiments") o.experiments = split_names(value(i));
    else if (a == "--allocators") o.allocators = split_names(value(i));
    else if (a == "--frame-bytes") o.frame_bytes = static_cast<std::uint32_t>(std::stoul(value(i)));
    else if (a == "--heap-mb") o.heap_mb = std::stoull(value(i));
    else if (a == "--cells") o.cells = static_cast<std::uint32_t>(std::stoul(value(i)));
    else if (a == "--species") o.species = static_cast<std::uint32_t>(std::stoul(value(i)));
    else if (a == "--per-list") o.per_list = static_cast<std::uint32_t>(std::stoul(value(i)));
    else if (a == "--steps") o.steps = static_cast<std::uint32_t>(std::stoul(value(i)));
    else if (a == "--move") o.move = std::stod(value(i));
    else if (a == "--convert") o.convert = std::stod(value(i));
    else if (a == "--shift-period") o.shift_period = static_cast<std::uint32_t>(std::stoul(value(i)));
    else if (a == "--budget-s") o.budget_s = std::stod(value(i));
    else if (a == "--growth-heap-mb") o.growth_heap_mb = std::stoull(value(i));
    else if (a == "--growth-cells") o.growth_cells = static_cast<std::uint32_t>(std::stoul(value(i)));
    else if (a == "--growth-species") {
      o.growth_species.clear();
      for (const auto& s : split_names(value(i))) o.growth_species.push_back(static_cast<std::uint32_t>(std::stoul(s)));
    } else if (a == "--init-share") o.init_share = std::stod(value(i));
    else if (a == "--inject") o.inject = static_cast<std::uint32_t>(std::stoul(value(i)));
    else if (a == "--ramp-steps") o.ramp_steps = static_cast<std::uint32_t>(std::stoul(value(i)));
    else if (a == "--max-growth-steps") o.max_growth_steps = static_cast<std::uint32_t>(std::stoul(value(i)));
    else if (a == "--out") o.out = value(i);
    else throw std::invalid_argument("unknown option " + a);
  }
  if (o.cells < 3 || o.growth_cells < 3) throw std::invalid_argument("--cells and --growth-cells must be at least 3");
  if (o.species < 1 || o.species > 16) throw std::invalid_argument("--species must be 1..16");
  for (auto n : o.growth_species) {
    if (n < 1 || n > 16) throw std::invalid_argument("--growth-species values must be 1..16");
  }
  if (o.frame_bytes < 64 || o.frame_bytes % 32 != 0) throw std::invalid_argument("--frame-bytes: a multiple of 32, at least 64");
  if (o.move < 0 || o.move > 1 || o.convert < 0 || o.convert > 1) throw std::invalid_argument("--move/--convert in [0, 1]");
  if (o.shift_period == 0) o.shift_period = 1;
  return o;
}

}  // namespace manyalloc::heap::pic
