// Multi-threaded stress of the node allocator: threads allocate chunks of
// random sizes (mostly small, some large), hand part of them to other
// threads through mailboxes, free what they receive after checking its
// contents, exit, and are recreated for the next round. Bounded in time.
// Uses the manyalloc_numa_* names so that it runs under every sanitizer.
//
//   numa_stress THREADS ROUNDS OPS_PER_ROUND SECONDS
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "manyalloc/numa/numa.h"

namespace {

struct Block {
  unsigned char* p;
  std::size_t n;
  std::uint32_t tag;
};

struct Mailbox {
  std::mutex m;
  std::vector<Block> items;  // std::vector uses operator new: the process allocator
};

std::atomic<long> g_errors{0}, g_ops{0};

void stamp(const Block& b) {
  std::memcpy(b.p, &b.tag, 4);
  if (b.n >= 8) std::memcpy(b.p + b.n - 4, &b.tag, 4);
  if (b.n > 64) b.p[b.n / 2] = static_cast<unsigned char>(b.tag);
}
bool verify(const Block& b) {
  std::uint32_t x, y = b.tag;
  std::memcpy(&x, b.p, 4);
  if (b.n >= 8) std::memcpy(&y, b.p + b.n - 4, 4);
  return x == b.tag && y == b.tag && (b.n <= 64 || b.p[b.n / 2] == static_cast<unsigned char>(b.tag));
}
void release(const Block& b) {
  if (!verify(b)) {
    g_errors.fetch_add(1);
    std::fprintf(stderr, "corrupted block %p (%zu bytes)\n", static_cast<void*>(b.p), b.n);
  }
  manyalloc_numa_free(b.p);
}

void worker(int id, int nthreads, long ops, std::vector<Mailbox>& boxes,
            std::chrono::steady_clock::time_point deadline, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<Block> mine;
  for (long i = 0; i < ops; ++i) {
    if ((i & 255) == 0 && std::chrono::steady_clock::now() > deadline) break;
    const unsigned r = static_cast<unsigned>(rng());
    if (r % 3 != 0 || mine.empty()) {
      std::size_t n = (r >> 8) % 1024 + 4;
      if (r % 500 == 0) n = (r >> 4) % (3 << 20) + 300000;  // large, mremap later
      else if (r % 40 == 0) n = (r >> 4) % 60000 + 4;
      Block b{static_cast<unsigned char*>(manyalloc_numa_malloc(n)), n,
              static_cast<std::uint32_t>(rng())};
      if (b.p == nullptr) {
        g_errors.fetch_add(1);
        continue;
      }
      stamp(b);
      if (r % 4 == 0 && nthreads > 1) {
        Mailbox& box = boxes[(id + 1 + r % (nthreads - 1)) % nthreads];
        std::lock_guard<std::mutex> g(box.m);
        box.items.push_back(b);
      } else {
        mine.push_back(b);
      }
    } else if (r % 7 == 0) {
      Block& b = mine[r % mine.size()];
      if (!verify(b)) g_errors.fetch_add(1);
      const std::size_t n = b.n < 500000 ? b.n * 2 + 1 : b.n + 1000000;
      auto* q = static_cast<unsigned char*>(manyalloc_numa_realloc(b.p, n));
      if (q == nullptr) {
        g_errors.fetch_add(1);
        continue;
      }
      b.p = q;
      b.n = n;
      stamp(b);
    } else {
      const std::size_t k = r % mine.size();
      release(mine[k]);
      mine[k] = mine.back();
      mine.pop_back();
    }
    if ((i & 63) == 0) {
      std::vector<Block> got;
      {
        std::lock_guard<std::mutex> g(boxes[id].m);
        got.swap(boxes[id].items);
      }
      for (const Block& b : got) release(b);
    }
    g_ops.fetch_add(1, std::memory_order_relaxed);
  }
  // Half of what is left is freed here, half is left to the next round's
  // threads (so that some frees land on orphaned heaps).
  for (std::size_t k = 0; k < mine.size(); ++k) {
    if (k % 2 == 0) {
      release(mine[k]);
    } else {
      Mailbox& box = boxes[(id + 1) % nthreads];
      std::lock_guard<std::mutex> g(box.m);
      box.items.push_back(mine[k]);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const long ops = argc > 3 ? std::atol(argv[3]) : 20000;
  const double seconds = argc > 4 ? std::atof(argv[4]) : 10.0;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  std::vector<Mailbox> boxes(threads);
  manyalloc_numa_stats before;
  manyalloc_numa_get_stats(&before);
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back(worker, t, threads, ops, std::ref(boxes), deadline,
                        static_cast<unsigned>(round * 1000 + t));
    for (auto& th : pool) th.join();
    if (std::chrono::steady_clock::now() > deadline) break;
  }
  for (auto& box : boxes)
    for (const Block& b : box.items) release(b);
  manyalloc_numa_stats after;
  manyalloc_numa_get_stats(&after);
  std::printf("numa_stress: %d threads, %ld operations, %lu heaps (%lu orphans), "
              "%lu remote frees (%lu queues merged for idle owners), %ld errors, %lu misuses\n",
              threads, g_ops.load(), static_cast<unsigned long>(after.heaps),
              static_cast<unsigned long>(after.orphan_heaps),
              static_cast<unsigned long>(after.remote_frees - before.remote_frees),
              static_cast<unsigned long>(after.idle_merges - before.idle_merges), g_errors.load(),
              static_cast<unsigned long>(after.misuses - before.misuses));
  // Heaps are recycled: never more than the threads alive at once, plus the
  // main thread's, plus a few when exits and starts overlap.
  const bool heaps_ok = after.heaps <= static_cast<unsigned>(2 * threads + 2);
  // A test registered for a profile (MANYALLOC_NUMA_PROFILE) must have run in it.
  const char* wanted = std::getenv("MANYALLOC_NUMA_PROFILE");
  const bool profile_ok = wanted == nullptr || std::strcmp(wanted, after.profile) == 0;
  if (!profile_ok) std::printf("numa_stress: profile %s, not %s\n", after.profile, wanted);
  return g_errors.load() == 0 && after.misuses == before.misuses && heaps_ok && profile_ok ? 0 : 1;
}
