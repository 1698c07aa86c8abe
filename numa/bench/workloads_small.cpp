// Small-chunk workloads (workloads.hpp).
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "workloads.hpp"

namespace manyalloc::numa::bench {

namespace {

struct Counters {
  std::atomic<std::uint64_t> ops{0}, bytes{0}, fails{0};
  Result result() const { return Result{ops.load(), bytes.load(), fails.load(), {}}; }
};

// Sizes skewed towards small ones: 1 .. 2^k with k uniform in [3, max_log].
std::size_t skewed(Rng& r, unsigned max_log) {
  const unsigned k = 3 + static_cast<unsigned>(r.below(max_log - 2));
  return 2 + r.below(std::size_t{1} << k);  // >= 2: the stamp uses both ends
}

}  // namespace

// t-test1 style: each thread owns a table of slots and, at random, fills an
// empty slot (malloc), resizes (realloc) or empties (free) a full one.
Result ttest1(const Params& p) {
  Counters c;
  const long ops = static_cast<long>(4000000 * p.scale);
  run_threads(p.threads, [&](int t) {
    constexpr int slot_count = 4000;
    struct Slot {
      void* ptr;
      std::size_t n;
    };
    std::vector<Slot> slots(slot_count, Slot{nullptr, 0});
    Rng r(static_cast<std::uint64_t>(t) + 11);
    std::uint64_t n_ops = 0, bytes = 0, fails = 0;
    for (long i = 0; i < ops; ++i) {
      Slot& s = slots[r.below(slot_count)];
      const auto tag = static_cast<std::uint8_t>(&s - slots.data());
      if (s.ptr == nullptr) {
        s.n = skewed(r, 12);
        s.ptr = std::malloc(s.n);
        if (!s.ptr) { ++fails; continue; }
        stamp(s.ptr, s.n, tag);
        bytes += s.n;
      } else if (r.below(8) == 0) {
        if (!stamped(s.ptr, s.n, tag)) ++fails;
        const std::size_t n = skewed(r, 12);
        void* q = std::realloc(s.ptr, n);
        if (!q) { ++fails; continue; }
        if (static_cast<std::uint8_t*>(q)[0] != tag) ++fails;  // contents kept
        s.ptr = q;
        s.n = n;
        stamp(q, n, tag);
        bytes += n;
      } else {
        if (!stamped(s.ptr, s.n, tag)) ++fails;
        std::free(s.ptr);
        s.ptr = nullptr;
      }
      ++n_ops;
    }
    for (Slot& s : slots)
      if (s.ptr) std::free(s.ptr), ++n_ops;
    c.ops += n_ops;
    c.bytes += bytes;
    c.fails += fails;
  });
  return c.result();
}

// Larson style: a server whose worker threads replace random blocks of a
// table; after a number of operations each worker exits and a new thread
// takes over its table, freeing blocks that the previous one allocated.
Result larson(const Params& p) {
  Counters c;
  constexpr int slot_count = 1000, generations = 8;
  const long per_gen = static_cast<long>(1000000 * p.scale);
  struct Table {
    void* ptr[slot_count];
    std::uint16_t n[slot_count];
  };
  std::vector<std::unique_ptr<Table>> tables;
  for (int t = 0; t < p.threads; ++t) {
    tables.emplace_back(new Table{});
    Rng r(static_cast<std::uint64_t>(t) + 77);
    for (int i = 0; i < slot_count; ++i) {
      tables[t]->n[i] = static_cast<std::uint16_t>(16 + r.below(497));
      tables[t]->ptr[i] = std::malloc(tables[t]->n[i]);
      stamp(tables[t]->ptr[i], tables[t]->n[i], static_cast<std::uint8_t>(i));
    }
  }
  for (int g = 0; g < generations; ++g) {
    run_threads(p.threads, [&](int t) {
      Table& tab = *tables[static_cast<std::size_t>((t + g) % p.threads)];  // inherited table
      Rng r(static_cast<std::uint64_t>(g * 1000 + t));
      std::uint64_t fails = 0, bytes = 0;
      for (long i = 0; i < per_gen; ++i) {
        const std::size_t k = r.below(slot_count);
        if (!stamped(tab.ptr[k], tab.n[k], static_cast<std::uint8_t>(k))) ++fails;
        std::free(tab.ptr[k]);
        tab.n[k] = static_cast<std::uint16_t>(16 + r.below(497));
        tab.ptr[k] = std::malloc(tab.n[k]);
        if (!tab.ptr[k]) { ++fails; tab.ptr[k] = std::malloc(16); tab.n[k] = 16; }
        stamp(tab.ptr[k], tab.n[k], static_cast<std::uint8_t>(k));
        bytes += tab.n[k];
      }
      c.ops += 2 * static_cast<std::uint64_t>(per_gen);
      c.bytes += bytes;
      c.fails += fails;
    });
  }
  for (auto& tab : tables)
    for (int i = 0; i < slot_count; ++i) std::free(tab->ptr[i]);
  return c.result();
}

// xmalloc style: thread t allocates blocks and passes them through a ring to
// thread t+1, which frees them: every free is a remote free (with one
// thread, the thread feeds itself).
Result xmalloc(const Params& p) {
  Counters c;
  constexpr std::size_t ring_size = 4096;
  struct alignas(64) Ring {
    std::atomic<std::size_t> head{0};
    alignas(64) std::atomic<std::size_t> tail{0};
    alignas(64) void* slot[ring_size];
    std::uint16_t size[ring_size];
  };
  std::vector<std::unique_ptr<Ring>> rings;
  for (int t = 0; t < p.threads; ++t) rings.emplace_back(new Ring);
  const long blocks = static_cast<long>(3000000 * p.scale);
  std::atomic<int> producers_done{0};
  run_threads(p.threads, [&](int t) {
    Ring& out = *rings[static_cast<std::size_t>((t + 1) % p.threads)];
    Ring& in = *rings[static_cast<std::size_t>(t)];
    Rng r(static_cast<std::uint64_t>(t) + 5);
    std::uint64_t fails = 0, ops = 0, bytes = 0;
    long made = 0;
    bool done = false;
    for (;;) {
      bool progress = false;
      // Produce while there is room.
      while (made < blocks) {
        const std::size_t h = out.head.load(std::memory_order_relaxed);
        if (h - out.tail.load(std::memory_order_acquire) >= ring_size) break;
        const auto n = static_cast<std::uint16_t>(8 + r.below(249));
        void* q = std::malloc(n);
        if (!q) { ++fails; continue; }
        stamp(q, n, static_cast<std::uint8_t>(h));
        out.slot[h % ring_size] = q;
        out.size[h % ring_size] = n;
        out.head.store(h + 1, std::memory_order_release);
        ++made;
        ++ops;
        bytes += n;
        progress = true;
      }
      if (made == blocks && !done) {
        done = true;
        producers_done.fetch_add(1);
      }
      // Consume what arrived.
      std::size_t tl = in.tail.load(std::memory_order_relaxed);
      const std::size_t hd = in.head.load(std::memory_order_acquire);
      if (tl != hd) progress = true;
      for (; tl != hd; ++tl) {
        void* q = in.slot[tl % ring_size];
        if (!stamped(q, in.size[tl % ring_size], static_cast<std::uint8_t>(tl))) ++fails;
        std::free(q);
        ++ops;
      }
      in.tail.store(tl, std::memory_order_release);
      if (done && producers_done.load() == p.threads &&
          in.head.load(std::memory_order_acquire) == tl)
        break;
      // Nothing to do: let the peer run (matters when cores are shared).
      if (!progress) std::this_thread::yield();
    }
    c.ops += ops;
    c.bytes += bytes;
    c.fails += fails;
  });
  return c.result();
}

namespace {
// Writes a small object many times (the cache-line traffic that false
// sharing turns into coherence misses).
std::uint64_t hammer(volatile char* obj, long writes) {
  for (long w = 0; w < writes; ++w) obj[w & 7] = static_cast<char>(obj[w & 7] + 1);
  return static_cast<std::uint64_t>(writes);
}

// The loop both false-sharing workloads run on every thread: allocate a
// small object, write it many times, check it, free it.
void false_sharing_rounds(Counters& c, long rounds, std::uint64_t ops) {
  const long writes = 500;
  std::uint64_t fails = 0;
  for (long i = 0; i < rounds; ++i) {
    auto* o = static_cast<char*>(std::malloc(8));
    if (!o) { ++fails; continue; }
    std::memset(o, 0, 8);
    hammer(o, writes);
    if (o[0] != static_cast<char>((writes + 7) / 8)) ++fails;
    std::free(o);
    ops += 2;
  }
  c.ops += ops;
  c.bytes += static_cast<std::uint64_t>(rounds) * 8;
  c.fails += fails;
}
}  // namespace

// cache-scratch (passive false sharing): the main thread allocates one small
// object per thread (typically on one cache line) and hands them out; each
// thread frees its object, then repeatedly allocates, writes and frees an
// object of the same size. An allocator that hands the freed object back to
// the thread makes the threads share cache lines.
Result cache_scratch(const Params& p) {
  Counters c;
  std::vector<char*> initial(static_cast<std::size_t>(p.threads));
  for (auto& o : initial) o = static_cast<char*>(std::malloc(8));
  const long rounds = static_cast<long>(1000000 * p.scale);
  run_threads(p.threads, [&](int t) {
    std::free(initial[static_cast<std::size_t>(t)]);
    false_sharing_rounds(c, rounds, 1);
  });
  return c.result();
}

// cache-thrash (active false sharing): every thread repeatedly allocates a
// small object, writes it many times and frees it. Objects of different
// threads on one cache line make the writes ping-pong between cores.
Result cache_thrash(const Params& p) {
  Counters c;
  const long rounds = static_cast<long>(1000000 * p.scale);
  run_threads(p.threads, [&](int) { false_sharing_rounds(c, rounds, 0); });
  return c.result();
}

}  // namespace manyalloc::numa::bench
