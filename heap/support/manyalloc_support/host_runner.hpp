// Runner for the host-thread back end (tests and benchmarks): `workers`
// logical workers are spread over `threads` std::threads (oversubscribed on
// small machines, so that the scheduler interleaves them at arbitrary points).
#pragma once

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "manyalloc/heap/heap.hpp"
#include "manyalloc_support/test_env.hpp"

namespace manyalloc::heap::testing {

struct HostRunner {
  using backend = acc::HostThreads;
  using Pool = ReservePoolPolicies::HostPool;
  static constexpr const char* name = "host";
  static inline unsigned threads = 16;

  static bool available() { return true; }
  static std::uint32_t many_workers() { return 64; }
  // 8 MiB unless MANYALLOC_TEST_HEAP_MB says otherwise (scripts/test.sh gives
  // the ThreadSanitizer flavour 2 MiB: its races need threads, not chunks).
  static std::size_t heap_bytes() { return std::size_t{positive_env_or("MANYALLOC_TEST_HEAP_MB", 8)} << 20; }

  template <class F>
  static void run(std::uint32_t workers, const F& f) {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const acc::HostThread acc;
        for (std::uint32_t w = t; w < workers; w += threads) f(acc, w);
      });
    }
    for (auto& th : pool) th.join();
  }

  // Like run(), timing only the workers' part: from the first thread's start
  // to the last thread's end, as each thread reads the clock itself (the
  // main thread may be descheduled while they run). Returns seconds.
  template <class F>
  static double timed_run(std::uint32_t workers, const F& f) {
    using clock = std::chrono::steady_clock;
    std::barrier start(threads);
    std::vector<clock::time_point> begin(threads), end(threads);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const acc::HostThread acc;
        start.arrive_and_wait();
        begin[t] = clock::now();
        for (std::uint32_t w = t; w < workers; w += threads) f(acc, w);
        end[t] = clock::now();
      });
    }
    for (auto& th : pool) th.join();
    return std::chrono::duration<double>(*std::max_element(end.begin(), end.end()) -
                                         *std::min_element(begin.begin(), begin.end()))
        .count();
  }

  static std::string device_name();

  // Memory the workers can use, readable from the test.
  template <class T>
  class Buffer {
   public:
    explicit Buffer(std::size_t n) : data_(n) {}
    void zero() { std::fill(data_.begin(), data_.end(), T{}); }
    T* data() { return data_.data(); }
    std::vector<T> to_host() const { return data_; }

   private:
    std::vector<T> data_;
  };
};

inline std::string HostRunner::device_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        return line.substr(colon + 2) + " (" + std::to_string(std::thread::hardware_concurrency()) + " CPUs)";
      }
    }
  }
  return "host CPU (" + std::to_string(std::thread::hardware_concurrency()) + " CPUs)";
}

// Host threads whose pools count as resident (acc::Backend::pool_memory_resident),
// as a GPU's are: heaps then write every page when they are made (Scatter
// marks its pages clean, I1c in detail/scatter/invariants.hpp), so that the
// code paths of the GPU's fresh heaps run on host threads too, under
// ThreadSanitizer in that build. For tests: a real host pool is committed on
// first touch, and marking every page would commit all of it.
struct ResidentHostThreads : acc::HostThreads {
  static constexpr bool pool_memory_resident = true;
  static std::string name() { return "ResidentHostThreads"; }
};
static_assert(acc::Backend<ResidentHostThreads>);

struct ResidentHostPool : ReservePoolPolicies::HostPool {
  using backend = ResidentHostThreads;
  static std::string classname() { return "ResidentHostPool"; }
};

struct ResidentHostRunner : HostRunner {
  using backend = ResidentHostThreads;
  using Pool = ResidentHostPool;
  static constexpr const char* name = "host_resident";
};

}  // namespace manyalloc::heap::testing
