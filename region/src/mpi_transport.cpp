#include "mpi_transport.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace manyalloc::region::detail {

namespace {
constexpr int tag_ctl = 1;
constexpr int tag_hdr = 2;
constexpr int tag_data = 3;

// Where MPI errors go (MpiTransport::report_errors_to); nullptr: nowhere
// (the communicators still return them, and the operation is dropped).
thread_local PeerWatch* t_watch = nullptr;

// MPI_SUCCESS, or the error handed to the watch as a failure of `peer`
// (a world rank of `comm`'s group, or -1 for none). True when it succeeded.
bool ok(int rc, const char* what, int peer, MPI_Comm comm) {
  if (rc == MPI_SUCCESS) return true;
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, text, &len);
  std::string why = std::string("MPI reported an error in ") + what + ": " + text;
  if (t_watch == nullptr) return false;
  if (peer < 0) {
    t_watch->note_broken(why);
    return false;
  }
  // The peer's rank in the control communicator (= world rank) names it.
  int world_peer = peer;
  MPI_Group g = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  if (MPI_Comm_group(comm, &g) == MPI_SUCCESS && MPI_Comm_group(MPI_COMM_WORLD, &world) == MPI_SUCCESS)
    MPI_Group_translate_ranks(g, 1, &peer, world, &world_peer);
  if (g != MPI_GROUP_NULL) MPI_Group_free(&g);
  if (world != MPI_GROUP_NULL) MPI_Group_free(&world);
  if (world_peer == MPI_UNDEFINED) world_peer = peer;
  t_watch->note_failed(world_peer, why);
  return false;
}

// Words of uint64 that the completed or probed operation of `st` carries.
std::size_t words_of(const MPI_Status& st) {
  int count = 0;
  MPI_Get_count(&st, MPI_UINT64_T, &count);
  return static_cast<std::size_t>(count);
}

// Receives the message of uint64 words that `st` (from a probe of `tag` on
// `comm`) announced into `out`, sized to it; false on an MPI error.
bool recv_probed(const MPI_Status& st, int tag, MPI_Comm comm, std::vector<std::uint64_t>& out) {
  out.resize(words_of(st));
  if (ok(MPI_Recv(out.data(), static_cast<int>(out.size()), MPI_UINT64_T, st.MPI_SOURCE, tag, comm,
                  MPI_STATUS_IGNORE),
         "MPI_Recv", st.MPI_SOURCE, comm))
    return true;
  out.clear();  // never mistaken for a message
  return false;
}

// A message of `tag` on `comm` from `source` (or any rank), if one has
// arrived: received into `out`; returns its source, or -1 when none is
// there (or MPI failed: the watch has it).
int try_recv_tagged(int tag, int source, MPI_Comm comm, std::vector<std::uint64_t>& out) {
  int flag = 0;
  MPI_Status st;
  if (!ok(MPI_Iprobe(source, tag, comm, &flag, &st), "MPI_Iprobe", source == MPI_ANY_SOURCE ? -1 : source, comm))
    return -1;
  if (!flag) return -1;
  if (!recv_probed(st, tag, comm, out)) return -1;
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
    int peer;
  };
  std::deque<Pending> sends;
  // Sends to a failed peer released with MPI_Request_free: MPI may still
  // read their buffers, so the messages stay here until the transport goes.
  std::vector<Message> released;
  // Non-blocking transfer operations (start_send, start_recv).
  struct Op {
    std::vector<MPI_Request> reqs;
    std::vector<std::uint64_t> header;  // a send's header, alive until sent
    std::vector<char> scratch;          // a discarding receive's buffer
    int peer = -1;                      // the other worker (workers communicator)
  };
  std::unordered_map<std::uint64_t, Op> ops;
  std::uint64_t next_op = 0;
  MPI_Request barrier = MPI_REQUEST_NULL;
  // The count exchange of mr_finalize's drain, with its buffers.
  MPI_Request counts = MPI_REQUEST_NULL;
  std::vector<std::uint64_t> counts_out, counts_in;
  // The posted control receive (start_recv_from) and its buffer.
  MPI_Request ctl_recv = MPI_REQUEST_NULL;
  int ctl_recv_peer = -1;
  std::vector<std::uint64_t> ctl_in;
};

MpiTransport::MpiTransport(bool is_worker) : impl_(std::make_unique<Impl>()) {
  MPI_Comm_dup(MPI_COMM_WORLD, &impl_->ctl);
  MPI_Comm_rank(impl_->ctl, &impl_->rank);
  MPI_Comm_size(impl_->ctl, &impl_->size);
  MPI_Comm_split(impl_->ctl, is_worker ? 1 : MPI_UNDEFINED, impl_->rank, &impl_->workers);
  if (impl_->workers != MPI_COMM_NULL) MPI_Comm_dup(impl_->workers, &impl_->user_workers);
  // Errors come back as codes on the library's own communicators (region.h,
  // "Failures"); the application's keeps whatever handler it is given.
  MPI_Comm_set_errhandler(impl_->ctl, MPI_ERRORS_RETURN);
  if (impl_->workers != MPI_COMM_NULL) MPI_Comm_set_errhandler(impl_->workers, MPI_ERRORS_RETURN);
}

