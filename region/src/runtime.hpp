// Process-wide state of the library on one rank (set up by mr_init).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "gas.hpp"
#include "manyalloc/region/region.h"
#include "mpi_transport.hpp"
#include "prefault.hpp"
#include "protocol.hpp"
#include "topology.hpp"

namespace manyalloc::region::detail {

struct Runtime {
  bool initialized = false;
  bool finalized = false;    // mr_finalize ran: the library is done for this process
  bool init_failed = false;  // the last mr_init failed, for the reason below
  char init_failure[640] = "";
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
  // MR_ERR_NOT_INITIALIZED for `call`, with the reason (before mr_init, after
  // a failed mr_init and why it failed, after mr_finalize).
  mr_status not_initialized(const char* call) const;
};

Runtime& runtime();
double now_seconds();

}  // namespace manyalloc::region::detail
