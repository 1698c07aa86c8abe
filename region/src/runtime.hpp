// Process-wide state of the library on one rank (set up by mr_init).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "gas.hpp"
#include "mpi_transport.hpp"
#include "prefault.hpp"
#include "protocol.hpp"
#include "topology.hpp"

namespace manyalloc::region::detail {

struct Runtime {
  bool initialized = false;
  bool we_initialized_mpi = false;
  int rank = -1;
  Topology topo;
  GasMapping gas;
  std::unique_ptr<MpiTransport> transport;
  // Worker side.
  int leaf = -1;
  std::uint64_t seq = 0;
  double sched_s = 0, worker_s = 0, barrier_s = 0;
  Prefaulter prefault;  // zero-copy receives map new pages in one call

  bool is_worker() const { return initialized && !topo.is_scheduler(rank); }
  // Sends to world rank `peer` move no bytes: both map this host's shared
  // GAS object (MANYALLOC_REGION_TRANSFER=auto and the memfd worked).
  bool zero_copy_with(int peer) const {
    return gas.shared && gas.host_of[static_cast<std::size_t>(peer)] == gas.host_of[static_cast<std::size_t>(rank)];
  }
  // One request to the leaf scheduler and its reply (blocking RPC).
  Message rpc(Message req);
};

Runtime& runtime();
double now_seconds();

}  // namespace manyalloc::region::detail