MpiTransport::~MpiTransport() {
  flush();
  if (impl_->user_workers != MPI_COMM_NULL) MPI_Comm_free(&impl_->user_workers);
  if (impl_->workers != MPI_COMM_NULL) MPI_Comm_free(&impl_->workers);
  MPI_Comm_free(&impl_->ctl);
}

int MpiTransport::rank() const { return impl_->rank; }
int MpiTransport::size() const { return impl_->size; }

std::vector<PeerIdentity> MpiTransport::exchange_identities() {
  const PeerIdentity me = own_identity();
  const std::uint64_t mine[2] = {me.host_key, me.pid};
  std::vector<std::uint64_t> words(2 * static_cast<std::size_t>(impl_->size));
  MPI_Allgather(mine, 2, MPI_UINT64_T, words.data(), 2, MPI_UINT64_T, impl_->ctl);
  std::vector<PeerIdentity> all(static_cast<std::size_t>(impl_->size));
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = {words[2 * r], words[2 * r + 1]};
  return all;
}

void MpiTransport::report_errors_to(PeerWatch* watch) { t_watch = watch; }

void MpiTransport::post(int peer, Message msg) {
  impl_->sends.push_back({std::move(msg), MPI_REQUEST_NULL, peer});
  auto& p = impl_->sends.back();
  if (!ok(MPI_Isend(p.msg.data(), static_cast<int>(p.msg.size()), MPI_UINT64_T, peer, tag_ctl, impl_->ctl, &p.req),
          "MPI_Isend", peer, impl_->ctl))
    impl_->sends.pop_back();
}

void MpiTransport::send(int peer, const Message& msg) {
  ok(MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_UINT64_T, peer, tag_ctl, impl_->ctl), "MPI_Send", peer,
     impl_->ctl);
}

int MpiTransport::try_recv_any(Message& out) { return try_recv_tagged(tag_ctl, MPI_ANY_SOURCE, impl_->ctl, out); }

bool MpiTransport::try_recv_from(int peer, Message& out) {
  return try_recv_tagged(tag_ctl, peer, impl_->ctl, out) >= 0;
}

bool MpiTransport::start_recv_from(int peer, std::size_t max_words) {
  if (impl_->ctl_in.size() < max_words) impl_->ctl_in.resize(max_words);
  impl_->ctl_recv_peer = peer;
  if (ok(MPI_Irecv(impl_->ctl_in.data(), static_cast<int>(max_words), MPI_UINT64_T, peer, tag_ctl, impl_->ctl,
                   &impl_->ctl_recv),
         "MPI_Irecv", peer, impl_->ctl))
    return true;
  impl_->ctl_recv = MPI_REQUEST_NULL;
  return false;
}

int MpiTransport::test_recv_from(Message& out) {
  if (impl_->ctl_recv == MPI_REQUEST_NULL) return -1;
  int done = 0;
  MPI_Status st;
  if (!ok(MPI_Test(&impl_->ctl_recv, &done, &st), "MPI_Test (control receive)", impl_->ctl_recv_peer, impl_->ctl)) {
    impl_->ctl_recv = MPI_REQUEST_NULL;
    return -1;
  }
  if (!done) return 0;
  out.assign(impl_->ctl_in.begin(), impl_->ctl_in.begin() + static_cast<std::ptrdiff_t>(words_of(st)));
  return 1;
}

bool MpiTransport::cancel_recv_from(Message& out) {
  if (impl_->ctl_recv == MPI_REQUEST_NULL) return false;
  // Cancelling a receive is local; one already matched has its (eager)
  // message in place, so the wait returns at once either way.
  MPI_Cancel(&impl_->ctl_recv);
  MPI_Status st;
  if (!ok(MPI_Wait(&impl_->ctl_recv, &st), "MPI_Wait (control receive)", impl_->ctl_recv_peer, impl_->ctl)) {
    impl_->ctl_recv = MPI_REQUEST_NULL;
    return false;
  }
  int cancelled = 0;
  MPI_Test_cancelled(&st, &cancelled);
  if (cancelled) return false;
  out.assign(impl_->ctl_in.begin(), impl_->ctl_in.begin() + static_cast<std::ptrdiff_t>(words_of(st)));
  return true;
}

