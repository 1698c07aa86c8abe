// Test runner for the host-thread back end: `workers` logical workers are
// spread over `threads` std::threads (oversubscribed on small machines, so
// that the scheduler interleaves them at arbitrary points).
#pragma once

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "manyalloc/heap/heap.hpp"

namespace manyalloc::testing {

struct HostRunner {
  using backend = acc::HostThreads;
  using Pool = ReservePoolPolicies::HostPool;
  static constexpr const char* name = "host";
  static constexpr unsigned threads = 16;

  static bool available() { return true; }
  static std::uint32_t many_workers() { return 64; }
  static std::size_t heap_bytes() { return 8u << 20; }

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

  // Memory the workers can use, readable from the test.
  template <class T>
  class Buffer {
   public:
    explicit Buffer(std::size_t n) : data_(n) {}
    T* data() { return data_.data(); }
    std::vector<T> to_host() const { return data_; }

   private:
    std::vector<T> data_;
  };
};

}  // namespace manyalloc::testing
