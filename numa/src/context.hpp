// An allocator context: everything one allocator instance owns. The library
// has one global context (runtime.hpp); unit tests build private ones with an
// injected OS interface (os.hpp) to test failure paths without touching the
// process allocator.
#pragma once

#include <atomic>
#include <cstdint>

#include "manyalloc/common/report.hpp"
#include "manyalloc/common/spin_lock.hpp"
#include "meta_pool.hpp"
#include "options.hpp"
#include "os.hpp"
#include "registry.hpp"
#include "types.hpp"

namespace manyalloc::numa {

// Every member is zero until context_setup (the global context is then
// zero-initialised: it lives in .bss, whose pages only count in the resident
// set once written, instead of 130 KiB of .data that the loader maps from
// the file).
struct Context {
  Options opts = kNoOptions;
  const OsOps* os = nullptr;  // context_setup: &kLinuxOs unless a test injected one
  Registry registry;
  // sources[0] is the common source, sources[1 + n] the one of NUMA node n.
  Source sources[kMaxSources];
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
  // 1 when `misuse` should print and abort (the check option); tests flip it.
  std::atomic<bool> abort_on_misuse{false};

  constexpr Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  Source& common() noexcept { return sources[0]; }
  Source* node_source(int node) noexcept {
    return node >= 0 && node < static_cast<int>(kMaxNodes) ? &sources[1 + node] : nullptr;
  }
};

// Prepares a context: sets its options, the OS interface (unless one is
// set already), the node count (1) and numbers the sources.
void context_setup(Context& c, const Options& o);

// Records a misuse of the API (double free, foreign pointer, ...). With the
// check option it prints "manyalloc-numa: <where>: <what> (<ptr>)" and
// aborts; otherwise the caller ignores the request without touching
// metadata. Never allocates.
void misuse(Context& c, const char* where, Misuse what, const void* ptr);

}  // namespace manyalloc::numa
