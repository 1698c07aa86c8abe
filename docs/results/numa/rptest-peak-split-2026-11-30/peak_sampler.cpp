// Diagnostic, not part of the library: preloaded after libmanyalloc-numa.so,
// a thread samples the allocator's statistics (manyalloc_numa_get_stats) and
// the process's resident set (/proc/self/statm) every SAMPLE_US microseconds
// (default 2000) and, at exit, prints the statistics taken at the sample of
// highest resident set: which part of the peak is in use (chunks handed out,
// chunks freed by other threads and not yet merged counted as in use), which
// part is mapped but not in use (free chunks in partly used runs, free pages
// of segments, cached segments) and the metadata, and how much of "in use"
// waits in remote-free queues (remote_pending_bytes, since the statistics
// count it). No allocation after start.
//   g++ -O2 -shared -fPIC -I numa/include peak_sampler.cpp -o peak_sampler.so -ldl -lpthread
//   LD_PRELOAD="libmanyalloc-numa.so peak_sampler.so" ./rptest ...
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "manyalloc/numa/numa.h"

namespace {
using GetStats = void (*)(manyalloc_numa_stats*);
GetStats get_stats = nullptr;
std::atomic<bool> stop{false};
pthread_t sampler;
bool started = false;
long page_bytes = 4096;
manyalloc_numa_stats now{}, at_peak{};
unsigned long long peak_rss = 0, samples = 0, max_in_use = 0, max_pending = 0, max_merged_in_use = 0;

unsigned long long rss_bytes() {
  static char buf[128];
  const int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  unsigned long long size = 0, resident = 0;
  if (std::sscanf(buf, "%llu %llu", &size, &resident) != 2) return 0;
  return resident * static_cast<unsigned long long>(page_bytes);
}

void* sample(void* arg) {
  const long us = reinterpret_cast<long>(arg);
  while (!stop.load()) {
    const unsigned long long rss = rss_bytes();
    get_stats(&now);
    ++samples;
    if (now.in_use_bytes > max_in_use) max_in_use = now.in_use_bytes;
    if (now.remote_pending_bytes > max_pending) max_pending = now.remote_pending_bytes;
    // The heaps are read one by one, not at one instant: skip a sample
    // whose pending count got ahead of its in-use count.
    if (now.remote_pending_bytes <= now.in_use_bytes &&
        now.in_use_bytes - now.remote_pending_bytes > max_merged_in_use)
      max_merged_in_use = now.in_use_bytes - now.remote_pending_bytes;
    if (rss > peak_rss) {
      peak_rss = rss;
      at_peak = now;
    }
    usleep(static_cast<useconds_t>(us));
  }
  return nullptr;
}

__attribute__((constructor)) void start() {
  get_stats = reinterpret_cast<GetStats>(dlsym(RTLD_DEFAULT, "manyalloc_numa_get_stats"));
  if (get_stats == nullptr) return;
  page_bytes = sysconf(_SC_PAGESIZE);
  const char* env = std::getenv("SAMPLE_US");
  const long us = env != nullptr ? std::atol(env) : 2000;
  started = pthread_create(&sampler, nullptr, sample, reinterpret_cast<void*>(us)) == 0;
}

__attribute__((destructor)) void finish() {
  if (!started) return;
  stop.store(true);
  pthread_join(sampler, nullptr);
  const double MiB = 1024.0 * 1024.0;
  char line[1024];
  const int n = std::snprintf(
      line, sizeof line,
      "peak_sampler: %llu samples; peak RSS %.1f MiB; at it: in use %.1f MiB (small %.1f, large %.1f), "
      "mapped %.1f MiB, cached %.1f MiB, mapped - cached - in use %.1f MiB, metadata %.1f MiB, remote frees %llu; "
      "largest in use seen %.1f MiB; at the peak waiting in remote-free queues %.1f MiB; largest waiting %.1f MiB; "
      "largest in use less what waits %.1f MiB\n",
      samples, peak_rss / MiB, at_peak.in_use_bytes / MiB, at_peak.small_in_use_bytes / MiB,
      at_peak.large_in_use_bytes / MiB, at_peak.mapped_bytes / MiB, at_peak.cached_bytes / MiB,
      (static_cast<double>(at_peak.mapped_bytes) - at_peak.cached_bytes - at_peak.in_use_bytes) / MiB,
      at_peak.metadata_bytes / MiB, static_cast<unsigned long long>(at_peak.remote_frees), max_in_use / MiB,
      at_peak.remote_pending_bytes / MiB, max_pending / MiB, max_merged_in_use / MiB);
  if (n > 0) (void)!write(2, line, static_cast<size_t>(n));
}
}  // namespace
