// The library's messages and the application's never match each other
// (region/README.md, "Isolation"): the application may use any tag on
// mr_worker_comm() and on MPI_COMM_WORLD, also wildcard receives, around
// mr_send/mr_recv. Run with 3 ranks (one scheduler, two workers) in both
// transfer modes.
//   1. Worker 0 queues user messages with small tags (0-7, among them the
//      values a library might use) and a large one on mr_worker_comm(), each
//      shaped like a valid transfer header; then it sends a region holding a
//      list of 512 KiB (copy mode: big and small data pieces). Worker 1
//      receives the transfer first, then the user messages by tag: each must
//      arrive intact, where it was sent.
//   2. Worker 0 posts an MPI_ANY_SOURCE/MPI_ANY_TAG receive on
//      mr_worker_comm() before worker 1 sends the region back and then one
//      user message: the wildcard receive must get the user message, the
//      mr_recv the region.
//   3. The same with a wildcard receive on MPI_COMM_WORLD while the worker
//      talks to its scheduler.
// Errors on the user's communicators return (MPI_ERRORS_RETURN) so that a
// message taken by the wrong side fails a check instead of aborting; an
// alarm ends a run that hangs. The tests run in this order on both workers
// (main: mpi_gtest_main.cpp, session form).
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.h"
#include "mpi_gtest.hpp"

const unsigned region_test::alarm_seconds = 30;

