// numa_churn: the churn loop of issue 19, `malloc(n); memset(p, 1, n);
// free(p)` with nothing else live in that size class, on one thread. An
// allocator that gives the block's pages back to the OS at every free pays
// a madvise or munmap and a page fault per page at every iteration.
// One allocator per run, chosen by LD_PRELOAD outside (run_churn.sh); one
// JSON Lines record on stdout with the fields of numa_bench (`bytes` is the
// block size n, `ops` 2 x iterations: a malloc and a free each) plus, when the
// preloaded allocator is manyalloc's, the OS calls its statistics counted
// during the loop (decommits = madvise(MADV_DONTNEED) calls, unmaps =
// munmap calls; null for other allocators: run_churn.sh counts every
// allocator's system calls under strace in a separate run).
//
//   numa_churn --bytes N [--iters K] [--allocator LABEL] [--rep R] [--stats 0]
// (--stats 0: do not read the statistics, for libraries older than the
// statistics' OS call counters, whose struct has another layout.)
#include <dlfcn.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "manyalloc/numa/numa.h"
#include "peak_rss.hpp"

using namespace manyalloc::numa::bench;

namespace {

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

// The preloaded allocator's statistics call, when it is manyalloc's (found
// at run time: this program is not linked with any allocator).
using GetStats = void (*)(manyalloc_numa_stats*);
GetStats find_stats() {
  return reinterpret_cast<GetStats>(dlsym(RTLD_DEFAULT, "manyalloc_numa_get_stats"));
}

struct OsCalls {
  long long decommits = -1, unmaps = -1;
};
OsCalls os_calls(GetStats get) {
  OsCalls o;
  if (get == nullptr) return o;
  static manyalloc_numa_stats st;  // large: not on the stack
  get(&st);
  o.decommits = static_cast<long long>(st.os_decommits);
  o.unmaps = static_cast<long long>(st.os_unmaps);
  return o;
}

std::string json_count(long long v) { return v < 0 ? "null" : std::to_string(v); }

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 0;
  long iters = 200000;
  int rep = 0;
  bool use_stats = true;
  std::string allocator = "unknown";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : "0"; };
    if (a == "--bytes") n = std::strtoull(next(), nullptr, 10);
    else if (a == "--iters") iters = std::atol(next());
    else if (a == "--allocator") allocator = next();
    else if (a == "--rep") rep = std::atoi(next());
    else if (a == "--stats") use_stats = std::atoi(next()) != 0;
    else {
      std::fprintf(stderr, "usage: numa_churn --bytes N [--iters K] [--allocator L] [--rep R] [--stats 0]\n");
      return 2;
    }
  }
  if (n < 2 || iters < 1) {
    std::fprintf(stderr, "numa_churn: --bytes >= 2 and --iters >= 1 needed\n");
    return 2;
  }
  const GetStats get = use_stats ? find_stats() : nullptr;
  // The record's experiment name: churn-<n> (bytes, with a k suffix for
  // multiples of 1024 and an ' KB' one for multiples of 1000).
  const std::string exp = "churn-" + (n % 1024 == 0   ? std::to_string(n / 1024) + "k"
                                      : n % 1000 == 0 ? std::to_string(n / 1000) + "kb"
                                                      : std::to_string(n));
  rusage before{}, after{};
  const OsCalls calls0 = os_calls(get);
  getrusage(RUSAGE_SELF, &before);
  PeakRssSampler rss;
  std::uint64_t fails = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < iters; ++i) {
    auto* p = static_cast<volatile unsigned char*>(std::malloc(n));
    if (p == nullptr) {
      ++fails;
      continue;
    }
    std::memset(const_cast<unsigned char*>(p), 1, n);
    if (p[0] != 1 || p[n / 2] != 1 || p[n - 1] != 1) ++fails;
    std::free(const_cast<unsigned char*>(p));
  }
  const auto t1 = std::chrono::steady_clock::now();
  const RssSample peak = rss.stop();
  getrusage(RUSAGE_SELF, &after);
  const OsCalls calls1 = os_calls(get);
  const double secs = std::chrono::duration<double>(t1 - t0).count();
  const long faults = (after.ru_minflt - before.ru_minflt) + (after.ru_majflt - before.ru_majflt);
  const unsigned long long ops = 2ull * static_cast<unsigned long long>(iters);
  const long long dec = calls0.decommits < 0 ? -1 : calls1.decommits - calls0.decommits;
  const long long unm = calls0.unmaps < 0 ? -1 : calls1.unmaps - calls0.unmaps;
  std::printf(
      "{\"suite\":\"numa\",\"experiment\":\"%s\",\"allocator\":\"%s\",\"device\":\"%s\","
      "\"cpus\":%u,\"threads\":1,\"bytes\":%zu,\"ops\":%llu,\"seconds\":%.6f,\"ops_per_s\":%.1f,"
      "\"fails\":%llu,\"verified\":%s,\"rss_bytes\":%ld,\"rss_anon_bytes\":%ld,"
      "\"rss_file_bytes\":%ld,\"user_s\":%.4f,\"sys_s\":%.4f,\"page_faults\":%ld,"
      "\"iters\":%ld,\"stats_decommits\":%s,\"stats_unmaps\":%s,\"rep\":%d}\n",
      exp.c_str(), allocator.c_str(), cpu_model().c_str(), std::thread::hardware_concurrency(), n,
      ops, secs, secs > 0 ? static_cast<double>(ops) / secs : 0.0,
      static_cast<unsigned long long>(fails), fails == 0 ? "true" : "false", peak.total, peak.anon,
      peak.file, seconds(after.ru_utime) - seconds(before.ru_utime),
      seconds(after.ru_stime) - seconds(before.ru_stime), faults, iters, json_count(dec).c_str(),
      json_count(unm).c_str(), rep);
  return fails == 0 ? 0 : 1;
}
