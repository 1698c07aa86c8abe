// Command line of the heap benchmark.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace manyalloc::bench {

struct Options {
  std::string experiment = "throughput";
  std::vector<std::uint64_t> sizes{16, 64, 256};
  std::uint64_t threads = 0;   // 0: the back end's full-occupancy default
  unsigned repeat = 5;
  std::string out = "heap_bench.jsonl";
  bool help = false;
};

inline std::vector<std::uint64_t> parse_list(const std::string& s) {
  std::vector<std::uint64_t> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) v.push_back(std::stoull(item));
  if (v.empty()) throw std::invalid_argument("empty list: " + s);
  return v;
}

inline const char* usage() {
  return "usage: manyalloc_heap_bench_{cuda,host} [experiment] [options]\n"
         "experiments:\n"
         "  throughput   every worker allocates one chunk (timed), then frees it (timed);\n"
         "               each allocator in the same process, alloc and free verified\n"
         "options:\n"
         "  --sizes A,B,..   request sizes in bytes (default 16,64,256)\n"
         "  --threads N      workers (default: 2^20 on the GPU, 64 per CPU on the host)\n"
         "  --repeat R       timed repetitions after one warm-up; the median is reported (default 5)\n"
         "  --out FILE       JSON Lines output (default heap_bench.jsonl)\n";
}

inline Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") o.help = true;
    else if (a == "--sizes") o.sizes = parse_list(value());
    else if (a == "--threads") o.threads = std::stoull(value());
    else if (a == "--repeat") o.repeat = static_cast<unsigned>(std::stoul(value()));
    else if (a == "--out") o.out = value();
    else if (!a.empty() && a[0] != '-') o.experiment = a;
    else throw std::invalid_argument("unknown option " + a);
  }
  if (o.repeat == 0) throw std::invalid_argument("--repeat must be at least 1");
  return o;
}

}  // namespace manyalloc::bench
