// The options table of the node allocator: one table, read once from
// MANYALLOC_NUMA_<NAME> environment variables before the first allocation
// (README.md, "Options", lists the same table).
#pragma once

#include <cstddef>
#include <cstdint>

#include "manyalloc/common/env_options.hpp"

namespace manyalloc::numa {

// [Valat2014], "Allocator profiles".
enum class Profile : int {
  lowmem = 0,  // return memory to the OS as soon as possible
  uma = 1,     // recycle large segments, one common source
  numa = 2,    // recycle, one source per NUMA node + the common one
};
const char* profile_name(Profile p);

// Least milliseconds between two purges that frees trigger (heap.hpp,
// heap_purge_due), in every profile.
inline constexpr std::uint32_t default_purge_ms = 10;

// Default of Options::shared_idle outside lowmem: the bursts of released
// runs of producer/consumer pairs kept resident up to this sum over all
// heaps (heap_runs.cpp, shared_idle_return; numa/DESIGN.md, "Shared idle
// allowance").
inline constexpr std::size_t default_shared_idle = std::size_t{8} << 20;
// The shared allowance also covers the run pages the process has given up
// since its recent peak of run pages (context.hpp, shared_idle_cap): that
// peak holds for shared_idle_hold_ms after it was last reached, then halves,
// at most once per hold. A process whose threads free much and allocate it
// again moments later elsewhere (mimalloc-bench's mstress: threads that
// exit and new ones) keeps those pages resident without raising its peak
// (numa/DESIGN.md, "Idle pages traded through the source").
inline constexpr std::uint64_t shared_idle_hold_ms = 1000;
// And, outside lowmem, while threads come and go (a thread's heap orphaned
// within shared_idle_hold_ms), this percentage of that recent peak: idle
// pages a process whose run pages stay near their peak may keep on top of
// it. Threads that end at different times leave pages that the others, and
// the next threads, need; with the allowance bounded by the peak alone, a
// heap short of room makes pages that others hold be decommitted and
// faulted in again. A process whose threads all live on does not trade
// pages that way and keeps the allowance bounded by its peak
// (numa/DESIGN.md, "Idle pages traded through the source"). The process's
// resident run and idle pages stay within this much above that peak, plus
// the floor and the heaps' own allowances.
inline constexpr std::uint32_t default_shared_idle_peak_percent = 25;

struct Options {
  Profile profile = Profile::uma;
  bool profile_from_env = false;
  std::size_t cache_max = std::size_t{1} << 30;  // bytes cached per source
  // Milliseconds a free segment stays cached in a source before it is
  // unmapped (source.hpp, "Decay"); decay_ms_lowmem or default_decay_ms by default.
  std::uint32_t decay_ms = 1000;
  // The same for large blocks (source.hpp, "Decay"): decay_ms when set,
  // else large_decay_ms_lowmem in lowmem, decay_ms's default otherwise.
  std::uint32_t large_decay_ms = 1000;
  // Milliseconds between two purges of a heap that its frees trigger
  // (heap.hpp, heap_purge_due); 0: a purge whenever purge_at is reached.
  std::uint32_t purge_ms = default_purge_ms;
  bool huge_pages = false;
  bool check = false;     // abort on misuse (default: the checked build)
  bool stats = false;     // print statistics at exit
  bool colour = true;     // varied offsets for large arrays
  bool bind = true;       // bind per-node sources' memory to their node
  bool verbose = false;   // print decisions (profile, topology) at start
  const char* topology = nullptr;  // "synthetic:<desc>" or "xml:<path>" (tests)
  // Bytes of idle run pages that all heaps together may keep beyond their
  // own allowances (heap_runs.cpp, "retained empty runs"); 0 in lowmem unless set.
  std::size_t shared_idle = 0;
  // Percent of the recent peak of run pages added to that shared allowance
  // while threads come and go (context.hpp, shared_idle_cap), at most 100;
  // 0 in lowmem unless set.
  std::uint32_t shared_idle_peak = 0;
};

// Defaults that depend on the profile: lowmem keeps a small cache of free
// segments (large blocks freed and soon allocated again are reused instead
// of unmapped and faulted in again) and lets it decay fast. Its cache of
// large blocks may also hold a quarter of the bytes of the large blocks in
// use (lowmem_large_live_share; source.hpp), for as long as
// large_decay_ms_lowmem: a program that replaces large blocks by others of
// other sizes then finds a cached block that fits, at a resident set of
// about 1.25x its live large bytes (plus cache_max and the newest block).
inline constexpr std::size_t lowmem_cache_max = std::size_t{4} << 20;
inline constexpr std::uint32_t default_decay_ms = 1000;
inline constexpr std::uint32_t decay_ms_lowmem = 10;
inline constexpr std::uint32_t large_decay_ms_lowmem = 100;
inline constexpr std::size_t lowmem_large_live_share = 4;

// All zero: the options of a context before context_setup (context.hpp).
inline constexpr Options no_options{Profile::lowmem, false, 0,     0,     0,     0,    false,
                                    false,           false, false, false, false, nullptr, 0,
                                    0};

inline constexpr const char* option_prefix = "MANYALLOC_NUMA_";
inline constexpr int num_options = 13;
extern const env::Spec option_specs[num_options];

// Reads the table. `numa_nodes` is the node count of the machine (sysfs),
// used for the automatic profile. Writes one warning per malformed value to
// stderr (without allocating).
Options load_options(int numa_nodes);

// Number of online NUMA nodes according to /sys (no allocation), >= 1.
int sysfs_numa_nodes();

}  // namespace manyalloc::numa
