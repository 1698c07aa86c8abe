// The transport between ranks, as a C++20 concept so that the scheduler and
// worker code never include mpi.h (ARCHITECTURE.md rule 4). MpiTransport
// (mpi_transport.hpp) is the one model; the concept documents what the rest
// of the library relies on.
//
// Control messages are vectors of 64-bit words (protocol.hpp). Every message
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
  // Blocking receive of the next message from `peer`.
  t.recv_from(peer, out);
  // Progress / complete posted sends.
  t.poll();
  t.flush();
};

template <class T>
concept DataTransport = requires(T& t, int peer, std::span<const std::uint64_t> header,
                                 std::vector<std::uint64_t>& header_out, std::span<const Extent> extents) {
  // Worker-to-worker transfer ([Lyberis2012] Figure 1 sys_send / sys_recv): `peer` is a
  // worker index. The header names the regions/objects; the extents are
  // absolute GAS addresses that are valid (mapped) on both sides. A
  // zero-copy transfer (peers sharing the host's GAS object) is the header
  // alone; the worker code decides that, the transport is not asked. Blocking:
  // two workers must not both send large transfers to each other first.
  t.send_header(peer, header);
  t.recv_header(peer, header_out);
  // The extents' bytes go straight from the sender's GAS into the same
  // addresses on the receiver (no staging buffers in this library); the
  // receiver passes the extent list the header gave it.
  t.send_extents(peer, extents);
  t.recv_extents(peer, extents);
  // Receives and drops what send_extents sent (the receiver rejected the
  // extents), so that no message is left to match a later transfer.
  t.discard_extents(peer, extents);
  // Barrier among workers only (sys_barrier).
  t.worker_barrier();
};

}  // namespace manyalloc::region::detail
