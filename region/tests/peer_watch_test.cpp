// PeerWatch (peer_watch.hpp, W1-W3): a process on this host that exits is
// reported once, by its pidfd; failures handed in are reported once too.
// No MPI: the "ranks" are this process and children it forks.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "peer_watch.hpp"

namespace manyalloc::region::detail {
namespace {

// A child that lives until a byte arrives on its pipe (a byte, not EOF:
// children forked later hold copies of the write end).
struct Child {
  pid_t pid = -1;
  int release = -1;
  Child() {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    pid = fork();
    if (pid == 0) {
      close(fds[1]);
      char c;
      (void)!read(fds[0], &c, 1);
      _exit(0);
    }
    close(fds[0]);
    release = fds[1];
  }
  void exit_now() { EXPECT_EQ(write(release, "x", 1), 1); }
  void reap() {
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~Child() {
    close(release);
    if (pid > 0) waitpid(pid, nullptr, 0);
  }
};

// Polls for up to two seconds until `rank` is reported.
std::vector<int> poll_until(PeerWatch& w, int rank) {
  std::vector<int> seen;
  for (int i = 0; i < 200 && std::find(seen.begin(), seen.end(), rank) == seen.end(); ++i) {
    for (int r : w.poll()) seen.push_back(r);
    if (std::find(seen.begin(), seen.end(), rank) == seen.end()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return seen;
}

TEST(PeerWatch, AnExitedProcessOnThisHostIsReportedOnce) {
  Child a, b;
  const PeerIdentity me = own_identity();
  const std::vector<PeerIdentity> all{me, {me.host_key, static_cast<std::uint64_t>(a.pid)},
                                      {me.host_key, static_cast<std::uint64_t>(b.pid)}};
  PeerWatch w;
  w.watch(all, 0, {0, 1, 2});
  EXPECT_EQ(w.watched(), 2);
  EXPECT_TRUE(w.poll().empty());
  EXPECT_FALSE(w.any_failed());
  a.exit_now();
  a.reap();  // reaped: its pid may be reused, the pidfd still names it (W1)
  EXPECT_EQ(poll_until(w, 1), std::vector<int>{1});
  EXPECT_TRUE(w.failed(1));
  EXPECT_FALSE(w.failed(2));
  EXPECT_NE(w.why(1).find("has exited"), std::string::npos) << w.why(1);
  EXPECT_TRUE(w.poll().empty()) << "reported twice (W2)";
  // An exited process that nobody reaped yet (a zombie) counts as exited.
  b.exit_now();
  EXPECT_EQ(poll_until(w, 2), std::vector<int>{2});
}

TEST(PeerWatch, RanksElsewhereAreFailedOnlyWhenToldAndReportedOnce) {
  const PeerIdentity me = own_identity();
  const std::vector<PeerIdentity> all{me, {me.host_key + 1, 1}};  // rank 1 on another host
  PeerWatch w;
  w.watch(all, 0, {1});
  EXPECT_EQ(w.watched(), 0);
  EXPECT_TRUE(w.poll().empty());
  EXPECT_TRUE(w.note_failed(1, "MPI reported an error in MPI_Send: connection lost"));
  EXPECT_FALSE(w.note_failed(1, "again"));
  EXPECT_EQ(w.poll(), std::vector<int>{1});
  EXPECT_TRUE(w.poll().empty());
  EXPECT_EQ(w.why(1), "MPI reported an error in MPI_Send: connection lost");
  w.note_broken("MPI reported an error in MPI_Iprobe");
  EXPECT_EQ(w.broken(), "MPI reported an error in MPI_Iprobe");
}

}  // namespace
}  // namespace manyalloc::region::detail
