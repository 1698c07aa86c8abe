// region_sim: runs the simulator (sim.hpp) over patterns, worker counts and
// scheduler layouts and prints one JSON Lines record per run (region/README.md,
// "Simulator"; region/sim/report.py turns them into a report).
//
//   region_sim [--pattern list|barnes-hut|delaunay|all] [--workers N[,N...]]
//              [--layout LEVELS:FANOUT[,...]] [--stages S] [--nodes N]
//              [--bodies B] [--steps T] [--points P] [--border-points P]
//              [--leaf-pages N] [--per-scheduler]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim.hpp"

namespace {

using manyalloc::region::sim::run_sim;
using manyalloc::region::sim::SimConfig;
using manyalloc::region::sim::SimResult;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string device() {
  std::ifstream cpu("/proc/cpuinfo");
  std::string line, model = "unknown cpu";
  while (std::getline(cpu, line))
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return model + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores (simulation: 1 thread)";
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "region_sim: %s\nusage: region_sim [--pattern list|barnes-hut|delaunay|all] [--workers N[,N...]]\n"
               "  [--layout LEVELS:FANOUT[,...]] [--stages S] [--nodes N] [--bodies B] [--steps T]\n"
               "  [--points P] [--border-points P] [--leaf-pages N] [--per-scheduler]\n",
               why);
  std::exit(2);
}

long number(const char* opt, const char* v) {
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || x < 0) usage((std::string(opt) + ": not a whole number: " + v).c_str());
  return x;
}

