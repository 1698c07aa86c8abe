#include "mpi_transport.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <vector>
#include <deque>
#include <unordered_map>

namespace manyalloc::region::detail {

namespace {
constexpr int tag_ctl = 1;
constexpr int tag_hdr = 2;
constexpr int tag_data = 3;

// Receives the message of uint64 words that `st` (from a probe of `tag` on
// `comm`) announced into `out`, sized to it.
void recv_probed(const MPI_Status& st, int tag, MPI_Comm comm, std::vector<std::uint64_t>& out) {
  int count = 0;
  MPI_Get_count(&st, MPI_UINT64_T, &count);
  out.resize(static_cast<std::size_t>(count));
  MPI_Recv(out.data(), count, MPI_UINT64_T, st.MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE);
}

// A message of `tag` on `comm` from any rank, if one has arrived: received
// into `out`; returns its source, or -1 when none is there.
int try_recv_tagged(int tag, MPI_Comm comm, std::vector<std::uint64_t>& out) {
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &flag, &st);
  if (!flag) return -1;
  recv_probed(st, tag, comm, out);
  return st.MPI_SOURCE;
}
}  // namespace

// Communicators. The library talks only on its own duplicates, so that no
// application message can match one of its messages (or take one of them
// with a wildcard receive), whatever the tags: `ctl` (a duplicate of
// MPI_COMM_WORLD) for control traffic and mr_init's collectives, `workers`
// (split from it) for transfers and barriers. `user_workers` is another
// communicator of the same workers that the library never uses: the
// application's (mr_worker_comm), free of reserved tags.
struct MpiTransport::Impl {
  MPI_Comm ctl = MPI_COMM_NULL;
  MPI_Comm workers = MPI_COMM_NULL;
  MPI_Comm user_workers = MPI_COMM_NULL;
  int rank = 0, size = 0;
  struct Pending {
    Message msg;
    MPI_Request req;
  };
  std::deque<Pending> sends;
  // Non-blocking transfer operations (start_send, start_recv).
  struct Op {
    std::vector<MPI_Request> reqs;
    std::vector<std::uint64_t> header;  // a send's header, alive until sent
    std::vector<char> scratch;          // a discarding receive's buffer
  };
  std::unordered_map<std::uint64_t, Op> ops;
  std::uint64_t next_op = 0;
  MPI_Request barrier = MPI_REQUEST_NULL;
};

MpiTransport::MpiTransport(bool is_worker) : impl_(std::make_unique<Impl>()) {
  MPI_Comm_dup(MPI_COMM_WORLD, &impl_->ctl);
  MPI_Comm_rank(impl_->ctl, &impl_->rank);
  MPI_Comm_size(impl_->ctl, &impl_->size);
  MPI_Comm_split(impl_->ctl, is_worker ? 1 : MPI_UNDEFINED, impl_->rank, &impl_->workers);
  if (impl_->workers != MPI_COMM_NULL) MPI_Comm_dup(impl_->workers, &impl_->user_workers);
}

