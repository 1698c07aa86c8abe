// Growing a pool while workers run (issue 15, a reserve pool that grows
// "during a launch through a host-serviced request"): the words a host
// thread of the library (growth_service.hpp) and the workers share, and the
// workers' side of the exchange.
//
// A worker cannot map memory; the host can, also while a kernel runs (CUDA's
// virtual memory management maps into a reserved range without waiting for
// the device). So a worker whose request failed posts how much of the pool
// it needs mapped and waits; the service maps at least that much and
// answers; the worker lets the heap use the new pages and asks again.
//
// Invariants (M1-M5):
//  M1 Only the worker holding `lock` (a word in device memory, the
//     creation policy's, which every worker of the heap reaches) writes
//     `need_bytes` and `requested`, and it writes `need_bytes` first (both
//     stores release at system scope), so the service, which loads
//     `requested` with acquire, reads a need at least as recent. Each
//     holder posts a larger `requested` than the holder before; the service
//     serves a `requested` above the last it served.
//  M2 The service writes `mapped` before `answered` (release), and `mapped`
//     only grows: the pool is mapped up to `mapped` from the moment a worker
//     reads that value, so a worker that reads `mapped` >= what it needs
//     need not wait for anything.
//  M3 `answered` >= a worker's sequence number with `mapped` below its need
//     means the service could not map that far (the device had no memory
//     for it): the worker fails instead of asking again. The service then
//     sets `refused_from` to the least need it could not map (written before
//     `answered`), and back to all ones once it maps more or `wait_ns` after
//     the refusal, so the other waiting workers that need as much fail
//     without posting, for a while.
//  M4 Every wait is bounded by `wait_ns` from the worker's first look (also
//     the wait of a worker that keeps losing the lock to others), and
//     ends when `serving` is 0 (no service, or it stopped): a worker
//     never hangs on a host that does not answer; its request then fails as
//     any request of a full heap does (the OOM policy decides). A request
//     that grows the pool in several rounds (others took the new pages
//     first, allocator.hpp) waits at most `wait_ns` per round.
//  M5 Only the worker holding `lock` reads `serving`, `mapped` and
//     `refused_from`; the others read the heap's copy of the mapped size in
//     device memory (the creation policy's known_mapped_end), which holds a
//     value of `mapped` (or the host's own grow(), written between launches)
//     and only grows, `wait_ns` once per request, and `mapped` once when
//     their wait for the lock runs out (M4). The holder raises
//     that copy to what it read before it lets go of the lock, so the
//     workers it served find it there. Why: while a kernel's workers load
//     host memory in a loop, the host's cuMemSetAccess (the last step of
//     every mapping) waits for them, far longer than on an idle
//     GPU or beside a kernel that loads only device memory
//     (docs/results/heap/growth_while_running, map_timing_probe.cu). So
//     the waiting workers load device memory, and one worker at a time
//     loads the host's words. A stopped service or a refusal is seen by
//     each waiting worker once it holds the lock, one after the other.
//
// The mailbox lives as long as the Allocator (a handle made while a service
// ran keeps pointing at it after the service stops: `serving` 0), and an
// answer that comes after its worker gave up still counts: the next worker
// that fails finds `mapped` beyond what the heap uses and takes those pages
// first.
#pragma once

#include <cstdint>

#include "manyalloc/common/platform.hpp"
#include "manyalloc/heap/acc/concepts.hpp"

