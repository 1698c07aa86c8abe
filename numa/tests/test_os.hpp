// An OS back end for unit tests: the real Linux calls, with failures that a
// test can switch on (mmap failing after N more calls, mremap failing,
// in-place mremap refused so that the "move" path runs), every call counted,
// and a clock the test sets (Faults::clock_ns, for the decay of cached
// segments; the real clock while it is 0).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "context.hpp"
#include "os.hpp"

namespace manyalloc::numa::test {

struct Faults {
  static inline std::atomic<int> maps_left{-1};  // -1: never fail; n: fail after n maps
  static inline std::atomic<bool> fail_remap{false};
  static inline std::atomic<bool> refuse_in_place{false};
  static inline std::atomic<int> maps{0}, unmaps{0}, remaps{0}, decommits{0};
  static inline std::atomic<std::uint64_t> clock_ns{0};
  static void reset() {
    maps_left = -1;
    fail_remap = false;
    refuse_in_place = false;
    maps = unmaps = remaps = decommits = 0;
    clock_ns = 0;
  }
};

// The calls it does not override are LinuxOs's.
struct FaultyOs : LinuxOs {
  static void* map(void* hint, std::size_t n) {
    int left = Faults::maps_left.load();
    if (left == 0) return nullptr;
    if (left > 0) Faults::maps_left.fetch_sub(1);
    ++Faults::maps;
    return LinuxOs::map(hint, n);
  }
  static int unmap(void* p, std::size_t n) {
    ++Faults::unmaps;
    return LinuxOs::unmap(p, n);
  }
  static void* remap(void* p, std::size_t o, std::size_t n, void* target) {
    if (Faults::fail_remap) return nullptr;
    if (target == nullptr && Faults::refuse_in_place) return nullptr;
    ++Faults::remaps;
    return LinuxOs::remap(p, o, n, target);
  }
  static int decommit(void* p, std::size_t n) {
    ++Faults::decommits;
    return LinuxOs::decommit(p, n);
  }
  static std::uint64_t now() {
    const std::uint64_t t = Faults::clock_ns.load();
    return t != 0 ? t : LinuxOs::now();
  }
};
static_assert(OsBackend<FaultyOs>);
inline constexpr OsOps faulty_os = make_os_ops<FaultyOs>();

// A private allocator context on the faulty OS, or on `os` (not the
// process's malloc), with the profile's defaults (options.cpp) unless
// cache_max is given (0: nothing is cached). Purges come whenever the frees
// ask for them (purge_ms 0) unless `purge_ms` is given, so that tests of
// what a purge does need no clock.
inline constexpr std::size_t profile_default = SIZE_MAX;
inline std::unique_ptr<Context> make_context(Profile profile = Profile::uma,
                                             std::size_t cache_max = profile_default,
                                             const OsOps& os = faulty_os,
                                             std::uint32_t purge_ms = 0) {
  Faults::reset();
  auto c = std::make_unique<Context>();
  Options o;
  o.profile = profile;
  const bool low = profile == Profile::lowmem;
  o.cache_max = cache_max != profile_default ? cache_max
                : low                         ? lowmem_cache_max
                                              : std::size_t{1} << 30;
  o.decay_ms = low ? decay_ms_lowmem : default_decay_ms;
  o.large_decay_ms = low ? large_decay_ms_lowmem : default_decay_ms;
  o.purge_ms = purge_ms;
  o.shared_idle = 0;  // each heap alone within its own allowance, unless a test sets a shared one
  o.shared_idle_peak = 0;
  context_setup(*c, o);
  c->os = &os;
  return c;
}

}  // namespace manyalloc::numa::test
