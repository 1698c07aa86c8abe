// MPI model of the transport concepts (transport.hpp). All MPI calls of the
// library are in mpi_transport.cpp and gas.cpp.
#pragma once

#include <memory>

#include "transport.hpp"

namespace manyalloc::region::detail {

class MpiTransport {
 public:
  // Pre: MPI is initialised. Collective over MPI_COMM_WORLD: duplicates it
  // for control traffic and splits off a workers-only communicator
  // (is_worker decides the colour).
  explicit MpiTransport(bool is_worker);
  ~MpiTransport();
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const;
  int size() const;
  void post(int peer, Message msg);
  void send(int peer, const Message& msg);
  int try_recv_any(Message& out);
  void recv_from(int peer, Message& out);
  void poll();
  void flush();

  void send_header(int peer, std::span<const std::uint64_t> header);
  void recv_header(int peer, std::vector<std::uint64_t>& out);
  void send_extents(int peer, std::span<const Extent> extents);
  void recv_extents(int peer, std::span<const Extent> extents);
  void discard_extents(int peer, std::span<const Extent> extents);
  void worker_barrier();
  // The workers-only communicator as an opaque handle (MPI_Comm), for
  // applications that mix in plain MPI (see mpi_interop.h).
  void* worker_comm_handle();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

static_assert(ControlTransport<MpiTransport>);
static_assert(DataTransport<MpiTransport>);

}  // namespace manyalloc::region::detail
