// Process-wide state of the library on one rank (set up by mr_init).
#pragma once

#include <pthread.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "gas.hpp"
#include "manyalloc/region/region.h"
#include "mpi_transport.hpp"
#include "prefault.hpp"
#include "messages.hpp"
#include "peer_watch.hpp"
#include "topology.hpp"
#include "transfers.hpp"

namespace manyalloc::region::detail {

struct Runtime {
  bool initialized = false;
  bool finalized = false;    // mr_finalize ran: the library is done for this process
  bool init_failed = false;  // the last mr_init failed, for the reason below
  char init_failure[640] = "";
  bool we_initialized_mpi = false;
  // Threads (region.h, mr_init): the thread that called mr_init is the only
  // one that may call; the MPI thread level the library runs under.
  pthread_t owner{};
  long owner_tid = 0;  // its Linux thread id, for mr_last_error
  int mpi_thread_level = 0;
  int rank = -1;
  Topology topo;
  GasMapping gas;
  // Failed ranks (region.h, "Failures"): workers watch their leaf and the
  // other workers, schedulers their parent and children (W1-W3,
  // peer_watch.hpp). Declared before the transport, which reports to it,
  // so that it outlives it.
  PeerWatch watch;
  std::unique_ptr<MpiTransport> transport;
  // The worker call in progress (set by enter()), for failure reasons.
  const char* call = "";
  // Worker side.
  int leaf = -1;
  std::uint64_t seq = 0;
  double sched_s = 0, worker_s = 0, barrier_s = 0;
  Prefaulter prefault;  // zero-copy receives map new pages in one call
  TransferState xfers;  // transfers in flight (transfers.cpp)

  bool is_worker() const { return initialized && !topo.is_scheduler(rank); }
  // The calling thread is the one that called mr_init (one comparison: the
  // per-call check of every worker call).
  bool on_owner_thread() const { return pthread_equal(pthread_self(), owner) != 0; }
  // MR_ERR_THREAD for `call`: which thread may call and why.
  mr_status wrong_thread(const char* call) const;
  // Sends to world rank `peer` move no bytes: both map this host's shared
  // GAS object (MANYALLOC_REGION_TRANSFER=auto and the memfd worked).
  bool zero_copy_with(int peer) const {
    return gas.shared && gas.host_of[static_cast<std::size_t>(peer)] == gas.host_of[static_cast<std::size_t>(rank)];
  }
  // Scheduler side: the messages this rank's scheduler received, by op,
  // once the shutdown protocol ended it (diagnostics and the simulator's
  // exact-match test, region/sim).
  MessageCounts sched_received;
  // Scheduler side: the first failed rank its scheduler found or heard of
  // (mr_finalize reports it), -1 for none.
  int sched_failure = -1;
  // Where the reply to the next request goes: this rank and a fresh
  // sequence number.
  ReplyTo next_reply_to() { return ReplyTo{static_cast<std::uint64_t>(rank), ++seq}; }
  // One request to the leaf scheduler (encoded with next_reply_to()) and
  // its reply (blocking RPC). When the leaf has failed, or a scheduler on
  // the way answered for a failed rank, the reply is a StatusReply of
  // MR_ERR_PEER_FAILED and the reason is recorded (mr_last_error).
  Message rpc(const Message& req);
  // MR_ERR_PEER_FAILED for the failed world rank `rank`, with its role and
  // how it was found failed.
  mr_status peer_failure(int rank) const;
  // A failure notice from the leaf (F5) is noted in the watch, and the
  // rank it names stored in *failed (-1 when out of range); false for any
  // other message.
  bool take_notice(const Message& m, int* failed = nullptr);
  // Outside an RPC: takes the notices waiting from the leaf (late replies
  // of calls that failed are dropped).
  void take_notices();
  // How long an RPC still waits for its reply after a failure elsewhere
  // was heard of (rpc()).
  static constexpr double rpc_grace_s = 0.25;
  // MR_ERR_NOT_INITIALIZED for `call`, with the reason (before mr_init, after
  // a failed mr_init and why it failed, after mr_finalize).
  mr_status not_initialized(const char* call) const;
};

Runtime& runtime();
double now_seconds();
// The first step of every worker call: the library is initialised, this is
// the thread that may call, and this rank is a worker; else the error, with
// its reason (worker.cpp).
mr_status enter(const char* call);

}  // namespace manyalloc::region::detail
