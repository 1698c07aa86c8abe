// mr_send / mr_recv cannot deadlock on message sizes, in either transfer
// mode (region/README.md, "Sends never wait for the receiver"). Run with 3
// ranks (one scheduler, two workers) in three settings: auto (zero copy on
// this host), copy, and auto with MANYALLOC_REGION_FORCE_REMOTE=1 (every
// pair of ranks as on different hosts: the copying path of a multi-host run).
//   BothSendFirst: both workers mr_send a region of each size (empty, 200 B,
//   64 KiB, 4 MiB, 16 MiB) to each other first, then mr_recv the peer's;
//   the bytes are checked. Before the fix the copy mode hung at 4 MiB under
//   both MPIs (both sides blocked in the data send); the alarm ends a hang.
//   BothIsendThenWait: both mr_isend 4 MiB and mr_wait on the send before
//   any receive (the wait takes in the peer's transfer), then mr_recv.
//   IrecvBeforeSendAndTest: worker 1 posts mr_irecv, tests it (not done),
//   worker 0 sends; mr_test polls until done; source and outputs checked.
//   AnyWorker: both send twice; each receives with MR_ANY_WORKER (irecv
//   and mr_recv_any), which says the sender; order per sender is kept.
//   SendThenBarrier: a send whose receiver is in mr_barrier completes.
//   Errors: bad peers, NULL and unknown handles, waiting twice, testing a
//   retired handle, a failed send's error at the receiver, truncation.
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.h"
#include "manyalloc/region/region.hpp"
#include "mpi_gtest.hpp"

const unsigned region_test::alarm_seconds = 40;  // a hang fails before ctest's timeout

namespace {

// The transfer mode the run expects (from the environment the test set).
bool expect_zero_copy() {
  const char* t = std::getenv("MANYALLOC_REGION_TRANSFER");
  const char* f = std::getenv("MANYALLOC_REGION_FORCE_REMOTE");
  const bool copy = t != nullptr && std::strcmp(t, "copy") == 0;
  const bool forced = f != nullptr && std::strcmp(f, "1") == 0;
  return !copy && !forced;
}

std::uint64_t pattern(int worker, std::size_t size, std::size_t i) {
  return (static_cast<std::uint64_t>(worker) + 1) * 0x9E3779B97F4A7C15ull ^ (size * 31 + i);
}

// A region holding one object of `bytes` (and a small one) filled with the
// worker's pattern.
struct Payload {
  mr_rid_t region = 0;
  std::uint64_t* big = nullptr;
  std::uint64_t* small = nullptr;
};

Payload make_payload(int worker, std::size_t bytes) {
  Payload p;
  EXPECT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &p.region), MR_OK);
  void* o = nullptr;
  EXPECT_EQ(mr_alloc(bytes, p.region, &o), MR_OK);
  p.big = static_cast<std::uint64_t*>(o);
  EXPECT_EQ(mr_alloc(64, p.region, &o), MR_OK);
  p.small = static_cast<std::uint64_t*>(o);
  if (p.big == nullptr || p.small == nullptr) return p;
  for (std::size_t i = 0; i < bytes / 8; ++i) p.big[i] = pattern(worker, bytes, i);
  for (std::size_t i = 0; i < 8; ++i) p.small[i] = pattern(worker, 64, i);
  return p;
}

// Errors in `p` against the worker's pattern.
std::size_t payload_errors(const std::uint64_t* big, const std::uint64_t* small, int worker, std::size_t bytes) {
  std::size_t err = 0;
  for (std::size_t i = 0; i < bytes / 8; ++i) err += big[i] != pattern(worker, bytes, i);
  for (std::size_t i = 0; i < 8; ++i) err += small[i] != pattern(worker, 64, i);
  return err;
}

class SendRecv : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(mr_num_workers(), 2) << "run with one scheduler and two workers"; }
  const int me = mr_worker_id();
  const int peer = 1 - me;
};