namespace {

struct Node {
  Node* next;
  std::uint64_t value;
  char pad[240];
};
static_assert(sizeof(Node) == 256);
constexpr int nodes = 2048;  // 512 KiB

// Tags of the user messages in phase 1.
constexpr int test_tags[] = {0, 1, 2, 3, 4, 5, 6, 7, 1000};
constexpr int num_tags = sizeof test_tags / sizeof test_tags[0];
constexpr int word_count = 7;
// Tags of the go-ahead and the later user message in phases 2 and 3.
constexpr int go_tag = 2, after_tag_value = 3;

// A user message that would pass for a transfer header of the library:
// status ok, 1 region (id 77), no objects, no extents, copy.
void fill(std::uint64_t (&m)[word_count], int tag) {
  const std::uint64_t words[word_count] = {0, 1, 0, 0, 0, 77, static_cast<std::uint64_t>(tag)};
  for (int i = 0; i < word_count; ++i) m[i] = words[i];
}

// Receives one user message from `src` with `tag` (or any) and checks it.
void check_user_message(MPI_Comm comm, int src, int tag, int want_tag) {
  std::uint64_t m[word_count + 8] = {};
  MPI_Status st;
  const int rc = MPI_Recv(m, word_count + 8, MPI_UINT64_T, src, tag, comm, &st);
  int count = -1;
  if (rc == MPI_SUCCESS) MPI_Get_count(&st, MPI_UINT64_T, &count);
  EXPECT_EQ(rc, MPI_SUCCESS);
  EXPECT_EQ(count, word_count);
  EXPECT_TRUE(st.MPI_TAG == want_tag && m[1] == 1 && m[5] == 77 && m[6] == static_cast<std::uint64_t>(want_tag));
}

Node* build_list(mr_rid_t r) {
  Node* head = nullptr;
  void* objs[nodes];
  if (mr_balloc(sizeof(Node), r, nodes, objs) != MR_OK) return nullptr;
  for (int i = nodes - 1; i >= 0; --i) {
    auto* n = static_cast<Node*>(objs[i]);
    n->next = head;
    n->value = static_cast<std::uint64_t>(i) * 3 + 1;
    head = n;
  }
  return head;
}

// Sum of (value - 3*i - 1 - bump) over the list: 0 when every node holds
// 3*i + 1 + bump; the node count goes to *count.
std::uint64_t list_error(const Node* n, std::uint64_t bump, int* count) {
  std::uint64_t err = 0;
  *count = 0;
  for (; n != nullptr; n = n->next, ++*count)
    err += n->value != static_cast<std::uint64_t>(*count) * 3 + 1 + bump;
  return err;
}

class Isolation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    MPI_Comm_set_errhandler(mr_worker_comm(), MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  void SetUp() override { ASSERT_EQ(mr_num_workers(), 2) << "run with one scheduler and two workers"; }
  const int me = mr_worker_id();
  const int peer = 1 - me;
  MPI_Comm user = mr_worker_comm();
  // The region holding the list that travels in phases 1 and 2.
  static mr_rid_t r;
  static Node* head;
};
mr_rid_t Isolation::r = 0;
Node* Isolation::head = nullptr;

// Phase 1: user messages queued ahead of a transfer.
TEST_F(Isolation, UserMessagesQueuedAheadOfATransfer) {
  if (me == 0) {
    EXPECT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &r), MR_OK);
    head = build_list(r);
    EXPECT_NE(head, nullptr);
    std::uint64_t msgs[num_tags][word_count];
    MPI_Request reqs[num_tags];
    for (int i = 0; i < num_tags; ++i) {
      fill(msgs[i], test_tags[i]);
      MPI_Isend(msgs[i], word_count, MPI_UINT64_T, peer, test_tags[i], user, &reqs[i]);
    }
    void* objs[] = {head};
    EXPECT_EQ(mr_send(peer, &r, 1, objs, 1), MR_OK);
    EXPECT_EQ(MPI_Waitall(num_tags, reqs, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  } else {
    mr_rid_t got_r[2] = {0, 0};
    void* got_o[2] = {nullptr, nullptr};
    int nr = -1, no = -1;
    EXPECT_EQ(mr_recv(peer, got_r, 2, &nr, got_o, 2, &no), MR_OK);
    EXPECT_TRUE(nr == 1 && no == 1 && got_r[0] != 77);
    r = got_r[0];
    head = static_cast<Node*>(got_o[0]);
    for (int i = 0; i < num_tags; ++i) check_user_message(user, peer, test_tags[i], test_tags[i]);
    if (nr == 1 && no == 1) {
      int count = 0;
      EXPECT_TRUE(list_error(head, 0, &count) == 0 && count == nodes);
      for (Node* n = head; n != nullptr; n = n->next) n->value += 1;
    }
  }
}

// Phase 2: a wildcard user receive posted before a transfer arrives.
TEST_F(Isolation, WildcardReceiveOnTheWorkerCommunicator) {
  if (me == 0) {
    std::uint64_t m[word_count + 8] = {};
    MPI_Request req;
    MPI_Status st;
    MPI_Irecv(m, word_count + 8, MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, user, &req);
    std::uint64_t go = 1;
    MPI_Send(&go, 1, MPI_UINT64_T, peer, go_tag, user);
    mr_rid_t got_r[2] = {0, 0};
    void* got_o[2] = {nullptr, nullptr};
    int nr = -1, no = -1;
    EXPECT_EQ(mr_recv(peer, got_r, 2, &nr, got_o, 2, &no), MR_OK);
    EXPECT_TRUE(nr == 1 && no == 1 && got_r[0] == r && got_o[0] == head);
    if (nr == 1 && no == 1 && got_o[0] == head) {
      int count = 0;
      EXPECT_TRUE(list_error(head, 1, &count) == 0 && count == nodes);
    }
    const int rc = MPI_Wait(&req, &st);
    int count = -1;
    if (rc == MPI_SUCCESS) MPI_Get_count(&st, MPI_UINT64_T, &count);
    EXPECT_TRUE(rc == MPI_SUCCESS && count == word_count && st.MPI_TAG == after_tag_value && m[6] == after_tag_value);
  } else {
    std::uint64_t go = 0;
    EXPECT_TRUE(MPI_Recv(&go, 1, MPI_UINT64_T, peer, go_tag, user, MPI_STATUS_IGNORE) == MPI_SUCCESS && go == 1);
    void* objs[] = {head};
    EXPECT_EQ(mr_send(peer, &r, 1, objs, 1), MR_OK);
    std::uint64_t m[word_count];
    fill(m, after_tag_value);
    EXPECT_EQ(MPI_Send(m, word_count, MPI_UINT64_T, peer, after_tag_value, user), MPI_SUCCESS);
  }
}

// Phase 3: a wildcard receive on MPI_COMM_WORLD while talking to the
// scheduler (requests and replies), then a user message with tag 1.
TEST_F(Isolation, WildcardReceiveOnWorldWhileTalkingToTheScheduler) {
  int world_peer = 0;
  {
    int wr = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    world_peer = me == 0 ? wr + 1 : wr - 1;  // workers are the last ranks, in order
  }
  if (me == 1) {
    std::uint64_t m[word_count + 8] = {};
    MPI_Request req;
    MPI_Status st;
    MPI_Irecv(m, word_count + 8, MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
    mr_rid_t mine = 0;
    EXPECT_EQ(mr_ralloc(MR_ROOT_REGION, MR_NO_HINT, &mine), MR_OK);
    for (int i = 0; i < 16; ++i) {
      void* p = nullptr;
      EXPECT_EQ(mr_alloc(64, mine, &p), MR_OK);
    }
    mr_sched_stats s;
    EXPECT_EQ(mr_sched_stats_get(0, &s), MR_OK);
    EXPECT_EQ(mr_rfree(mine), MR_OK);
    std::uint64_t go = 1;
    MPI_Send(&go, 1, MPI_UINT64_T, peer, go_tag, user);
    const int rc = MPI_Wait(&req, &st);
    int count = -1;
    if (rc == MPI_SUCCESS) MPI_Get_count(&st, MPI_UINT64_T, &count);
    EXPECT_TRUE(rc == MPI_SUCCESS && count == word_count && st.MPI_TAG == 1 && st.MPI_SOURCE == world_peer && m[6] == 1);
  } else {
    std::uint64_t go = 0;
    EXPECT_EQ(MPI_Recv(&go, 1, MPI_UINT64_T, peer, go_tag, user, MPI_STATUS_IGNORE), MPI_SUCCESS);
    std::uint64_t m[word_count];
    fill(m, 1);
    EXPECT_EQ(MPI_Send(m, word_count, MPI_UINT64_T, world_peer, 1, MPI_COMM_WORLD), MPI_SUCCESS);
  }

  if (me == 0) {
    EXPECT_EQ(mr_rfree(r), MR_OK);
  }
  EXPECT_EQ(mr_barrier(), MR_OK);
  if (me == 0) std::printf("isolation: transfer %s\n", mr_zero_copy(peer) ? "zero copy" : "copy");
}

}  // namespace
