// The region simulator: a pattern (pattern.hpp) run by simulated workers on
// a whole scheduler tree in one process (InProcCluster), with the
// schedulers of the library (SchedulerCore) and the requests and replies of
// the library's wire format. Single-threaded and deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pattern.hpp"
#include "scheduler.hpp"

namespace manyalloc::region::sim {

struct SimConfig {
  std::string pattern = "list";
  PatternParams params;
  int levels = 2;
  int fanout = 4;
  std::uint64_t gas_bytes = std::uint64_t{1} << 46;  // 64 TiB of numbers, nothing mapped
  detail::SchedulerTuning tuning;
};

struct SimResult {
  int schedulers = 0;
  int leaves = 0;
  int workers = 0;
  std::uint64_t requests = 0;        // worker requests (every step)
  std::uint64_t alloc_requests = 0;  // mr_ralloc + mr_alloc/mr_balloc requests
  std::uint64_t objects = 0;         // objects allocated
  std::uint64_t bytes = 0;           // bytes asked for by the object allocations
  std::uint64_t fails = 0;           // requests answered with an error
  std::uint64_t messages = 0;        // every control message (workers' included)
  std::uint64_t words = 0;           // their 64-bit words
  std::vector<detail::MessageCounts> received;  // per scheduler, what it took
  bool verified = false;  // shutdown completed, nothing pending, parked or left waiting, no region left
  std::string why_not;    // when not verified
  double seconds = 0;     // wall time of the simulation (setup excluded)
};

// Runs cfg.pattern with cfg.params.workers workers; throws
// std::invalid_argument for an unknown pattern or layout.
SimResult run_sim(const SimConfig& cfg);

}  // namespace manyalloc::region::sim
