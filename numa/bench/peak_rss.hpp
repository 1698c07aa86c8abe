// Peak resident set size by sampling /proc/self/status (VmRSS) from a
// thread, every 0.5 ms while a workload runs, with its anonymous and
// file-backed parts at the peak.
//
// Why not getrusage's ru_maxrss (the kernel's high-water mark): since
// Linux 6.2 a process's RSS counters are per-CPU counters, and the
// high-water mark is updated (at munmap, exit, ...) from their approximate
// value, which is off by up to about 32 pages per CPU and counter while
// other CPUs fault or free pages. Allocators that give memory back often
// update it more often, so they catch more of that error: on the 16-core
// host (kernel 6.18, 16 threads, acaf423, 5 runs) the larson-like workload
// in lowmem read 13.6-14.9 MiB in ru_maxrss, while this sampler saw peaks
// of 11.3-12.0 MiB in 4 of the runs and 15.4 MiB in the fifth. ru_maxrss
// stays in the record as maxrss_bytes.
// A peak shorter than the interval can be missed, for every allocator alike.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace manyalloc::numa::bench {

// Resident set of this process in bytes (/proc/self/status): the total
// (VmRSS) and its anonymous and file-backed parts (RssAnon, RssFile; the
// latter holds the pages of the preloaded allocator's code). All 0 if
// unreadable. Allocates nothing.
struct RssSample {
  long total = 0;
  long anon = 0;
  long file = 0;
};

inline RssSample current_rss() {
  char buf[4096];
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return {};
  buf[n] = '\0';
  auto field = [&](const char* key) {  // key: "\nName:"
    const char* line = std::strstr(buf, key);
    return line != nullptr ? std::strtol(line + std::strlen(key), nullptr, 10) * 1024L : 0L;
  };
  return {field("\nVmRSS:"), field("\nRssAnon:"), field("\nRssFile:")};
}

// The sample with the largest total. Written by the sampling thread only
// while it runs, and by stop() after joining it.
class PeakRssSampler {
 public:
  PeakRssSampler() : peak_(current_rss()), thread_([this] { run(); }) {}
  PeakRssSampler(const PeakRssSampler&) = delete;
  PeakRssSampler& operator=(const PeakRssSampler&) = delete;
  ~PeakRssSampler() { stop(); }

  // Stops sampling (after one last sample) and returns the peak.
  RssSample stop() {
    if (thread_.joinable()) {
      done_.store(true);
      thread_.join();
      sample();
    }
    return peak_;
  }

 private:
  void sample() {
    const RssSample v = current_rss();
    if (v.total > peak_.total) peak_ = v;
  }
  void run() {
    while (!done_.load()) {
      sample();
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  }

  RssSample peak_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace manyalloc::numa::bench
