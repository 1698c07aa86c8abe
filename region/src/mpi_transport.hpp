// MPI model of the transport concepts (transport.hpp). All MPI calls of the
// library are in mpi_transport.cpp and gas.cpp.
#pragma once

#include <memory>

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