void MpiTransport::poll() {
  // Sends complete in order often enough; test from the front.
  while (!impl_->sends.empty()) {
    int done = 0;
    auto& p = impl_->sends.front();
    if (ok(MPI_Test(&p.req, &done, MPI_STATUS_IGNORE), "MPI_Test", p.peer, impl_->ctl) && !done) break;
    impl_->sends.pop_front();
  }
}

void MpiTransport::flush() {
  for (auto& p : impl_->sends) ok(MPI_Wait(&p.req, MPI_STATUS_IGNORE), "MPI_Wait", p.peer, impl_->ctl);
  impl_->sends.clear();
}

void MpiTransport::forget_sends_to(int peer) {
  std::erase_if(impl_->sends, [&](Impl::Pending& p) {
    if (p.peer != peer) return false;
    if (p.req != MPI_REQUEST_NULL) MPI_Request_free(&p.req);
    impl_->released.push_back(std::move(p.msg));
    return true;
  });
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
    reqs.push_back(MPI_REQUEST_NULL);
    if (mode == 0)
      ok(MPI_Isend(buf, count, t, peer, tag, comm, &reqs.back()), "MPI_Isend", peer, comm);
    else
      ok(MPI_Irecv(buf, count, t, peer, tag, comm, &reqs.back()), "MPI_Irecv", peer, comm);
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
  op.peer = peer;
  op.header = std::move(header);
  op.reqs.reserve(extents.size() + 2);
  op.reqs.push_back(MPI_REQUEST_NULL);
  ok(MPI_Isend(op.header.data(), static_cast<int>(op.header.size()), MPI_UINT64_T, peer, tag_hdr, impl_->workers,
               &op.reqs.back()),
     "MPI_Isend", peer, impl_->workers);
  if (!extents.empty()) post_plan(make_plan(extents), 0, peer, tag_data, impl_->workers, op.reqs, op.scratch);
  return id;
}

int MpiTransport::try_recv_header(std::vector<std::uint64_t>& out) {
  return try_recv_tagged(tag_hdr, MPI_ANY_SOURCE, impl_->workers, out);
}

std::uint64_t MpiTransport::start_recv(int peer, std::span<const Extent> extents, bool discard) {
  const std::uint64_t id = ++impl_->next_op;
  Impl::Op& op = impl_->ops[id];
  op.peer = peer;
  if (!extents.empty())
    post_plan(make_plan(extents), discard ? 2 : 1, peer, tag_data, impl_->workers, op.reqs, op.scratch);
  return id;
}

bool MpiTransport::test_op(std::uint64_t id) {
  auto it = impl_->ops.find(id);
  if (it == impl_->ops.end()) return true;
  int done = 1;
  // An operation MPI failed never completes: the wait on it fails through
  // the watch (its peer is failed), not through a transfer that looks done.
  if (!it->second.reqs.empty() &&
      !ok(MPI_Testall(static_cast<int>(it->second.reqs.size()), it->second.reqs.data(), &done, MPI_STATUSES_IGNORE),
          "MPI_Testall", it->second.peer, impl_->workers))
    return false;
  if (!done) return false;
  impl_->ops.erase(it);
  return true;
}

void MpiTransport::start_worker_barrier() {
  ok(MPI_Ibarrier(impl_->workers, &impl_->barrier), "MPI_Ibarrier", -1, impl_->workers);
}

bool MpiTransport::test_worker_barrier() {
  int done = 0;
  if (!ok(MPI_Test(&impl_->barrier, &done, MPI_STATUS_IGNORE), "MPI_Test (barrier)", -1, impl_->workers)) return false;
  return done != 0;
}

void MpiTransport::start_exchange_counts(std::span<const std::uint64_t> to_each) {
  impl_->counts_out.assign(to_each.begin(), to_each.end());
  impl_->counts_in.assign(to_each.size(), 0);
  ok(MPI_Ialltoall(impl_->counts_out.data(), 1, MPI_UINT64_T, impl_->counts_in.data(), 1, MPI_UINT64_T,
                   impl_->workers, &impl_->counts),
     "MPI_Ialltoall", -1, impl_->workers);
}

bool MpiTransport::test_exchange_counts(std::span<std::uint64_t> from_each) {
  int done = 0;
  if (!ok(MPI_Test(&impl_->counts, &done, MPI_STATUS_IGNORE), "MPI_Test (count exchange)", -1, impl_->workers) ||
      !done)
    return false;
  std::copy(impl_->counts_in.begin(), impl_->counts_in.end(), from_each.begin());
  return true;
}

void MpiTransport::worker_barrier() { MPI_Barrier(impl_->workers); }

void* MpiTransport::world_comm_handle() { return &impl_->ctl; }

void* MpiTransport::user_worker_comm_handle() { return &impl_->user_workers; }

}  // namespace manyalloc::region::detail