TEST_F(SendRecv, TransferModeAsConfigured) {
  EXPECT_EQ(mr_zero_copy(peer), expect_zero_copy() ? 1 : 0);
  std::printf("sendrecv: transfer %s\n", mr_zero_copy(peer) ? "zero copy" : "copy");
}

TEST_F(SendRecv, BothSendFirst) {
  const std::size_t sizes[] = {200, 64 << 10, 4 << 20, 16 << 20};
  // Empty sends first: no regions, no objects.
  EXPECT_EQ(mr_send(peer, nullptr, 0, nullptr, 0), MR_OK);
  int nr = -1, no = -1;
  EXPECT_EQ(mr_recv(peer, nullptr, 0, &nr, nullptr, 0, &no), MR_OK);
  EXPECT_TRUE(nr == 0 && no == 0);
  for (std::size_t bytes : sizes) {
    Payload mine = make_payload(me, bytes);
    ASSERT_NE(mine.big, nullptr);
    void* objs[] = {mine.big, mine.small};
    EXPECT_EQ(mr_send(peer, &mine.region, 1, objs, 2), MR_OK) << bytes << " bytes";
    mr_rid_t got_r = 0;
    void* got_o[2] = {nullptr, nullptr};
    nr = no = -1;
    EXPECT_EQ(mr_recv(peer, &got_r, 1, &nr, got_o, 2, &no), MR_OK) << bytes << " bytes";
    ASSERT_TRUE(nr == 1 && no == 2 && got_o[0] != nullptr && got_o[1] != nullptr);
    EXPECT_EQ(payload_errors(static_cast<std::uint64_t*>(got_o[0]), static_cast<std::uint64_t*>(got_o[1]), peer,
                             bytes),
              0u)
        << bytes << " bytes";
    // Both regions now belong to their receivers; each frees what it got.
    EXPECT_EQ(mr_barrier(), MR_OK);
    EXPECT_EQ(mr_rfree(got_r), MR_OK);
    EXPECT_EQ(mr_barrier(), MR_OK);
  }
}

TEST_F(SendRecv, BothIsendThenWait) {
  const std::size_t bytes = 4 << 20;
  Payload mine = make_payload(me, bytes);
  ASSERT_NE(mine.big, nullptr);
  void* objs[] = {mine.big, mine.small};
  mr_request_t req = MR_REQUEST_NULL;
  EXPECT_EQ(mr_isend(peer, &mine.region, 1, objs, 2, &req), MR_OK);
  EXPECT_NE(req, static_cast<mr_request_t>(MR_REQUEST_NULL));
  EXPECT_EQ(mr_wait(&req), MR_OK);
  EXPECT_EQ(req, static_cast<mr_request_t>(MR_REQUEST_NULL));
  mr_rid_t got_r = 0;
  void* got_o[2] = {nullptr, nullptr};
  int nr = -1, no = -1;
  EXPECT_EQ(mr_recv(peer, &got_r, 1, &nr, got_o, 2, &no), MR_OK);
  ASSERT_TRUE(nr == 1 && no == 2);
  EXPECT_EQ(payload_errors(static_cast<std::uint64_t*>(got_o[0]), static_cast<std::uint64_t*>(got_o[1]), peer, bytes),
            0u);
  EXPECT_EQ(mr_barrier(), MR_OK);
  EXPECT_EQ(mr_rfree(got_r), MR_OK);
  EXPECT_EQ(mr_barrier(), MR_OK);
}

