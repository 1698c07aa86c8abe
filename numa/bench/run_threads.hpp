// run_threads: start N threads behind a barrier so that they begin together.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

namespace manyalloc::numa::bench {

template <class Fn>
void run_threads(int threads, Fn&& fn) {
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      fn(t);
    });
  for (auto& th : pool) th.join();
}

}  // namespace manyalloc::numa::bench
