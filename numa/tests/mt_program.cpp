// A multi-threaded program of ours for the LD_PRELOAD tests: ordinary C++
// (strings, maps, vectors, shared_ptr across threads) whose output must be
// identical with and without the node allocator.
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

int main() {
  constexpr int thread_count = 4;
  std::mutex m;
  std::vector<std::shared_ptr<std::string>> shared;
  std::vector<unsigned long> sums(thread_count);
  std::vector<std::thread> pool;
  for (int t = 0; t < thread_count; ++t) {
    pool.emplace_back([t, &m, &shared, &sums] {
      std::map<std::string, std::vector<int>> index;
      unsigned long sum = 0;
      for (int i = 0; i < 60000; ++i) {
        std::string key = "key-" + std::to_string((i * 7919 + t) % 5000);
        auto& v = index[key];
        v.push_back(i);
        if (v.size() > 20) v.erase(v.begin(), v.begin() + 10);
        if (i % 100 == 0) {
          std::lock_guard<std::mutex> g(m);
          shared.push_back(std::make_shared<std::string>(key + std::string(i % 300, 'x')));
          if (shared.size() > 50) shared.erase(shared.begin());  // freed by another thread
        }
      }
      for (auto& [k, v] : index) {
        sum += k.size();
        for (int x : v) sum += static_cast<unsigned long>(x);
      }
      sums[t] = sum;
    });
  }
  for (auto& th : pool) th.join();
  unsigned long total = 0;
  for (unsigned long s : sums) total += s;
  std::printf("checksum %lu, shared %zu\n", total, shared.size());
  return 0;
}
