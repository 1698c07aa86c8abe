// An allocator context: everything one allocator instance owns. The library
// has one global context (runtime.hpp); unit tests build private ones with an
// injected OS interface (os.hpp) to test failure paths without touching the
// process allocator.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>

#include "manyalloc/common/bits.hpp"
#include "manyalloc/common/report.hpp"
#include "manyalloc/common/spin_lock.hpp"
#include "meta_pool.hpp"
#include "options.hpp"
#include "os.hpp"
#include "registry.hpp"
#include "invariants.hpp"

namespace manyalloc::numa {

// What a call that gives memory back to the OS gave back (statistics: every
// decommit and unmap the allocator makes is counted, stats.cpp).
enum class Giveback : unsigned {
  purge,  // free pages inside live runs (heap_purge)
  idle,   // pages of empty runs: over a heap's budget, decayed, trimmed,
          // or of a segment given back to its source (heap_runs.cpp, "Retained")
  meta,   // descriptor pages (a segment descriptor freed, meta_pool.hpp)
  kinds
};
struct OsCounters {
  static constexpr unsigned kind_count = static_cast<unsigned>(Giveback::kinds);
  // madvise(MADV_DONTNEED) calls and bytes, by Giveback.
  std::atomic<std::uint64_t> decommits[kind_count]{};
  std::atomic<std::uint64_t> decommit_bytes[kind_count]{};
  // munmap calls and bytes: whole segments, parts of large segments (realloc,
  // reuse of a bigger cached one) and of over-sized mappings (alignment).
  std::atomic<std::uint64_t> unmaps{0};
  std::atomic<std::uint64_t> unmap_bytes{0};
  // Of those, cached segments unmapped by the decay (source.hpp).
  std::atomic<std::uint64_t> decayed{0};
  std::atomic<std::uint64_t> decayed_bytes{0};
};

// Every member is zero until context_setup (the global context is then
// zero-initialised: it lives in .bss, whose pages only count in the resident
// set once written, instead of 130 KiB of .data that the loader maps from
// the file).
//
// Layout, for the resident set of small processes: the registry's 128 KiB
// top table comes first, and everything a process without NUMA binding
// writes (the registry's leaf counter, options, pools, lists, counters and
// the common source, sources[0]) follows it in one page. The node sources
// after it are written only in the numa profile. A process thus keeps two
// pages of the context resident (that one and the top-table page of its
// mappings' addresses) besides the first, which it shares with the
// library's data; it kept three when the sources came before the counters
// and context_setup numbered all 65. (fork writes every source's lock, so
// a process that forks keeps the node sources' two pages too.) Where the
// page boundaries fall depends on the object's address; the hot fields and
// sources[0] take a few hundred bytes and cross a boundary rarely.
struct Context {
  Registry registry;
  Options opts = no_options;
  const OsOps* os = nullptr;  // context_setup: &linux_os_ops unless a test injected one
  std::atomic<int> nodes{0};  // context_setup: 1, then the NUMA node count
  MetaPool<SmallSegment> small_pool;
  MetaPool<LargeSegment> large_pool;
  MetaPool<Heap> heap_pool;
  SpinLock heaps_lock;
  Heap* heaps = nullptr;    // every heap ever created (never destroyed)
  Heap* orphans = nullptr;  // heaps of exited threads, waiting for adoption
  std::atomic<std::uint32_t> colour_next{0};
  std::atomic<std::uint64_t> misuses{0};
  std::atomic<std::uint64_t> failed_allocs{0};
  // Pages of the shared idle allowance (heap_runs.cpp, shared_idle_cap)
  // held: by heaps (Heap::idle_borrowed) and by the resident idle pages of
  // small segments in the sources' caches (Source::idle_resident).
  std::atomic<std::uint64_t> shared_idle_used{0};
  // Pages (page_bytes) in runs of all heaps, their recent peak and when
  // that peak was last reached or lowered (OsOps::now; shared_idle_cap).
  std::atomic<std::uint64_t> run_pages{0};
  std::atomic<std::uint64_t> run_pages_peak{0};
  std::atomic<std::uint64_t> run_peak_ns{0};
  // Pages of the shared allowance that orphans hold (their idle_borrowed),
  // which a heap that finds no room takes back (reclaim_orphan_shares,
  // heap_runs.cpp): the sum of the shares of the heaps whose `orphan` is
  // set. The flag changes under the heap's merge lock while the heap is off
  // the orphan list (heap_release, heap_acquire), an orphan's share under
  // its merge lock in lowmem and under heaps_lock otherwise
  // (shared_idle_return), the count with them.
  std::atomic<std::uint64_t> orphan_shares{0};
  // When a thread's heap was last orphaned (OsOps::now, heap_release; 0:
  // never): shared_idle_cap widens while threads come and go.
  std::atomic<std::uint64_t> orphaned_ns{0};
  // 1 when `misuse` should print and abort (the check option); tests flip it.
  std::atomic<bool> abort_on_misuse{false};
  OsCounters os_calls;
  // sources[0] is the common source, sources[1 + n] the one of NUMA node n.
  Source sources[max_sources];

