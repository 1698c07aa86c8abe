// The options table of the node allocator: one table, read once from
// MANYALLOC_NUMA_<NAME> environment variables before the first allocation
// (README.md, "Options", lists the same table).
#pragma once

#include <cstddef>

#include "manyalloc/common/env_options.hpp"

namespace manyalloc::numa {

// Slides, "Allocator profiles".
enum class Profile : int {
  lowmem = 0,  // return memory to the OS as soon as possible
  uma = 1,     // recycle large segments, one common source
  numa = 2,    // recycle, one source per NUMA node + the common one
};
const char* profile_name(Profile p);

struct Options {
  Profile profile = Profile::uma;
  bool profile_from_env = false;
  std::size_t cache_max = std::size_t{1} << 30;  // bytes cached per source
  bool huge_pages = false;
  bool check = false;     // abort on misuse (default: the checked build)
  bool stats = false;     // print statistics at exit
  bool colour = true;     // varied offsets for large arrays
  bool bind = true;       // bind per-node sources' memory to their node
  bool verbose = false;   // print decisions (profile, topology) at start
  const char* topology = nullptr;  // "synthetic:<desc>" or "xml:<path>" (tests)
};

// All zero: the options of a context before context_setup (context.hpp).
inline constexpr Options kNoOptions{Profile::lowmem, false, 0,     false, false,
                                    false,           false, false, false, nullptr};

inline constexpr const char* kOptionPrefix = "MANYALLOC_NUMA_";
extern const env::Spec kOptionSpecs[9];

// Reads the table. `numa_nodes` is the node count of the machine (sysfs),
// used for the automatic profile. Writes one warning per malformed value to
// stderr (without allocating).
Options load_options(int numa_nodes);

// Number of online NUMA nodes according to /sys (no allocation), >= 1.
int sysfs_numa_nodes();

}  // namespace manyalloc::numa