TEST_F(SendRecv, IrecvBeforeSendAndTest) {
  const std::size_t bytes = 1 << 20;
  if (me == 1) {
    mr_rid_t got_r = 0;
    void* got_o[2] = {nullptr, nullptr};
    int nr = -1, no = -1, src = -1, done = -1;
    mr_request_t req = MR_REQUEST_NULL;
    EXPECT_EQ(mr_irecv(peer, &got_r, 1, &nr, got_o, 2, &no, &src, &req), MR_OK);
    EXPECT_EQ(mr_test(&req, &done), MR_OK);
    EXPECT_EQ(done, 0);  // worker 0 sends only after the barrier
    EXPECT_EQ(mr_barrier(), MR_OK);
    while (done == 0) ASSERT_EQ(mr_test(&req, &done), MR_OK);
    EXPECT_EQ(req, static_cast<mr_request_t>(MR_REQUEST_NULL));
    EXPECT_TRUE(nr == 1 && no == 2 && src == 0);
    EXPECT_EQ(payload_errors(static_cast<std::uint64_t*>(got_o[0]), static_cast<std::uint64_t*>(got_o[1]), peer,
                             bytes),
              0u);
    EXPECT_EQ(mr_rfree(got_r), MR_OK);
  } else {
    EXPECT_EQ(mr_barrier(), MR_OK);
    Payload mine = make_payload(me, bytes);
    ASSERT_NE(mine.big, nullptr);
    void* objs[] = {mine.big, mine.small};
    EXPECT_EQ(mr_send(peer, &mine.region, 1, objs, 2), MR_OK);
  }
  EXPECT_EQ(mr_barrier(), MR_OK);
}

TEST_F(SendRecv, AnyWorker) {
  // Two transfers each way: a 256 KiB region, then one 64-B object; the
  // receives from any worker must say the sender and keep its order.
  Payload a = make_payload(me, 256 << 10);
  ASSERT_NE(a.big, nullptr);
  void* objs[] = {a.big, a.small};
  EXPECT_EQ(mr_send(peer, &a.region, 1, objs, 2), MR_OK);
  void* one[] = {a.small};
  EXPECT_EQ(mr_send(peer, nullptr, 0, one, 1), MR_OK);
  mr_rid_t got_r = 0;
  void* got_o[2] = {nullptr, nullptr};
  int nr = -1, no = -1, src = -1;
  mr_request_t req = MR_REQUEST_NULL;
  EXPECT_EQ(mr_irecv(MR_ANY_WORKER, &got_r, 1, &nr, got_o, 2, &no, &src, &req), MR_OK);
  EXPECT_EQ(mr_wait(&req), MR_OK);
  EXPECT_TRUE(src == peer && nr == 1 && no == 2);
  EXPECT_EQ(payload_errors(static_cast<std::uint64_t*>(got_o[0]), static_cast<std::uint64_t*>(got_o[1]), peer,
                           256 << 10),
            0u);
  void* second = nullptr;
  src = -1;
  EXPECT_EQ(mr_recv_any(&src, nullptr, 0, &nr, &second, 1, &no), MR_OK);
  EXPECT_TRUE(src == peer && nr == 0 && no == 1 && second == got_o[1]);
  EXPECT_EQ(mr_barrier(), MR_OK);
  EXPECT_EQ(mr_rfree(got_r), MR_OK);
  EXPECT_EQ(mr_barrier(), MR_OK);
}

TEST_F(SendRecv, SendThenBarrier) {
  // Worker 0 sends 4 MiB and enters the barrier; worker 1 receives only
  // after it: the send must not need the receiver's mr_recv.
  if (me == 0) {
    Payload mine = make_payload(me, 4 << 20);
    ASSERT_NE(mine.big, nullptr);
    void* objs[] = {mine.big, mine.small};
    mr_request_t req = MR_REQUEST_NULL;
    EXPECT_EQ(mr_isend(peer, &mine.region, 1, objs, 2, &req), MR_OK);
    EXPECT_EQ(mr_barrier(), MR_OK);
    EXPECT_EQ(mr_wait(&req), MR_OK);
  } else {
    EXPECT_EQ(mr_barrier(), MR_OK);
    mr_rid_t got_r = 0;
    void* got_o[2] = {nullptr, nullptr};
    int nr = -1, no = -1;
    EXPECT_EQ(mr_recv(peer, &got_r, 1, &nr, got_o, 2, &no), MR_OK);
    ASSERT_TRUE(nr == 1 && no == 2);
    EXPECT_EQ(payload_errors(static_cast<std::uint64_t*>(got_o[0]), static_cast<std::uint64_t*>(got_o[1]), peer,
                             4 << 20),
              0u);
    EXPECT_EQ(mr_rfree(got_r), MR_OK);
  }
  EXPECT_EQ(mr_barrier(), MR_OK);
}