MpiTransport::~MpiTransport() {
  flush();
  if (impl_->user_workers != MPI_COMM_NULL) MPI_Comm_free(&impl_->user_workers);
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

int MpiTransport::try_recv_any(Message& out) { return try_recv_tagged(tag_ctl, impl_->ctl, out); }

void MpiTransport::recv_from(int peer, Message& out) {
  MPI_Status st;
  MPI_Probe(peer, tag_ctl, impl_->ctl, &st);
  recv_probed(st, tag_ctl, impl_->ctl, out);
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

namespace {
// How the bytes of a transfer travel. Both sides build the same plan from the
// same extent list, so the messages match one to one, in order (same peer,
// tag and communicator). Pieces of at least `big_piece` bytes are messages
// of their own over contiguous memory: MPI can move those with one copy
// (OpenMPI vader: CMA/XPMEM single copy; networks: RDMA rendezvous) straight
// from the sender's region memory into the receiver's, while a
// non-contiguous datatype is packed through bounce buffers on both sides.
// The small rest goes in one message with a derived datatype over absolute
// addresses (MPI_BOTTOM), as in [Lyberis2012] section 6.1.
constexpr std::uint64_t big_piece = 64 * 1024;
constexpr std::uint64_t max_piece = std::uint64_t{1} << 30;  // int counts

struct Plan {
  std::vector<int> small_lens;
  std::vector<MPI_Aint> small_displs;
  std::vector<Extent> big;
};

Plan make_plan(std::span<const Extent> extents) {
  Plan p;
  for (const Extent& e : extents) {
    std::uint64_t a = e.addr, n = e.bytes;
    while (n > 0) {
      const std::uint64_t chunk = n > max_piece ? max_piece : n;
      if (chunk >= big_piece) {
        p.big.push_back({a, chunk});
      } else {
        p.small_lens.push_back(static_cast<int>(chunk));
        p.small_displs.push_back(static_cast<MPI_Aint>(a));
      }
      a += chunk;
      n -= chunk;
    }
  }
  return p;
}

// Posts the plan's messages into `reqs`: sends from the extents (mode 0),
// receives into them (1), or receives into `scratch` (2: the receiver
// rejected the extents; every piece at its own offset, so that all can be
// posted at once). The hindexed type is freed at once (MPI keeps it alive
// for the pending operation).
void post_plan(const Plan& p, int mode, int peer, int tag, MPI_Comm comm, std::vector<MPI_Request>& reqs,
               std::vector<char>& scratch) {
  std::uint64_t small_total = 0, big_total = 0;
  for (int l : p.small_lens) small_total += static_cast<std::uint64_t>(l);
  for (const Extent& e : p.big) big_total += e.bytes;
  if (mode == 2) scratch.resize(small_total + big_total);
  std::uint64_t off = 0;
  auto post = [&](void* buf, int count, MPI_Datatype t) {
    reqs.emplace_back();
    if (mode == 0)
      MPI_Isend(buf, count, t, peer, tag, comm, &reqs.back());
    else
      MPI_Irecv(buf, count, t, peer, tag, comm, &reqs.back());
  };
  if (!p.small_lens.empty()) {
    if (mode == 2) {
      post(scratch.data(), static_cast<int>(small_total), MPI_BYTE);
      off = small_total;
    } else {
      MPI_Datatype small = MPI_DATATYPE_NULL;
      MPI_Type_create_hindexed(static_cast<int>(p.small_lens.size()), p.small_lens.data(), p.small_displs.data(),
                               MPI_BYTE, &small);
      MPI_Type_commit(&small);
      post(MPI_BOTTOM, 1, small);
      MPI_Type_free(&small);
    }
  }
  for (const Extent& e : p.big) {
    void* buf = mode == 2 ? static_cast<void*>(scratch.data() + off) : reinterpret_cast<void*>(e.addr);
    post(buf, static_cast<int>(e.bytes), MPI_BYTE);
    off += e.bytes;
  }
}
}  // namespace

std::uint64_t MpiTransport::start_send(int peer, std::vector<std::uint64_t> header, std::span<const Extent> extents) {
  const std::uint64_t id = ++impl_->next_op;
  Impl::Op& op = impl_->ops[id];
  op.header = std::move(header);
  op.reqs.reserve(extents.size() + 2);
  op.reqs.emplace_back();
  MPI_Isend(op.header.data(), static_cast<int>(op.header.size()), MPI_UINT64_T, peer, tag_hdr, impl_->workers,
            &op.reqs.back());
  if (!extents.empty()) post_plan(make_plan(extents), 0, peer, tag_data, impl_->workers, op.reqs, op.scratch);
  return id;
}

int MpiTransport::try_recv_header(std::vector<std::uint64_t>& out) {
  return try_recv_tagged(tag_hdr, impl_->workers, out);
}

std::uint64_t MpiTransport::start_recv(int peer, std::span<const Extent> extents, bool discard) {
  const std::uint64_t id = ++impl_->next_op;
  Impl::Op& op = impl_->ops[id];
  if (!extents.empty())
    post_plan(make_plan(extents), discard ? 2 : 1, peer, tag_data, impl_->workers, op.reqs, op.scratch);
  return id;
}

bool MpiTransport::test_op(std::uint64_t id) {
  auto it = impl_->ops.find(id);
  if (it == impl_->ops.end()) return true;
  int done = 1;
  if (!it->second.reqs.empty())
    MPI_Testall(static_cast<int>(it->second.reqs.size()), it->second.reqs.data(), &done, MPI_STATUSES_IGNORE);
  if (!done) return false;
  impl_->ops.erase(it);
  return true;
}

void MpiTransport::start_worker_barrier() { MPI_Ibarrier(impl_->workers, &impl_->barrier); }

bool MpiTransport::test_worker_barrier() {
  int done = 0;
  MPI_Test(&impl_->barrier, &done, MPI_STATUS_IGNORE);
  return done != 0;
}

void MpiTransport::exchange_counts(std::span<const std::uint64_t> to_each, std::span<std::uint64_t> from_each) {
  MPI_Alltoall(to_each.data(), 1, MPI_UINT64_T, from_each.data(), 1, MPI_UINT64_T, impl_->workers);
}

void MpiTransport::worker_barrier() { MPI_Barrier(impl_->workers); }

void* MpiTransport::world_comm_handle() { return &impl_->ctl; }

void* MpiTransport::user_worker_comm_handle() { return &impl_->user_workers; }

}  // namespace manyalloc::region::detail
