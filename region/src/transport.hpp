// The transport between ranks, as a C++20 concept so that the scheduler and
// worker code never include mpi.h (ARCHITECTURE.md rule 4). MpiTransport
// (mpi_transport.hpp) models both; InProcTransport (inproc_transport.hpp,
// every rank in one process) models ControlTransport for the scheduler's
// unit tests and the simulator. The concepts document what the rest of the
// library relies on.
//
// Control messages are vectors of 64-bit words (protocol.hpp; built and
// read through the typed structs of messages.hpp). Every message
// of the library (control, transfer headers and data, barriers) travels on
// communicators of its own, never on the application's, so it never matches
// application traffic whatever the tags.
// Preconditions common to every call: the transport is initialised, `peer`
// is a valid rank of the communicator in question and is not the caller.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <vector>

#include "local_regions.hpp"

namespace manyalloc::region::detail {

using Message = std::vector<std::uint64_t>;

template <class T>
concept ControlTransport = requires(T& t, const T& ct, int peer, Message msg, Message& out) {
  // World rank and size.
  { ct.rank() } -> std::same_as<int>;
  { ct.size() } -> std::same_as<int>;
  // Asynchronous send: returns at once, never deadlocks against a peer that
  // sends at the same time; the message is delivered in order per
  // (sender, receiver) pair. Completion is driven by poll()/flush().
  t.post(peer, std::move(msg));
  // Blocking send (workers: one outstanding request at a time).
  t.send(peer, std::as_const(msg));
  // Receives one message from any rank into `out`; returns the source rank
  // or -1 when none is waiting (non-blocking).
  { t.try_recv_any(out) } -> std::same_as<int>;
  // The next message from `peer`, if one is waiting (non-blocking; the
  // worker's RPC polls with it so that it can notice a failed leaf).
  { t.try_recv_from(peer, out) } -> std::same_as<bool>;
  // Progress / complete posted sends.
  t.poll();
  t.flush();
};

template <class T>
concept DataTransport = requires(T& t, int peer, std::vector<std::uint64_t> header,
                                 std::vector<std::uint64_t>& header_out, std::span<const Extent> extents,
                                 std::uint64_t op, std::span<const std::uint64_t> counts,
                                 std::span<std::uint64_t> counts_out) {
  // Worker-to-worker transfers ([Lyberis2012] Figure 1 sys_send / sys_recv),
  // all non-blocking: `peer` is a worker index. The header names the
  // regions/objects; the extents are absolute GAS addresses that are valid
  // (mapped) on both sides. A zero-copy transfer (peers sharing the host's
  // GAS object) is the header alone (no extents given); the worker code
  // decides that, the transport is not asked. Nothing here waits for the
  // peer (invariants.hpp, X1): the worker's progress loop completes them.
  //
  // Posts the header and then the extents' bytes, straight from the GAS (no
  // staging buffers in this library); returns the operation's id (nonzero).
  { t.start_send(peer, std::move(header), extents) } -> std::same_as<std::uint64_t>;
  // Takes the next header from any worker; returns its worker index, or -1
  // when none has arrived.
  { t.try_recv_header(header_out) } -> std::same_as<int>;
  // Posts the receives of the bytes that `peer`'s header announced: into the
  // same addresses, or (discard) into a scratch buffer that is dropped, so
  // that no message is left to match a later transfer. Must be called for a
  // header before the next header from the same peer is taken (the data
  // messages then match in order).
  { t.start_recv(peer, extents, true) } -> std::same_as<std::uint64_t>;
  // True once the operation is complete (it is then forgotten).
  { t.test_op(op) } -> std::same_as<bool>;
  // Barrier among workers only (sys_barrier), blocking and non-blocking.
  t.worker_barrier();
  t.start_worker_barrier();
  { t.test_worker_barrier() } -> std::same_as<bool>;
  // Collective among workers, non-blocking: counts[i] to worker i; once
  // test_exchange_counts() is true, counts_out[i] from it (the transport
  // keeps its own buffers until then, so an exchange abandoned because a
  // worker failed never writes into the caller's memory).
  t.start_exchange_counts(counts);
  { t.test_exchange_counts(counts_out) } -> std::same_as<bool>;
};

}  // namespace manyalloc::region::detail