void print(const SimConfig& cfg, const SimResult& r, const std::string& dev, bool per_scheduler) {
  std::uint64_t max = 0, sum = 0, top = 0;
  int hot = 0;
  for (std::size_t s = 0; s < r.received.size(); ++s) {
    const std::uint64_t n = r.received[s].total;
    sum += n;
    if (n > max) max = n, hot = static_cast<int>(s);
  }
  if (!r.received.empty()) top = r.received[0].total;
  const double mean = r.received.empty() ? 0 : static_cast<double>(sum) / static_cast<double>(r.received.size());
  // Leaves only: the load the workers put on their own schedulers.
  std::uint64_t leaf_max = 0, leaf_sum = 0;
  for (std::size_t s = r.received.size() - static_cast<std::size_t>(r.leaves); s < r.received.size(); ++s) {
    leaf_max = std::max(leaf_max, r.received[s].total);
    leaf_sum += r.received[s].total;
  }
  std::printf(
      "{\"suite\":\"region-sim\",\"experiment\":\"%s\",\"allocator\":\"manyalloc-region\",\"device\":\"%s\","
      "\"threads\":%d,\"schedulers\":%d,\"levels\":%d,\"fanout\":%d,\"leaves\":%d,\"bytes\":%llu,\"ops\":%llu,"
      "\"objects\":%llu,\"requests\":%llu,\"seconds\":%.6f,\"ops_per_s\":%.1f,\"fails\":%llu,\"verified\":%s,"
      "\"messages\":%llu,\"messages_per_alloc\":%.4f,\"messages_per_request\":%.4f,\"scheduler_messages\":%llu,"
      "\"sched_load_max\":%llu,\"sched_load_mean\":%.2f,\"hot_spot_rank\":%d,\"hot_spot_ratio\":%.3f,"
      "\"top_messages\":%llu,\"leaf_load_max\":%llu,\"leaf_load_mean\":%.2f",
      cfg.pattern.c_str(), json_escape(dev).c_str(), r.workers, r.schedulers, cfg.levels, cfg.fanout, r.leaves,
      static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.alloc_requests),
      static_cast<unsigned long long>(r.objects), static_cast<unsigned long long>(r.requests), r.seconds,
      r.seconds > 0 ? static_cast<double>(r.alloc_requests) / r.seconds : 0.0,
      static_cast<unsigned long long>(r.fails), r.verified ? "true" : "false",
      static_cast<unsigned long long>(r.messages),
      r.alloc_requests ? static_cast<double>(r.messages) / static_cast<double>(r.alloc_requests) : 0.0,
      r.requests ? static_cast<double>(r.messages) / static_cast<double>(r.requests) : 0.0,
      static_cast<unsigned long long>(sum), static_cast<unsigned long long>(max), mean, hot,
      mean > 0 ? static_cast<double>(max) / mean : 0.0, static_cast<unsigned long long>(top),
      static_cast<unsigned long long>(leaf_max),
      r.leaves ? static_cast<double>(leaf_sum) / static_cast<double>(r.leaves) : 0.0);
  std::printf(",\"messages_by_op\":{");
  bool first = true;
  for (std::size_t op = 0; op < manyalloc::region::detail::op_limit; ++op) {
    std::uint64_t n = 0;
    for (const auto& c : r.received) n += c.by_op[op];
    if (n == 0) continue;
    std::printf("%s\"%s\":%llu", first ? "" : ",", manyalloc::region::detail::op_name(op),
                static_cast<unsigned long long>(n));
    first = false;
  }
  std::printf("}");
  if (per_scheduler) {
    std::printf(",\"per_scheduler\":[");
    for (std::size_t s = 0; s < r.received.size(); ++s)
      std::printf("%s%llu", s ? "," : "", static_cast<unsigned long long>(r.received[s].total));
    std::printf("]");
  }
  if (!r.verified) std::printf(",\"why_not_verified\":\"%s\"", json_escape(r.why_not).c_str());
  std::printf("}\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> patterns = {"list", "barnes-hut", "delaunay"};
  std::vector<int> workers = {1024};
  std::vector<std::pair<int, int>> layouts = {{2, 15}};
  SimConfig base;
  bool per_scheduler = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) usage((a + ": value missing").c_str());
      return argv[++i];
    };
    if (a == "--pattern") {
      const std::string p = val();
      if (p != "all") patterns = split(p, ',');
    } else if (a == "--workers") {
      workers.clear();
      for (const std::string& w : split(val(), ',')) workers.push_back(static_cast<int>(number("--workers", w.c_str())));
    } else if (a == "--layout") {
      layouts.clear();
      for (const std::string& l : split(val(), ',')) {
        const auto parts = split(l, ':');
        if (parts.size() != 2) usage("--layout: LEVELS:FANOUT");
        layouts.emplace_back(static_cast<int>(number("--layout", parts[0].c_str())),
                             static_cast<int>(number("--layout", parts[1].c_str())));
      }
    } else if (a == "--stages") {
      base.params.stages = static_cast<int>(number("--stages", val()));
    } else if (a == "--nodes") {
      base.params.list_nodes = static_cast<std::uint64_t>(number("--nodes", val()));
    } else if (a == "--bodies") {
      base.params.bodies = static_cast<std::uint64_t>(number("--bodies", val()));
    } else if (a == "--steps") {
      base.params.steps = static_cast<int>(number("--steps", val()));
    } else if (a == "--points") {
      base.params.points = static_cast<int>(number("--points", val()));
    } else if (a == "--border-points") {
      base.params.border_points = static_cast<int>(number("--border-points", val()));
    } else if (a == "--leaf-pages") {
      base.tuning.leaf_pages_hi = static_cast<std::uint64_t>(number("--leaf-pages", val()));
    } else if (a == "--per-scheduler") {
      per_scheduler = true;
    } else {
      usage(("unknown option " + a).c_str());
    }
  }
  const std::string dev = device();
  int rc = 0;
  for (const auto& [levels, fanout] : layouts)
    for (int nw : workers)
      for (const std::string& p : patterns) {
        SimConfig cfg = base;
        cfg.pattern = p;
        cfg.levels = levels;
        cfg.fanout = fanout;
        cfg.params.workers = nw;
        try {
          const SimResult r = run_sim(cfg);
          print(cfg, r, dev, per_scheduler);
          if (!r.verified) rc = 1;
        } catch (const std::exception& e) {
          std::fprintf(stderr, "region_sim: %s (levels %d, fanout %d, workers %d): %s\n", p.c_str(), levels, fanout,
                       nw, e.what());
          rc = 1;
        }
      }
  return rc;
}