namespace manyalloc::heap::detail {

struct alignas(64) GrowthMailbox {
  std::uint64_t requested;   // sequence number of the latest request (M1)
  std::uint64_t need_bytes;  // bytes from the pool's start that request needs mapped (M1)
  std::uint64_t answered;    // sequence number of the latest request served (M2, M3)
  std::uint64_t mapped;      // bytes from the pool's start that are mapped (M2)
  std::uint64_t reserved;    // bytes reserved: the most `mapped` can reach
  std::uint64_t wait_ns;     // longest wait of a worker (M4)
  std::uint64_t serving;     // 1 while a service answers (M4)
  std::uint64_t refused_from;  // the least need the service could not map (M3)
};

// Asks for the pool to be mapped up to at least `need` bytes from its start
// and waits for it (M1-M5). Returns the bytes mapped then (>= need), or 0
// when no answer came in time, the service stopped or refused that much.
// Called by each worker whose request failed, with need <= `reserved`.
// `known_mapped()` returns the heap's copy of the mapped size (M5) and
// `publish(mapped)` raises it. `lock` holds twice the last sequence number
// posted, plus 1 while a worker holds it: the sequence numbers grow without
// a read of the host's words, and stay above `answered` after the heap is
// reset (which zeroes the lock).
template <class Acc, class KnownMapped, class Publish>
  requires acc::SystemScopeWorker<Acc>
MANYALLOC_FN std::uint64_t request_growth(const Acc& acc, GrowthMailbox* box, std::uint32_t* lock,
                                          std::uint64_t need, const KnownMapped& known_mapped,
                                          const Publish& publish) {
  std::uint64_t mapped = known_mapped();
  if (mapped >= need) return mapped;
  const std::uint64_t start = acc.now_ns();
  const std::uint64_t wait = acc.load_system64(&box->wait_ns);
  for (;;) {
    const std::uint32_t word = acc.load(lock);
    if ((word & 1u) == 0u && acc.atomic_cas(lock, word, word | 1u) == word) {
      // This worker reads the host's words and posts (M1, M5). The fences
      // order its words after the last holder's and before the next one's.
      acc.fence();
      std::uint32_t released = word;
      mapped = 0;
      if (acc.load_system64(&box->serving) != 0u) {  // M4
        mapped = acc.load_system64(&box->mapped);
        if (mapped < need && need < acc.load_system64(&box->refused_from)) {  // M3
          // Above every number posted or answered: after a reset zeroed the
          // lock, a holder that gave up may have left one unanswered.
          const std::uint64_t posted = acc.load_system64(&box->requested);
          const std::uint64_t answered = acc.load_system64(&box->answered);
          std::uint64_t seq = word / 2u;
          seq = (posted > seq ? posted : seq);
          seq = (answered > seq ? answered : seq) + 1u;
          acc.store_system64(&box->need_bytes, need);
          acc.store_system64(&box->requested, seq);
          while (acc.load_system64(&box->answered) < seq) {
            if (acc.load_system64(&box->serving) == 0u || acc.now_ns() - start > wait) break;
            acc.relax();
          }
          mapped = acc.load_system64(&box->mapped);  // below `need` after an answer: refused (M3)
          released = static_cast<std::uint32_t>(seq * 2u);
        }
        publish(mapped);  // before the lock goes: the waiters read the copy (M5)
      }
      acc.fence();
      acc.atomic_exch(lock, released);
      return mapped >= need ? mapped : 0u;
    }
    // Another worker holds the lock (or took it first): wait on it in
    // device memory while the limit allows, then look at the heap's copy
    // again (M5). The fence orders that look after the load that saw the
    // lock free, so it finds what the holder published before it let go.
    while ((acc.load(lock) & 1u) != 0u && acc.now_ns() - start <= wait) acc.relax();
    acc.fence();
    mapped = known_mapped();
    if (mapped >= need) return mapped;
    // The limit is checked on every turn, not only while the lock is seen
    // held: a worker that keeps losing the lock's CAS to others, and finds
    // it free again each time it looks, times out too (M4). Checked after
    // the first try, so that a wait of 0 still lets a worker post.
    if (acc.now_ns() - start > wait) {
      // The holder's answer may have come while this worker waited.
      mapped = acc.load_system64(&box->mapped);
      if (mapped < need) return 0u;
      publish(mapped);
      return mapped;
    }
  }
}

}  // namespace manyalloc::heap::detail