TEST_F(SendRecv, Errors) {
  mr_request_t req = MR_REQUEST_NULL;
  int done = 0;
  // Bad peers: self, out of range, MR_ANY_WORKER for a send.
  EXPECT_EQ(mr_send(me, nullptr, 0, nullptr, 0), MR_ERR_BAD_ARGUMENT);
  EXPECT_NE(std::strstr(mr_last_error(), "mr_send: peer worker"), nullptr) << mr_last_error();
  EXPECT_EQ(mr_isend(2, nullptr, 0, nullptr, 0, &req), MR_ERR_BAD_ARGUMENT);
  EXPECT_EQ(req, static_cast<mr_request_t>(MR_REQUEST_NULL));
  EXPECT_EQ(mr_isend(MR_ANY_WORKER, nullptr, 0, nullptr, 0, &req), MR_ERR_BAD_ARGUMENT);
  EXPECT_EQ(mr_isend(peer, nullptr, 0, nullptr, 0, nullptr), MR_ERR_BAD_ARGUMENT);
  EXPECT_EQ(mr_recv(-7, nullptr, 0, nullptr, nullptr, 0, nullptr), MR_ERR_BAD_ARGUMENT);
  EXPECT_EQ(mr_irecv(me, nullptr, 0, nullptr, nullptr, 0, nullptr, nullptr, &req), MR_ERR_BAD_ARGUMENT);
  EXPECT_EQ(mr_irecv(peer, nullptr, 0, nullptr, nullptr, 0, nullptr, nullptr, nullptr), MR_ERR_BAD_ARGUMENT);
  // Bad handles: NULL pointer, MR_REQUEST_NULL, never issued.
  EXPECT_EQ(mr_wait(nullptr), MR_ERR_BAD_ARGUMENT);
  EXPECT_EQ(mr_wait(&req), MR_ERR_BAD_REQUEST);
  EXPECT_NE(std::strstr(mr_last_error(), "mr_wait: the request is MR_REQUEST_NULL"), nullptr) << mr_last_error();
  mr_request_t bogus = 123456789;
  EXPECT_EQ(mr_wait(&bogus), MR_ERR_BAD_REQUEST);
  EXPECT_NE(std::strstr(mr_last_error(), "mr_wait: request 123456789 is not pending"), nullptr) << mr_last_error();
  EXPECT_EQ(mr_test(&bogus, &done), MR_ERR_BAD_REQUEST);
  EXPECT_EQ(mr_test(&req, nullptr), MR_ERR_BAD_ARGUMENT);
  // Waiting twice: through the handle (nulled) and through a copy of it.
  EXPECT_EQ(mr_isend(peer, nullptr, 0, nullptr, 0, &req), MR_OK);
  const mr_request_t copy = req;
  EXPECT_EQ(mr_wait(&req), MR_OK);
  EXPECT_EQ(mr_wait(&req), MR_ERR_BAD_REQUEST);
  mr_request_t again = copy;
  EXPECT_EQ(mr_wait(&again), MR_ERR_BAD_REQUEST);
  EXPECT_EQ(mr_test(&again, &done), MR_ERR_BAD_REQUEST);
  EXPECT_EQ(mr_recv(peer, nullptr, 0, nullptr, nullptr, 0, nullptr), MR_OK);  // the empty transfer
  // A failed send (stale region) returns the error and tells the receiver.
  mr_rid_t gone = 0;
  EXPECT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &gone), MR_OK);
  EXPECT_EQ(mr_rfree(gone), MR_OK);
  req = 42;
  EXPECT_EQ(mr_isend(peer, &gone, 1, nullptr, 0, &req), MR_ERR_NO_REGION);
  EXPECT_EQ(req, static_cast<mr_request_t>(MR_REQUEST_NULL));
  EXPECT_EQ(mr_recv(peer, nullptr, 0, nullptr, nullptr, 0, nullptr), MR_ERR_NO_REGION);
  // Truncation: two regions into room for one.
  mr_rid_t two[2] = {0, 0};
  EXPECT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &two[0]), MR_OK);
  EXPECT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &two[1]), MR_OK);
  EXPECT_EQ(mr_send(peer, two, 2, nullptr, 0), MR_OK);
  mr_rid_t got[1] = {0};
  int nr = -1;
  EXPECT_EQ(mr_irecv(peer, got, 1, &nr, nullptr, 0, nullptr, nullptr, &req), MR_OK);
  EXPECT_EQ(mr_wait(&req), MR_ERR_TRUNCATED);
  EXPECT_EQ(nr, 2);
  EXPECT_EQ(mr_barrier(), MR_OK);
  EXPECT_EQ(mr_rfree(two[0]), MR_OK);
  EXPECT_EQ(mr_rfree(two[1]), MR_OK);
  EXPECT_EQ(mr_barrier(), MR_OK);
}

