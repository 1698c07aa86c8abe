#include "mpi_transport.hpp"

#include <mpi.h>

#include <climits>
#include <deque>

namespace manyalloc::region::detail {

namespace {
constexpr int tag_ctl = 1;
constexpr int tag_hdr = 2;
constexpr int tag_data = 3;
}  // namespace

struct MpiTransport::Impl {
  MPI_Comm ctl = MPI_COMM_NULL;
  MPI_Comm workers = MPI_COMM_NULL;
  int rank = 0, size = 0;
  struct Pending {
    Message msg;
    MPI_Request req;
  };
  std::deque<Pending> sends;
};

MpiTransport::MpiTransport(bool is_worker) : impl_(std::make_unique<Impl>()) {
  MPI_Comm_dup(MPI_COMM_WORLD, &impl_->ctl);
  MPI_Comm_rank(impl_->ctl, &impl_->rank);
  MPI_Comm_size(impl_->ctl, &impl_->size);
  MPI_Comm_split(MPI_COMM_WORLD, is_worker ? 1 : MPI_UNDEFINED, impl_->rank, &impl_->workers);
}

MpiTransport::~MpiTransport() {
  flush();
  if (impl_->workers != MPI_COMM_NULL) MPI_Comm_free(&impl_->workers);
  MPI_Comm_free(&impl_->ctl);
}

int MpiTransport::rank() const { return impl_->rank; }
int MpiTransport::size() const { return impl_->size; }

void MpiTransport::post(int peer, Message msg) {
  impl_->sends.push_back({std::move(msg), MPI_REQUEST_NULL});
  auto& p = impl_->sends.back();
  MPI_Isend(p.msg.data(), static_cast<int>(p.msg.size()), MPI_UINT64_T, peer, tag_ctl, impl_->ctl, &p.req);
}

void MpiTransport::send(int peer, const Message& msg) {
  MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_UINT64_T, peer, tag_ctl, impl_->ctl);
}

int MpiTransport::try_recv_any(Message& out) {
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, tag_ctl, impl_->ctl, &flag, &st);
  if (!flag) return -1;
  int count = 0;
  MPI_Get_count(&st, MPI_UINT64_T, &count);
  out.resize(static_cast<std::size_t>(count));
  MPI_Recv(out.data(), count, MPI_UINT64_T, st.MPI_SOURCE, tag_ctl, impl_->ctl, MPI_STATUS_IGNORE);
  return st.MPI_SOURCE;
}

void MpiTransport::recv_from(int peer, Message& out) {
  MPI_Status st;
  MPI_Probe(peer, tag_ctl, impl_->ctl, &st);
  int count = 0;
  MPI_Get_count(&st, MPI_UINT64_T, &count);
  out.resize(static_cast<std::size_t>(count));
  MPI_Recv(out.data(), count, MPI_UINT64_T, peer, tag_ctl, impl_->ctl, MPI_STATUS_IGNORE);
}

void MpiTransport::poll() {
  // Sends complete in order often enough; test from the front.
  while (!impl_->sends.empty()) {
    int done = 0;
    MPI_Test(&impl_->sends.front().req, &done, MPI_STATUS_IGNORE);
    if (!done) break;
    impl_->sends.pop_front();
  }
}

void MpiTransport::flush() {
  for (auto& p : impl_->sends) MPI_Wait(&p.req, MPI_STATUS_IGNORE);
  impl_->sends.clear();
}

void MpiTransport::send_header(int peer, std::span<const std::uint64_t> header) {
  MPI_Send(header.data(), static_cast<int>(header.size()), MPI_UINT64_T, peer, tag_hdr, impl_->workers);
}

void MpiTransport::recv_header(int peer, std::vector<std::uint64_t>& out) {
  MPI_Status st;
  MPI_Probe(peer, tag_hdr, impl_->workers, &st);
  int count = 0;
  MPI_Get_count(&st, MPI_UINT64_T, &count);
  out.resize(static_cast<std::size_t>(count));
  MPI_Recv(out.data(), count, MPI_UINT64_T, peer, tag_hdr, impl_->workers, MPI_STATUS_IGNORE);
}

namespace {
// One derived datatype over absolute addresses (MPI_BOTTOM): the data lands
// at the same addresses on the receiver (Myrmics section 6.1 wraps
// MPI_Send/MPI_Recv around the packed address/size list the same way).
MPI_Datatype extents_type(std::span<const Extent> extents) {
  std::vector<int> lens;
  std::vector<MPI_Aint> displs;
  lens.reserve(extents.size());
  displs.reserve(extents.size());
  for (const Extent& e : extents) {
    std::uint64_t a = e.addr, n = e.bytes;
    while (n > 0) {
      const std::uint64_t chunk = n > (1u << 30) ? (1u << 30) : n;
      lens.push_back(static_cast<int>(chunk));
      displs.push_back(static_cast<MPI_Aint>(a));
      a += chunk;
      n -= chunk;
    }
  }
  MPI_Datatype t;
  MPI_Type_create_hindexed(static_cast<int>(lens.size()), lens.data(), displs.data(), MPI_BYTE, &t);
  MPI_Type_commit(&t);
  return t;
}
}  // namespace

void MpiTransport::send_extents(int peer, std::span<const Extent> extents) {
  if (extents.empty()) return;
  MPI_Datatype t = extents_type(extents);
  MPI_Send(MPI_BOTTOM, 1, t, peer, tag_data, impl_->workers);
  MPI_Type_free(&t);
}

void MpiTransport::recv_extents(int peer, std::span<const Extent> extents) {
  if (extents.empty()) return;
  MPI_Datatype t = extents_type(extents);
  MPI_Recv(MPI_BOTTOM, 1, t, peer, tag_data, impl_->workers, MPI_STATUS_IGNORE);
  MPI_Type_free(&t);
}

void MpiTransport::worker_barrier() { MPI_Barrier(impl_->workers); }

void* MpiTransport::worker_comm_handle() { return &impl_->workers; }

}  // namespace manyalloc::region::detail
