// MPI model of the transport concepts (transport.hpp). All MPI calls of the
// library are in mpi_transport.cpp and gas.cpp.
#pragma once

#include <memory>
#include <vector>

#include "peer_watch.hpp"
#include "transport.hpp"

namespace manyalloc::region::detail {

class MpiTransport {
 public:
  // Pre: MPI is initialised. Collective over MPI_COMM_WORLD: duplicates it
  // for control traffic and splits off the library's workers-only
  // communicator from the duplicate (is_worker decides the colour), plus a
  // second one of the same workers for the application. The library never
  // sends on the application's communicators, so no tag is reserved there.
  explicit MpiTransport(bool is_worker);
  ~MpiTransport();
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const;
  int size() const;
  // Collective over all ranks (mr_init): every rank's identity, by rank.
  std::vector<PeerIdentity> exchange_identities();
  // The library's communicators return MPI errors instead of aborting
  // (MPI_ERRORS_RETURN); an error is handed to `watch` as a failure of the
  // peer the call named (or as broken, for a wildcard receive). A control
  // message that failed is dropped; a transfer operation that failed never
  // completes (test_op stays false), and the waits on it end through the
  // watch.
  void report_errors_to(PeerWatch* watch);
  // A control message from `peer`, if one has arrived (the worker's RPC
  // polls with it so that it can notice a dead leaf); true when received.
  bool try_recv_from(int peer, Message& out);
  // A posted receive of the next control message from `peer` (the worker's
  // RPC waits on it: testing a posted receive costs MPI less than a probe
  // per poll, and the message is matched into place as it arrives). At
  // most one at a time, of at most `max_words` words: only for messages
  // known to be that short (and short enough to travel eagerly, so that a
  // matched receive is complete and a cancel never waits for a peer): a
  // longer one would be truncated. start_recv_from returns false when MPI
  // failed (the watch has it). test_recv_from: 1 when the message is in
  // `out` (the receive is no longer posted), 0 while none has come, -1
  // when MPI failed (not posted any more). cancel_recv_from takes back a
  // posted receive; true when it had received a message after all (in
  // `out`).
  bool start_recv_from(int peer, std::size_t max_words);
  int test_recv_from(Message& out);
  bool cancel_recv_from(Message& out);
  // Pending sends to `peer` are released without waiting (the peer has
  // failed: they may never complete, and flush() must not wait for them).
  void forget_sends_to(int peer);
  void post(int peer, Message msg);
  void send(int peer, const Message& msg);
  int try_recv_any(Message& out);
  void poll();
  void flush();

  // Non-blocking transfers (DataTransport): operations named by a nonzero
  // id, completed by test_op (which forgets them once complete).
  std::uint64_t start_send(int peer, std::vector<std::uint64_t> header, std::span<const Extent> extents);
  int try_recv_header(std::vector<std::uint64_t>& out);
  std::uint64_t start_recv(int peer, std::span<const Extent> extents, bool discard);
  bool test_op(std::uint64_t op);
  void start_worker_barrier();
  bool test_worker_barrier();
  void start_exchange_counts(std::span<const std::uint64_t> to_each);
  bool test_exchange_counts(std::span<std::uint64_t> from_each);
  void worker_barrier();
  // The library's duplicate of MPI_COMM_WORLD as an opaque handle
  // (MPI_Comm*), for the collectives of mr_init (gas.cpp).
  void* world_comm_handle();
  // The application's workers-only communicator (MPI_Comm*; MPI_COMM_NULL on
  // schedulers), which the library itself never uses (mpi_interop.h).
  void* user_worker_comm_handle();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

static_assert(ControlTransport<MpiTransport>);
static_assert(DataTransport<MpiTransport>);

}  // namespace manyalloc::region::detail
