// mr_init's settings: an mr_config field when it is set (nonzero), else the
// variable MANYALLOC_REGION_<NAME> (read through the project's common
// options table, env_options.hpp), else the default. Every value is checked
// strictly; a bad one is reported as one line that names the option (field
// or variable), the value as given and what is allowed (README, "Options and
// errors"). No MPI here: the checks run on every rank alike before any
// collective, and the unit tests call them directly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "manyalloc/common/env_options.hpp"
#include "manyalloc/region/region.h"

namespace manyalloc::region::detail {

inline constexpr const char* option_prefix = "MANYALLOC_REGION_";

// The environment table, in the order of Option.
enum Option : int { opt_levels, opt_fanout, opt_gas_mib, opt_transfer, opt_prefault, opt_force_remote, opt_count };
extern const env::Spec option_specs[opt_count];

// Ranges (inclusive).
inline constexpr int max_levels = 8;
inline constexpr int max_fanout = 1 << 20;
inline constexpr std::uint64_t max_gas_mib = std::uint64_t{32} << 20;  // 32 TiB
inline constexpr std::uint64_t gas_unit = std::uint64_t{1} << 20;      // GAS sizes: whole MiB

struct Settings {
  int levels = 1;
  int fanout = 4;
  std::uint64_t gas_bytes = std::uint64_t{64} << 30;
  int transfer = MR_TRANSFER_AUTO;
  int prefault = MR_PREFAULT_ON;
  // MANYALLOC_REGION_FORCE_REMOTE: every rank is a host of its own (no
  // shared GAS object, every transfer copies), as on a cluster of one rank
  // per host, so that one machine runs the multi-host path.
  bool force_remote = false;
  // 0: the scheduler's default.
  std::uint64_t leaf_pages_hi = 0;
  std::uint64_t region_slabs_hi = 0;
  int load_threshold = 0;
  // Where levels and fanout came from, for the layout message:
  // "MANYALLOC_REGION_LEVELS=3", "mr_config.levels=3" or "default 1".
  char levels_from[64] = "";
  char fanout_from[64] = "";
};

// Reads and checks every setting. False on the first bad one, with the
// reason in why[0 .. n) (n > 0).
bool resolve_settings(const mr_config* cfg, Settings& out, char* why, std::size_t n);

// Schedulers in a tree of `levels` levels with `fanout` children each
// (saturates at a value above any rank count).
long scheduler_count(int levels, int fanout);

// True when a job of `world` ranks fits the tree with at least one worker;
// else false and why[0 .. n): the tree, where its shape came from, how many
// ranks it needs and how many the job has.
bool check_layout(const Settings& s, int world, char* why, std::size_t n);

}  // namespace manyalloc::region::detail