// A transfer nobody receives and a receive nobody waits for are dropped at
// mr_finalize (which must not hang on them).
// The C++ wrappers: Request with isend/irecv/wait/test, recv_any.
TEST_F(SendRecv, CppRequestsAndReceiveFromAnyWorker) {
  namespace mr = manyalloc::region;
  const std::size_t bytes = 256 << 10;
  Payload mine = make_payload(me, bytes);
  ASSERT_NE(mine.big, nullptr);
  void* objs[] = {mine.big, mine.small};
  mr_rid_t got_r = 0;
  void* got_o[2] = {nullptr, nullptr};
  mr::Request receive, send;
  EXPECT_EQ(mr::irecv(receive, mr::any_worker, {&got_r, 1}, got_o), mr::Status::ok);
  EXPECT_TRUE(receive.pending());
  EXPECT_EQ(mr::isend(send, peer, {&mine.region, 1}, objs), mr::Status::ok);
  EXPECT_EQ(mr::wait(send), mr::Status::ok);
  EXPECT_EQ(mr::wait(receive), mr::Status::ok);
  EXPECT_FALSE(receive.pending());
  EXPECT_EQ(receive.received().source, peer);
  EXPECT_EQ(receive.received().counts.regions, 1);
  EXPECT_EQ(receive.received().counts.objects, 2);
  EXPECT_EQ(payload_errors(static_cast<std::uint64_t*>(got_o[0]), static_cast<std::uint64_t*>(got_o[1]), peer, bytes),
            0u);
  const auto again = mr::test(receive);
  EXPECT_EQ(again.status, mr::Status::bad_request) << "a retired request is not pending";
  EXPECT_EQ(mr::wait(send), mr::Status::bad_request);
  // The region goes back to its first owner with recv_any.
  EXPECT_EQ(mr::send(peer, {&got_r, 1}), mr::Status::ok);
  mr_rid_t back = 0;
  const auto r = mr::recv_any({&back, 1});
  EXPECT_EQ(r.status, mr::Status::ok);
  EXPECT_EQ(r.value.source, peer);
  EXPECT_EQ(r.value.counts.regions, 1);
  EXPECT_EQ(back, mine.region);
  EXPECT_EQ(mr::barrier(), mr::Status::ok);
  EXPECT_EQ(mr::rfree(back), mr::Status::ok);
  EXPECT_EQ(mr::barrier(), mr::Status::ok);
}

TEST_F(SendRecv, LeftoversAtFinalize) {
  Payload mine = make_payload(me, 1 << 20);
  ASSERT_NE(mine.big, nullptr);
  void* objs[] = {mine.big};
  EXPECT_EQ(mr_send(peer, &mine.region, 1, objs, 1), MR_OK);
  mr_request_t req = MR_REQUEST_NULL;
  EXPECT_EQ(mr_irecv(MR_ANY_WORKER, nullptr, 0, nullptr, nullptr, 0, nullptr, nullptr, &req), MR_OK);
  EXPECT_EQ(mr_send(peer, nullptr, 0, nullptr, 0), MR_OK);  // taken by nobody at the end
}

}  // namespace
