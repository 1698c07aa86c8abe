// numa_bench: one workload, one allocator (chosen by LD_PRELOAD outside),
// one JSON Lines record on stdout with the fields of the GPU suite plus
// rss_bytes (peak VmRSS sampled every 0.5 ms, peak_rss.hpp) with its
// anonymous and file-backed parts at the peak (rss_anon_bytes,
// rss_file_bytes), maxrss_bytes (the kernel's ru_maxrss), user_s, sys_s and
// page_faults.
//
//   numa_bench --workload NAME --threads N [--allocator LABEL] [--scale X] [--rep K]
//   numa_bench --list
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "peak_rss.hpp"
#include "workloads.hpp"

using namespace manyalloc::numa::bench;

namespace {

struct Workload {
  const char* name;
  Result (*fn)(const Params&);
};
constexpr Workload workload_table[] = {
    {"ttest1", ttest1},         {"larson", larson},         {"xmalloc", xmalloc},
    {"cache-scratch", cache_scratch}, {"cache-thrash", cache_thrash}, {"hera", hera},
    {"firsttouch", firsttouch}, {"alias4k", alias4k},
};

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      std::string m = pos == std::string::npos ? line : line.substr(pos + 2);
      for (char& ch : m)
        if (ch == '"' || ch == '\\') ch = ' ';
      return m;
    }
  return "unknown";
}

double seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; }

}  // namespace

int main(int argc, char** argv) {
  std::string workload, allocator = "unknown";
  Params p;
  int rep = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--workload") workload = next();
    else if (a == "--threads") p.threads = std::atoi(next());
    else if (a == "--allocator") allocator = next();
    else if (a == "--scale") p.scale = std::atof(next());
    else if (a == "--rep") rep = std::atoi(next());
    else if (a == "--list") {
      for (const Workload& w : workload_table) std::printf("%s\n", w.name);
      return 0;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  const Workload* w = nullptr;
  for (const Workload& k : workload_table)
    if (workload == k.name) w = &k;
  if (w == nullptr || p.threads < 1) {
    std::fprintf(stderr, "usage: numa_bench --workload NAME --threads N (see --list)\n");
    return 2;
  }
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  PeakRssSampler rss;
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = w->fn(p);
  const auto t1 = std::chrono::steady_clock::now();
  const RssSample peak_rss = rss.stop();
  getrusage(RUSAGE_SELF, &after);
  const double secs = std::chrono::duration<double>(t1 - t0).count();
  const long faults = (after.ru_minflt - before.ru_minflt) + (after.ru_majflt - before.ru_majflt);
  std::printf(
      "{\"suite\":\"numa\",\"experiment\":\"%s\",\"allocator\":\"%s\",\"device\":\"%s\","
      "\"cpus\":%u,\"threads\":%d,\"bytes\":%llu,\"ops\":%llu,\"seconds\":%.6f,"
      "\"ops_per_s\":%.1f,\"fails\":%llu,\"verified\":%s,\"rss_bytes\":%ld,\"rss_anon_bytes\":%ld,"
      "\"rss_file_bytes\":%ld,\"maxrss_bytes\":%ld,\"user_s\":%.4f,"
      "\"sys_s\":%.4f,\"page_faults\":%ld,\"scale\":%g,\"rep\":%d%s%s}\n",
      w->name, allocator.c_str(), cpu_model().c_str(), std::thread::hardware_concurrency(),
      p.threads, static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.ops),
      secs, secs > 0 ? static_cast<double>(r.ops) / secs : 0.0,
      static_cast<unsigned long long>(r.fails), r.fails == 0 ? "true" : "false",
      peak_rss.total, peak_rss.anon, peak_rss.file, after.ru_maxrss * 1024L,
      seconds(after.ru_utime) - seconds(before.ru_utime),
      seconds(after.ru_stime) - seconds(before.ru_stime), faults, p.scale, rep,
      r.note.empty() ? "" : ",", r.note.c_str());
  return r.fails == 0 ? 0 : 1;
}