  constexpr Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  Source& common() noexcept { return sources[0]; }
  // The node a source serves, -1 for the common source. Precondition: s is
  // one of this context's sources.
  int source_node(const Source& s) const noexcept { return static_cast<int>(&s - sources) - 1; }
  Source* node_source(int node) noexcept {
    return node >= 0 && node < static_cast<int>(max_nodes) ? &sources[1 + node] : nullptr;
  }
};

// Counts `pages` more run pages (run_new), and a new peak of them.
inline void note_run_pages(Context& c, std::uint64_t pages) noexcept {
  const std::uint64_t now = c.run_pages.fetch_add(pages, std::memory_order_relaxed) + pages;
  std::uint64_t peak = c.run_pages_peak.load(std::memory_order_relaxed);
  if (now < peak) return;
  while (peak < now && !c.run_pages_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  c.run_peak_ns.store(c.os->now(), std::memory_order_relaxed);
}
// The shared idle allowance in pages of page_bytes: Options::shared_idle,
// or the run pages given up since the recent peak of run pages (their
// release leaves the process within that peak) when more, plus, while
// threads come and go (a heap orphaned within shared_idle_hold_ms),
// Options::shared_idle_peak percent of that peak; 0 (no shared allowance)
// when shared_idle is 0. A peak older than shared_idle_hold_ms halves (not
// below the run pages now). Shares taken before stay until
// their holders look again: a heap over the allowance gives its share back
// at its next release or purge (heap_runs.cpp, shared_idle_hold; heap_purge.cpp),
// a source the resident idle pages of its cached segments at its next decay
// (source.cpp), so what an active process no longer needs goes back within
// a few holds. Without `age` (the statistics: reading them must not change
// the policy they report), an old peak is left as it is.
inline std::uint64_t shared_idle_cap(Context& c, bool age = true) noexcept {
  if (c.opts.shared_idle == 0) return 0;
  const std::uint64_t floor = c.opts.shared_idle / page_bytes;
  const std::uint64_t now_pages = c.run_pages.load(std::memory_order_relaxed);
  std::uint64_t peak = c.run_pages_peak.load(std::memory_order_relaxed);
  const std::uint64_t hold_ns = shared_idle_hold_ms * 1000000u;
  const bool few_pages = peak <= now_pages + floor;
  const std::uint64_t orphaned = c.orphaned_ns.load(std::memory_order_relaxed);  // may be later than `now`
  if (few_pages && (c.opts.shared_idle_peak == 0 || orphaned == 0)) return floor;
  const std::uint64_t now = c.os->now();
  const bool turnover = orphaned != 0 && (now <= orphaned || now - orphaned <= hold_ns);
  const auto over_peak = [&c, turnover](std::uint64_t p) {
    return turnover ? p * c.opts.shared_idle_peak / 100 : 0;
  };
  if (few_pages) return floor + over_peak(peak);
  const std::uint64_t reached = c.run_peak_ns.load(std::memory_order_relaxed);  // may be later than `now`
  if (age && now > reached && now - reached > hold_ns) {
    const std::uint64_t lower = peak / 2 > now_pages ? peak / 2 : now_pages;
    // Racing lowerings agree closely enough; a new peak meanwhile wins.
    if (c.run_pages_peak.compare_exchange_strong(peak, lower, std::memory_order_relaxed)) {
      c.run_peak_ns.store(now, std::memory_order_relaxed);
      peak = lower;
    }
  }
  const std::uint64_t held = peak > now_pages ? peak - now_pages : 0;
  return (held > floor ? held : floor) + over_peak(peak);
}
// Takes `pages` of the shared allowance when the sum stays within its cap.
inline bool shared_idle_take(Context& c, std::uint64_t pages) noexcept {
  const std::uint64_t cap = shared_idle_cap(c);
  std::uint64_t used = c.shared_idle_used.load(std::memory_order_relaxed);
  do {
    if (used + pages > cap) return false;
  } while (!c.shared_idle_used.compare_exchange_weak(used, used + pages, std::memory_order_relaxed));
  return true;
}
inline void shared_idle_give(Context& c, std::uint64_t pages) noexcept {
  c.shared_idle_used.fetch_sub(pages, std::memory_order_relaxed);
}
// Whether the shares held exceed the allowance (its peak aged since they
// were taken).
inline bool shared_idle_over(Context& c) noexcept {
  return c.shared_idle_used.load(std::memory_order_relaxed) > shared_idle_cap(c);
}

// The OS calls that give memory back, counted (OsCounters).
inline int os_decommit(Context& c, void* p, std::size_t bytes, Giveback why) noexcept {
  const auto k = static_cast<unsigned>(why);
  c.os_calls.decommits[k].fetch_add(1, std::memory_order_relaxed);
  c.os_calls.decommit_bytes[k].fetch_add(bytes, std::memory_order_relaxed);
  return c.os->decommit(p, bytes);
}

// Decommits the run pages `mask` of the segment at `base` (pages of
// page_bytes): one madvise per range of consecutive pages.
inline void os_decommit_pages(Context& c, std::uint8_t* base, PageMask mask, Giveback why) noexcept {
  while (mask != 0) {
    const unsigned first = static_cast<unsigned>(std::countr_zero(mask));
    const unsigned n = static_cast<unsigned>(std::countr_one(mask >> first));
    os_decommit(c, base + std::size_t{first} * page_bytes, std::size_t{n} * page_bytes, why);
    mask &= ~(bits::low_mask64(n) << first);
  }
}
inline int os_unmap(Context& c, void* p, std::size_t bytes) noexcept {
  c.os_calls.unmaps.fetch_add(1, std::memory_order_relaxed);
  c.os_calls.unmap_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return c.os->unmap(p, bytes);
}
// Unmaps that were made outside (map_aligned's trims of address space).
inline void count_unmaps(Context& c, unsigned n) noexcept {
  if (n != 0) c.os_calls.unmaps.fetch_add(n, std::memory_order_relaxed);
}

// Prepares a context: sets its options, the OS interface (unless one is
// set already) and the node count (1).
void context_setup(Context& c, const Options& o);

// Records a misuse of the API (double free, foreign pointer, ...). With the
// check option it prints "manyalloc-numa: <where>: <what> (<ptr>)" and
// aborts; otherwise the caller ignores the request without touching
// metadata. Never allocates.
void misuse(Context& c, const char* where, Misuse what, const void* ptr);

}  // namespace manyalloc::numa
