// mr_send / mr_recv cannot deadlock on message sizes, in either transfer
// mode (region/README.md, "Sends never wait for the receiver"). Run with 3
// ranks (one scheduler, two workers) in three settings: auto (zero copy on
// this host), copy, and auto with MANYALLOC_REGION_FORCE_REMOTE=1 (every
// pair of ranks as on different hosts: the copying path of a multi-host run).
//   BothSendFirst: both workers mr_send a region of each size (empty, 200 B,
//   64 KiB, 4 MiB, 16 MiB) to each other first, then mr_recv the peer's;
//   the bytes are checked. Before the fix the copy mode hung at 4 MiB under
//   both MPIs (both sides blocked in the data send); the alarm ends a hang.
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "manyalloc/region/mpi_interop.h"
#include "manyalloc/region/region.h"
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

}  // namespace
